"""Every zero test of the chapter gives the same answer on inputs perturbed at 1e-15 (issue 21, item 1):
balanced neurons, rank-deficient weights and dead networks sit exactly on the boundary of a decision, where
an exact float comparison would let the BLAS kernel decide."""
import numpy as np
import torch

from conservation_problem import small_problem
from stagewise.conservation_laws import drift_experiment, one_step_experiment, problem_set
from stagewise.conservation_laws.sign_experiment import _sign_flips, qualifying_neurons
from stagewise.conservation_laws.one_step_law import diagonal_product_law, one_step_change
from stagewise.conservation_laws.problem import gradients

PERTURBATIONS = (0.0, 1e-15, -1e-15)


def _nudged(t: torch.Tensor, rel: float, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return t * (1 + rel * torch.sign(torch.randn(t.shape, generator=g, dtype=t.dtype)))


def test_balanced_and_zero_neurons_qualify_the_same_way_when_perturbed():
    """|a| = ||w|| (balanced, the boundary of the hypothesis) qualifies; w = 0 and w = 1e-20 do not; always."""
    _, _, (W, a) = small_problem("relu", seeds=2)
    W = W.clone()
    W[0, 0] = 0.0                      # a zero neuron ...
    W[1, 1] = 1e-20                    # ... and one at the rounding level of the layer
    balanced = torch.sign(a) * W.norm(dim=-1)
    answers = set()
    for rel in PERTURBATIONS:
        mask, nonzero = qualifying_neurons(_nudged(W, rel), _nudged(balanced, rel, seed=1))
        answers.add((tuple(mask.flatten().tolist()), tuple(nonzero.flatten().tolist())))
    assert len(answers) == 1
    mask, nonzero = qualifying_neurons(W, balanced)
    assert not nonzero[0, 0] and not nonzero[1, 1] and int(mask.sum()) == W.shape[0] * W.shape[1] - 2


def test_a_rounding_level_wobble_is_not_a_sign_change():
    """a_j(t) sign a_j(0) = -1e-17 (rounding around a tiny weight) is no crossing; -1e-3 is."""
    W = torch.ones(1, 2, 3, dtype=torch.float64)
    states = [[W, torch.tensor([[1.0, 1.0]], dtype=torch.float64)],
              [W, torch.tensor([[-1e-17, 0.5]], dtype=torch.float64)],
              [W, torch.tensor([[0.2, -1e-3]], dtype=torch.float64)]]
    mask = torch.ones(1, 2, dtype=torch.bool)
    for rel in PERTURBATIONS:
        nudged = [[s[0], _nudged(s[1], rel)] for s in states]
        assert _sign_flips(nudged, mask)[0] == 1


def test_one_step_verdicts_on_rank_deficient_weights_are_stable():
    """A linear network with a rank-one W1 and W2 = 0 (one-step change exactly representable only up to
    rounding): the error stays within the rounding bound for every perturbation, and the bound barely moves."""
    problems = problem_set.build_problems(1, 4, 6, 3, 3, 0.5, torch.Generator().manual_seed(1),
                                          torch.Generator().manual_seed(2))
    W1, W2 = problems.params0["linear"]
    rank_one = W1[:, :, :1] * torch.ones(1, 1, W1.shape[-1], dtype=W1.dtype)
    tolerances = []
    for rel in PERTURBATIONS:
        params = [_nudged(rank_one, rel), torch.zeros_like(W2) + rel]
        one = one_step_experiment.one_step_experiment(
            problem_set.Problems(problems.families, problems.data, {**problems.params0, "linear": params}), 0.04, 5)
        assert one.error["linear"] <= one.tolerance["linear"]
        tolerances.append(one.tolerance["linear"])
    assert max(tolerances) / min(tolerances) < 1 + 1e-10


def test_product_law_at_a_balanced_coordinate():
    """u_i = v_i (u^2 - v^2 = 0, perturbed at 1e-15): the error relative to u^2 + v^2 stays at rounding level,
    where an error relative to |u^2 - v^2| would be of order one."""
    family, data, (u, v) = small_problem("diagonal", seeds=1)
    bound = one_step_experiment.one_step_experiment(
        problem_set.build_problems(1, 4, 4, 3, 3, 0.5, torch.Generator().manual_seed(1),
                                   torch.Generator().manual_seed(2)), 0.05, 50).product_law_tolerance
    for rel in PERTURBATIONS:
        measured, predicted, magnitude = diagonal_product_law(u, _nudged(u, rel), data, 0.05, 50)
        assert float(((measured - predicted).abs() / magnitude).max()) < bound


def test_a_dead_network_is_unresolved_under_perturbation():
    """Zero gradient (every ReLU dead) perturbed at 1e-15 stays dead: drift 0, never 'resolved'."""
    family, data, (W, a) = small_problem("relu", seeds=1)
    away = -data.X.sum(0) / data.X.sum(0).norm()
    for rel in PERTURBATIONS:
        dead = [_nudged(torch.zeros_like(W) + away, rel), _nudged(a, rel)]
        # exact zeros: the ReLU mask multiplies every term by 0 (no rounding involved)
        assert all(float(g.abs().max()) == 0.0 for g in gradients(family, dead, data))
        result = drift_experiment.family_descent(family, data, dead, [0.04, 0.02, 0.01], 0.2,
                                                 torch.Generator().manual_seed(0))
        assert not result.resolved.any()
        actual, predicted = one_step_change(family, dead, data, 0.04)
        assert float((actual - predicted).abs().max()) == 0.0

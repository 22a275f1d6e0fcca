"""The bug catalogue of the chapter (issue 22): it is well formed, and each bug changes what it claims to."""
import torch

from conservation_problem import small_problem
from stagewise.conservation_laws import bugs, models, orthogonal_init, problem_set, sign_experiment
from stagewise.conservation_laws.gradient_descent import batch_over_step_sizes
from stagewise.conservation_laws.one_step_law import one_step_change
from stagewise.conservation_laws.problem import gradients
from stagewise.core.checks.catalogue import CATEGORIES, MIN_BUGS


def test_catalogue_is_well_formed():
    """At least MIN_BUGS bugs, six categories or more, one CI bug, a docstring each, existing targets."""
    import importlib
    assert len(bugs.BUGS) >= MIN_BUGS and sum(b.ci for b in bugs.BUGS) == 1
    assert len({b.category for b in bugs.BUGS}) >= 6 and all(b.category in CATEGORIES for b in bugs.BUGS)
    assert len({b.name for b in bugs.BUGS}) == len(bugs.BUGS)
    for b in bugs.BUGS:
        module, _, attr = b.target.partition(":")
        assert hasattr(importlib.import_module(module), attr) and len(b.doc) > 40


def test_one_step_bugs_break_the_identity():
    """The three one-step slips move the prediction off the measured change by far more than rounding."""
    family, data, params = small_problem("relu")
    actual, predicted = one_step_change(family, params, data, 0.04)
    for bug in (bugs.reversed_step_change, bugs.taylor_half, bugs.gradient_after_step):
        a, p = bug(family, params, data, 0.04, original=one_step_change)
        assert (a - p).abs().max() > 1e3 * (actual - predicted).abs().max()


def test_gradient_and_batch_bugs():
    """The output layer's gradient is halved; the step sizes are paired with the wrong batch rows."""
    family, data, params = small_problem("relu")
    grads, halved = gradients(family, params, data), bugs.half_output_gradient(family, params, data, original=gradients)
    assert torch.equal(halved[0], grads[0]) and torch.allclose(halved[1], grads[1] / 2)
    _, right = batch_over_step_sizes(params, [0.1, 0.05, 0.02])
    _, wrong = bugs.interleaved_step_sizes(params, [0.1, 0.05, 0.02], original=batch_over_step_sizes)
    assert sorted(right.tolist()) == sorted(wrong.tolist()) and not torch.equal(right, wrong)


def test_deep_linear_invariant_is_the_full_matrix():
    """The wrong family's invariant: the deep ReLU network measured with W_l W_l^T - W_{l+1}^T W_{l+1}, whose
    diagonal is the right invariant."""
    problems = bugs.deep_linear_invariant(1, 4, 5, 3, 3, 0.5, torch.Generator().manual_seed(0),
                                          torch.Generator().manual_seed(1), original=problem_set.build_problems)
    p = problems.params0["deep_relu"]
    full = problems.families["deep_relu"].invariant(p).reshape(1, 2, 3, 3)
    right = models.FAMILIES["deep_relu"].invariant(p).reshape(1, 2, 3)
    assert torch.allclose(torch.diagonal(full, dim1=-2, dim2=-1), right)


def test_gamma_and_boundary_bugs():
    """The I_gamma slips leave P P^T = I_d or the scale 2 gamma; the balance and run-length slips change what the
    boundary neuron is given."""
    start, P = orthogonal_init.orthogonal_start(2, 4, 8, 2, 0.5, torch.Generator().manual_seed(0))
    eye = torch.eye(4, dtype=P.dtype)
    assert torch.allclose(P @ P.transpose(-1, -2), eye.expand(2, 4, 4), atol=1e-14)
    (W1, _), Pg = bugs.gaussian_p_init(2, 4, 8, 2, 0.5, torch.Generator().manual_seed(0),
                                      original=orthogonal_init.orthogonal_start)
    assert (Pg @ Pg.transpose(-1, -2) - eye).abs().max() > 0.05 and torch.equal(W1, Pg)   # sqrt(2 gamma) = 1
    (W1s, _), _ = bugs.sqrt_gamma_init(2, 4, 8, 2, 0.5, torch.Generator().manual_seed(0),
                                       original=orthogonal_init.orthogonal_start)
    assert torch.allclose(W1s, start[0] / 2**0.5)
    assert bugs.chapter_width_for_gamma(8, 12, original=orthogonal_init.gamma_width) == 8 < 12
    W = torch.full((1, 1, 4), 0.25, dtype=torch.float64)                                  # ||w|| = 1/2
    signs = torch.ones(1, 1, dtype=torch.float64)
    assert float(bugs.squared_norm_balance(W, signs, original=sign_experiment.balanced_output)) == 0.25
    assert float(sign_experiment.balanced_output(W, signs)) == 0.5
    _, data, _ = small_problem("relu")
    assert bugs.boundary_time_without_n(data, original=sign_experiment.boundary_time) * data.X.shape[0] == \
        sign_experiment.boundary_time(data)

"""The chapter's experiments on a small instance: each result says what its statement predicts."""
import numpy as np
import pytest
import torch

from stagewise.conservation_laws import (descent_to_flow, drift_experiment, flow_experiment, layer_growth,
                                         one_step_experiment, orthogonal_init, problem, problem_set,
                                         sign_experiment)


@pytest.fixture(scope="module")
def problems():
    return problem_set.build_problems(n_seeds=2, n_samples=5, input_dim=6, width=4, depth=3, init_scale=0.5,
                                      data_generator=torch.Generator().manual_seed(1),
                                      init_generator=torch.Generator().manual_seed(2))


def test_build_problems_shapes_and_streams(problems):
    """Five networks; the linear one has two outputs; data and weights come from separate streams."""
    assert list(problems.families) == ["diagonal", "linear", "relu", "deep_relu", "tanh"]
    assert problems.homogeneous == ["diagonal", "linear", "relu", "deep_relu"]
    assert problems.data["linear"].Y.shape == (5, 2) and problems.data["relu"].Y.shape == (5, 1)
    assert [tuple(p.shape) for p in problems.params0["deep_relu"]] == [(2, 4, 6), (2, 4, 4), (2, 1, 4)]
    other = problem_set.build_problems(2, 5, 6, 4, 3, 0.5, torch.Generator().manual_seed(1),
                                       torch.Generator().manual_seed(3))
    assert torch.equal(other.data["relu"].X, problems.data["relu"].X)          # same data stream
    assert not torch.equal(other.params0["relu"][0], problems.params0["relu"][0])


def test_flow_experiment(problems):
    """Theorem ``prf:thm-conservation-laws-balancedness``: ReLU drift at solver level, tanh drift large."""
    flow = flow_experiment.flow_experiment(problems, ["relu", "tanh"], 1.0, 1e-9)
    assert flow.drift["relu"] < flow_experiment.flow_tolerance(flow, "relu", 1e-9)
    assert flow_experiment.flow_excess(flow, "relu", 1e-9) < 1 < flow_experiment.flow_excess(flow, "tanh", 1e-9)
    assert flow.drift["tanh"] > 1e3 * flow.drift["relu"]
    assert flow.sum_drift["relu"] > 1e3 * flow.drift["relu"]       # the sum of the layer norms is not conserved
    assert len(flow.trajectories["relu"].states) == len(flow.trajectories["relu"].times)


def test_sign_experiment_and_boundary_pair(problems):
    """Corollary ``prf:thm-conservation-laws-relu``: signs kept for |a| >= ||w||; the balanced boundary neuron
    comes within the hyperbola's bound of zero and keeps its sign, the same neuron at 0.99 of it crosses."""
    flow = flow_experiment.flow_experiment(problems, ["relu"], 2.0, 1e-8)
    signs = sign_experiment.sign_experiment(problems, flow, 2.0, 1e-6)
    assert signs.flips == 0 and signs.margin > 1e-3            # |a_j| stays bounded away from zero, not just positive
    assert signs.gaussian_balanced > 0.05                      # the Gaussian balanced neurons stay far from zero ...
    assert 1e-5 < signs.boundary <= signs.boundary_bound < 0.01  # ... the boundary neuron comes close
    assert signs.balanced_margin == min(signs.gaussian_balanced, signs.boundary)
    assert 1e-5 <= signs.solver_error < 1e-3                   # 10 (rtol + rtol / 100 / min ||w_j||), rtol = 1e-6
    assert sign_experiment.boundary_margin(problems, 1e-6, ratio=sign_experiment.BOUNDARY_CONTROL) < -0.1


def test_boundary_neuron_is_inactive_elsewhere(problems):
    """The tilt makes the boundary neuron's pre-activations on the other inputs negative by a margin (not by
    rounding), and the bound is the hyperbola's: tilt cosh(acosh(1 / tilt) - 2 asinh(0.99 / sqrt(1 - 0.99^2)))."""
    data = problems.data["relu"]
    w, tilt = sign_experiment.boundary_neuron(data, 0.5)
    z = data.X @ w[0, 0]
    i = int(data.Y[:, 0].abs().argmax())
    others = torch.cat([z[:i], z[i + 1:]])
    assert tilt == sign_experiment.BOUNDARY_TILT and z[i] > 0 and (others < -1e-5).all()
    assert float(w.norm()) == pytest.approx(0.5, rel=1e-12)
    angle = 2 * np.arcsinh(0.99 / np.sqrt(1 - 0.99**2))
    assert sign_experiment.boundary_bound(tilt) == pytest.approx(tilt * np.cosh(np.arccosh(1 / tilt) - angle))
    # one input (d > 1): tilted orthogonally to it; one dimension: no tilt
    one = problem.Data(data.X[:1], data.Y[:1])
    w1, tilt1 = sign_experiment.boundary_neuron(one, 1.0)
    assert tilt1 == sign_experiment.BOUNDARY_TILT and float((one.X[0] @ w1[0, 0]) / one.X[0].norm()) == pytest.approx(
        np.sqrt(1 - tilt1**2))
    line = problem.Data(torch.ones(1, 1, dtype=torch.float64), torch.ones(1, 1, dtype=torch.float64))
    assert sign_experiment.boundary_neuron(line, 1.0)[1] == 0.0


def test_orthogonal_init_experiment(problems):
    """Corollary ``prf:thm-conservation-laws-linear`` from I_gamma (Varre et al., Lemmas 3.1 and 3.2): at width
    >= d, Z1^T Z1 - Z2 Z2^T = 2 gamma I_d and the weights stay in the row space of P; gradient descent breaks it."""
    d = problems.data["linear"].X.shape[1]
    width = orthogonal_init.gamma_width(4, d)
    assert width == 2 * d and orthogonal_init.gamma_width(3 * d, d) == 3 * d
    ortho = orthogonal_init.orthogonal_init_experiment(problems, 0.125, width, 2.0, 1e-9,
                                                       torch.Generator().manual_seed(4))
    assert ortho.P.shape == (2, d, width) and ortho.orthonormality < 1e-14
    assert ortho.scale >= 0.25 * (1 - 1e-12) and ortho.error < 1e-7 and ortho.outside < 1e-12
    assert orthogonal_init.orthogonal_descent_error(problems, ortho, [0.04, 0.02], 2.0) > 1e3 * ortho.error
    # below the input dimension no P has P P^T = I_d: the lemma fails at t = 0 (P P^T is a projection of rank l)
    narrow = orthogonal_init.orthogonal_init_experiment(problems, 0.125, d - 2, 2.0, 1e-9,
                                                        torch.Generator().manual_seed(4))
    assert narrow.orthonormality > 0.1 and narrow.error > 0.1 * 0.25


def test_reduced_invariant_is_the_projected_linear_invariant(problems):
    """Z1^T Z1 - Z2 Z2^T = P (W1^T W1 - W2 W2^T) P^T for any weights (Lemma 3.2 from the linear law)."""
    g = torch.Generator().manual_seed(7)
    (W1, W2), P = orthogonal_init.orthogonal_start(2, 6, 12, 2, 0.3, g)
    W1, W2 = W1 + torch.randn(W1.shape, generator=g, dtype=W1.dtype), torch.randn(W2.shape, generator=g, dtype=W2.dtype)
    gram = W1.transpose(-1, -2) @ W1 - W2 @ W2.transpose(-1, -2)
    expected = (P @ gram @ P.transpose(-1, -2)).flatten(1)
    assert torch.allclose(orthogonal_init.reduced_invariant([W1, W2], P), expected, atol=1e-12)


def test_broken_flow_drifts(problems):
    """The control of the flow rows: one layer's gradient halved breaks the law from the first instant."""
    flow = flow_experiment.flow_experiment(problems, ["diagonal", "relu"], 0.5, 1e-9)
    for name in ["diagonal", "relu"]:
        assert flow_experiment.broken_flow_drift(problems, name, 0.5, 1e-9) > 1e3 * flow_experiment.flow_tolerance(
            flow, name, 1e-9)
        assert flow_experiment.broken_flow_drift(problems, name, 0.5, 1e-9, factor=1.0) < flow_experiment.flow_tolerance(
            flow, name, 1e-9)                                        # factor 1: the flow itself


def test_descent_and_layer_growth(problems):
    """Proposition ``prf:thm-conservation-laws-one-step`` (slope ~ 1) and Corollary
    ``prf:thm-conservation-laws-deep`` (layers grow alike, up to the GD drift)."""
    etas = [0.01, 0.04, 0.02]                                       # any order: run largest first
    calls = []
    descent = drift_experiment.descent_experiment(problems, etas, 2.0, torch.Generator().manual_seed(5),
                                                  progress=lambda it, name: calls.append(name) or it)
    assert calls == list(problems.families)
    relu = descent.families["relu"]
    assert relu.etas == [0.04, 0.02, 0.01] and relu.drift.shape == (3, 2) and len(relu.slopes) == 2
    assert relu.qualifies.all() and relu.fitted(0) == [0.04, 0.02, 0.01]
    for s, (low, high) in zip(relu.slopes, relu.windows):
        assert low == pytest.approx(0.9) and 1.1 < high < 1.2 and low <= s <= high
    assert all(abs(s) < 0.2 for s in descent.slopes["tanh"])       # no homogeneity, no slope 1
    for s in range(2):                                              # the slope rows' control: a non-conserved sum
        assert abs(drift_experiment.norm_sum_slope(relu, s)) < 0.5
    assert 0.5 <= descent.families["tanh"].intercept_ratio <= 2.0   # the tanh drift survives eta -> 0 ...
    assert abs(relu.intercept_ratio) < 0.5                          # ... the ReLU drift does not
    assert drift_experiment.intercept_ratio_of(relu) == relu.intercept_ratio
    growth = layer_growth.layer_growth(descent.trajectories["deep_relu"])
    assert growth.growth.shape == (len(growth.times), 3) and np.all(growth.growth[0] == 0)  # x - x: exact
    assert growth.spread <= 2 * 4 * float(descent.drift["deep_relu"][-1, 0])
    assert growth.largest >= growth.spread


def test_one_step_experiment(problems):
    """Proposition ``prf:thm-conservation-laws-one-step``: exact for homogeneous families, not for tanh."""
    one_step = one_step_experiment.one_step_experiment(problems, 0.04, product_steps=20)
    assert all(one_step.error[n] <= one_step.tolerance[n] for n in problems.homogeneous)
    assert all(1e-14 < one_step.tolerance[n] < 1e-11 for n in problems.families)     # rounding of order-one sums
    assert one_step.error["tanh"] > 1e3 * one_step.tolerance["tanh"]
    for n in problems.homogeneous:    # the error recomputed; the control, the output gradient halved, is far off
        halved = [1.0] * (len(problems.params0[n]) - 1) + [0.5]
        assert one_step_experiment.one_step_error(problems, n, 0.04) <= one_step.tolerance[n]
        assert one_step_experiment.one_step_error(problems, n, 0.04, gradient_scale=halved) > 1e3 * one_step.tolerance[n]
    assert one_step_experiment.one_step_excess(one_step, "relu") < 1 < one_step_experiment.one_step_excess(
        one_step, "tanh")
    assert one_step.product_law_error < one_step.product_law_tolerance


def test_descent_flow_gap(problems):
    """The tanh descent curves converge to the flow's at first order (Richardson ratio near 1); against the
    flow of L/2 (a time axis off by 2) they do not; without two qualifying step sizes the ratio is NaN."""
    tanh = drift_experiment.family_descent(problems.families["tanh"], problems.data["tanh"], problems.params0["tanh"],
                                           [0.02, 0.01], 2.0, torch.Generator().manual_seed(6))
    flow = flow_experiment.flow_experiment(problems, ["tanh"], 2.0, 1e-9)
    assert descent_to_flow.convergence_steps(tanh) == [0.01, 0.02]
    assert 0.5 < descent_to_flow.descent_flow_gap(tanh, flow.trajectories["tanh"]) < 2.0
    assert descent_to_flow.descent_gap_to_flow(problems, "tanh", tanh, 2.0, 1e-9, [0.5, 0.5]) > 2.0
    one = drift_experiment.family_descent(problems.families["tanh"], problems.data["tanh"], problems.params0["tanh"],
                                          [0.02], 2.0, torch.Generator().manual_seed(6))
    assert descent_to_flow.convergence_steps(one) == []
    assert np.isnan(descent_to_flow.descent_flow_gap(one, flow.trajectories["tanh"]))


def test_the_change_curve_is_the_largest_change_over_the_invariants():
    """D(t) = max_j |I_j(t) - I_j(0)| for records (T, S, K) (the descent-to-flow row of the drift section): the
    maximum runs over the K invariants of each seed, never over the seeds (a curve of shape (T, K), the control)."""
    from stagewise.conservation_laws import descent_to_flow
    gen = torch.Generator().manual_seed(0)
    records = torch.randn(5, 3, 4, generator=gen, dtype=torch.float64)          # T = 5 times, S = 3 seeds, K = 4
    D = descent_to_flow._change_curves(records)
    assert D.shape == (5, 3)
    np.testing.assert_array_equal(D, (records - records[:1]).abs().numpy().max(axis=2))

"""The chapter's experiments on a small instance: each result says what its statement predicts."""
import numpy as np
import pytest
import torch

from stagewise.conservation_laws import experiments


@pytest.fixture(scope="module")
def problems():
    return experiments.build_problems(n_seeds=2, n_samples=5, input_dim=6, width=4, depth=3, init_scale=0.5,
                                      data_generator=torch.Generator().manual_seed(1),
                                      init_generator=torch.Generator().manual_seed(2))


def test_build_problems_shapes_and_streams(problems):
    """Five networks; the linear one has two outputs; data and weights come from separate streams."""
    assert list(problems.families) == ["diagonal", "linear", "relu", "deep_relu", "tanh"]
    assert problems.homogeneous == ["diagonal", "linear", "relu", "deep_relu"]
    assert problems.data["linear"].Y.shape == (5, 2) and problems.data["relu"].Y.shape == (5, 1)
    assert [tuple(p.shape) for p in problems.params0["deep_relu"]] == [(2, 4, 6), (2, 4, 4), (2, 1, 4)]
    other = experiments.build_problems(2, 5, 6, 4, 3, 0.5, torch.Generator().manual_seed(1),
                                       torch.Generator().manual_seed(3))
    assert torch.equal(other.data["relu"].X, problems.data["relu"].X)          # same data stream
    assert not torch.equal(other.params0["relu"][0], problems.params0["relu"][0])


def test_flow_experiment(problems):
    """Theorem ``prf:thm-conservation-laws-balancedness``: ReLU drift at solver level, tanh drift large."""
    flow = experiments.flow_experiment(problems, ["relu", "tanh"], 1.0, 1e-9)
    assert flow.drift["relu"] < experiments.flow_tolerance(flow, "relu", 1e-9)
    assert experiments.flow_excess(flow, "relu", 1e-9) < 1 < experiments.flow_excess(flow, "tanh", 1e-9)
    assert flow.drift["tanh"] > 1e3 * flow.drift["relu"]
    assert flow.sum_drift["relu"] > 1e3 * flow.drift["relu"]       # the sum of the layer norms is not conserved
    assert len(flow.trajectories["relu"].states) == len(flow.trajectories["relu"].times)


def test_sign_and_orthogonal_init_experiments(problems):
    """Corollary ``prf:thm-conservation-laws-relu`` (signs kept for |a| >= ||w||, the control neuron
    flips) and Corollary ``prf:thm-conservation-laws-linear`` from I_gamma (2 gamma P^T P kept)."""
    flow = experiments.flow_experiment(problems, ["relu"], 2.0, 1e-8)
    signs = experiments.sign_experiment(problems, flow, 2.0, 1e-6)
    assert signs.flips == 0 and signs.balanced_flips == 0
    assert signs.margin > 1e-3                # |a_j| stays bounded away from zero, not just positive
    ortho = experiments.orthogonal_init_experiment(problems, 0.125, 2.0, 1e-9, torch.Generator().manual_seed(4))
    assert ortho.scale >= 0.25 * (1 - 1e-12) and ortho.error < 1e-7          # the magnitude along the flow, 2 gamma at t = 0
    # the same error recomputed from the stored start agrees; with W2's gradient halved it leaves 2 gamma P^T P
    assert experiments.orthogonal_error(problems, ortho, 2.0, 1e-9) < 1e-7
    assert experiments.orthogonal_error(problems, ortho, 0.2, 1e-9, gradient_scale=[1.0, 0.5]) > 1e3 * ortho.error


def test_sign_controls_flip(problems):
    """The controls of the sign rows: outside the hypothesis (|a(0)| = 0.2 ||w(0)||, against the drift) the
    output weights do change sign."""
    assert experiments.control_neuron_flips(problems, 2.0, 1e-6) == 1
    assert experiments.against_drift_flips(problems, 2.0, 1e-6) >= 1


def test_broken_flow_drifts(problems):
    """The control of the flow rows: one layer's gradient halved breaks the law from the first instant."""
    flow = experiments.flow_experiment(problems, ["diagonal", "relu"], 0.5, 1e-9)
    for name in ["diagonal", "relu"]:
        assert experiments.broken_flow_drift(problems, name, 0.5, 1e-9) > 1e3 * experiments.flow_tolerance(flow, name, 1e-9)
        assert experiments.broken_flow_drift(problems, name, 0.5, 1e-9, factor=1.0) < experiments.flow_tolerance(
            flow, name, 1e-9)                                        # factor 1: the flow itself


def test_descent_and_layer_growth(problems):
    """Proposition ``prf:thm-conservation-laws-one-step`` (slope ~ 1) and Corollary
    ``prf:thm-conservation-laws-deep`` (layers grow alike, up to the GD drift)."""
    etas = [0.01, 0.04, 0.02]                                       # any order: run largest first
    calls = []
    descent = experiments.descent_experiment(problems, etas, 2.0, torch.Generator().manual_seed(5),
                                             progress=lambda it, name: calls.append(name) or it)
    assert calls == list(problems.families)
    relu = descent.families["relu"]
    assert relu.etas == [0.04, 0.02, 0.01] and relu.drift.shape == (3, 2) and len(relu.slopes) == 2
    assert relu.qualifies.all() and relu.fitted(0) == [0.04, 0.02, 0.01]
    for s, (low, high) in zip(relu.slopes, relu.windows):
        assert low == pytest.approx(0.9) and 1.1 < high < 1.2 and low <= s <= high
    assert all(abs(s) < 0.2 for s in descent.slopes["tanh"])       # no homogeneity, no slope 1
    for s in range(2):                                              # the slope rows' control: a non-conserved sum
        assert abs(experiments.norm_sum_slope(relu, s)) < 0.5
    assert 0.5 <= descent.families["tanh"].intercept_ratio <= 2.0   # the tanh drift survives eta -> 0 ...
    assert abs(relu.intercept_ratio) < 0.5                          # ... the ReLU drift does not
    assert experiments.intercept_ratio_of(relu) == relu.intercept_ratio
    growth = experiments.layer_growth(descent.trajectories["deep_relu"])
    assert growth.growth.shape == (len(growth.times), 3) and np.all(growth.growth[0] == 0)  # x - x: exact
    assert growth.spread <= 2 * 4 * float(descent.drift["deep_relu"][-1, 0])
    assert growth.largest >= growth.spread


def test_one_step_experiment(problems):
    """Proposition ``prf:thm-conservation-laws-one-step``: exact for homogeneous families, not for tanh."""
    one_step = experiments.one_step_experiment(problems, 0.04, product_steps=20)
    assert all(one_step.error[n] <= one_step.tolerance[n] for n in problems.homogeneous)
    assert all(1e-14 < one_step.tolerance[n] < 1e-11 for n in problems.families)     # rounding of order-one sums
    assert one_step.error["tanh"] > 1e3 * one_step.tolerance["tanh"]
    for n in problems.homogeneous:    # the error recomputed; the control, the output gradient halved, is far off
        halved = [1.0] * (len(problems.params0[n]) - 1) + [0.5]
        assert experiments.one_step_error(problems, n, 0.04) <= one_step.tolerance[n]
        assert experiments.one_step_error(problems, n, 0.04, gradient_scale=halved) > 1e3 * one_step.tolerance[n]
    assert experiments.one_step_excess(one_step, "relu") < 1 < experiments.one_step_excess(one_step, "tanh")
    assert one_step.product_law_error < one_step.product_law_tolerance


def test_descent_flow_gap(problems):
    """The tanh descent curves converge to the flow's at first order (Richardson ratio near 1); against the
    flow of L/2 (a time axis off by 2) they do not; without two qualifying step sizes the ratio is NaN."""
    tanh = experiments.family_descent(problems.families["tanh"], problems.data["tanh"], problems.params0["tanh"],
                                      [0.02, 0.01], 2.0, torch.Generator().manual_seed(6))
    flow = experiments.flow_experiment(problems, ["tanh"], 2.0, 1e-9)
    assert experiments.convergence_steps(tanh) == [0.01, 0.02]
    assert 0.5 < experiments.descent_flow_gap(tanh, flow.trajectories["tanh"]) < 2.0
    assert experiments.descent_gap_to_flow(problems, "tanh", tanh, 2.0, 1e-9, [0.5, 0.5]) > 2.0
    one = experiments.family_descent(problems.families["tanh"], problems.data["tanh"], problems.params0["tanh"],
                                     [0.02], 2.0, torch.Generator().manual_seed(6))
    assert experiments.convergence_steps(one) == [] and np.isnan(experiments.descent_flow_gap(one, flow.trajectories["tanh"]))

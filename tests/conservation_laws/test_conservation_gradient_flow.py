"""Gradient flow preserves the invariants (Theorem ``prf:thm-conservation-laws-balancedness``)."""
from conservation_problem import small_problem
from stagewise.conservation_laws.gradient_flow import gradient_flow_study
from stagewise.conservation_laws.trajectory import max_drift


def test_gradient_flow_preserves_invariants_to_solver_tolerance():
    """Theorem Balancedness (two-layer ReLU, Corollary ``prf:thm-conservation-laws-relu``): drift below 100 x rtol."""
    family, data, params = small_problem("relu", seeds=1)
    for rtol in (1e-6, 1e-10):
        flow = gradient_flow_study(family, data, params, 2.0, rtol, n_records=4)
        assert max_drift(flow.invariants[:, 0]).max() < 100 * rtol


def test_gradient_scale_breaks_the_law_or_slows_the_flow():
    """``gradient_scale``: halving one layer's gradient breaks the law; halving all of them is the flow of
    ``L / 2``, the same path at half speed (its state at t = 2 is the flow's at t = 1)."""
    family, data, params = small_problem("relu", seeds=1)
    broken = gradient_flow_study(family, data, params, 1.0, 1e-10, n_records=4, gradient_scale=[1.0, 0.5])
    assert max_drift(broken.invariants[:, 0]).max() > 1e-4
    slow = gradient_flow_study(family, data, params, 2.0, 1e-11, n_records=2, gradient_scale=[0.5, 0.5])
    fast = gradient_flow_study(family, data, params, 1.0, 1e-11, n_records=1)
    for a, b in zip(slow.states[-1], fast.states[-1]):
        assert (a - b).abs().max() < 1e-8

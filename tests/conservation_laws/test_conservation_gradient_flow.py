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

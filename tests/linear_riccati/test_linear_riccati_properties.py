"""Properties of the Riccati closed form (Theorem C.12) on random singular values, scales and times (Hypothesis).

Agreement with a plain reference (the scalar ODE sigma' = 2 sqrt(gamma^2 + sigma^2)(s - sigma) integrated by DOP853),
the scaling law of the flow (s, gamma, t) -> (c s, c gamma, t / c) multiplies sigma_beta by c, the exact half-time,
and the shape of a learning curve (zero at t = 0, increasing, below s). Controls: the paper's printed form is the
same function where it is well conditioned; a wrong exponent (exp(-root t) instead of exp(-2 root t)) fails the ODE.
"""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from properties import SCIENCE
from stagewise.linear_riccati import riccati

S = st.floats(0.05, 20.0)
GAMMA = st.floats(1e-3, 10.0)
TIMES = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=5)


@SCIENCE
@given(s=S, gamma=GAMMA, fractions=TIMES)
def test_the_closed_form_solves_the_scalar_flow(s, gamma, fractions):
    horizon = 4 * riccati.half_time(s, gamma)
    times = np.unique(np.append(np.asarray(fractions) * horizon, horizon))   # increasing, ending at the horizon
    reference = riccati.sigma_beta_ode(s, gamma, times)
    np.testing.assert_allclose(riccati.sigma_beta(s, gamma, times), reference, rtol=1e-8, atol=1e-12 * s)


def _wrong_exponent(s, gamma, t):
    """The closed form with E = exp(-root t): the right form at half the time."""
    return riccati.sigma_beta(s, gamma, np.asarray(t) / 2)


def test_control_a_wrong_exponent_does_not_solve_the_flow():
    s, gamma = 2.0, 0.3
    times = np.linspace(0, 4 * riccati.half_time(s, gamma), 9)[1:]
    assert np.max(np.abs(_wrong_exponent(s, gamma, times) - riccati.sigma_beta_ode(s, gamma, times))) > 0.1 * s


@SCIENCE
@given(s=S, gamma=GAMMA, t=st.floats(0.0, 50.0), c=st.floats(0.1, 10.0))
def test_scaling_law_of_the_flow(s, gamma, t, c):
    np.testing.assert_allclose(riccati.sigma_beta(c * s, c * gamma, t / c), c * riccati.sigma_beta(s, gamma, t),
                               rtol=1e-10, atol=1e-300)


@SCIENCE
@given(s=S, gamma=GAMMA)
def test_the_half_time_is_where_sigma_reaches_half_of_s(s, gamma):
    np.testing.assert_allclose(riccati.sigma_beta(s, gamma, riccati.half_time(s, gamma)), s / 2, rtol=1e-10)


@SCIENCE
@given(s=S, gamma=GAMMA, fractions=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=8, unique=True))
def test_a_learning_curve_starts_at_zero_increases_and_stays_below_s(s, gamma, fractions):
    times = np.sort(np.asarray(fractions)) * 6 * riccati.half_time(s, gamma)
    sigma = riccati.sigma_beta(s, gamma, times)
    assert riccati.sigma_beta(s, gamma, 0.0) == 0.0
    assert np.all(np.diff(sigma) >= -1e-12 * s) and np.all(sigma <= s * (1 + 1e-12))


@SCIENCE
@given(s=st.floats(0.5, 5.0), gamma=st.floats(0.1, 5.0), t=st.floats(0.01, 5.0))
def test_the_printed_form_agrees_where_it_is_well_conditioned(s, gamma, t):
    np.testing.assert_allclose(riccati.sigma_beta_paper(s, gamma, t), riccati.sigma_beta(s, gamma, t), rtol=1e-7)

"""Tests of stagewise.relu_orthogonal.diagnostics: Measurements against Algorithm 1 (Theorem 2's 1/log rate, the predicted error scales)."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import algorithm, diagnostics


def hand_example():
    # n = 3 points, 2 positive neurons: neuron 0 active on {0, 1}, neuron 1 on {1, 2}
    y = np.array([3.0, 4.0, 1.0])
    s = np.array([1.0, 1.0])
    M = np.array([[1, 0], [1, 1], [0, 1]], bool)
    return y, s, M


def test_extrapolation_recovers_intercept():
    """Theorem 2's 1/log(1/lambda) rate: the extrapolation t = t0 + C/log(1/lambda) recovers t0 and C."""
    Ls = np.array([50.0, 100.0, 200.0])
    t0, C = diagnostics.extrapolate(Ls, 3.0 + 40.0 / Ls)
    assert t0 == pytest.approx(3.0) and C == pytest.approx(40.0)


def test_error_scales_are_powers_of_lambda():
    """Theorem 2 / Eq. (15) tolerances: the predicted plateau and norm error scales are powers of lambda set by Algorithm 1's exponents."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s)
    a, b = diagnostics.plateau_error_scale(lp, 50.0), diagnostics.plateau_error_scale(lp, 100.0)
    assert a.shape == (lp.K,) and np.all(b <= a) and np.all((0 <= b) & (b <= 1))
    # the first plateau's scale is lambda^{2 min tau} at the midpoint t_1 / 2
    tau = lp.exponents(np.array([lp.times[0] / 2]))[0]
    assert a[0] == pytest.approx(np.exp(-2 * 50.0 * tau.min()))
    assert diagnostics.norm_error_scale(lp, 100.0) == pytest.approx(diagnostics.norm_error_scale(lp, 50.0) ** 2)

"""The shared fits (stagewise.numerics.fits): exact on the laws they are built to read."""
import math

import numpy as np
import pytest

from stagewise.numerics import fits


def test_loglog_slope_recovers_a_power_law_and_rejects_another():
    x = np.geomspace(1e-3, 1.0, 12)
    assert fits.loglog_slope(x, 3.0 * x ** 1.5) == pytest.approx(1.5, abs=1e-12)
    assert abs(fits.loglog_slope(x, np.exp(x)) - 1.5) > 0.5  # not a power law with that exponent


@pytest.mark.parametrize("order", [1, 2])
def test_inverse_log_fit_recovers_limit_and_coefficients(order):
    """The 1/log(1/scale) extrapolation of Algorithm 1's stage times and Theorem 2's jump times."""
    log_inv = np.array([25.0, 50.0, 100.0, 200.0, 400.0])
    coef = [2.0, -3.0, 5.0][:order + 1]
    values = sum(c / log_inv ** j for j, c in enumerate(coef))
    assert fits.inverse_log_fit(log_inv, values, order) == pytest.approx(coef, rel=1e-9, abs=1e-9)


def test_first_crossing_interpolates_and_says_never():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    assert fits.first_crossing(t, [0.0, 0.2, 0.6, 1.0], 0.4) == pytest.approx(1.5)
    assert fits.first_crossing(t, [0.5, 0.6, 0.7, 0.8], 0.4) == 0.0
    assert math.isnan(fits.first_crossing(t, [0.0, 0.1, 0.2, 0.3], 0.4))

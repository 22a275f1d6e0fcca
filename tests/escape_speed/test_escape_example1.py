"""Tests of Proposition "Example 1" with the solver and gradient descent (``stagewise.escape_speed.example1_rank_one``,
``example1_widths``, ``width_trend``)."""
import math

import numpy as np
import torch

from stagewise.escape_speed import example1_rank_one, example1_widths, problems, width_trend

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_rank_one_scan():
    """Proposition "Example 1" (a), (b): Eq. (6) on the grid, best speed sqrt(2) - 1 at a multiple of pi/4, 1/2."""
    scan = example1_rank_one.rank_one_scan(*problems.example1_data(), n_angles=2001)
    assert scan.eq6_gap < 1e-12 and abs(scan.best_speed - example1_rank_one.RANK_ONE_SPEED) < 1e-12
    assert scan.angle_offset < 1e-9 and abs(scan.rank_two_speed - 0.5) < 1e-12


def test_grows_with_width():
    """The robust growth test used for Figs 2, 6 and for gradient descent."""
    widths = [1, 2, 4, 8]
    assert width_trend.grows_with_width(widths, np.array([0.0, 0.0, 0.2, 0.5]))
    assert not width_trend.grows_with_width(widths, np.array([0.5, 0.5, 0.2, 0.0]))
    assert not width_trend.grows_with_width([1, 2], np.array([0.0, 0.5]))          # needs three widths


def test_ascent_width_sweep_and_power_iteration():
    """Proposition "Closed forms" (iv): width-1 ascent never beats sqrt(2) - 1; the fixed point mostly fails."""
    X, G = problems.example1_data()
    sw = example1_widths.ascent_width_sweep(X, G, [1, 8], 6, 300, 0.1, 1e-4, gen(1))
    assert sw.width1_excess <= 1e-12 and sw.best <= 0.5 + 1e-9
    assert sw.fractions.shape == (2,) and sw.fractions[0] == 0.0
    assert sw.runs[8].trace.shape == (301, 6)
    f = example1_widths.power_iteration_failure(X, G, 8, 8, 30, 10, gen(2))
    assert 0.0 <= f <= 1.0


def test_gd_success_summary():
    """Proposition "Example 1" with gradient descent: width 1 stays below sqrt(2) - 1, offsets are small."""
    X, G = problems.example1_data()
    r = example1_widths.gd_success(X, G, [1, 4], 6, 1e-3, 0.01, gen(3))
    assert r.width1_excess <= 1e-12 and r.offset < 0.0125 and r.best <= 0.5 + 1e-9
    assert r.fractions.shape == (2,) and r.fractions[0] == 0.0
    assert math.isnan(r.half_gap) or 0 <= r.half_gap < 0.5 - example1_rank_one.RANK_ONE_SPEED

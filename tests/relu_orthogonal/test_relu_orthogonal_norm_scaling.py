"""Tests of stagewise.relu_orthogonal.norm_scaling: Eq. (15), its sandwich and Theorem 3's norm-versus-n study,
small."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import norm_scaling


def test_norm_vs_n_small():
    """Eq. (15) sandwich holds in every draw; ratio to the optimum between 1 and 1 + sqrt(2)."""
    sc = norm_scaling.norm_vs_n(1, 10, 3)
    assert sc.ns.tolist() == [16, 32, 64, 128, 256, 512, 1024] and all(sc.sandwich_ok)
    assert np.all((sc.ratio >= 1) & (sc.ratio <= 1 + np.sqrt(2)))
    assert 0.3 < sc.slope_alg < 0.8 and sc.slope_opt == pytest.approx(0.5, abs=0.1)
    assert sc.bound.shape == (7, 3) and np.all(sc.split_bound >= sc.bound * (1 - 1e-12))


def test_theorem3_growth_separates_sqrt_n_from_sqrt_n_log_n():
    """Thm thm-relu-orthogonal-sqrtn with bounded labels: the growth exponent in ln n at the top of [2^12, 2^14] is
    below 1/4, the equal-split interpolator's (norm ~ sqrt(n ln n)) above it; the ratio to the optimum lies in
    [1, 1 + sqrt 2] and the control's does not; the window's name is built from the parameter."""
    assert norm_scaling.fit_window_name(14) == "n in [2^12, 2^14]"
    sc = norm_scaling.norm_vs_n(3, 14, 10, "bounded")
    assert norm_scaling.bound_growth(sc) < norm_scaling.GROWTH_TOL < norm_scaling.split_growth(sc)
    assert 1 <= sc.ratio.max() <= norm_scaling.HALVING_LIMIT < norm_scaling.max_split_ratio(sc)


def test_growth_in_log_n_exact_on_powers_of_ln_n():
    """The growth exponent of (ln n)^p is p, with zero spread when the draws agree."""
    ns = 2 ** np.arange(10, 15)
    vals = np.repeat((np.log(ns) ** 0.5)[:, None], 3, axis=1)
    e, se = norm_scaling.growth_in_log_n(ns, vals)
    assert e == pytest.approx(0.5, rel=1e-12) and se == pytest.approx(0.0, abs=1e-12)

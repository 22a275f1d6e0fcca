"""Tests of stagewise.relu_orthogonal.coverage: Coverage probability (Proposition 2, prop-relu-orthogonal-coverage)."""
import itertools
import math

import numpy as np
import pytest

from stagewise.relu_orthogonal import coverage, data


def test_coverage_exact_matches_enumeration():
    """Proposition 2: the exact coverage probability equals brute-force enumeration and dominates both union bounds."""
    m, y = 3, np.array([1.0, 2.0, -1.0])
    total = 0.0
    for signs in itertools.product([1, -1], repeat=m):
        for bits in itertools.product([0, 1], repeat=m * len(y)):
            act = np.array(bits).reshape(len(y), m).astype(bool)
            M = act & ((np.array(signs)[None, :] * y[:, None]) > 0)
            total += M.any(axis=1).all()
    p_enum = total / (2 ** m * 2 ** (m * len(y)))
    assert coverage.coverage_exact(m, 2, 1) == pytest.approx(p_enum, rel=1e-12)
    for m in range(2, 30, 3):
        assert coverage.coverage_union_bound(m, 40) <= coverage.coverage_exact(m, 20, 20) + 1e-12
        assert coverage.assumption4_union_bound(m, 20, 20) <= coverage.coverage_union_bound(m, 40)


def test_coverage_monte_carlo_matches_sphere_draws():
    """Proposition 2: the bit-packed Monte Carlo equals drawing spherical w_j against orthonormal inputs, and both match the exact formula."""
    # the bit-packed simulation equals drawing w_j on the sphere against a random orthonormal X (d > n)
    rng = np.random.default_rng(1)
    n, m, d, trials = 12, 8, 20, 3000
    y = data.make_labels(n, "gaussian", rng)
    X = np.linalg.qr(rng.standard_normal((d, n)))[0]
    hits = 0
    for _ in range(trials):
        W = rng.standard_normal((m, d))
        s = rng.choice([-1.0, 1.0], size=m)
        M = ((s[None, :] * y[:, None]) > 0) & ((W @ X).T > 0)
        hits += M.any(axis=1).all()
    p_sphere = hits / trials
    p_exact = coverage.coverage_exact(m, int((y > 0).sum()), int((y < 0).sum()))
    p_bits = coverage.coverage_monte_carlo(m, y, trials, rng)
    sig = math.sqrt(p_exact * (1 - p_exact) / trials)
    assert abs(p_sphere - p_exact) < 4.5 * sig and abs(p_bits - p_exact) < 4.5 * sig


def test_half_coverage_threshold_near_two_log2n():
    """Proposition 2: the half-coverage width is about 2 log2 n."""
    for k in (6, 10, 14):
        mh = coverage.half_coverage_width(2 ** (k - 1), 2 ** (k - 1))
        assert 2 * k <= mh <= 2 * k + 4


def test_coverage_study_small():
    """Proposition 2 on a small grid: Monte Carlo within 4.5 standard errors of the formula, threshold slope ~ 2."""
    study = coverage.coverage_study(np.random.default_rng(3), 1000, ns=(16, 64), ms=np.arange(4, 30, 4),
                                    log2n=np.arange(4, 12))
    assert study.z_exact < 4.5 and study.z_bound < 4.5
    assert 1.7 <= study.threshold_slope <= 2.3
    # control: with output signs ignored, (1 - 2^-m)^n = 1/2 at m = -log2(1 - 2^(-1/n)), slope ~1 in log2 n,
    # outside the band; and the Monte Carlo rejects that formula
    log2n = np.arange(4, 12)
    wrong = np.polyfit(log2n, [-math.log2(1 - 2 ** (-1 / 2.0 ** k)) for k in log2n], 1)[0]
    assert not 1.7 <= wrong <= 2.3 and abs(wrong - 1) < 0.05
    assert coverage.z_signs_ignored(study) > 4.5
    assert set(study.mc) == {16, 64} and study.mc[16].shape == study.ms.shape


def test_the_monte_carlo_draws_every_sign_pattern():
    """Proposition 2's Monte Carlo (prop-relu-orthogonal-coverage) draws the output signs as m fair bits, every
    pattern included: with one neuron and one negative label, coverage needs s = -1 (the all-negative pattern) and
    an active neuron, probability 1/4 (the exact formula); a sampler that never draws the all-negative pattern
    gives 0."""
    rng = np.random.default_rng(0)
    p = coverage.coverage_monte_carlo(1, np.array([-1.0]), 40000, rng)
    assert coverage.coverage_exact(1, 0, 1) == 0.25
    assert abs(p - 0.25) < 5 * np.sqrt(0.25 * 0.75 / 40000)


def test_the_union_bound_statistic_is_one_sided():
    """The 'below the full union bound' statistic counts only Monte Carlo frequencies below the bound (in standard
    errors): where every frequency lies above its bound it is exactly 0, not the largest negative gap."""
    wst = coverage.weights_study(np.random.default_rng(1), 400, grid=((8, 10), (12, 20)))
    assert np.all(wst.full_mc >= wst.full_bound) and wst.z_full == 0.0

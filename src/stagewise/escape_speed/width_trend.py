"""Example 1's growth with width as statistics: Wilson and Newcombe intervals and the width-growth test.

The success fraction of the Example 1 sweeps (paper Figs 2 and 6; the paper's conjecture, Sec. 5) as binomial counts
per width: the Cochran-Armitage trend test over the informative widths (the forced ones left out), its slope per
doubling of the width with an interval; the same test *within* the two sides of the largest rise, so that a single
step (zero, then a plateau) is not growth (:func:`width_growth`); the success fraction at the widest width with its
Wilson interval, the verdicts the chapter's rows apply to them, and the text the prose shows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm, spearmanr

from stagewise.numerics.roundoff import roundoff

#: Widths below this cannot hold the rank-two construction of Eq. (2) (its W1 has 4 rows). Width 1 is rank one, so its
#: success fraction is 0 by Proposition "Closed forms" (iv); widths 2 and 3 reached at most sqrt(2) - 1 in 200
#: projected-ascent restarts each (seed 5). These points are forced and carry no information about a trend.
MIN_INFORMATIVE_WIDTH = 4
Z95 = float(norm.ppf(0.975))


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n`` (95% by default); ``(0, 1)`` for ``n = 0``."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(k1: int, n1: int, k2: int, n2: int, z: float = Z95) -> tuple[float, float, float]:
    """Difference ``k1/n1 - k2/n2`` of two proportions and its 95% interval by Newcombe's hybrid score method
    (method 10 of Newcombe 1998: the Wilson intervals of the two proportions combined)."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1, z)
    l2, u2 = wilson(k2, n2, z)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


@dataclass
class WidthTrend:
    """"The success fraction grows with width" as a trend test over the informative widths only (Cochran-Armitage)."""
    widths: list[int]            # informative widths (>= the smallest width tested), increasing
    successes: list[int]         # successful runs per width
    trials: list[int]            # runs per width
    slope: float                 # least-squares slope of the fraction per doubling of the width (weights: runs)
    lo: float                    # slope -+ 1.96 standard errors under "no trend" (pooled binomial variance): the
    hi: float                    # interval excludes 0 exactly when the one-sided trend test rejects at 2.5 %
    z: float                     # the Cochran-Armitage statistic

    @property
    def effect(self) -> float:
        return self.slope

    @property
    def value(self) -> list[float]:
        """``[slope, lower, upper]``: what the chapter's row records."""
        return [self.slope, self.lo, self.hi]

    @property
    def intervals(self) -> list[tuple[float, float]]:
        """95 % Wilson interval of the fraction at each width."""
        return [wilson(k, n) for k, n in zip(self.successes, self.trials)]


def width_trend(widths: list[int], successes: list[int], trials: list[int],
                min_width: int = MIN_INFORMATIVE_WIDTH) -> WidthTrend | None:
    """The growth of the success fraction with width, tested over the informative widths (``>= min_width``; the
    smaller ones are forced to zero and left out) by the Cochran-Armitage trend test with score ``log2(width)``.

    The effect is the weighted least-squares slope of the fraction per doubling of the width; its interval is the
    slope -+ 1.96 standard errors computed with the pooled fraction (the variance under "no trend"), so the lower end
    is above 0 exactly when the one-sided test rejects "no growth" at 2.5 %. A flat, falling or saturated curve gives
    an interval that reaches 0. None with fewer than two informative widths. The fractions are binomial counts, so the
    binomial variance is the only noise."""
    order = sorted((w, k, n) for w, k, n in zip(widths, successes, trials) if w >= min_width and n > 0)
    if len(order) < 2:
        return None
    x = np.log2([w for w, _, _ in order])
    k = np.array([k for _, k, _ in order], dtype=float)
    n = np.array([n for _, _, n in order], dtype=float)
    xbar = float((n * x).sum() / n.sum())
    sxx = float((n * (x - xbar) ** 2).sum())
    p = float(k.sum() / n.sum())
    slope = float(((x - xbar) * k).sum() / sxx)           # sum n_i (x_i - xbar) p_i / sxx
    se0 = math.sqrt(p * (1 - p) / sxx)
    if se0 > 0:
        z = slope / se0
    else:                                                  # every run failed or every run succeeded: no trend
        z = 0.0
    return WidthTrend([w for w, _, _ in order], [int(v) for v in k], [int(v) for v in n], slope,
                      slope - Z95 * se0, slope + Z95 * se0, z)


@dataclass
class WidthGrowth:
    """"The success fraction grows with width" (the paper's Sec. 5 conjecture) as two trend tests over the informative
    widths: the Cochran-Armitage trend over all of them (:class:`WidthTrend`), and the same statistic *within* the two
    sides of the largest rise between neighbouring widths (a stratified trend test: each side keeps its own pooled
    fraction). A single step, zero up to some width and a plateau after it, passes the first test and fails the second:
    on each side of the step the fractions are flat. Growth is shown when both intervals lie above zero."""
    overall: WidthTrend
    split: int                   # the first width after the largest rise (the step the second test removes)
    within: float                # slope per doubling within the two sides of the split
    within_lo: float             # within -+ 1.96 standard errors under "no trend within the sides"
    within_hi: float

    @property
    def value(self) -> list[float]:
        """``[slope, lower, upper, within, within lower, within upper]``: what the chapter's row records."""
        return [*self.overall.value, self.within, self.within_lo, self.within_hi]


def width_growth(widths: list[int], successes: list[int], trials: list[int],
                 min_width: int = MIN_INFORMATIVE_WIDTH) -> WidthGrowth | None:
    """Growth with width that is more than a single step, over the widths ``>= min_width``; None with fewer than three.

    1. The Cochran-Armitage trend over all informative widths (:func:`width_trend`).
    2. Split the widths at the largest rise of the fraction between neighbours; within each side, the weighted slope
       of the fraction against ``log2(width)`` about that side's own mean, pooled over the two sides, with its
       standard error under "no trend within the sides" (each side's pooled binomial variance). A step at the split
       has no slope within its sides; growth that goes on past the step has one.
    """
    overall = width_trend(widths, successes, trials, min_width)
    if overall is None or len(overall.widths) < 3:
        return None
    x = np.log2(overall.widths)
    k, n = np.array(overall.successes, dtype=float), np.array(overall.trials, dtype=float)
    p = k / n
    j = int(np.argmax(np.diff(p)))                          # the largest rise: between widths j and j + 1
    num, sxx, var = 0.0, 0.0, 0.0
    for side in (slice(0, j + 1), slice(j + 1, None)):
        xs, ks, ns = x[side], k[side], n[side]
        if len(xs) < 2:
            continue
        xbar = float((ns * xs).sum() / ns.sum())
        s_side = float((ns * (xs - xbar) ** 2).sum())
        pool = float(ks.sum() / ns.sum())
        num += float(((xs - xbar) * ks).sum())
        sxx += s_side
        var += pool * (1 - pool) * s_side
    within = num / sxx
    se = math.sqrt(var) / sxx
    return WidthGrowth(overall, overall.widths[j + 1], within, within - Z95 * se, within + Z95 * se)


def growth_value(result, min_width: int = MIN_INFORMATIVE_WIDTH) -> list[float]:
    """:attr:`WidthGrowth.value` of :func:`width_growth` for a sweep (:class:`AscentSweep` or :class:`GDSuccess`):
    the chapter's growth row measures it on the sweep and on its step-shaped control; nan without three informative
    widths."""
    growth = width_growth(result.widths, result.successes, result.trials, min_width)
    return growth.value if growth is not None else [math.nan] * 6


def growth_shown(value: list[float]) -> bool:
    """The verdict on a :attr:`WidthGrowth.value`: growth is shown when the lower ends of both intervals (the trend
    over the informative widths, and the trend within the two sides of the largest rise) lie above zero. A flat,
    falling or noisy curve fails the first; a single step fails the second."""
    if len(value) != 6 or not all(math.isfinite(float(v)) for v in value):
        return False
    return bool(float(value[1]) > 0.0 and float(value[4]) > 0.0)  # exact: decision rules on intervals' ends


def growth_short(growth: WidthGrowth | None) -> str:
    """``"+0.01 [-0.03, +0.04], within the sides +0.00 [-0.09, +0.04]"``: both intervals, briefly, for the story."""
    if growth is None:
        return "not computed (fewer than three informative widths)"
    return (f"{growth.overall.slope:+.2f} [{growth.overall.lo:+.2f}, {growth.overall.hi:+.2f}] per doubling, within "
            f"the sides {growth.within:+.2f} [{growth.within_lo:+.2f}, {growth.within_hi:+.2f}]")


def growth_text(growth: WidthGrowth | None) -> str:
    """``"+0.12 [+0.05, +0.19] per doubling; within the sides of the rise at width 8: +0.01 [-0.10, +0.12]"``."""
    if growth is None:
        return "not computed (fewer than three informative widths)"
    return (f"{trend_text(growth.overall)}; within the two sides of the largest rise (at width {growth.split}): "
            f"{growth.within:+.2f} [{growth.within_lo:+.2f}, {growth.within_hi:+.2f}]")


def trend_value(result, min_width: int = MIN_INFORMATIVE_WIDTH) -> list[float]:
    """``[slope, lower, upper]`` of :func:`width_trend` for a sweep (:class:`AscentSweep` or :class:`GDSuccess`) over
    the widths ``>= min_width``; nan without two such widths."""
    trend = width_trend(result.widths, result.successes, result.trials, min_width)
    return trend.value if trend is not None else [math.nan] * 3


def trend_text(trend: WidthTrend | None) -> str:
    """``"+0.12 [+0.05, +0.19] per doubling"``: the slope and its interval, for the prose; "not computed" without a
    trend."""
    return ("not computed" if trend is None
            else f"{trend.slope:+.2f} [{trend.lo:+.2f}, {trend.hi:+.2f}] per doubling")


def widths_text(trend: WidthTrend | None) -> str:
    """Per informative width ``"w: k/n [lo, hi]"`` (95 % Wilson), for the prose."""
    if trend is None:
        return "not computed"
    return "; ".join(f"{w}: {k}/{n} [{lo:.2f}, {hi:.2f}]"
                     for w, k, n, (lo, hi) in zip(trend.widths, trend.successes, trend.trials, trend.intervals))


def trend_shown(value: list[float]) -> bool:
    """The verdict on a :attr:`WidthTrend.value`: growth is shown when the whole 95% interval of the effect lies
    above zero (a flat or falling curve, or one within its counting noise, is not)."""
    lower = float(value[1]) if len(value) == 3 else math.nan
    return bool(all(math.isfinite(float(v)) for v in value) and lower > 0.0)  # exact: the decision rule on an interval's end (a statistic, not a zero test)


def grows_with_width(widths: list[int], fractions: np.ndarray) -> bool:
    """The old "robust form" (two largest widths above the widths ``<= 2`` and a positive rank correlation), kept for
    the figures' captions and the benchmarks only: it passes a falling curve such as ``[0, 0, 0.9, 0.3, 0.1, 0.05]``
    because the forced zeros at widths 1 and 2 carry it. The chapter's verdict is :func:`width_trend`."""
    fractions = np.asarray(fractions, dtype=float)
    if len(widths) < 3:
        return False
    small = fractions[np.array(widths) <= 2]
    tol = roundoff(1.0, len(widths))
    if np.ptp(fractions) <= tol:
        return False
    rho = spearmanr(widths, fractions).statistic
    return bool(fractions[-2:].mean() > (small.mean() if len(small) else 0.0) + tol and rho > tol)


def counts_text(widths: list[int], counts: list[int], trials: list[int], min_width: int = 1) -> str:
    """``"1: 0/24, 2: 0/24, 4: 3/24"``: a count per width (the widths ``>= min_width``), for the prose."""
    return ", ".join(f"{w}: {k}/{n}" for w, k, n in zip(widths, counts, trials) if w >= min_width)


def fraction_text(value: list[float]) -> str:
    """``"0.44 [0.23, 0.67]"``: a fraction with its 95% interval (:func:`widest_fraction`), for the prose."""
    return f"{value[0]:.2f} [{value[1]:.2f}, {value[2]:.2f}]"


def widest_fraction(result) -> list[float]:
    """``[fraction, lower, upper]``: the success fraction at the largest width of a sweep with its 95% Wilson
    interval (the paper's conjecture in its strong form: with enough width, gradient descent finds the faster escape)."""
    i = result.widths.index(max(result.widths))
    k, n = result.successes[i], result.trials[i]
    return [k / n, *wilson(k, n)]


def majority_shown(value: list[float]) -> bool:
    """The verdict on :func:`widest_fraction`: most runs succeed, the whole interval above 1/2."""
    return bool(len(value) == 3 and math.isfinite(float(value[1])) and float(value[1]) > 0.5)

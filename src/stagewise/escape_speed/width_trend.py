"""Example 1's growth with width as statistics: Wilson and Newcombe intervals and the width-trend test.

The success fraction of the Example 1 sweeps (paper Figs 2 and 6; the paper's conjecture, Sec. 5) as binomial counts
per width: the Cochran-Armitage trend test over the informative widths (the forced ones left out), its slope per
doubling of the width with an interval, the success fraction at the widest width with its Wilson interval, the
verdicts the chapter's rows apply to them, and the text the prose shows.
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


def widest_fraction(result) -> list[float]:
    """``[fraction, lower, upper]``: the success fraction at the largest width of a sweep with its 95% Wilson
    interval (the paper's conjecture in its strong form: with enough width, gradient descent finds the faster escape)."""
    i = result.widths.index(max(result.widths))
    k, n = result.successes[i], result.trials[i]
    return [k / n, *wilson(k, n)]


def majority_shown(value: list[float]) -> bool:
    """The verdict on :func:`widest_fraction`: most runs succeed, the whole interval above 1/2."""
    return bool(len(value) == 3 and math.isfinite(float(value[1])) and float(value[1]) > 0.5)

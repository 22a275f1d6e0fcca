"""The finite-alpha correction of Algorithm 1's stage times (derived in this book, not in the paper).

At finite ``alpha`` the log-scale variable starts at ``b^0 = log_alpha(alpha (u_0 + v_0))``, not 1, and a
coordinate with ``g_i < 0`` becomes active when ``u_i - v_i = c_i / w_i`` reaches order one, i.e. at
``b_i = log_alpha c_i`` with ``c_i = alpha^2 (u_{0,i}^2 - v_{0,i}^2)``, not at 2.  Running Algorithm 1 with
both shifted thresholds removes every dependence of the stage times on the direction ``theta_0`` to first order
in ``x = 1/log(1/alpha)``.  What remains is the ``theta_0``-independent offset between "the new weight is of
order one" and the transition detector (:func:`closed_forms.orthogonal_transition_times` gives it in closed
form for ``Sigma = I``).  Shifting ``b^0`` alone fixes only the coordinates
that switch on with ``g_i > 0``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stagewise.diagonal_incremental.algorithm import algorithm1
from stagewise.diagonal_incremental.flow import log_scale_flow, normalize_init
from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.diagonal_incremental.relaxation import relaxation_numbers
from stagewise.diagonal_incremental.staircase import FlowStudy
from stagewise.diagonal_incremental.transitions import measured_times


def log_scale_thresholds(u0: np.ndarray, v0: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(b^0, b_hi)`` at finite alpha: ``b^0 = 1 - x log(u_0 + v_0)`` and ``b_hi = 2 - x log(u_0^2 - v_0^2)``
    after the normalisation of :func:`flow.normalize_init` (both tend to 1 and 2 as ``alpha -> 0``)."""
    un, vn = normalize_init(u0, v0)
    x = 1.0 / math.log(1.0 / alpha)
    return 1.0 - x * np.log(un + vn), 2.0 - x * np.log(un ** 2 - vn ** 2)


def predicted_times(model: DiagonalModel, u0: np.ndarray, v0: np.ndarray, alpha: float, correction: str,
                    device=None, base: list | None = None) -> np.ndarray | None:
    """Algorithm 1's ``T_k`` with ``correction`` in ``{"none", "b0", "full"}`` (no shift, ``b^0`` only, ``b^0``
    and ``b_hi``); ``None`` if the corrected race picks another stage order than the uncorrected one.
    ``base``: the uncorrected stages if already computed (they do not depend on ``u0, v0, alpha``)."""
    if correction not in ("none", "b0", "full"):
        raise ValueError(f"correction must be 'none', 'b0' or 'full', got {correction!r}")
    b0, b_hi = log_scale_thresholds(u0, v0, alpha)
    base = base if base is not None else algorithm1(model, device=device)
    stages = base if correction == "none" else algorithm1(
        model, b0=b0, b_hi=b_hi if correction == "full" else None, device=device)
    if [s.coordinate for s in stages] != [s.coordinate for s in base]:
        return None
    return np.array([s.T for s in stages[1:]])


@dataclass
class FiniteAlphaStudy:
    """Misses ``tau_k - T_k^pred`` at one alpha for two initialization directions (rows) and each correction."""

    alpha: float
    misses: dict            # correction -> (2, K) array, NaN rows where the stage order changed (or a
                            # transition was not measured: then the spread is NaN, which no tolerance accepts)
    resolved: np.ndarray | None = None   # stages whose previous plateau has relaxed before they start
    order_kept: bool = True              # every corrected race keeps Algorithm 1's stage order
    n_settled_first: int = 0             # stages settled for the first direction alone

    @property
    def x(self) -> float:
        return 1.0 / math.log(1.0 / self.alpha)

    def largest_miss(self, correction: str) -> float:
        """Largest ``|tau_k - T_k^pred|`` for the first direction."""
        return float(np.abs(self.misses[correction][0]).max())

    def spread(self, correction: str) -> float:
        """Largest change of the miss between the two directions: zero to first order in ``x`` exactly when
        the correction captures all of the ``theta_0`` dependence."""
        m = self.misses[correction]
        ok = self.resolved if self.resolved is not None else np.ones(m.shape[1], bool)
        change = np.abs(m[0] - m[1])[ok]
        return float(change.max()) if change.size else math.nan     # no stage resolved: nothing to compare


#: How far below ``x^2`` (the order of the terms the correction neglects, and the check's tolerance) the
#: distance to each plateau must have relaxed: a plateau that is off by ``x^2`` can alone move a miss by the
#: whole tolerance, one that is off by a tenth of it cannot.
SETTLED_MARGIN = 10.0


def settled_stages(rates: np.ndarray, T: np.ndarray, times: np.ndarray, alpha: float, last_end: float = math.inf,
                   margin: float = SETTLED_MARGIN) -> np.ndarray:
    """The stages ``k = 1..K`` whose first-order correction can be held to ``x^2`` at ``alpha``: every plateau
    ``j = 1..k`` has relaxed to ``x^2 / margin`` before it ends, ``(T_{j+1} - tau_j) log(1/alpha) r_j >=
    log(margin / x^2)`` (``tau_j`` the measured transitions at ``alpha``, ``r_j`` the relaxation rates, the last
    plateau ending at ``last_end``). The race of stage ``k`` runs its clocks across all earlier plateaus, so the
    test is cumulative: one unsettled plateau takes every later stage out."""
    x = 1.0 / math.log(1.0 / alpha)
    starts = np.concatenate([[0.0], np.asarray(times, float)])
    ends = np.concatenate([np.asarray(T, float), [last_end]])
    settled = relaxation_numbers(np.asarray(rates), starts, ends, alpha) >= math.log(margin / x ** 2)
    return np.logical_and.accumulate(settled[1:])


def alpha_candidates(rates: np.ndarray, fs: FlowStudy, times: np.ndarray) -> list[int]:
    """Columns of ``fs.alphas`` in the order the finite-alpha study tries them: first the alphas at which every
    stage of ``fs``'s direction is settled with a further factor 10 to spare (:func:`settled_stages` with margin
    ``10 SETTLED_MARGIN``: the second direction, not yet simulated, starts from other offsets), largest first (the
    first-order effect is largest there), then the others by their number of such stages (smaller alpha first)."""
    last_end = fs.plateau_end if fs.breakdown is not None else math.inf
    n = [int(settled_stages(rates, fs.T, times[j], fs.alphas[j], last_end, 10 * SETTLED_MARGIN).sum())
         for j in range(len(fs.alphas))]
    return sorted(range(len(fs.alphas)), key=lambda j: (-n[j], -fs.alphas[j] if n[j] == fs.K else fs.alphas[j]))


def finite_alpha_study(model: DiagonalModel, fs: FlowStudy, times: np.ndarray, u0_alt: np.ndarray,
                       v0_alt: np.ndarray, rtol: float, device="cpu", rates: np.ndarray | None = None,
                       j: int | None = None) -> FiniteAlphaStudy:
    """At one simulated alpha (column ``j``; by default the first of :func:`alpha_candidates` at which the second
    direction is settled on the same stages, or the largest alpha without ``rates``): the measured transition
    times ``times[j]`` of ``fs`` and those of a second direction ``theta_0' = (u0_alt, v0_alt)`` (one extra exact
    flow), against Algorithm 1 with no correction, with ``b^0`` shifted, and with both thresholds shifted.

    The correction is first order in ``x = 1/log(1/alpha)``: it assumes the flow has settled on each plateau
    before the next stage starts. With the plateaus' relaxation ``rates`` (``relaxation.relaxation_rates``) only
    the stages :func:`settled_stages` admits enter :meth:`FiniteAlphaStudy.spread`."""
    if j is None and rates is not None:          # the first candidate, or the second if the second direction
        order = alpha_candidates(rates, fs, times)     # settles on fewer stages there
        first = finite_alpha_study(model, fs, times, u0_alt, v0_alt, rtol, device, rates, order[0])
        if first.resolved.sum() >= first.n_settled_first or len(order) == 1:
            return first
        second = finite_alpha_study(model, fs, times, u0_alt, v0_alt, rtol, device, rates, order[1])
        return max((first, second), key=lambda st: (int(st.resolved.sum()), -st.alpha))
    if j is None:
        j = int(np.argmax(fs.alphas))
    alpha = float(fs.alphas[j])
    flow_alt = log_scale_flow(model, [alpha], u0_alt, v0_alt, fs.tau, rtol=rtol, device=device)
    alt = FlowStudy([alpha], u0_alt, v0_alt, fs.stages, fs.tau, flow_alt)
    measured = np.stack([times[j], measured_times(model, alt)[0]])
    misses, kept = {}, True
    for corr in ("none", "b0", "full"):
        rows = [predicted_times(model, u, v, alpha, corr, device, fs.stages) for u, v in ((fs.u0, fs.v0), (u0_alt, v0_alt))]
        kept = kept and (corr != "full" or all(r is not None for r in rows))
        misses[corr] = np.stack([m - p if p is not None else np.full(fs.K, np.nan) for m, p in zip(measured, rows)])
    resolved = None
    if rates is not None:
        last_end = fs.plateau_end if fs.breakdown is not None else math.inf
        first = settled_stages(rates, fs.T, times[j], alpha, last_end)
        resolved = first & settled_stages(rates, fs.T, measured[1], alpha, last_end)
        return FiniteAlphaStudy(alpha, misses, resolved, kept, int(first.sum()))
    return FiniteAlphaStudy(alpha, misses, resolved, kept)


def correction_spread(study: FiniteAlphaStudy, correction: str) -> float:
    """:meth:`FiniteAlphaStudy.spread` of ``correction``: the change of the misses between the two directions
    with the full correction, or, as the control, without any (``"none"``: Algorithm 1's ``T_k``)."""
    return study.spread(correction)

"""The finite-alpha correction of Algorithm 1's stage times (derived in this book, not in the paper).

At finite ``alpha`` the log-scale variable starts at ``b^0 = log_alpha(alpha (u_0 + v_0))``, not 1, and a
coordinate with ``g_i < 0`` becomes active when ``u_i - v_i = c_i / w_i`` reaches order one, i.e. at
``b_i = log_alpha c_i`` with ``c_i = alpha^2 (u_{0,i}^2 - v_{0,i}^2)``, not at 2.  Running Algorithm 1 with
both shifted thresholds removes every dependence of the stage times on the direction ``theta_0`` to first order
in ``x = 1/log(1/alpha)``.  What remains is the ``theta_0``-independent offset between "the new weight is of
order one" and the transition detector (:func:`closed_forms.orthogonal_transition_times` gives it in closed
form for ``Sigma = I``).  Shifting ``b^0`` alone (the research note's proposal) fixes only the coordinates
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


def finite_alpha_study(model: DiagonalModel, fs: FlowStudy, times: np.ndarray, u0_alt: np.ndarray,
                       v0_alt: np.ndarray, rtol: float, device="cpu", rates: np.ndarray | None = None
                       ) -> FiniteAlphaStudy:
    """At the largest simulated alpha: the measured transition times ``times[j_max]`` of ``fs`` and those of a
    second direction ``theta_0' = (u0_alt, v0_alt)`` (one extra exact flow), against Algorithm 1 with no
    correction, with ``b^0`` shifted, and with both thresholds shifted.

    The correction is first order in ``x = 1/log(1/alpha)``: it assumes the flow has settled on plateau
    ``k - 1`` before stage ``k`` starts. With the plateaus' relaxation ``rates`` (``relaxation.relaxation_rates``)
    only stages ``k`` whose previous plateau has relaxed to ``x^2`` by ``T_k`` (``(T_k - tau_{k-1}) log(1/alpha)
    r_{k-1} >= log(1/x^2)``) and whose own plateau has by ``T_{k+1}`` (else the next transition overlaps the
    detector's crossing) enter :meth:`FiniteAlphaStudy.spread`."""
    j_max = int(np.argmax(fs.alphas))
    alpha = float(fs.alphas[j_max])
    flow_alt = log_scale_flow(model, [alpha], u0_alt, v0_alt, fs.tau, rtol=rtol, device=device)
    alt = FlowStudy([alpha], u0_alt, v0_alt, fs.stages, fs.tau, flow_alt)
    measured = np.stack([times[j_max], measured_times(model, alt)[0]])
    misses, kept = {}, True
    for corr in ("none", "b0", "full"):
        rows = [predicted_times(model, u, v, alpha, corr, device, fs.stages) for u, v in ((fs.u0, fs.v0), (u0_alt, v0_alt))]
        kept = kept and (corr != "full" or all(r is not None for r in rows))
        misses[corr] = np.stack([m - p if p is not None else np.full(fs.K, np.nan) for m, p in zip(measured, rows)])
    resolved = None
    if rates is not None:       # plateau k-1 settled before T_k, and plateau k before the next stage starts
        need = math.log(math.log(1.0 / alpha) ** 2)
        starts = np.concatenate([[0.0], times[j_max]])
        ends = np.concatenate([fs.T, [fs.plateau_end if fs.breakdown is not None else math.inf]])
        settled = relaxation_numbers(np.asarray(rates), starts, ends, alpha) >= need
        resolved = settled[:-1] & settled[1:]
    return FiniteAlphaStudy(alpha, misses, resolved, kept)


def correction_spread(study: FiniteAlphaStudy, correction: str) -> float:
    """:meth:`FiniteAlphaStudy.spread` of ``correction``: the change of the misses between the two directions
    with the full correction, or, as the control, without any (``"none"``: Algorithm 1's ``T_k``)."""
    return study.spread(correction)

"""Theorem 4.1 on the plateaus: the flow's loss, weights and ranks at the plateau midpoints against ``theta^k``.

:func:`plateau_study` reads losses, weights and ranks at the plateau midpoints of the exact flow (over the
plateaus resolved there, :mod:`.relaxation`); :func:`plateau_readout` the same on another trajectory (gradient
descent, the controls); :func:`entries_outside` the coordinates that switch on between two plateaus.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stagewise.diagonal_incremental import staircase
from stagewise.diagonal_incremental.algorithm import Stage
from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.diagonal_incremental.plateaus import count_plateaus, plateau_midpoints, support_counts
from stagewise.diagonal_incremental.relaxation import relaxation_numbers
from stagewise.diagonal_incremental.staircase import FlowStudy


@dataclass
class PlateauStudy:
    """Theorem 4.1 at the plateau midpoints ``mids`` (indices ``idx`` into ``tau``), at the smallest alpha,
    over the plateaus ``resolved`` there (see :func:`relaxation_numbers`; all when no rates were given)."""

    mids: np.ndarray
    idx: list
    n_plateaus: int
    loss_err: float
    beta_err: float
    ranks_sim: np.ndarray
    ranks_alg: np.ndarray
    ranks_tau: np.ndarray
    resolved: np.ndarray | None = None
    relax: np.ndarray | None = None

    @property
    def staircase(self) -> bool:
        """Simulated ranks equal Algorithm 1's on every resolved plateau and grow by at most one per stage."""
        ok = self.resolved if self.resolved is not None else np.ones(len(self.ranks_alg), bool)
        return bool(np.array_equal(self.ranks_sim[ok], self.ranks_alg[ok])
                    and np.abs(np.diff(self.ranks_alg.sum(1))).max(initial=0) <= 1)

    @property
    def unresolved(self) -> list[int]:
        return [] if self.resolved is None else [int(k) for k in np.flatnonzero(~self.resolved)]


def plateau_study(fs: FlowStudy, d: int, rates: np.ndarray | None = None, times: np.ndarray | None = None,
                  tol: float = 1e-4) -> PlateauStudy:
    """Loss (relative to ``L(0)``) and weights at plateau midpoints against ``theta^k``, and the ranks of
    ``W_K W_Q^T``, ``W_V W_O^T`` (Example 3.2); plateaus counted independently of Algorithm 1, up to the
    midpoint of the last plateau the theorem covers when a hypothesis fails at a later stage.

    With ``rates`` (:func:`relaxation_rates`) and the measured transition ``times`` at the smallest alpha,
    only plateaus relaxed to ``tol`` at their midpoint (``relaxation_numbers >= log(1/tol)``) are compared."""
    mids = plateau_midpoints(fs.T, fs.plateau_end)
    idx = [int(np.argmin(np.abs(fs.tau - m))) for m in mids]
    loss = fs.flow["loss"][:, fs.j_min]
    upto = len(fs.tau) if fs.breakdown is None else idx[-1] + 1
    beta = fs.beta_min
    ranks_alg = np.array([[np.sum(s.support < d), np.sum(s.support >= d)] for s in fs.stages])
    relax = resolved = None
    ok = np.ones(len(mids), bool)
    if rates is not None:
        relax = relaxation_numbers(rates, np.concatenate([[0.0], times]), mids, float(min(fs.alphas)))
        ok = resolved = relax >= math.log(1.0 / tol)
    sel = [k for k in range(len(mids)) if ok[k]]
    return PlateauStudy(
        mids, idx, count_plateaus(fs.tau[:upto], loss[:upto], fs.levels),
        float(max(abs(loss[idx[k]] - fs.levels[k]) for k in sel) / fs.levels[0]),
        float(max(np.abs(beta[idx[k]] - fs.stages[k].beta).max() for k in sel)),
        support_counts(beta[idx], d), ranks_alg, support_counts(beta, d), resolved, relax)


@dataclass
class PlateauReadout:
    """Theorem 4.1's plateau observables read from another trajectory at ``fs``'s plateau midpoints."""

    loss_err: float
    beta_err: float
    staircase: bool


def plateau_readout(fs: FlowStudy, ps: PlateauStudy, tau: np.ndarray, loss: np.ndarray, beta: np.ndarray,
                    d: int) -> PlateauReadout:
    """The measures of :func:`plateau_study` (loss error relative to ``L(0)``, weight error, ranks equal to
    Algorithm 1's) on the trajectory ``(tau, loss, beta)``, over the same plateaus — the control runs them on
    gradient descent at a large alpha, where the theorem does not apply."""
    ok = ps.resolved if ps.resolved is not None else np.ones(len(ps.mids), bool)
    sel = [k for k in range(len(ps.mids)) if ok[k]]
    idx = [int(np.argmin(np.abs(tau - ps.mids[k]))) for k in sel]
    ranks = support_counts(beta[idx], d)
    return PlateauReadout(float(max(abs(loss[i] - fs.levels[k]) for i, k in zip(idx, sel)) / fs.levels[0]),
                          float(max(np.abs(beta[i] - fs.stages[k].beta).max() for i, k in zip(idx, sel))),
                          bool(np.array_equal(ranks, ps.ranks_alg[sel])))


# -- the measurements of the checks, as functions: the chapter applies each to its run and, as the row's
# -- control, to a modified run (GD at a large alpha, GD that starts below the support threshold)

def plateaus_match(tau: np.ndarray, loss: np.ndarray, levels) -> bool:
    """Theorem 4.1's plateau count on a loss curve: :func:`plateaus.count_plateaus` finds ``K + 1`` plateaus,
    ``levels`` Algorithm 1's ``K + 1`` plateau losses."""
    return bool(count_plateaus(tau, loss, levels) == len(levels))


def _readout(fs: FlowStudy, ps: PlateauStudy, gd, row: int, d: int) -> PlateauReadout:
    return plateau_readout(fs, ps, gd.tau[row], gd.loss[row], gd.beta[row], d)


def readout_loss_error(fs: FlowStudy, ps: PlateauStudy, gd, row: int, d: int) -> float:
    """The plateau-loss measure of :func:`plateau_study` on row ``row`` of a :class:`descent.DescentRun`."""
    return _readout(fs, ps, gd, row, d).loss_err


def readout_weight_error(fs: FlowStudy, ps: PlateauStudy, gd, row: int, d: int) -> float:
    """The plateau-weight measure of :func:`plateau_study` on row ``row`` of a :class:`descent.DescentRun`."""
    return _readout(fs, ps, gd, row, d).beta_err


def entries_outside(tau: np.ndarray, beta: np.ndarray, mids: np.ndarray, stages: list[Stage],
                    resolved: np.ndarray | None = None) -> float:
    """Theorem 4.1's ``supp(theta^{k+1}) minus supp(theta^k) <= {i_k}`` along a whole trajectory, not only at the
    plateaus: the largest ``|beta_j(tau)|`` over the records between the midpoints of plateaus ``k`` and
    ``k + 1`` and over the coordinates ``j`` outside ``supp(theta^k) + {i_k}``, for every transition whose two
    plateaus are ``resolved`` (all when ``None``). Below the support threshold ``1e-3``: no other coordinate
    switches on during a transition, not even for a while."""
    ok = np.ones(len(mids), bool) if resolved is None else np.asarray(resolved, bool)
    worst = 0.0
    for k in range(min(len(stages), len(mids)) - 1):
        if not (ok[k] and ok[k + 1]):
            continue
        window = (tau > mids[k]) & (tau <= mids[k + 1])
        others = np.setdiff1d(np.arange(beta.shape[-1]), np.append(stages[k].support, stages[k + 1].coordinate))
        if window.any() and others.size:
            worst = max(worst, float(np.abs(beta[window][:, others]).max()))
    return worst


def readout_entries_outside(fs: FlowStudy, ps: PlateauStudy, gd, row: int) -> float:
    """:func:`entries_outside` on row ``row`` of a :class:`descent.DescentRun` (the control: gradient descent at
    an initialization that starts below the support threshold but is not small)."""
    return entries_outside(gd.tau[row], gd.beta[row], ps.mids, fs.stages, ps.resolved)


def quiet_start_row(gd, alphas, threshold: float = 1e-3) -> int:
    """The row of the gradient-descent run ``gd`` with the largest alpha whose initial ``|beta|`` is below
    ``threshold`` everywhere (a run that does not start with entries counted as switched on); the smallest
    alpha when none does."""
    rows = [r for r in range(len(alphas)) if np.abs(gd.beta[r][0]).max() < threshold]
    if not rows:
        return int(np.argmin(alphas))
    return max(rows, key=alphas.__getitem__)


def plateau_weight_errors(model: DiagonalModel, fs: FlowStudy, ps: PlateauStudy, rtol: float | None = None
                          ) -> np.ndarray:
    """The plateau-weight measure of :func:`plateau_study`, ``max |beta(midpoint) - beta^k|``, per plateau at the
    smallest alpha (NaN where not resolved): on ``fs``'s flow, or (``rtol`` given) on a fresh exact flow
    integrated with tolerances ``rtol`` (``atol = 1e-3 rtol``). The change between the two is the solver's share
    of the error; what a tighter solve leaves is the flow's own distance to ``theta^k`` at finite alpha (about
    ``exp(-N_k)``, :func:`relaxation_numbers`)."""
    beta = fs.beta_min
    if rtol is not None:
        flow = staircase.log_scale_flow(model, [float(min(fs.alphas))], fs.u0, fs.v0, fs.tau, rtol=rtol,
                                        atol=1e-3 * rtol, device=model.device)
        beta = flow["beta"][:, 0, :]
    ok = ps.resolved if ps.resolved is not None else np.ones(len(ps.mids), bool)
    return np.array([float(np.abs(beta[ps.idx[k]] - fs.stages[k].beta).max()) if ok[k] else np.nan
                     for k in range(len(ps.mids))])

"""Theorem 4.1's transition times on the exact flow: ``tau_k(alpha) -> T_k`` as alpha -> 0.

:func:`transition_study` measures the transition times at every alpha and extrapolates them in
``1/log(1/alpha)`` (the finite-alpha correction is in :mod:`.finite_alpha`); the checks' measures:
:func:`time_error`, :func:`extrapolation_error`, the solver's share (:func:`flow_times`,
:func:`loose_solver_error`) and the memoryless race (:func:`memoryless_time_error`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stagewise.diagonal_incremental import staircase
from stagewise.diagonal_incremental.algorithm import algorithm1
from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.diagonal_incremental.plateaus import transition_times
from stagewise.diagonal_incremental.staircase import FlowStudy
from stagewise.numerics.fits import inverse_log_fit


@dataclass
class TransitionStudy:
    """Measured transition times ``times`` ``(len(alphas), K)`` and their fits ``[T, C_1, C_2]`` in
    ``x = 1/log(1/alpha)`` (Theorem 4.1: ``tau_k(alpha) -> T_k``); the extrapolation is held to the stages
    ``included`` (:meth:`settled_only`)."""

    T: np.ndarray
    x: np.ndarray
    times: np.ndarray
    fits: np.ndarray
    included: np.ndarray | None = None   # stages the extrapolation is held to (plateaus k-1 and k settled);
                                         # all when None

    @property
    def kept(self) -> np.ndarray:
        """Mask of the stages the extrapolation is held to."""
        return np.ones(len(self.T), bool) if self.included is None else np.asarray(self.included, bool)

    def settled_only(self, settled_plateaus) -> "TransitionStudy":
        """The same study held only to the stages ``k`` whose plateaus ``k - 1`` and ``k`` are both settled
        (``settled_plateaus``: one flag per plateau ``0..K``). An unsettled plateau is Theorem 4.1's
        ``alpha < alpha_0(t)`` failing at the simulated alphas: its crossing time is not yet on the
        ``1/log(1/alpha)`` law and its fit extrapolates a finite-alpha transient."""
        ok = np.asarray(settled_plateaus, bool)
        return TransitionStudy(self.T, self.x, self.times, self.fits, ok[:-1] & ok[1:])

    @property
    def complete(self) -> bool:
        """Every transition was found at every alpha."""
        return not np.isnan(self.times).any()

    @property
    def extrapolated(self) -> np.ndarray:
        return self.fits[:, 0]

    @property
    def rel_err_raw(self) -> np.ndarray:
        """``|tau_k - T_k| / T_k`` at the smallest alpha."""
        return np.abs(self.times[int(np.argmin(self.x))] - self.T) / self.T

    @property
    def rel_err_extrap(self) -> np.ndarray:
        return np.abs(self.extrapolated - self.T) / self.T

    @property
    def extrap_error(self) -> float:
        """``max_k |T_k^extrap - T_k| / T_k`` over the stages held to the extrapolation (NaN if none)."""
        err = self.rel_err_extrap[self.kept]
        return float(err.max()) if err.size else math.nan

    @property
    def extrapolation_uncertainty(self) -> float:
        """The extrapolation's own error estimate: ``max_k |T_k^extrap - T_k^extrap'| / T_k``, ``T^extrap'`` the same
        fit without the largest alpha (the point least in the asymptotic regime; one order lower when only two
        points are left). On a grid whose largest alpha is not yet asymptotic this is the size of the error."""
        keep = np.argsort(self.x)[:-1]                       # drop the largest x = the largest alpha
        order = min(self.fits.shape[1] - 1, keep.size - 1)
        drop = np.array([inverse_log_fit(1.0 / self.x[keep], self.times[keep, k], order)[0]
                         for k in range(len(self.T))])
        change = (np.abs(drop - self.extrapolated) / self.T)[self.kept]
        return float(change.max()) if change.size else math.nan

    @property
    def C_k(self) -> np.ndarray:
        """``(tau_k - T_k) log(1/alpha)`` at the smallest alpha."""
        return (self.times[int(np.argmin(self.x))] - self.T) / self.x.min()


def measured_times(model: DiagonalModel, fs: FlowStudy) -> np.ndarray:
    """Transition times ``(len(alphas), K)``: first crossing of each midpoint level, refined on the dense output."""
    flow = fs.flow
    return np.array([transition_times(fs.tau, flow["loss"][:, j], fs.levels,
                                      lambda t, j=j: float(model.loss(flow["dense"](t)[j:j + 1])[0]))
                     for j in range(len(fs.alphas))])


def transition_study(model: DiagonalModel, fs: FlowStudy, order: int = 2) -> TransitionStudy:
    """Transition times at every alpha (midpoint crossings refined on the dense output) and their
    least-squares fit ``T + C_1 x + C_2 x^2`` (``numerics.fits.inverse_log_fit``)."""
    times = measured_times(model, fs)
    log_inv = -np.log(np.asarray(fs.alphas, float))
    fits = np.array([inverse_log_fit(log_inv, times[:, k], order) for k in range(fs.K)])
    return TransitionStudy(fs.T, 1.0 / log_inv, times, fits)


# -- the measurements of the checks, as functions: the chapter applies each to its run and, as the row's
# -- control, to a modified run or theory (a memoryless race, a wrong exponent, a looser solver)

def time_error(times: np.ndarray, T_pred: np.ndarray, T: np.ndarray) -> float:
    """``max_k |times_k - T_pred_k| / T_k``: measured transition times against a prediction, relative to
    Algorithm 1's ``T_k`` (NaN when a transition is missing, which no tolerance accepts)."""
    return float(np.max(np.abs(np.asarray(times, float) - np.asarray(T_pred, float)) / np.asarray(T, float)))


def extrapolation_error(ts: TransitionStudy, power: float = 1.0, order: int = 2) -> float:
    """``max_k |T_k^extrap - T_k| / T_k`` with the times fitted as a polynomial of degree ``order`` in
    ``x^power``, ``x = 1/log(1/alpha)``: ``power = 1`` is the chapter's extrapolation
    (:attr:`TransitionStudy.rel_err_extrap`); ``power = 2`` the time scale with a wrong exponent (a fit in
    ``1/log(1/alpha)^2``, which cannot represent the measured ``C_1 x`` term)."""
    log_inv = (1.0 / ts.x) ** power
    extrap = np.array([inverse_log_fit(log_inv, ts.times[:, k], order)[0] for k in range(len(ts.T))])
    err = (np.abs(extrap - ts.T) / ts.T)[ts.kept]
    return float(err.max()) if err.size else math.nan


def flow_times(model: DiagonalModel, fs: FlowStudy, j: int, rtol: float, atol: float = 1e-10) -> np.ndarray:
    """Transition times (midpoint crossings refined on the dense output) of a fresh exact flow at
    ``fs.alphas[j]`` from ``fs``'s direction, integrated with the tolerances ``rtol``, ``atol``."""
    flow = staircase.log_scale_flow(model, [fs.alphas[j]], fs.u0, fs.v0, fs.tau, rtol=rtol, atol=atol,
                                    device=model.device)
    return np.array(transition_times(fs.tau, flow["loss"][:, 0], fs.levels,
                                     lambda t: float(model.loss(flow["dense"](t))[0])))


def loose_solver_error(model: DiagonalModel, fs: FlowStudy, reference: np.ndarray, j: int, rtol: float) -> float:
    """The solver-convergence measure (:func:`time_error` against the ``reference`` times of a tighter solve)
    for a flow integrated at ``rtol`` (and ``atol = 1e-3 rtol``): the control runs it 1000 times looser."""
    return time_error(flow_times(model, fs, j, rtol, 1e-3 * rtol), reference, fs.T)


def memoryless_time_error(model: DiagonalModel, ts: TransitionStudy) -> float:
    """The raw-time measure (:func:`time_error` at the smallest alpha) against a wrong theory, the control of
    the transition-time check: Algorithm 1 with a memoryless race (``algorithm1(memoryless=True)``: every
    stage restarts the clocks at ``b = 1``, as if each escape started from ``theta^0``). Relative to the
    memoryless times; NaN where that race has fewer stages."""
    T_ml = np.array([s.T for s in algorithm1(model, memoryless=True)[1:]])
    pred = np.full(len(ts.T), np.nan)
    m = min(len(T_ml), len(ts.T))
    pred[:m] = T_ml[:m]
    return time_error(ts.times[int(np.argmin(ts.x))], pred, pred)

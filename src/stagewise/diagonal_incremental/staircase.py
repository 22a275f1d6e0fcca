"""Theorem 4.1 measured on the exact flow: Algorithm 1's staircase against gradient flow at several alphas.

:func:`flow_study` runs Algorithm 1 and the exact log-scale flow; :func:`transition_study` measures and
extrapolates the transition times (the finite-alpha correction is in :mod:`.finite_alpha`);
:func:`plateau_study` reads losses, weights and ranks at plateau midpoints; :func:`log_scale_study` compares ``b = log_alpha(u + v)`` with Algorithm 1's piecewise-linear bookkeeping ``b^k`` (eq. 12).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.diagonal_incremental.algorithm import Breakdown, Stage, algorithm1
from stagewise.diagonal_incremental.flow import log_scale_flow, normalize_init
from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.diagonal_incremental.plateaus import (count_plateaus, plateau_midpoints, support_counts,
                                                     transition_times)
from stagewise.numerics.fits import inverse_log_fit


@dataclass
class FlowStudy:
    """Algorithm 1's stages and the exact flow (dict of :func:`flow.log_scale_flow`) on ``tau``.

    ``stages`` are the stages Theorem 4.1 covers on this instance; ``breakdown`` (or ``None``) the first one
    it does not (a hypothesis fails there, :class:`algorithm.Breakdown`)."""

    alphas: list
    u0: np.ndarray
    v0: np.ndarray
    stages: list[Stage]
    tau: np.ndarray
    flow: dict
    breakdown: Breakdown | None = None

    @property
    def plateau_end(self) -> float:
        """End of the last plateau the theorem describes: ``T_{K+1}`` of the broken stage, else ``tau_end``."""
        return float(self.breakdown.T) if self.breakdown is not None else self.tau_end

    @property
    def K(self) -> int:
        """Number of stages of Algorithm 1."""
        return len(self.stages) - 1

    @property
    def T(self) -> np.ndarray:
        """Algorithm 1's stage times ``T_1, ..., T_K`` (eq. 11)."""
        return np.array([s.T for s in self.stages[1:]])

    @property
    def levels(self) -> np.ndarray:
        """Plateau losses ``L(theta^0), ..., L(theta^K)``."""
        return np.array([s.loss for s in self.stages])

    @property
    def tau_end(self) -> float:
        return float(self.tau[-1])

    @property
    def j_min(self) -> int:
        """Column of the smallest alpha."""
        return int(np.argmin(self.alphas))

    @property
    def beta_min(self) -> np.ndarray:
        """``beta(tau)`` at the smallest alpha, ``(len(tau), p)``."""
        return self.flow["beta"][:, self.j_min, :]

    def first_active(self, threshold: float = 1e-3) -> int:
        """The first coordinate of ``beta`` above ``threshold`` along the flow at the smallest alpha."""
        beta = self.beta_min
        return int(np.argmax(np.abs(beta[np.argmax(np.abs(beta).max(1) > threshold)])))


def flow_study(model: DiagonalModel, alphas, u0: np.ndarray, v0: np.ndarray, rtol: float, device="cpu",
               n_tau: int = 1500) -> FlowStudy:
    """Algorithm 1, then the exact flow (Lemma 4.2, eq. 14) from ``alpha theta_0`` up to
    ``tau = 1.1 T_K + 0.3`` (``T_K``: the last stage, or the time of the stage where a hypothesis fails)."""
    stages = algorithm1(model, device=device)
    last = stages.breakdown.T if stages.breakdown is not None else stages[-1].T
    tau = np.linspace(0.0, 1.1 * last + 0.3, n_tau)
    flow = log_scale_flow(model, alphas, u0, v0, tau, rtol=rtol, device=device)
    return FlowStudy(list(alphas), u0, v0, list(stages), tau, flow, stages.breakdown)


def breakdown_note(fs: FlowStudy) -> str:
    """One sentence for the prose: Algorithm 1 ran to its end, or where and why Theorem 4.1 stops applying."""
    bd = fs.breakdown
    if bd is None:
        return "On this instance every hypothesis that Algorithm 1 tests holds at every stage."
    return (f"On this instance Algorithm 1 stops before stage {bd.stage}: {bd.hypothesis} fails ({bd.measured}). "
            f"Theorem 4.1 then covers stages 1 to {fs.K} only; the checks below test those stages, and the later "
            "ones are reported as 'not run'.")


@dataclass
class TransitionStudy:
    """Measured transition times ``times`` ``(len(alphas), K)`` and their fits ``[T, C_1, C_2]`` in
    ``x = 1/log(1/alpha)`` (Theorem 4.1: ``tau_k(alpha) -> T_k``)."""

    T: np.ndarray
    x: np.ndarray
    times: np.ndarray
    fits: np.ndarray

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
    def extrapolation_uncertainty(self) -> float:
        """The extrapolation's own error estimate: ``max_k |T_k^extrap - T_k^extrap'| / T_k``, ``T^extrap'`` the same
        fit without the largest alpha (the point least in the asymptotic regime; one order lower when only two
        points are left). On a grid whose largest alpha is not yet asymptotic this is the size of the error."""
        keep = np.argsort(self.x)[:-1]                       # drop the largest x = the largest alpha
        order = min(self.fits.shape[1] - 1, keep.size - 1)
        drop = np.array([inverse_log_fit(1.0 / self.x[keep], self.times[keep, k], order)[0]
                         for k in range(len(self.T))])
        return float(np.max(np.abs(drop - self.extrapolated) / self.T))

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


def relaxation_rates(model: DiagonalModel, stages: list[Stage]) -> np.ndarray:
    """How fast the flow settles on each plateau: near ``theta^k`` stage (B) linearizes to
    ``d(delta beta_S)/dt = -2 D H_S delta beta_S`` with ``D = diag|beta^k_S|``, so its slowest rate is
    ``r_k = lambda_min(2 D^(1/2) H_S D^(1/2))`` (unrescaled time); ``r_0 = inf`` (theta^0 = 0 is exact)."""
    rates = [math.inf]
    for s in stages[1:]:
        H = model.hessian(torch.from_numpy(s.beta).to(model.device)).detach().cpu().numpy()
        S = s.support
        D = np.sqrt(np.abs(s.beta[S]))
        rates.append(float(np.linalg.eigvalsh(2.0 * D[:, None] * H[np.ix_(S, S)] * D[None, :]).min()))
    return np.array(rates)


def relaxation_numbers(rates: np.ndarray, starts, ends, alpha: float) -> np.ndarray:
    """``(end_k - start_k) log(1/alpha) r_k``: the number of e-foldings plateau ``k`` has relaxed by at
    ``end_k``, starting at its measured transition ``start_k`` (rescaled times). The distance to ``theta^k``
    is about ``exp(-number)``, so a plateau is resolved to a tolerance ``tol`` once the number is at least
    ``log(1/tol)``: Theorem 4.1's ``alpha < alpha_0(t)``, measured."""
    span = np.maximum(np.asarray(ends, float) - np.asarray(starts, float), 0.0)
    with np.errstate(invalid="ignore"):
        out = span * -math.log(alpha) * np.asarray(rates, float)
    return np.where(np.isinf(rates), np.inf, out)


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
        mids, idx, count_plateaus(fs.tau[:upto], loss[:upto]),
        float(max(abs(loss[idx[k]] - fs.levels[k]) for k in sel) / fs.levels[0]),
        float(max(np.abs(beta[idx[k]] - fs.stages[k].beta).max() for k in sel)),
        support_counts(beta[idx], d), ranks_alg, support_counts(beta, d), resolved, relax)


@dataclass
class LogScaleStudy:
    """Simulated ``b(tau)`` at the smallest alpha against the piecewise-linear interpolation of the ``b^k``."""

    b_sim: np.ndarray
    knots: np.ndarray
    b_knots: np.ndarray
    b_err: float
    b_err_const: float
    b0_offset_const: float


def log_scale_study(fs: FlowStudy) -> LogScaleStudy:
    """Largest deviation of ``b`` from the bookkeeping on inactive coordinates inside ``(0.05, T_K - 0.05)``,
    also in units of ``1/log(1/alpha)``, and the initial offset ``max |log(u_0 + v_0)|`` (same units)."""
    b_sim = fs.flow["b"][:, fs.j_min, :]
    knots = np.concatenate([[0], fs.T, [fs.tau_end]])            # after T_K, g(theta^K) = 0: b stays put
    b_knots = np.array([s.b for s in fs.stages] + [fs.stages[-1].b])
    inside = (fs.tau > 0.05) & (fs.tau < (fs.T[-1] if fs.K else fs.plateau_end) - 0.05)
    b_pred = np.array([np.interp(fs.tau, knots, b_knots[:, i]) for i in range(b_sim.shape[1])]).T
    inactive = np.abs(fs.beta_min) < 1e-6
    b_err = float(np.abs(b_sim - b_pred)[inside[:, None] & inactive].max())
    un, vn = normalize_init(fs.u0, fs.v0)
    return LogScaleStudy(b_sim, knots, b_knots, b_err, b_err * -math.log(min(fs.alphas)),
                         float(np.abs(np.log(un + vn)).max()))


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
# -- control, to a modified run or theory (GD at a large alpha, a memoryless race, a wrong exponent)

def plateaus_match(tau: np.ndarray, loss: np.ndarray, K: int) -> bool:
    """Theorem 4.1's plateau count on a loss curve: :func:`plateaus.count_plateaus` finds ``K + 1`` plateaus
    (``K``: Algorithm 1's number of stages)."""
    return bool(count_plateaus(tau, loss) == K + 1)


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
    return float(np.max(np.abs(extrap - ts.T) / ts.T))


def _readout(fs: FlowStudy, ps: PlateauStudy, gd, row: int, d: int) -> PlateauReadout:
    return plateau_readout(fs, ps, gd.tau[row], gd.loss[row], gd.beta[row], d)


def readout_loss_error(fs: FlowStudy, ps: PlateauStudy, gd, row: int, d: int) -> float:
    """The plateau-loss measure of :func:`plateau_study` on row ``row`` of a :class:`descent.DescentRun`."""
    return _readout(fs, ps, gd, row, d).loss_err


def readout_weight_error(fs: FlowStudy, ps: PlateauStudy, gd, row: int, d: int) -> float:
    """The plateau-weight measure of :func:`plateau_study` on row ``row`` of a :class:`descent.DescentRun`."""
    return _readout(fs, ps, gd, row, d).beta_err


def teacher_error(fs: FlowStudy, beta_star, fraction: float = 1.0) -> float:
    """``||beta(tau) - beta*||_2`` along the exact flow at the smallest alpha at ``tau = fraction * tau_end``
    (the end of the simulation for ``fraction = 1``): whether the data were learned, the teacher ``beta*``
    recovered (the teacher is realizable: its loss is 0). ``fraction = 1/2`` is the same run stopped at half
    its time."""
    beta_star = beta_star.detach().cpu().numpy() if isinstance(beta_star, torch.Tensor) else np.asarray(beta_star)
    i = int(np.argmin(np.abs(fs.tau - fraction * fs.tau_end)))
    return float(np.linalg.norm(fs.beta_min[i] - beta_star))   # every entry counts: a 2-norm, not the largest


def flow_times(model: DiagonalModel, fs: FlowStudy, j: int, rtol: float, atol: float = 1e-10) -> np.ndarray:
    """Transition times (midpoint crossings refined on the dense output) of a fresh exact flow at
    ``fs.alphas[j]`` from ``fs``'s direction, integrated with the tolerances ``rtol``, ``atol``."""
    flow = log_scale_flow(model, [fs.alphas[j]], fs.u0, fs.v0, fs.tau, rtol=rtol, atol=atol, device=model.device)
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
        flow = log_scale_flow(model, [float(min(fs.alphas))], fs.u0, fs.v0, fs.tau, rtol=rtol, atol=1e-3 * rtol,
                              device=model.device)
        beta = flow["beta"][:, 0, :]
    ok = ps.resolved if ps.resolved is not None else np.ones(len(ps.mids), bool)
    return np.array([float(np.abs(beta[ps.idx[k]] - fs.stages[k].beta).max()) if ok[k] else np.nan
                     for k in range(len(ps.mids))])

"""Algorithm 1 (Boix-Adsera et al. 2023, Section 4, Appendices C-D), with the errata listed on the chapter's
verification page.

(A) the race of eq. (10)-(12): times until active ``Delta_k``, winner ``i_k``, ``T_{k+1}``, ``b^{k+1}``;
(B) the balanced gradient flow of eq. (13) on the active coordinates (:func:`train_active`).

Every zero test is scaled to what the computation can resolve: ``g(theta^k)`` is known only to the accuracy
of stage (B)'s stationary point (:func:`g_resolution`), a race time to the error that this carries
(``_race_margin_error``), a coordinate pushed to zero counts as gone once it cannot move ``g`` by the
stationarity tolerance (``|beta_j| ||H|| <= stationarity_tol``).  Where the instance breaks a hypothesis of
Theorem 4.1 (a tie in the race, a coordinate that leaves the support with ``g = 0``, a stage (B) that does
not converge, a restricted Hessian that is not positive definite), Algorithm 1 stops there and returns the
stages before it with a :class:`Breakdown` that names the hypothesis and the measured quantity. It raises
:class:`DegenerateStageError` only for what the theory excludes on every instance (a non-positive time until
active, no termination): a bug.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
from scipy.integrate import solve_ivp

from stagewise.diagonal_incremental.networks import DiagonalModel, hessian_summary
from stagewise.numerics.roundoff import is_positive, roundoff

STATIONARITY_TOL = 1e-9     # stage (B) stops once max |g| on the support is below this (the solver's tolerance)
T_MAX = 1e5                 # time budget of one stage (B) (unrescaled time; cheap: the flow is integrated in log|beta|)


class DegenerateStageError(RuntimeError):
    """Algorithm 1 met what the theory excludes for every instance (a bug, not a broken hypothesis)."""


@dataclass
class Breakdown:
    """The first stage of Algorithm 1 that a hypothesis of Theorem 4.1 does not cover, on this instance.

    ``stage`` is that stage's number ``k``; ``T`` its time ``T_k`` (the end of the last plateau the theorem
    describes); ``hypothesis`` the hypothesis as the chapter labels it, ``measured`` the deciding quantity
    with its value, ``requirement`` what it must be."""

    stage: int
    T: float
    hypothesis: str
    measured: str
    requirement: str


class Stages(list):
    """Algorithm 1's stages ``theta^0, ..., theta^K`` (a list of :class:`Stage`) and, where the instance breaks
    a hypothesis, the :class:`Breakdown` at stage ``K + 1`` (``None`` when Algorithm 1 ran to its end)."""

    breakdown: Breakdown | None = None


@dataclass
class Stage:
    """One stage of Algorithm 1: the race (A) that ends at ``T`` and the point ``beta`` it trains to (B)."""

    k: int                       # stage number (theta^k is reached at time T_k)
    T: float                     # T_k
    beta: np.ndarray             # beta^k = u^k * v^k  (theta^k = (sqrt|beta|, sgn(beta) sqrt|beta|))
    b: np.ndarray                # b^k, the log_alpha(w) bookkeeping (eq. 12)
    loss: float                  # L(theta^k)
    coordinate: int = -1         # i_{k-1}: the coordinate that won the race ending at T_k (-1 for k=0)
    sign: int = 0                # its sign s = sgn g_{i_{k-1}}(theta^{k-1})
    margin: float = math.inf     # second-smallest minus smallest Delta in that race (Assumption 4.3)
    dropped: list = field(default_factory=list)   # coordinates that left the support in stage (B)
    stationarity: float = 0.0    # max |g_j(beta^k)| over supp(beta^k)
    hessian_min: float = math.nan  # min eigenvalue of the Hessian restricted to supp (Assumption 4.4)
    active: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # supp(theta^k), as trained
    margin_err: float = 0.0      # the uncertainty of the margin (from the resolution of g), see algorithm1
    g_err: float = 0.0           # the resolution of g(theta^k) (g_resolution)
    hessian_norm: float = 0.0    # ||Hess Ltilde(beta^k)||_2

    @property
    def support(self) -> np.ndarray:
        """``supp(theta^k)``: the coordinates stage (B) trained and kept (not a test of computed floats)."""
        return np.sort(np.asarray(self.active, dtype=int))


class StageB(NamedTuple):
    """The result of :func:`train_active`: the end point ``beta``, its support ``active``, the coordinates that
    left (``dropped``), ``resid = max |g|`` on ``active``; ``degenerate`` lists ``(j, |g_j(beta)|, resolution,
    exponent)`` for coordinates that left with ``g_j = 0`` at the solver's resolution (Assumption 4.3, last
    clause, fails); ``failure`` is a sentence when stage (B) did not reach a stationary point (else "")."""

    beta: np.ndarray
    active: np.ndarray
    dropped: list
    resid: float
    degenerate: list
    failure: str


def time_until_active(gamma: np.ndarray, b: np.ndarray, support: np.ndarray, g_tol,
                      b_hi: np.ndarray | None = None) -> np.ndarray:
    """Eq. (10): ``Delta(i) = (b_i - 1 + sgn g_i) / g_i``; infinite on the support or when ``|g_i| <= g_tol``
    (``g_tol``: the resolution of ``g``, a number or one per coordinate; below it ``g_i`` is zero).

    ``b_hi`` replaces the upper threshold 2 (reached when ``g_i < 0``) by ``log_alpha c_i`` at finite alpha:
    ``Delta(i) = (b_i - 0) / g_i`` for ``g_i > 0`` and ``(b_i - b_hi_i) / g_i`` for ``g_i < 0``."""
    hi = np.full(gamma.shape, 2.0) if b_hi is None else np.asarray(b_hi, float)
    delta = np.full(gamma.shape, np.inf)
    live = np.abs(gamma) > g_tol
    live[np.asarray(support, dtype=int)] = False
    target = np.where(gamma > 0, 0.0, hi)
    delta[live] = (b[live] - target[live]) / gamma[live]
    return delta


def g_resolution(gamma: np.ndarray, lam_min: float, h_norm: float, n_support: int,
                 stationarity_tol: float = STATIONARITY_TOL) -> float:
    """How well ``g(theta^k)`` is known: stage (B) stops with ``max |g_S| < stationarity_tol``, so ``beta_S``
    is off by at most ``sqrt|S| stationarity_tol / lambda_min(H_S)`` and ``g`` by ``||H||`` times that
    (first order); plus the rounding error of ``g`` itself. ``theta^0 = 0`` is exact (rounding only)."""
    gmax = float(np.abs(gamma).max(initial=0.0))
    solver = 0.0
    if n_support:
        solver = math.sqrt(n_support) * stationarity_tol * h_norm / max(lam_min, roundoff(h_norm, n_support))
    return solver + roundoff(max(gmax, h_norm), gamma.size)


def train_active(model: DiagonalModel, beta0: np.ndarray, active: np.ndarray, *,
                 g_tol: float = STATIONARITY_TOL, t_max: float = T_MAX, rtol: float = 1e-10,
                 stage: int = 0) -> StageB:
    """Stage (B), eq. (13): balanced gradient flow on the active coordinates until stationary.

    A balanced ``theta = (u, s*u)`` stays balanced, so ``d beta_j/dt = 2 |beta_j| g_j(beta)`` (exact);
    we integrate ``z_j = log|beta_j|`` (``dz_j/dt = 2 sgn(beta_j) g_j``).

    A coordinate pushed to zero (``sgn(beta_j) g_j < 0``) leaves the support (Lemma D.4) once
    ``|beta_j| ||H|| <= g_tol``: it can no longer move ``g`` by the stationarity tolerance. With
    ``g_j(theta^{k+1}) != 0`` (Assumption 4.3, last clause) it decays exponentially and gets there fast. If
    ``g_j -> 0`` it decays only like ``1/t``: at ``t_max`` the coordinates pushed to zero with a log-log decay
    exponent ``p_j = -d log|beta_j| / d log t = 2 t |g_j| >= 1/2`` (algebraic decay has ``p -> 1``, exponential
    decay ``p ~ t``, a coordinate converging to a nonzero value ``p -> 0``) are removed, the flow is continued
    on the remaining face to its stationary point ``beta_hat``, and ``g_j(beta_hat)`` decides: zero within
    its resolution (:func:`g_resolution`) is the degenerate case (reported in ``degenerate``), pushing to zero
    a legitimate slow drop, pushing away a stage (B) that has not converged (``failure``).
    """
    device = model.device
    active = np.asarray(sorted(np.asarray(active, dtype=int)))
    sign = np.sign(beta0[active])
    z = np.log(np.abs(beta0[active]))
    dropped: list[int] = []
    beta = beta0.copy()
    h_norm = hessian_summary(model, beta0, active, device)[1]
    drop_tol = g_tol / max(h_norm, 1e-300)

    def g_of(bb):
        return model.g(torch.from_numpy(bb)[None].to(device))[0].cpu().numpy()

    def full(act, sg, zz):
        out = np.zeros_like(beta0)
        out[act] = sg * np.exp(np.minimum(zz, 50.0))
        return out

    def rhs(_t, zz):
        return 2.0 * sign * g_of(full(active, sign, zz))[active]

    t, chunk = 0.0, 5.0
    while True:
        sol = solve_ivp(rhs, (0.0, chunk), z, method="LSODA", rtol=rtol, atol=1e-12)
        if not sol.success:
            return StageB(full(active, sign, z), active, dropped, math.inf, [],
                          f"stage {stage}: stage (B) integration failed: {sol.message}")
        t += chunk
        z = sol.y[:, -1]
        beta = full(active, sign, z)
        gam = g_of(beta)
        # pushed to zero beyond the stationarity tolerance: a rounding-level g_j decides nothing (a coordinate
        # that small with |g_j| < g_tol is stationary for the stopping rule below)
        gone = (np.abs(beta[active]) <= drop_tol) & (sign * gam[active] < -g_tol)
        if gone.any():
            dropped += [int(i) for i in active[gone]]
            active, sign, z = active[~gone], sign[~gone], z[~gone]
            beta = full(active, sign, z)
            gam = g_of(beta)
        resid = float(np.abs(gam[active]).max(initial=0.0))
        if resid < g_tol:
            return StageB(beta, active, dropped, resid, [], "")
        if t >= t_max:
            break
        chunk = min(2 * chunk, t_max - t)

    exponent = 2.0 * t * np.abs(gam[active])
    slow = (sign * gam[active] < 0) & (exponent >= 0.5)   # exponent >= 0.5: |g_j| >= 0.25/t, far above rounding
    if not slow.any():
        return StageB(beta, active, dropped, resid, [],
                      f"stage {stage}: stage (B) did not reach a stationary point within t={t_max:g} "
                      f"(max |g| on the support = {resid:.2e} > {g_tol:g}, no coordinate decaying to 0)")
    C, p_C = active[slow], exponent[slow]
    face = beta.copy()
    face[C] = 0.0
    if (~slow).any():
        inner = train_active(model, face, active[~slow], g_tol=g_tol, t_max=t_max, rtol=rtol, stage=stage)
        if inner.failure or inner.degenerate:
            return inner._replace(dropped=dropped + [int(j) for j in C] + inner.dropped,
                                  degenerate=inner.degenerate)
        beta_hat, act_hat, more = inner.beta, inner.active, inner.dropped
    else:
        beta_hat, act_hat, more = face, active[:0], []
    g_hat = g_of(beta_hat)
    lam, hn = hessian_summary(model, beta_hat, act_hat, device)
    res = g_resolution(g_hat, lam, hn, act_hat.size, g_tol)
    s_C = np.sign(beta[C])
    degenerate = [(int(j), float(abs(g_hat[j])), res, float(p)) for j, p in zip(C, p_C) if abs(g_hat[j]) <= res]
    regrow = [int(j) for j, s in zip(C, s_C) if s * g_hat[j] > res]
    all_dropped = dropped + [int(j) for j in C] + more
    if regrow:
        return StageB(beta, active, dropped, resid, [],
                      f"stage {stage}: stage (B) did not reach a stationary point within t={t_max:g}: coordinates "
                      f"{regrow} decay but the face without them pushes them back (max |g| = {resid:.2e})")
    resid_hat = float(np.abs(g_hat[act_hat]).max(initial=0.0))
    return StageB(beta_hat, act_hat, all_dropped, resid_hat, degenerate, "")


def _race_margin_error(delta: np.ndarray, gamma: np.ndarray, b_err: float, g_err: float, i: int) -> float:
    """Uncertainty of ``Delta(i) = (b_i - target)/g_i`` from ``|dg| <= g_err`` and ``|db| <= b_err``."""
    return (abs(delta[i]) * g_err + b_err) / abs(gamma[i]) + roundoff(abs(delta[i]), 4)


def algorithm1(model: DiagonalModel, *, max_stages: int = 50, eps2: float = 1e-8,
               stationarity_tol: float = STATIONARITY_TOL, b0: np.ndarray | None = None,
               b_hi: np.ndarray | None = None, device=None, memoryless: bool = False) -> Stages:
    """Algorithm 1 (paper Sec. 4), corrected: start from ``b^0 = 1`` (not 0) and seed stage (B) with
    ``sgn g_{i_k}(theta^k)``.

    (A) race: ``Delta_k`` of eq. (10), winner ``i_k`` and ``T_{k+1}`` of eq. (11), ``b^{k+1}`` of eq. (12);
    a ``g_i`` within the resolution of ``g(theta^k)`` (:func:`g_resolution`) is zero (``Delta = inf``).
    (B) gradient flow from ``theta^k`` plus a balanced seed ``eps`` on ``i_k`` (``beta_{i_k} = s eps^2``),
    trained to stationarity (eq. 13, :func:`train_active`).

    Stops with a :class:`Breakdown` (``stages.breakdown``) where the instance breaks a hypothesis: a tie
    (Assumption 4.3: the margin is within the propagated uncertainty of the race times), a coordinate that
    leaves the support with ``g = 0`` (Assumption 4.3, last clause), a stage (B) that does not converge
    (Assumption 4.5), a restricted Hessian that is not positive beyond rounding (Assumption 4.4).
    ``b0`` overrides ``b^0 = 1`` (the finite-alpha correction ``log_alpha w(0)``).

    ``memoryless=True`` is a wrong theory, the control of the transition-time check: every race starts its
    clocks afresh from ``b = 1`` (each stage an escape from a saddle as if from ``theta^0``), forgetting how
    far the inactive coordinates have already moved on the earlier plateaus (the bookkeeping ``b^k`` of eq. 12).
    """
    p = model.p
    to = lambda x: torch.from_numpy(x)[None]  # noqa: E731
    dev = device if device is not None else model.device
    beta = np.zeros(p)
    b = np.ones(p) if b0 is None else np.asarray(b0, dtype=float).copy()
    T, b_err = 0.0, 0.0
    support = np.zeros(0, dtype=int)
    gamma = model.g(to(beta).to(dev))[0].cpu().numpy()
    g_err = g_resolution(gamma, math.inf, 0.0, 0)
    stages = Stages([Stage(0, 0.0, beta.copy(), b.copy(), float(model.loss(to(beta).to(dev))[0]), g_err=g_err)])

    def stop(k, t, name, measured, requirement):
        stages.breakdown = Breakdown(k, t, name, measured, requirement)
        return stages

    for k in range(max_stages):
        delta = time_until_active(gamma, np.ones(p) if memoryless else b, support, g_err, b_hi)
        order = np.argsort(delta)
        ik = int(order[0])
        if not np.isfinite(delta[ik]):
            return stages
        if not is_positive(delta[ik], max(1.0, abs(float(b[ik]))), 4):
            raise DegenerateStageError(f"stage {k + 1}: time until active Delta({ik}) = {delta[ik]:.3g} <= 0 "
                                       "(Lemma D.4 says it is positive)")
        second = delta[order[1]] if p > 1 else np.inf
        margin = float(second - delta[ik])
        margin_err = _race_margin_error(delta, gamma, b_err, g_err, ik)
        if np.isfinite(second):
            margin_err += _race_margin_error(delta, gamma, b_err, g_err, int(order[1]))
        if margin <= margin_err:
            return stop(k + 1, T + float(delta[ik]), "Assumption 4.3 (unique winner of the race)",
                        f"stage {k + 1}: coordinates {ik} and {int(order[1])} tie at Delta = {delta[ik]:.6g} "
                        f"(margin {margin:.2e} <= its uncertainty {margin_err:.1e})",
                        "a margin above the uncertainty of the race times")
        T += float(delta[ik])
        b_err += g_err * float(delta[ik]) + float(np.abs(gamma).max()) * margin_err
        frozen = b[support].copy()
        b = b - gamma * delta[ik]
        b[support] = frozen
        s = int(np.sign(gamma[ik]))
        b[ik] = 0.0 if s > 0 else (2.0 if b_hi is None else float(b_hi[ik]))  # 0 or 2 as alpha -> 0
        seed = beta.copy()
        seed[ik] = s * eps2
        res = train_active(model, seed, np.append(support, ik), g_tol=stationarity_tol, stage=k + 1)
        if res.failure:
            return stop(k + 1, T, "Assumption 4.5 (stage (B) converges)", res.failure,
                        f"max |g| on the support below {stationarity_tol:g} within t = {T_MAX:g}")
        if res.degenerate:
            j, gj, gres, pj = res.degenerate[0]
            return stop(k + 1, T, "Assumption 4.3 (last clause)",
                        f"stage {k + 1}: coordinate {j} leaves the support with |g_{j}(theta^{k + 1})| = {gj:.1e}, "
                        f"zero within its resolution {gres:.1e}; it decays like t^-{pj:.2f}, not exponentially",
                        "g_i(theta^k) != 0 for every coordinate i that leaves the support at stage k")
        beta, support = res.beta, res.active
        gamma = model.g(to(beta).to(dev))[0].cpu().numpy()
        lam, h_norm = hessian_summary(model, beta, support, dev)
        g_err = g_resolution(gamma, lam, h_norm, support.size, stationarity_tol)
        for j in res.dropped:
            if abs(gamma[j]) <= g_err:
                return stop(k + 1, T, "Assumption 4.3 (last clause)",
                            f"stage {k + 1}: coordinate {j} leaves the support with |g_{j}(theta^{k + 1})| = "
                            f"{abs(gamma[j]):.1e}, zero within its resolution {g_err:.1e}",
                            "g_i(theta^k) != 0 for every coordinate i that leaves the support at stage k")
        if not is_positive(lam, h_norm, support.size):
            return stop(k + 1, T, "Assumption 4.4 (strict local minima)",
                        f"stage {k + 1}: smallest eigenvalue of the product-space Hessian on the support {lam:.2e} "
                        f"(rounding level {roundoff(h_norm, support.size):.1e})", "> 0 beyond rounding")
        stages.append(Stage(k + 1, T, beta.copy(), b.copy(), float(model.loss(to(beta).to(dev))[0]),
                            ik, s, margin, list(res.dropped), res.resid, lam, support.copy(), margin_err, g_err,
                            h_norm))
    raise DegenerateStageError(f"stage {max_stages}: Algorithm 1 did not terminate within max_stages")

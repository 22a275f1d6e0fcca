"""Algorithm 1 (Boix-Adsera et al. 2023, Section 4, Appendices C-D), with the errata of the research note.

(A) the race of eq. (10)-(12): times until active ``Delta_k``, winner ``i_k``, ``T_{k+1}``, ``b^{k+1}``;
(B) the balanced gradient flow of eq. (13) on the active coordinates (:func:`train_active`).
Degenerate instances (Assumption 4.3) raise :class:`DegenerateStageError` naming the stage.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.integrate import solve_ivp

from stagewise.diagonal_incremental.networks import DiagonalModel, restricted_hessian_min


class DegenerateStageError(RuntimeError):
    """Algorithm 1 met a degenerate instance (tie, vanishing margin, non-convergent stage)."""


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

    @property
    def support(self) -> np.ndarray:
        return np.flatnonzero(self.beta != 0)


def time_until_active(gamma: np.ndarray, b: np.ndarray, support: np.ndarray, g_tol: float,
                      b_hi: np.ndarray | None = None) -> np.ndarray:
    """Eq. (10): ``Delta(i) = (b_i - 1 + sgn g_i) / g_i``; infinite on the support or when ``|g_i| <= g_tol``.

    ``b_hi`` replaces the upper threshold 2 (reached when ``g_i < 0``) by ``log_alpha c_i`` at finite alpha:
    ``Delta(i) = (b_i - 0) / g_i`` for ``g_i > 0`` and ``(b_i - b_hi_i) / g_i`` for ``g_i < 0``."""
    hi = np.full(gamma.shape, 2.0) if b_hi is None else np.asarray(b_hi, float)
    delta = np.full(gamma.shape, np.inf)
    live = np.abs(gamma) > g_tol
    live[support] = False
    target = np.where(gamma > 0, 0.0, hi)
    delta[live] = (b[live] - target[live]) / gamma[live]
    return delta


def train_active(model: DiagonalModel, beta0: np.ndarray, active: np.ndarray, *, g_tol: float = 1e-9,
                 drop_tol: float = 1e-12, t_max: float = 1e5, rtol: float = 1e-10, stage: int = 0):
    """Stage (B), eq. (13): balanced gradient flow on the active coordinates until stationary.

    A balanced ``theta = (u, s*u)`` stays balanced, so ``d beta_j/dt = 2 |beta_j| g_j(beta)`` (exact);
    we integrate ``z_j = log|beta_j|`` (``dz_j/dt = 2 sgn(beta_j) g_j``).  A coordinate that decays below
    ``drop_tol`` while ``g_j`` still pushes it to zero leaves the support (Lemma D.4).  Returns
    ``(beta, dropped, resid)``: the stationary point, the coordinates that left the support, and
    ``resid = max |g_j(beta)|`` over the remaining support; raises :class:`DegenerateStageError` naming
    ``stage`` if it does not converge.
    """
    device = model.device
    active = np.asarray(sorted(active))
    sign = np.sign(beta0[active])
    z = np.log(np.abs(beta0[active]))
    dropped: list[int] = []
    beta = beta0.copy()

    def full(zz):
        out = np.zeros_like(beta0)
        out[active] = sign * np.exp(np.minimum(zz, 50.0))
        return out

    def rhs(_t, zz):
        gam = model.g(torch.from_numpy(full(zz))[None].to(device))[0].cpu().numpy()
        return 2.0 * sign * gam[active]

    t, chunk = 0.0, 5.0
    while True:
        sol = solve_ivp(rhs, (0.0, chunk), z, method="LSODA", rtol=rtol, atol=1e-12)
        if not sol.success:
            raise DegenerateStageError(f"stage {stage}: nonlinear stage (B) integration failed: {sol.message}")
        t += chunk
        z = sol.y[:, -1]
        beta = full(z)
        gam = model.g(torch.from_numpy(beta)[None].to(device))[0].cpu().numpy()
        gone = (np.abs(beta[active]) < drop_tol) & (sign * gam[active] < 0)
        if gone.any():
            dropped += [int(i) for i in active[gone]]
            keep = ~gone
            active, sign, z = active[keep], sign[keep], z[keep]
            beta = full(z)
            gam = model.g(torch.from_numpy(beta)[None].to(device))[0].cpu().numpy()
        shrinking = (sign * gam[active] < 0) & (np.abs(beta[active]) < 1e-6)
        resid = np.abs(gam[active][~shrinking]).max(initial=0.0)
        if resid < g_tol and not shrinking.any():
            return beta, dropped, float(resid)
        if t >= t_max:
            if resid < g_tol:
                j = int(active[shrinking][0])
                raise DegenerateStageError(
                    f"stage {stage}: nonlinear stage (B) did not converge: coordinate {j} decays to 0 while "
                    f"g_{j} -> 0 ({gam[j]:.1e}), a degenerate boundary stationary point (Assumption 4.3 fails)")
            raise DegenerateStageError(
                f"stage {stage}: nonlinear stage (B) did not reach a stationary point within t={t_max:g} "
                f"(max |g| on the support = {resid:.2e} > {g_tol:g}); Assumption 4.5 may fail")
        chunk = min(2 * chunk, t_max - t)


def algorithm1(model: DiagonalModel, *, max_stages: int = 50, g_tol: float = 1e-8, eps2: float = 1e-8,
               rel_margin: float = 1e-6, stationarity_tol: float = 1e-9, b0: np.ndarray | None = None,
               b_hi: np.ndarray | None = None, device=None) -> list[Stage]:
    """Algorithm 1 (paper Sec. 4), corrected: start from ``b^0 = 1`` (not 0) and seed stage (B) with
    ``sgn g_{i_k}(theta^k)``.

    (A) race: ``Delta_k`` of eq. (10), winner ``i_k`` and ``T_{k+1}`` of eq. (11), ``b^{k+1}`` of eq. (12).
    (B) gradient flow from ``theta^k`` plus a balanced seed ``eps`` on ``i_k`` (``beta_{i_k} = s eps^2``),
    trained to stationarity (eq. 13).  Ties (relative margin below ``rel_margin``), non-positive
    ``Delta`` (Lemma D.4), a dropped coordinate with ``g = 0`` (Assumption 4.3) and a stage (B) that does
    not converge raise :class:`DegenerateStageError` naming the stage.  ``b0`` overrides ``b^0 = 1``
    (the finite-alpha correction ``log_alpha w(0)``).
    """
    p = model.p
    to = lambda x: torch.from_numpy(x)[None]  # noqa: E731
    dev = device if device is not None else model.device
    beta = np.zeros(p)
    b = np.ones(p) if b0 is None else np.asarray(b0, dtype=float).copy()
    T = 0.0
    stages = [Stage(0, 0.0, beta.copy(), b.copy(), float(model.loss(to(beta).to(dev))[0]))]
    for k in range(max_stages):
        gamma = model.g(to(beta).to(dev))[0].cpu().numpy()
        support = np.flatnonzero(beta)
        delta = time_until_active(gamma, b, support, g_tol, b_hi)
        order = np.argsort(delta)
        ik = int(order[0])
        if not np.isfinite(delta[ik]):
            break
        if delta[ik] <= 0:
            raise DegenerateStageError(f"stage {k + 1}: time until active Delta({ik}) = {delta[ik]:.3g} <= 0 "
                                       "(Lemma D.4 says it is positive); check g_tol")
        second = delta[order[1]] if p > 1 else np.inf
        margin = float(second - delta[ik])
        if margin <= rel_margin * max(1.0, delta[ik]):
            raise DegenerateStageError(
                f"stage {k + 1}: tie in the race between coordinates {ik} and {int(order[1])} "
                f"(Delta = {delta[ik]:.6g}, margin {margin:.2e}); Assumption 4.3 fails")
        T += float(delta[ik])
        frozen = b[support].copy()
        b = b - gamma * delta[ik]
        b[support] = frozen
        s = int(np.sign(gamma[ik]))
        b[ik] = 0.0 if s > 0 else (2.0 if b_hi is None else float(b_hi[ik]))  # 0 or 2 as alpha -> 0
        seed = beta.copy()
        seed[ik] = s * eps2
        beta, dropped, resid = train_active(model, seed, np.append(support, ik), g_tol=stationarity_tol,
                                            stage=k + 1)
        gamma_new = model.g(to(beta).to(dev))[0].cpu().numpy()
        for j in dropped:
            if abs(gamma_new[j]) <= g_tol:
                raise DegenerateStageError(f"stage {k + 1}: coordinate {j} left the support with g = 0 "
                                           "(Assumption 4.3, last clause, fails)")
        stages.append(Stage(k + 1, T, beta.copy(), b.copy(), float(model.loss(to(beta).to(dev))[0]),
                            ik, s, margin, dropped, resid, restricted_hessian_min(model, beta, dev)))
    else:
        raise DegenerateStageError(f"stage {max_stages}: Algorithm 1 did not terminate within max_stages")
    return stages

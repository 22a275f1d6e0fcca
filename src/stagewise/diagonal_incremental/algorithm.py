"""Networks with diagonal weights and Algorithm 1 (Boix-Adsera et al. 2023, Sections 3-4, Appendices C-D).

A network with diagonal weights (Definition 3.1) is ``f(x; u, v) = h(x; beta)`` with ``beta = u * v``.
Everything the theory needs is the reduced loss ``Ltilde(beta)`` and ``g(beta) = -grad Ltilde(beta)``
(eq. 4).  Two models implement that interface, batched over rows of ``beta`` of shape ``(B, p)``:

* :class:`LinearDiagonal` -- ``Ltilde = 1/2 (beta - beta*)^T Sigma (beta - beta*)`` (closed-form cases);
* :class:`DiagonalAttention` -- one attention head with diagonal ``W_K, W_Q, W_V, W_O`` (Example 3.2),
  ``beta = [w_K * w_Q, w_V * w_O]`` (key-query entries first, then value-output entries).

:func:`algorithm1` is the paper's Algorithm 1 with the errata of the research note applied
(``b^0 = 1``; ``sgn g_{i_k}``), both stages, and the degeneracy checks of Assumption 4.3.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numba
import numpy as np
import torch
from scipy.integrate import solve_ivp

from stagewise.core.parameters import ParameterError


class DegenerateStageError(RuntimeError):
    """Algorithm 1 met a degenerate instance (tie, vanishing margin, non-convergent stage)."""


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the diagonal-incremental chapter (one-line errors)."""
    alphas = values.get("alphas_flow", [])
    if len(set(alphas)) < 3:
        raise ParameterError("parameter alphas_flow: needs at least 3 distinct values for the extrapolation "
                             "in 1/log(1/alpha); allowed: a list of >= 3 distinct floats in [1e-300, 1e-4]")
    if min(alphas) > 1e-16:
        raise ParameterError("parameter alphas_flow: the smallest value must be <= 1e-16 so that stages "
                             "separate; allowed: include a value in [1e-300, 1e-16]")
    if values.get("teacher_kq", 1) + values.get("teacher_vo", 1) > 8 and values.get("scale") == "toy":
        raise ParameterError("parameter teacher_kq: teacher_kq + teacher_vo must be <= 8 at scale toy (d = 12); "
                             "allowed: a smaller sum or scale paper")


# ----------------------------------------------------------------------------------------------
# models: Ltilde(beta) and g(beta) = -grad Ltilde(beta), batched over rows
# ----------------------------------------------------------------------------------------------
class DiagonalModel(ABC):
    """Interface: ``loss(beta) -> (B,)``; ``g`` and ``hessian`` come from autograd unless overridden."""

    p: int

    @abstractmethod
    def loss(self, beta: torch.Tensor) -> torch.Tensor:
        """The reduced loss of each row of ``beta``, shape ``(B,)``."""

    def g(self, beta: torch.Tensor) -> torch.Tensor:
        """``g(beta) = -grad_beta Ltilde`` row by row (eq. 4); ``beta`` has shape ``(B, p)``."""
        with torch.enable_grad():
            b = beta.detach().clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(self.loss(b).sum(), b)
        return -grad

    def hessian(self, beta: torch.Tensor) -> torch.Tensor:
        """Hessian of ``Ltilde`` at a single ``beta`` of shape ``(p,)`` (for Assumption 4.4)."""
        return torch.autograd.functional.hessian(lambda x: self.loss(x[None])[0], beta.detach())


@dataclass
class LinearDiagonal(DiagonalModel):
    """Diagonal linear network with population square loss: ``g(beta) = Sigma (beta* - beta)``."""

    sigma: torch.Tensor
    beta_star: torch.Tensor

    def __post_init__(self):
        self.p = int(self.beta_star.numel())

    def loss(self, beta: torch.Tensor) -> torch.Tensor:
        r = beta - self.beta_star
        return 0.5 * torch.einsum("bi,ij,bj->b", r, self.sigma, r)

    def g(self, beta: torch.Tensor) -> torch.Tensor:
        return (self.beta_star - beta) @ self.sigma.T

    def hessian(self, beta: torch.Tensor) -> torch.Tensor:
        return self.sigma.clone()


def _softmax(S: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax (written out: several times faster than ``torch.softmax`` for float64 on CPU)."""
    E = torch.exp(S - S.amax(dim=-1, keepdim=True))
    return E / E.sum(dim=-1, keepdim=True)


def attention_output(X: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Diagonal attention head, eq. (1): ``softmax(X diag(a) X^T) X diag(c)`` for each row ``beta=[a, c]``.

    ``X``: ``(N, n, d)``; ``beta``: ``(B, 2d)``; returns ``(B, N, n, d)``.  No 1/sqrt(d) scaling (as eq. 1).
    """
    d = X.shape[-1]
    a, c = beta[:, None, None, :d], beta[:, None, None, d:]
    A = _softmax(torch.matmul(X * a, X.transpose(1, 2)))
    return torch.matmul(A, X) * c


@dataclass
class DiagonalAttention(DiagonalModel):
    """Student-teacher regression with one diagonal attention head, loss ``1/(2N) sum ||h - Y||_F^2``."""

    X: torch.Tensor
    Y: torch.Tensor

    def __post_init__(self):
        self.d = int(self.X.shape[-1])
        self.p = 2 * self.d

    def loss(self, beta: torch.Tensor) -> torch.Tensor:
        r = attention_output(self.X, beta) - self.Y
        return 0.5 * r.pow(2).sum(dim=(1, 2, 3)) / self.X.shape[0]

    def g(self, beta: torch.Tensor) -> torch.Tensor:
        """Analytic ``g = -grad Ltilde`` (softmax backward written out; matches autograd, see tests).

        On CPU a compiled numba loop does the work (the batched torch version is dominated by overhead
        for these tiny tensors); on CUDA the torch expression below runs batched on the device."""
        if self.X.device.type == "cpu" and beta.device.type == "cpu":
            X, Y = self.X.numpy(), self.Y.numpy()
            return torch.from_numpy(_attention_g_numba(X, Y, np.ascontiguousarray(beta.detach().numpy())))
        return self.g_torch(beta)

    def g_torch(self, beta: torch.Tensor) -> torch.Tensor:
        """The same ``g`` as batched torch operations (used on CUDA)."""
        X, d, N = self.X, self.d, self.X.shape[0]
        a, c = beta[:, None, None, :d], beta[:, None, None, d:]
        Xt = X.transpose(1, 2)
        A = _softmax(torch.matmul(X * a, Xt))          # (B, N, n, n)
        AX = torch.matmul(A, X)                                      # (B, N, n, d)
        R = (AX * c - self.Y) / N                                    # dL/d out
        grad_c = (R * AX).sum(dim=(1, 2))
        G = torch.matmul(R * c, Xt)                                  # dL/dA
        dS = A * (G - (G * A).sum(dim=-1, keepdim=True))             # softmax backward
        grad_a = (X * torch.matmul(dS, X)).sum(dim=(1, 2))
        return -torch.cat([grad_a, grad_c], dim=1)


@numba.njit(cache=False, fastmath=False)
def _attention_g_numba(X, Y, beta):  # pragma: no cover - compiled
    """``g = -grad Ltilde`` for the diagonal head, one loop nest (same formulas as the torch path)."""
    B, p = beta.shape
    N, n, d = X.shape
    out = np.zeros((B, p))
    S = np.empty((n, n))
    AX = np.empty((n, d))
    R = np.empty((n, d))
    for b in range(B):
        for s in range(N):
            for i in range(n):
                mx = -np.inf
                for j in range(n):
                    acc = 0.0
                    for k in range(d):
                        acc += X[s, i, k] * beta[b, k] * X[s, j, k]
                    S[i, j] = acc
                    mx = max(mx, acc)
                tot = 0.0
                for j in range(n):
                    S[i, j] = np.exp(S[i, j] - mx)
                    tot += S[i, j]
                for j in range(n):
                    S[i, j] /= tot
                for k in range(d):
                    acc = 0.0
                    for j in range(n):
                        acc += S[i, j] * X[s, j, k]
                    AX[i, k] = acc
                    R[i, k] = (acc * beta[b, d + k] - Y[s, i, k]) / N
                    out[b, d + k] -= R[i, k] * acc
                # dL/dA_ij = sum_k R_ik c_k X_jk ; softmax backward ; dL/da_k = sum_ij dS_ij X_ik X_jk
                gbar = 0.0
                G = np.empty(n)
                for j in range(n):
                    acc = 0.0
                    for k in range(d):
                        acc += R[i, k] * beta[b, d + k] * X[s, j, k]
                    G[j] = acc
                    gbar += acc * S[i, j]
                for j in range(n):
                    ds = S[i, j] * (G[j] - gbar)
                    for k in range(d):
                        out[b, k] -= ds * X[s, i, k] * X[s, j, k]
    return out


def make_teacher_problem(n_samples: int, n_tokens: int, d: int, n_kq: int, n_vo: int, seed: int,
                         device: torch.device | str = "cpu", low: float = 0.3, high: float = 1.0):
    """Random student-teacher instance (paper App. A): Gaussian tokens, sparse diagonal teacher.

    The teacher has ``n_kq`` nonzero key-query and ``n_vo`` nonzero value-output entries with magnitudes
    ``U(low, high)`` and random signs.  Random numbers are drawn on CPU, then moved to ``device``.
    Returns ``(model, beta_star)``.
    """
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n_samples, n_tokens, d, generator=gen, dtype=torch.float64)
    beta_star = torch.zeros(2 * d, dtype=torch.float64)
    for offset, count in ((0, n_kq), (d, n_vo)):
        idx = torch.randperm(d, generator=gen)[:count] + offset
        mags = low + (high - low) * torch.rand(count, generator=gen, dtype=torch.float64)
        signs = torch.where(torch.rand(count, generator=gen) < 0.5, -1.0, 1.0).double()
        beta_star[idx] = mags * signs
    X, beta_star = X.to(device), beta_star.to(device)
    Y = attention_output(X, beta_star[None])[0]
    return DiagonalAttention(X, Y), beta_star


# ----------------------------------------------------------------------------------------------
# Algorithm 1
# ----------------------------------------------------------------------------------------------
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


def time_until_active(gamma: np.ndarray, b: np.ndarray, support: np.ndarray, g_tol: float) -> np.ndarray:
    """Eq. (10): ``Delta(i) = (b_i - 1 + sgn g_i) / g_i``; infinite on the support or when ``|g_i| <= g_tol``."""
    delta = np.full(gamma.shape, np.inf)
    live = np.abs(gamma) > g_tol
    live[support] = False
    delta[live] = (b[live] - 1.0 + np.sign(gamma[live])) / gamma[live]
    return delta


def train_active(model: DiagonalModel, beta0: np.ndarray, active: np.ndarray, *, g_tol: float = 1e-9,
                 drop_tol: float = 1e-12, t_max: float = 1e5, rtol: float = 1e-10, stage: int = 0):
    """Stage (B), eq. (13): balanced gradient flow on the active coordinates until stationary.

    A balanced ``theta = (u, s*u)`` stays balanced, so ``d beta_j/dt = 2 |beta_j| g_j(beta)`` (exact);
    we integrate ``z_j = log|beta_j|`` (``dz_j/dt = 2 sgn(beta_j) g_j``).  A coordinate that decays below
    ``drop_tol`` while ``g_j`` still pushes it to zero leaves the support (Lemma D.4).  Returns
    ``(beta, dropped)``; raises :class:`DegenerateStageError` naming ``stage`` if it does not converge.
    """
    device = getattr(model, "X", getattr(model, "sigma", None)).device
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
               device=None) -> list[Stage]:
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
    dev = device if device is not None else getattr(model, "X", getattr(model, "sigma", None)).device
    beta = np.zeros(p)
    b = np.ones(p) if b0 is None else np.asarray(b0, dtype=float).copy()
    T = 0.0
    stages = [Stage(0, 0.0, beta.copy(), b.copy(), float(model.loss(to(beta).to(dev))[0]))]
    for k in range(max_stages):
        gamma = model.g(to(beta).to(dev))[0].cpu().numpy()
        support = np.flatnonzero(beta)
        delta = time_until_active(gamma, b, support, g_tol)
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
        b[ik] = 1.0 - s  # exactly 0 (s = +1) or 2 (s = -1)
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


def restricted_hessian_min(model: DiagonalModel, beta: np.ndarray, device=None) -> float:
    """Smallest eigenvalue of ``Hess Ltilde`` restricted to ``supp(beta)``.

    At a stationary point the Hessian of ``u -> Ltilde(s * u^2)`` on the support is ``D H D`` with
    ``D = diag(2 s u)``, so Assumption 4.4 (strict local minimum) holds iff this is positive.
    """
    support = np.flatnonzero(beta)
    if support.size == 0:
        return math.inf
    dev = device if device is not None else "cpu"
    H = model.hessian(torch.from_numpy(beta).to(dev)).cpu().numpy()
    return float(np.linalg.eigvalsh(H[np.ix_(support, support)]).min())


def stage_b_spread(model: DiagonalModel, stages: list[Stage], eps2_values=(1e-6, 1e-8, 1e-10),
                   jitter: float = 0.01, seed: int = 0) -> float:
    """Assumption 4.5 in practice: rerun every stage (B) from seeds ``eps^2`` in ``eps2_values`` and from
    ``beta^k`` jittered by +-``jitter`` (relative) on its support; return the largest distance
    ``max |beta - beta^{k+1}|`` between any rerun and Algorithm 1's ``beta^{k+1}``."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for prev, nxt in zip(stages[:-1], stages[1:]):
        starts = []
        for e2 in eps2_values:
            s0 = prev.beta.copy()
            s0[nxt.coordinate] = nxt.sign * e2
            starts.append(s0)
        s0 = starts[0].copy()
        s0[prev.support] *= 1.0 + jitter * rng.uniform(-1, 1, prev.support.size)
        starts.append(s0)
        for s0 in starts:
            beta, _, _ = train_active(model, s0, np.append(prev.support, nxt.coordinate), stage=nxt.k)
            worst = max(worst, float(np.abs(beta - nxt.beta).max()))
    return worst


def closed_form_orthogonal(beta_star: np.ndarray):
    """Algorithm 1 in closed form for ``Sigma = I`` (note Sec. 2.8): ``T_k = 1/|beta*|_(k)``, losses
    ``1/2 sum_{j>k} |beta*|_(j)^2``; returns ``(T, order, losses)`` over the nonzero entries."""
    mags = np.abs(beta_star)
    order = [int(i) for i in np.argsort(-mags) if mags[i] > 0]
    T = [1.0 / mags[i] for i in order]
    sq = np.sort(mags)[::-1] ** 2
    losses = [0.5 * float(sq[k:].sum()) for k in range(len(order) + 1)]
    return T, order, losses

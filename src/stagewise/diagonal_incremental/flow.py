"""Training dynamics of networks with diagonal weights at small initialization (Boix-Adsera et al. 2023).

* :func:`log_scale_flow` -- gradient flow (eq. 3) from ``theta(0) = alpha theta_0`` simulated EXACTLY through
  the log-scale variable ``b = log_alpha(u + v)`` in rescaled time ``tau = t / log(1/alpha)``
  (eqs. 6-7 and 14: ``db/dtau = -g``), batched over alphas; alpha down to 1e-300 in float64.
* :func:`gradient_descent` -- plain GD on ``(u, v)``, batched over (alpha, eta) rows, with the exact identity
  ``u^2 - v^2 <- (u^2 - v^2)(1 - eta^2 g^2)`` tracked step by step.
* :func:`transition_times`, :func:`richardson` -- plateau detection and extrapolation in ``1/log(1/alpha)``.
* :func:`full_head_gd` -- a single attention head with FULL weight matrices (beyond the theory).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.integrate import solve_ivp

from stagewise.diagonal_incremental.algorithm import DiagonalModel, _softmax
from stagewise.numerics.flows import assert_finite


def normalize_init(u0: np.ndarray, v0: np.ndarray):
    """WLOG normalisation (App. C.3, corrected): swap ``u_i <-> v_i`` where ``|u_i| < |v_i|`` and flip both
    signs where ``u_i < 0``; both maps preserve ``u * v`` and the dynamics.  Afterwards ``u_i > |v_i|``.
    Raises ``ValueError`` if some ``|u_i(0)| = |v_i(0)|`` (Assumption 4.3, first clause)."""
    u0, v0 = np.asarray(u0, float), np.asarray(v0, float)
    if np.any(np.abs(u0) == np.abs(v0)):
        raise ValueError("initialization has |u_i(0)| = |v_i(0)| for some i (Assumption 4.3 fails)")
    swap = np.abs(u0) < np.abs(v0)
    u, v = np.where(swap, v0, u0), np.where(swap, u0, v0)
    flip = u < 0
    return np.where(flip, -u, u), np.where(flip, -v, v)


def beta_of_b(b: torch.Tensor, L: torch.Tensor, log_c: torch.Tensor) -> torch.Tensor:
    """Eq. (7) on the log scale: ``w = alpha^b = exp(-L b)``, ``beta = (w^2 - c^2 / w^2) / 4``.

    ``L = log(1/alpha)`` and ``log c = log(u_0^2 - v_0^2)`` per row; exponents are clipped at 60 so that
    rejected trial steps of the adaptive solver cannot overflow."""
    lw = -L * b
    return 0.25 * (torch.exp(torch.clamp(2 * lw, max=60.0)) - torch.exp(torch.clamp(2 * log_c - 2 * lw, max=60.0)))


def log_scale_flow(model: DiagonalModel, alphas, u0: np.ndarray, v0: np.ndarray, tau: np.ndarray,
                   rtol: float = 1e-8, atol: float = 1e-10, device="cpu", method: str = "LSODA",
                   batched: bool | None = None):
    """Exact gradient flow for every ``alpha``, in rescaled time ``tau`` (see :func:`_log_scale_flow_batch`).

    ``batched=True`` integrates all alphas as one ODE (best on a GPU, where one evaluation of ``g`` for all
    rows costs about as much as for one); ``batched=False`` integrates one ODE per alpha (best on a CPU:
    the adaptive steps of each alpha are then not forced on the others).  Default: batched on CUDA only.
    """
    if batched is None:
        batched = torch.device(device).type == "cuda"
    if batched or len(alphas) == 1:
        return _log_scale_flow_batch(model, alphas, u0, v0, tau, rtol, atol, device, method)
    parts = [_log_scale_flow_batch(model, [a], u0, v0, tau, rtol, atol, device, method) for a in alphas]

    def dense(t: float) -> torch.Tensor:
        return torch.cat([q["dense"](t) for q in parts], dim=0)

    out = {key: np.concatenate([q[key] for q in parts], axis=1) for key in ("b", "beta", "loss")}
    out.update(tau=tau, nfev=sum(q["nfev"] for q in parts), dense=dense,
               L=np.concatenate([q["L"] for q in parts]), b0=np.concatenate([q["b0"] for q in parts]))
    return out


def _log_scale_flow_batch(model: DiagonalModel, alphas, u0: np.ndarray, v0: np.ndarray, tau: np.ndarray,
                          rtol: float, atol: float, device, method: str):
    """Exact gradient flow for every ``alpha`` at once, in rescaled time ``tau`` (one batched ODE).

    State ``b`` of shape ``(len(alphas), p)``; ``b(0) = 1 + log(u_0 + v_0) / log(alpha)`` (normalised init).
    Returns a dict with ``tau``, ``b`` ``(T, B, p)``, ``beta`` ``(T, B, p)``, ``loss`` ``(T, B)``, ``nfev`` and
    ``dense`` (a callable ``tau -> beta (B, p)`` for refining crossing times).
    """
    un, vn = normalize_init(u0, v0)
    alphas = np.asarray(alphas, float)
    L = -np.log(alphas)[:, None]                                    # (B, 1)
    log_c = -2 * L + np.log(un ** 2 - vn ** 2)[None]                # (B, p)
    b0 = 1.0 + np.log(un + vn)[None] / -L                           # log_alpha(alpha (u0 + v0))
    B, p = b0.shape
    Lt = torch.from_numpy(L).to(device)
    lct = torch.from_numpy(log_c).to(device)

    def beta_np(y):
        bb = torch.from_numpy(np.ascontiguousarray(y)).reshape(-1, B, p).to(device)
        return beta_of_b(bb, Lt, lct)

    def rhs(_t, y):
        return -model.g(beta_np(y)[0]).cpu().numpy().reshape(-1)

    sol = solve_ivp(rhs, (0.0, float(tau[-1])), b0.reshape(-1), method=method, rtol=rtol, atol=atol,
                    dense_output=True)
    if not sol.success:
        raise RuntimeError(f"log-scale gradient flow failed: {sol.message}; loosen ode_rtol")
    bs = sol.sol(tau).T.reshape(len(tau), B, p)
    beta = beta_np(bs.reshape(len(tau), -1)).reshape(len(tau), B, p)
    loss = model.loss(beta.reshape(-1, p)).reshape(len(tau), B)
    assert_finite("ode_rtol", rtol, 0, beta, loss)

    def dense(t: float) -> torch.Tensor:
        return beta_np(sol.sol(t))[0]

    return {"tau": tau, "b": bs, "beta": beta.cpu().numpy(), "loss": loss.cpu().numpy(), "nfev": int(sol.nfev),
            "dense": dense, "L": L[:, 0], "b0": b0}


def gradient_descent(model: DiagonalModel, u0: np.ndarray, v0: np.ndarray, alphas, etas, n_steps: int,
                     record_every: int = 10, device="cpu", param_name: str = "eta"):
    """Plain GD ``u <- u + eta v g``, ``v <- v + eta u g`` (``g = -grad Ltilde(u v)``), rows = (alpha, eta) pairs.

    Tracks the exact discrete identity (note Sec. 0.3): ``c_{n+1} = c_n (1 - eta^2 g_n^2)`` with
    ``c = u^2 - v^2``, by accumulating the product alongside the weights.  Returns recorded ``tau``
    (``eta * step / log(1/alpha)``), ``loss``, ``beta``, and for the identity ``c`` (measured),
    ``c_pred`` (``c_0 prod (1 - eta^2 g^2)``) and ``scale`` (``max_n (u_n^2 + v_n^2)``), each ``(B, p)``.
    """
    alphas, etas = np.broadcast_arrays(np.asarray(alphas, float), np.asarray(etas, float))
    u = torch.from_numpy(alphas[:, None] * np.asarray(u0)[None]).to(device)
    v = torch.from_numpy(alphas[:, None] * np.asarray(v0)[None]).to(device)
    eta = torch.from_numpy(etas[:, None].copy()).to(device)
    c0 = u * u - v * v
    factor = torch.ones_like(u)
    scale = u * u + v * v
    L = -np.log(alphas)
    taus, losses, betas = [], [], []
    for step in range(n_steps + 1):
        if step % record_every == 0 or step == n_steps:
            beta = u * v
            taus.append(etas * step / L)
            losses.append(model.loss(beta).cpu().numpy())
            betas.append(beta.cpu().numpy())
        if step == n_steps:
            break
        g = model.g(u * v)
        factor = factor * (1 - eta * eta * g * g)
        u, v = u + eta * v * g, v + eta * u * g
        scale = torch.maximum(scale, u * u + v * v)
        if step % 100 == 0:
            assert_finite(param_name, float(etas.max()), step, u, v)
    assert_finite(param_name, float(etas.max()), n_steps, u, v)
    return {"tau": np.array(taus).T, "loss": np.array(losses).T, "beta": np.array(betas).transpose(1, 0, 2),
            "c": (u * u - v * v).cpu().numpy(), "c_pred": (c0 * factor).cpu().numpy(), "c0": c0.cpu().numpy(),
            "scale": scale.cpu().numpy(), "u": u.cpu().numpy(), "v": v.cpu().numpy()}


def weights_from_b(b: np.ndarray, L: float, u0: np.ndarray, v0: np.ndarray):
    """Recover the normalised weights ``(u, v)`` from ``b`` via eq. (7): ``w = alpha^b``, ``u - v = c / w``."""
    un, vn = normalize_init(u0, v0)
    lw = -L * b
    lc = -2 * L + np.log(un ** 2 - vn ** 2)
    w, wt = np.exp(lw), np.exp(lc - lw)
    return 0.5 * (w + wt), 0.5 * (w - wt)


def transition_times(tau: np.ndarray, loss: np.ndarray, levels, dense_loss=None, iters: int = 40):
    """Plateau detection: the k-th transition is the first time after the (k-1)-th at which the loss falls
    below ``(L(theta^{k-1}) + L(theta^k)) / 2``; ``levels`` are Algorithm 1's plateau losses.

    ``dense_loss(t)`` (optional) refines each crossing by bisection.  Returns a list (``nan`` if missing)."""
    times, start = [], 0
    for k in range(1, len(levels)):
        mid = 0.5 * (levels[k - 1] + levels[k])
        below = np.flatnonzero(loss[start:] < mid)
        if below.size == 0:
            times.append(math.nan)
            continue
        j = start + int(below[0])
        lo, hi = tau[max(j - 1, 0)], tau[j]
        if dense_loss is not None and j > 0:
            for _ in range(iters):
                m = 0.5 * (lo + hi)
                lo, hi = (lo, m) if dense_loss(m) < mid else (m, hi)
        times.append(0.5 * (lo + hi))
        start = j
    return times


def richardson(alphas, times, order: int = 2):
    """Fit ``tau_k(alpha) = T + sum_{j=1..order} C_j / log(1/alpha)^j`` (least squares) and return ``T``."""
    x = 1.0 / -np.log(np.asarray(alphas, float))
    A = np.vander(x, order + 1, increasing=True)
    return float(np.linalg.lstsq(A, np.asarray(times, float), rcond=None)[0][0])


def count_plateaus(tau: np.ndarray, loss: np.ndarray, rel_drop: float = 0.2, window: float = 0.05,
                   floor: float = 1e-8) -> int:
    """Count loss drops (independent of Algorithm 1): a drop is a window of rescaled width ``window``
    over which the loss falls by more than ``rel_drop`` of its value; consecutive windows merge; losses
    below ``floor * loss[0]`` (rounding noise once the loss is ~0) are ignored.
    Returns the number of plateaus = number of drops + 1 (the last plateau is the final one)."""
    step = max(1, int(round(window / (tau[1] - tau[0]))))
    drop = ((loss[:-step] - loss[step:]) > rel_drop * loss[:-step]) & (loss[:-step] > floor * loss[0])
    edges = np.flatnonzero(np.diff(drop.astype(int)) == 1).size + int(drop[0])
    return edges + 1


# ----------------------------------------------------------------------------------------------
# beyond the theory: a single attention head with full weights (paper v1, Fig. 2d-f)
# ----------------------------------------------------------------------------------------------
def full_head_teacher(n_samples: int, n_tokens: int, d: int, svals_kq, svals_vo, seed: int, device="cpu"):
    """Teacher ``M_KQ = U_1 diag(s_kq) V_1^T``, ``M_VO = U_2 diag(s_vo) V_2^T`` with random orthonormal
    factors; returns ``(X, Y, M_kq, M_vo)`` with ``Y = softmax(X M_KQ X^T) X M_VO``."""
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n_samples, n_tokens, d, generator=gen, dtype=torch.float64)

    def lowrank(s):
        Q1, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
        Q2, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
        r = len(s)
        return Q1[:, :r] @ torch.diag(torch.tensor(s, dtype=torch.float64)) @ Q2[:, :r].T

    M_kq, M_vo = lowrank(svals_kq), lowrank(svals_vo)
    Y = _softmax(X @ M_kq @ X.transpose(1, 2)) @ X @ M_vo
    return X.to(device), Y.to(device), M_kq.to(device), M_vo.to(device)


def full_head_gd(X, Y, alpha: float, eta: float, n_steps: int, seed: int, record_every: int = 10):
    """GD on ``W_K, W_Q, W_V, W_O`` (all ``d x d``) from ``alpha * N(0, 1/d)``; records the singular values
    of ``W_K W_Q^T`` and ``W_V W_O^T`` and the loss against ``tau = eta * step / log(1/alpha)``."""
    d = X.shape[-1]
    gen = torch.Generator().manual_seed(seed + 1)
    Ws = [(alpha * torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)).to(X.device)
          .requires_grad_(True) for _ in range(4)]
    N = X.shape[0]
    taus, losses, s_kq, s_vo = [], [], [], []
    for step in range(n_steps + 1):
        WK, WQ, WV, WO = Ws
        Mkq, Mvo = WK @ WQ.T, WV @ WO.T
        out = _softmax(X @ Mkq @ X.transpose(1, 2)) @ X @ Mvo
        loss = 0.5 * (out - Y).pow(2).sum() / N
        if step % record_every == 0 or step == n_steps:
            taus.append(eta * step / math.log(1 / alpha))
            losses.append(float(loss))
            s_kq.append(torch.linalg.svdvals(Mkq.detach()).cpu().numpy())
            s_vo.append(torch.linalg.svdvals(Mvo.detach()).cpu().numpy())
        if step == n_steps:
            break
        grads = torch.autograd.grad(loss, Ws)
        with torch.no_grad():
            for W, G in zip(Ws, grads):
                W -= eta * G
        if step % 100 == 0:
            assert_finite("full_eta", eta, step, *Ws)
    return {"tau": np.array(taus), "loss": np.array(losses), "s_kq": np.array(s_kq), "s_vo": np.array(s_vo)}


def plateau_midpoints(T, tau_end: float) -> np.ndarray:
    """Midpoints of the plateaus ``(T_k, T_{k+1})`` (``T_0 = 0``; the last plateau ends at ``tau_end``)."""
    edges = np.concatenate([[0.0], np.asarray(T, float), [tau_end]])
    return 0.5 * (edges[:-1] + edges[1:])


def support_counts(beta: np.ndarray, d: int, threshold: float = 1e-3) -> np.ndarray:
    """Ranks of ``W_K W_Q^T = diag(beta[:d])`` and ``W_V W_O^T = diag(beta[d:])`` (Example 3.2): the number
    of entries above ``threshold`` in absolute value; ``beta`` ``(..., 2d)`` -> ``(..., 2)``."""
    big = np.abs(beta) > threshold
    return np.stack([big[..., :d].sum(-1), big[..., d:].sum(-1)], axis=-1)


def perturbation_runs(model: DiagonalModel, U0: np.ndarray, V0: np.ndarray, eta: float, n_steps: int,
                      record_every: int = 10, device="cpu"):
    """GD from given weight rows ``(U0, V0)`` of shape ``(B, p)`` (paper App. A perturbation tests);
    returns ``t = eta * step`` and the product-space trajectories ``beta`` ``(B, records, p)``."""
    u = torch.from_numpy(np.ascontiguousarray(U0, dtype=float)).to(device)
    v = torch.from_numpy(np.ascontiguousarray(V0, dtype=float)).to(device)
    ts, betas = [], []
    for step in range(n_steps + 1):
        if step % record_every == 0 or step == n_steps:
            ts.append(eta * step)
            betas.append((u * v).cpu().numpy())
        if step == n_steps:
            break
        g = model.g(u * v)
        u, v = u + eta * v * g, v + eta * u * g
    assert_finite("eta", eta, n_steps, u, v)
    return {"t": np.array(ts), "beta": np.array(betas).transpose(1, 0, 2)}

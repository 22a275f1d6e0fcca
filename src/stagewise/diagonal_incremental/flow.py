"""Exact gradient flow (eq. 3) at small initialization through the log-scale variable (Lemma 4.2, eqs. 6-7, 14).

From ``theta(0) = alpha theta_0`` (after the WLOG normalisation of App. C.3, corrected), ``b = log_alpha(u + v)``
solves ``db/dtau = -g(beta)`` in rescaled time ``tau = t / log(1/alpha)``, with ``beta`` given by eq. (7):
exact, batched over alphas, and usable down to ``alpha = 1e-300`` in float64.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.integrate import solve_ivp

from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.numerics.flows import assert_finite
from stagewise.numerics.roundoff import is_zero


def normalize_init(u0: np.ndarray, v0: np.ndarray):
    """WLOG normalisation (App. C.3, corrected): swap ``u_i <-> v_i`` where ``|u_i| < |v_i|`` and flip both
    signs where ``u_i < 0``; both maps preserve ``u * v`` and the dynamics.  Afterwards ``u_i > |v_i|``.
    Raises ``ValueError`` if some ``|u_i(0)| = |v_i(0)|`` (Assumption 4.3, first clause)."""
    u0, v0 = np.asarray(u0, float), np.asarray(v0, float)
    # c_i = u_i^2 - v_i^2 enters through log c_i: zero within its rounding error is |u_i(0)| = |v_i(0)|
    if any(is_zero(a * a - b * b, a * a + b * b, 2) for a, b in zip(u0, v0)):
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
                   batched: bool | None = None, max_step: float = np.inf):
    """Exact gradient flow (Lemma 4.2, eqs. 6-7 and 14: ``db/dtau = -g``) for every ``alpha``, in rescaled time
    ``tau``; returns the dict of :func:`_log_scale_flow_batch`.

    ``batched=True`` integrates all alphas as one ODE (best on a GPU, where one evaluation of ``g`` for all
    rows costs about as much as for one); ``batched=False`` integrates one ODE per alpha (best on a CPU:
    the adaptive steps of each alpha are then not forced on the others).  Default: batched on CUDA only.
    ``max_step`` caps the solver's step in ``tau``: across a long plateau LSODA can grow its step so far that
    it jumps over a transition onto a diverging branch (the loss then rises, which gradient flow cannot do).
    """
    if batched is None:
        batched = torch.device(device).type == "cuda"
    if batched or len(alphas) == 1:
        return _log_scale_flow_batch(model, alphas, u0, v0, tau, rtol, atol, device, method, max_step)
    parts = [_log_scale_flow_batch(model, [a], u0, v0, tau, rtol, atol, device, method, max_step) for a in alphas]

    def dense(t: float) -> torch.Tensor:
        return torch.cat([q["dense"](t) for q in parts], dim=0)

    out = {key: np.concatenate([q[key] for q in parts], axis=1) for key in ("b", "beta", "loss")}
    out.update(tau=tau, nfev=sum(q["nfev"] for q in parts), dense=dense,
               L=np.concatenate([q["L"] for q in parts]), b0=np.concatenate([q["b0"] for q in parts]))
    return out


def _log_scale_flow_batch(model: DiagonalModel, alphas, u0: np.ndarray, v0: np.ndarray, tau: np.ndarray,
                          rtol: float, atol: float, device, method: str, max_step: float = np.inf):
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
                    dense_output=True, max_step=max_step)
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


def weights_from_b(b: np.ndarray, L: float, u0: np.ndarray, v0: np.ndarray):
    """Recover the normalised weights ``(u, v)`` from ``b`` via eq. (7): ``w = alpha^b``, ``u - v = c / w``."""
    un, vn = normalize_init(u0, v0)
    lw = -L * b
    lc = -2 * L + np.log(un ** 2 - vn ** 2)
    w, wt = np.exp(lw), np.exp(lc - lw)
    return 0.5 * (w + wt), 0.5 * (w - wt)

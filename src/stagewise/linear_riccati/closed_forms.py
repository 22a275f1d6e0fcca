"""Closed forms for two-layer linear networks from I_gamma (Varre et al. 2023; corrected where noted).

All functions are NumPy, float64, vectorized by broadcasting (singular values s, scales gamma, times t).
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import minimize


# ----------------------------------------------------------------------------- Theorem C.12 (whitened data)
def sigma_alpha(s, gamma, t):
    """Singular values of alpha = Z1^{-T} Z2 (Theorem C.12, eq. C.33), stable form:
    sigma_alpha = s (1 - E) / (w + v E), E = exp(-2 sqrt(s^2 + gamma^2) t), v, w = sqrt(s^2+gamma^2) -/+ gamma."""
    s, gamma, t = np.asarray(s, float), np.asarray(gamma, float), np.asarray(t, float)
    root = np.sqrt(s ** 2 + gamma ** 2)
    v, w, E = s ** 2 / (root + gamma), root + gamma, np.exp(-2 * root * t)
    return s * (1 - E) / (w + v * E)


def sigma_beta(s, gamma, t):
    """Singular values of beta(t) = W1 W2 under gradient flow on whitened data (Theorem C.12), in the
    numerically stable form gamma s (1-E)(w+vE) / (gamma w + 2 s^2 E - gamma v E^2); v = s^2/(root+gamma)
    avoids the cancellation root - gamma for small s/gamma. Equals 2 gamma sigma_alpha / (1 - sigma_alpha^2)."""
    s, gamma, t = np.asarray(s, float), np.asarray(gamma, float), np.asarray(t, float)
    root = np.sqrt(s ** 2 + gamma ** 2)
    v, w, E = s ** 2 / (root + gamma), root + gamma, np.exp(-2 * root * t)
    return gamma * s * (1 - E) * (w + v * E) / (gamma * w + 2 * s ** 2 * E - gamma * v * E ** 2)


def sigma_beta_paper(s, gamma, t):
    """The paper's literal (C.33) for sigma_alpha, then sigma_beta = 2 gamma sigma_alpha / (1 - sigma_alpha^2).
    Loses accuracy when gamma/s is tiny (1 - sigma_alpha^2 cancels); kept to compare with the stable form."""
    s, gamma, t = np.asarray(s, float), np.asarray(gamma, float), np.asarray(t, float)
    root = np.sqrt(s ** 2 + gamma ** 2)
    E = np.exp(-2 * t * root)
    a = np.sqrt(1 + gamma ** 2 / s ** 2) * (gamma + root - E * (root - gamma)) / (gamma + root + E * (root - gamma))
    a = a - gamma / s
    return 2 * gamma * a / (1 - a ** 2)


def sigma_beta_ode(s: float, gamma: float, times, rtol: float = 1e-12, atol: float = 1e-30) -> np.ndarray:
    """Independent reference: integrate sigma' = 2 sqrt(gamma^2 + sigma^2) (s - sigma), sigma(0) = 0 (DOP853).
    This is the corrected mirror flow of Theorem 3.2(a) with R = beta_* - beta (whitened data)."""
    sol = solve_ivp(lambda _t, y: 2 * np.sqrt(gamma ** 2 + y ** 2) * (s - y), (0, float(np.max(times))), [0.0],
                    t_eval=np.asarray(times, float), method="DOP853", rtol=rtol, atol=atol)
    return sol.y[0]


def hidden_singular_values(sigma_b, gamma):
    """Lemma C.10 at any time: sigma_i(W1)^2 = gamma + sqrt(gamma^2 + sigma_i(beta)^2) (W1 W1^T = gamma I +
    (gamma^2 I + beta beta^T)^{1/2}); directions with sigma_i(beta) = 0 sit at sqrt(2 gamma)."""
    return np.sqrt(gamma + np.sqrt(np.asarray(gamma, float) ** 2 + np.asarray(sigma_b, float) ** 2))


def half_time(s, gamma):
    """Exact time at which sigma_beta = s/2 (whitened gradient flow): the root E in (0,1) of
    gamma v E^2 + (4 gamma^2 + 2 s^2) E - gamma w = 0, written without cancellation, t = -ln(E) / (2 root)."""
    s, gamma = np.asarray(s, float), np.asarray(gamma, float)
    root = np.sqrt(s ** 2 + gamma ** 2)
    w = root + gamma
    B = 4 * gamma ** 2 + 2 * s ** 2
    E = 2 * gamma * w / (B + np.sqrt(B ** 2 + 4 * gamma ** 2 * s ** 2))
    return -np.log(E) / (2 * root)


def jump_time(s):
    """gamma -> 0 limit of the rescaled learning time t / ln(1/gamma): 1/(2 sigma_*,i) (Theorem C.12)."""
    return 1.0 / (2 * np.asarray(s, float))


def rescaled_half_time_first_order(s, gamma):
    """First correction: t_1/2 / ln(1/gamma) ~ 1/(2s) + ln(2s) / (2 s ln(1/gamma)), so the rescaled
    time approaches the jump time only like 1/ln(1/gamma)."""
    s = np.asarray(s, float)
    return 1 / (2 * s) + np.log(2 * s) / (2 * s * np.log(1 / np.asarray(gamma, float)))


def jump_process(s, tau):
    """The gamma -> 0 limit of sigma_beta(ln(1/gamma) tau): s * 1(tau > 1/(2 s)) (value s/(1+2s) at the jump)."""
    s, tau = np.asarray(s, float), np.asarray(tau, float)
    return np.where(tau > jump_time(s), s, np.where(tau == jump_time(s), s / (1 + 2 * s), 0.0))


# ----------------------------------------------------------------------------- Theorem 3.1 / Corollary 3.1
def corollary_spectrum(sigma_star, gamma, d: int) -> np.ndarray:
    """Corollary 3.1: singular values of W1 at the limit, sqrt(gamma + sqrt(gamma^2 + sigma_i(beta_*)^2)) for
    i <= k and sqrt(2 gamma) for the remaining d - k (sorted, largest first). Broadcasts over gamma[:, None]."""
    s = np.zeros(d)
    s[:len(sigma_star)] = np.sort(np.asarray(sigma_star, float))[::-1]
    return hidden_singular_values(s, np.asarray(gamma, float)[..., None] if np.ndim(gamma) else gamma)


def stable_rank(sv) -> np.ndarray:
    """||W||_F^2 / ||W||_2^2 from singular values (last axis)."""
    sv = np.asarray(sv, float)
    return (sv ** 2).sum(-1) / sv.max(-1) ** 2


def objective(W1, W2, gamma) -> np.ndarray:
    """The variational objective (3.1): 1/2 ||W1||^2 + 1/2 ||W2||^2 - gamma log det(W1 W1^T) (batched, torch)."""
    import torch
    g = torch.as_tensor(np.asarray(gamma, float), dtype=W1.dtype, device=W1.device)
    val = 0.5 * (W1 ** 2).sum((-2, -1)) + 0.5 * (W2 ** 2).sum((-2, -1)) \
        - g * torch.logdet(W1 @ W1.transpose(-2, -1))
    return val.cpu().numpy()


def variational_value(sigma_star, gamma, d: int) -> np.ndarray:
    """Closed-form minimum of (3.1): V*(gamma) = sum_{i<=d} (m_i - gamma - gamma ln m_i), m_i = gamma +
    sqrt(gamma^2 + sigma_i(beta_*)^2) (sigma_i = 0 beyond the rank). Derived: partial minimization in W2 gives
    F(beta, M) = 1/2 tr M + 1/2 tr(beta^T M^{-1} beta) - gamma log det M, M = W1 W1^T, minimized at beta_*, M_*."""
    s = np.zeros(d)
    s[:len(sigma_star)] = np.asarray(sigma_star, float)
    g = np.asarray(gamma, float)[..., None]
    m = g + np.sqrt(g ** 2 + s ** 2)
    return (m - g - g * np.log(m)).sum(-1)


def variational_numeric(X: np.ndarray, Y: np.ndarray, gamma: float, seed: int = 0) -> dict:
    """Independent numerical minimum of the convex reformulation F(beta, M) over interpolators
    beta = X^+ Y + K C (K spans ker X) and M = L L^T (L square), by L-BFGS from a random start.
    Returns the value, the distance of the minimizing beta from X^+ Y and the final gradient norm."""
    import torch
    X, Y = np.asarray(X, float), np.asarray(Y, float)
    n, d = X.shape
    k = Y.shape[1]
    beta0 = np.linalg.pinv(X) @ Y
    _, _, Vt = np.linalg.svd(X)
    K = Vt[n:].T                                     # d x (d - n), basis of ker X
    Kt, B0 = torch.from_numpy(K), torch.from_numpy(beta0)
    rng = np.random.default_rng(seed)
    x0 = np.concatenate([(np.eye(d) + 0.1 * rng.standard_normal((d, d))).ravel(),
                         rng.standard_normal(K.shape[1] * k)])

    def f(x):
        xt = torch.from_numpy(x).requires_grad_(True)
        L = xt[:d * d].reshape(d, d)
        C = xt[d * d:].reshape(K.shape[1], k)
        beta = B0 + Kt @ C
        M = L @ L.T
        val = 0.5 * torch.trace(M) + 0.5 * torch.trace(beta.T @ torch.linalg.solve(M, beta)) \
            - gamma * torch.logdet(M)
        val.backward()
        return float(val.detach()), xt.grad.numpy().copy()
    res = minimize(f, x0, jac=True, method="L-BFGS-B", options={"maxiter": 20000, "gtol": 1e-11, "ftol": 1e-15})
    C = res.x[d * d:].reshape(K.shape[1], k)
    return {"value": float(res.fun), "beta_error": float(np.linalg.norm(K @ C)),
            "grad_norm": float(np.linalg.norm(f(res.x)[1]))}


# ----------------------------------------------------------------------------- Theorem 3.2 (mirror flow)
def mirror_grad(sigma, gamma):
    """Gradient of the corrected potential Psi_gamma(D) = 1/2 tr(D asinh(D/gamma) - sqrt(D^2 + gamma^2)):
    1/2 asinh(sigma/gamma). Its time derivative is sigma'/(2 sqrt(sigma^2 + gamma^2)) = u^T R v."""
    return 0.5 * np.arcsinh(np.asarray(sigma, float) / gamma)


def mirror_grad_paper(sigma, gamma):
    """Gradient of the potential as printed, tr(1/2 D asinh(D/gamma) - sqrt(D^2 + gamma^2)):
    1/2 asinh(sigma/gamma) - 1/2 sigma/sqrt(sigma^2 + gamma^2) (erratum: not the mirror map of the flow)."""
    sigma = np.asarray(sigma, float)
    return 0.5 * np.arcsinh(sigma / gamma) - 0.5 * sigma / np.sqrt(sigma ** 2 + gamma ** 2)


# ----------------------------------------------------------------------------- discrete time
def whitened_mode_recursion(s, gamma: float, eta: float, steps: int) -> dict:
    """Exact GD on whitened data, per mode: a <- a + eta r b, b <- b + eta a r, r = s - a b, a0 = sqrt(2 gamma),
    b0 = 0 (vectorized over modes s). Also returns the invariant law (a^2 - b^2) = 2 gamma prod(1 - eta^2 r^2)."""
    s = np.asarray(s, float)
    a, b = np.full_like(s, np.sqrt(2 * gamma)), np.zeros_like(s)
    log_prod = np.zeros_like(s)
    sb = np.empty((steps + 1, len(s)))
    sb[0] = 0.0
    for m in range(steps):
        r = s - a * b
        log_prod += np.log1p(-(eta * r) ** 2)
        a, b = a + eta * r * b, b + eta * a * r
        sb[m + 1] = a * b
    return {"sigma_beta": sb, "a": a, "b": b, "invariant_law": 2 * gamma * np.exp(log_prod)}


def crossing_time(t, values, level) -> float:
    """First time a sampled increasing curve reaches ``level`` (linear interpolation); nan if never."""
    values = np.asarray(values, float)
    idx = np.flatnonzero(values >= level)
    if len(idx) == 0:
        return float("nan")
    i = idx[0]
    if i == 0:
        return float(t[0])
    return float(t[i - 1] + (level - values[i - 1]) * (t[i] - t[i - 1]) / (values[i] - values[i - 1]))


# ----------------------------------------------------------------------------- Theorem 3.2(b) (k = 1)
def psi_k1(beta_norm, gamma):
    """Potential of the k = 1 time-warped mirror flow (Theorem 3.2(b)):
    psi(beta) = 2/3 (s + gamma)^{3/2} - 2 gamma (s + gamma)^{1/2}, s = sqrt(||beta||^2 + gamma^2)."""
    m = np.sqrt(np.asarray(beta_norm, float) ** 2 + gamma ** 2) + gamma
    return 2.0 / 3.0 * m ** 1.5 - 2 * gamma * np.sqrt(m)


def rate_bound_k1(beta_star_norm, gamma, t):
    """Lemma C.8: L(beta(t)) <= D_psi(beta_*, 0) / (sqrt(2 gamma) t), with D_psi(beta_*, 0) = psi(beta_*) +
    (2 gamma)^{3/2} / 3 (derived: psi(0) = -(2 gamma)^{3/2}/3 and grad psi(0) = 0)."""
    D = psi_k1(beta_star_norm, gamma) + (2 * gamma) ** 1.5 / 3
    return D / (np.sqrt(2 * gamma) * np.asarray(t, float))


def dual_flow_k1(XtX: np.ndarray, Xty: np.ndarray, gamma: float, times, rtol: float = 1e-11, atol: float = 1e-14):
    """Integrate the k = 1 mirror flow in its dual variable theta = grad psi(beta) = (gamma + s)^{-1/2} beta:
    theta' = sqrt(2 gamma + ||theta||^2) X^T (y - X beta), beta = sqrt(2 gamma + ||theta||^2) theta, theta(0) = 0
    (derived explicit inverse of the mirror map). Returns beta at ``times`` (T x d)."""
    XtX, Xty = np.asarray(XtX, float), np.asarray(Xty, float).ravel()

    def rhs(_t, th_):
        c = np.sqrt(2 * gamma + th_ @ th_)
        return c * (Xty - XtX @ (c * th_))
    sol = solve_ivp(rhs, (0.0, float(np.max(times))), np.zeros(len(Xty)), t_eval=np.asarray(times, float),
                    method="DOP853", rtol=rtol, atol=atol)
    th_ = sol.y.T
    return np.sqrt(2 * gamma + (th_ ** 2).sum(1))[:, None] * th_

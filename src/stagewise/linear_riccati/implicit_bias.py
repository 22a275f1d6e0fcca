"""Where training ends: Theorem 3.1, Corollary 3.1 and the variational optimum in closed form.

Statements ``thm-linear-riccati-main``, ``thm-linear-riccati-cor``, ``thm-linear-riccati-varopt`` and the
Lemma C.10 consequence of ``thm-linear-riccati-invariant``.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize


def hidden_singular_values(sigma_b, gamma):
    """Lemma C.10 (consequence in ``thm-linear-riccati-invariant``) at any time: sigma_i(W1)^2 = gamma + sqrt(gamma^2 +
    sigma_i(beta)^2) (W1 W1^T = gamma I + (gamma^2 I + beta beta^T)^{1/2}); directions with sigma_i(beta) = 0 sit at
    sqrt(2 gamma)."""
    return np.sqrt(gamma + np.sqrt(np.asarray(gamma, float) ** 2 + np.asarray(sigma_b, float) ** 2))


def corollary_spectrum(sigma_star, gamma, d: int) -> np.ndarray:
    """Corollary 3.1 (``thm-linear-riccati-cor``): singular values of W1 at the limit, sqrt(gamma + sqrt(gamma^2 +
    sigma_i(beta_*)^2)) for i <= k and sqrt(2 gamma) for the remaining d - k (sorted, largest first). Broadcasts
    over gamma[:, None]."""
    s = np.zeros(d)
    s[:len(sigma_star)] = np.sort(np.asarray(sigma_star, float))[::-1]
    return hidden_singular_values(s, np.asarray(gamma, float)[..., None] if np.ndim(gamma) else gamma)


def drift_bounds(Z1, inv, gamma: float, formula, floor: float = 0.0) -> np.ndarray:
    """Corollary 3.1 (``thm-linear-riccati-cor``) at a GD limit, per singular value: |sigma_i(W1) - formula_i| over
    what the measured drift D = Z1^T Z1 - Z2 Z2^T - 2 gamma I of the invariant explains (derived in the chapter).
    With (m_i, u_i) the eigenpairs of M = Z1 Z1^T (largest first) and v_i = Z1^T u_i / sqrt(m_i) (a unit vector),
    M^2 - 2 gamma M = beta beta^T + Z1 D Z1^T gives m_i^2 - 2 gamma m_i = u_i^T beta beta^T u_i + m_i v_i^T D v_i, so
    to first order in D sigma_i = sqrt(m_i) moves by sqrt(m_i) v_i^T D v_i / (4 (m_i - gamma)), at most
    sqrt(m_i) ||D v_i|| / (4 (m_i - gamma)); the returned ratio divides by twice that (higher orders), with ||D v_i||
    at least ``floor`` (the rounding of the run). Per direction, so the bottom branch sqrt(2 gamma) is measured
    against the drift in the bottom directions, not against the whole ||D||. The values are compared in sorted
    order; corollary values closer than twice the largest bound can trade places, so each value's tolerance adds
    the largest such gap to its own bound."""
    Z1 = np.asarray(Z1, float)
    D = np.asarray(inv, float) - 2 * gamma * np.eye(Z1.shape[0])
    m, U = np.linalg.eigh(Z1 @ Z1.T)
    m, U = np.clip(m[::-1], 0.0, None), U[:, ::-1]
    V = (Z1.T @ U) / np.sqrt(np.where(m > 0, m, np.inf))
    Dv = np.maximum(np.linalg.norm(D @ V, axis=0), floor)
    bound = np.sqrt(m) * Dv / (2 * np.maximum(m - gamma, gamma))
    # Values are compared in sorted order. Shifts of at most B = max(bound) can only exchange corollary values closer
    # than 2 B (at large gamma every value is near sqrt(2 gamma)): the i-th measured value may belong to any such
    # f_j, so its tolerance is its own bound plus the largest such gap |f_i - f_j|. Well-separated values (the bottom
    # branch at small gamma) and equal ones (the d - k bottom values) keep their own bound.
    f = np.asarray(formula, float)
    gap = np.abs(f[:, None] - f[None, :])
    tolerance = bound + np.where(gap <= 2 * bound.max(), gap, 0.0).max(1)
    return np.abs(np.sqrt(m) - f) / tolerance


def objective(W1, W2, gamma) -> np.ndarray:
    """The variational objective (3.1) of Theorem 3.1 (``thm-linear-riccati-main``): 1/2 ||W1||^2 + 1/2 ||W2||^2 -
    gamma log det(W1 W1^T) (batched, torch)."""
    import torch
    g = torch.as_tensor(np.asarray(gamma, float), dtype=W1.dtype, device=W1.device)
    val = 0.5 * (W1 ** 2).sum((-2, -1)) + 0.5 * (W2 ** 2).sum((-2, -1)) \
        - g * torch.logdet(W1 @ W1.transpose(-2, -1))
    return val.cpu().numpy()


def variational_value(sigma_star, gamma, d: int) -> np.ndarray:
    """Proposition ``thm-linear-riccati-varopt`` (derived): closed-form minimum of (3.1): V*(gamma) = sum_{i<=d} (m_i -
    gamma - gamma ln m_i), m_i = gamma + sqrt(gamma^2 + sigma_i(beta_*)^2) (sigma_i = 0 beyond the rank). Derived:
    partial minimization in W2 gives F(beta, M) = 1/2 tr M + 1/2 tr(beta^T M^{-1} beta) - gamma log det M, M = W1
    W1^T, minimized at beta_*, M_*."""
    s = np.zeros(d)
    s[:len(sigma_star)] = np.asarray(sigma_star, float)
    g = np.asarray(gamma, float)[..., None]
    m = g + np.sqrt(g ** 2 + s ** 2)
    return (m - g - g * np.log(m)).sum(-1)


def variational_numeric(X: np.ndarray, Y: np.ndarray, gamma: float, seed: int = 0) -> dict:
    """Proposition ``thm-linear-riccati-varopt``, independent numerical minimum of the convex reformulation F(beta, M)
    over interpolators beta = X^+ Y + K C (K spans ker X) and M = L L^T (L square), by L-BFGS from a random start.
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
        return float(val.detach()), xt.grad.cpu().numpy().copy()
    res = minimize(f, x0, jac=True, method="L-BFGS-B", options={"maxiter": 20000, "gtol": 1e-11, "ftol": 1e-15})
    C = res.x[d * d:].reshape(K.shape[1], k)
    return {"value": float(res.fun), "beta_error": float(np.linalg.norm(K @ C)),
            "grad_norm": float(np.linalg.norm(f(res.x)[1]))}


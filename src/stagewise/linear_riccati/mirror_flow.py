"""Mirror flows of Theorem 3.2: the corrected potential (a) and the k = 1 time-warped flow (b).

Statements ``thm-linear-riccati-mirror`` (parts (a) and (b), with Lemma C.8).
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp


def mirror_grad(sigma, gamma):
    """Theorem 3.2(a) (``thm-linear-riccati-mirror``), gradient of the corrected potential Psi_gamma(D) = 1/2 tr(D
    asinh(D/gamma) - sqrt(D^2 + gamma^2)): 1/2 asinh(sigma/gamma). Its time derivative is sigma'/(2 sqrt(sigma^2 +
    gamma^2)) = u^T R v."""
    return 0.5 * np.arcsinh(np.asarray(sigma, float) / gamma)


def mirror_grad_paper(sigma, gamma):
    """Theorem 3.2(a) as printed (erratum 1), gradient of the potential tr(1/2 D asinh(D/gamma) - sqrt(D^2 + gamma^2)):
    1/2 asinh(sigma/gamma) - 1/2 sigma/sqrt(sigma^2 + gamma^2) (erratum: not the mirror map of the flow)."""
    sigma = np.asarray(sigma, float)
    return 0.5 * np.arcsinh(sigma / gamma) - 0.5 * sigma / np.sqrt(sigma ** 2 + gamma ** 2)


def psi_k1(beta_norm, gamma):
    """Potential of the k = 1 time-warped mirror flow (Theorem 3.2(b), ``thm-linear-riccati-mirror``, part (b)):
    psi(beta) = 2/3 (s + gamma)^{3/2} - 2 gamma (s + gamma)^{1/2}, s = sqrt(||beta||^2 + gamma^2)."""
    m = np.sqrt(np.asarray(beta_norm, float) ** 2 + gamma ** 2) + gamma
    return 2.0 / 3.0 * m ** 1.5 - 2 * gamma * np.sqrt(m)


def rate_bound_k1(beta_star_norm, gamma, t):
    """Lemma C.8 (``thm-linear-riccati-mirror``, part (b)): L(beta(t)) <= D_psi(beta_*, 0) / (sqrt(2 gamma) t), with
    D_psi(beta_*, 0) = psi(beta_*) + (2 gamma)^{3/2} / 3 (derived: psi(0) = -(2 gamma)^{3/2}/3 and grad psi(0) = 0).
    """
    D = psi_k1(beta_star_norm, gamma) + (2 * gamma) ** 1.5 / 3
    return D / (np.sqrt(2 * gamma) * np.asarray(t, float))


def dual_flow_k1(XtX: np.ndarray, Xty: np.ndarray, gamma: float, times, rtol: float = 1e-11, atol: float = 1e-14,
                 warp: bool = True):
    """Theorem 3.2(b) (``thm-linear-riccati-mirror``, part (b)): integrate the k = 1 mirror flow in its dual variable
    theta = grad psi(beta) = (gamma + s)^{-1/2} beta: theta' = sqrt(2 gamma + ||theta||^2) X^T (y - X beta),
    beta = sqrt(2 gamma + ||theta||^2) theta, theta(0) = 0 (derived explicit inverse of the mirror map). Returns
    beta at ``times`` (T x d). ``warp=False`` drops the time warp (theta' = X^T (y - X beta)): the wrong flow used
    as a control."""
    XtX, Xty = np.asarray(XtX, float), np.asarray(Xty, float).ravel()

    def rhs(_t, th_):
        c = np.sqrt(2 * gamma + th_ @ th_)
        return (c if warp else 1.0) * (Xty - XtX @ (c * th_))
    sol = solve_ivp(rhs, (0.0, float(np.max(times))), np.zeros(len(Xty)), t_eval=np.asarray(times, float),
                    method="DOP853", rtol=rtol, atol=atol)
    th_ = sol.y.T
    return np.sqrt(2 * gamma + (th_ ** 2).sum(1))[:, None] * th_


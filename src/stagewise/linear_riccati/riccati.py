"""The Riccati closed form on whitened data (Theorem C.12, ``thm-linear-riccati-closed``) and exact half-times.

NumPy, float64, vectorized by broadcasting (singular values s, scales gamma, times t).
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp


def _riccati_terms(s, gamma, t):
    """The pieces of Theorem C.12's closed form: s, gamma, root = sqrt(s^2 + gamma^2), v = root - gamma written as
    s^2 / (root + gamma) (no cancellation), w = root + gamma and E = exp(-2 root t), as float arrays."""
    s, gamma, t = np.asarray(s, float), np.asarray(gamma, float), np.asarray(t, float)
    root = np.sqrt(s ** 2 + gamma ** 2)
    return s, gamma, s ** 2 / (root + gamma), root + gamma, np.exp(-2 * root * t)


def sigma_alpha(s, gamma, t):
    """Singular values of alpha = Z1^{-T} Z2 (Lemma 3.3, ``thm-linear-riccati-alpha``; Theorem C.12, eq. C.33), stable
    form:
    sigma_alpha = s (1 - E) / (w + v E), E = exp(-2 sqrt(s^2 + gamma^2) t), v, w = sqrt(s^2+gamma^2) -/+ gamma."""
    s, gamma, v, w, E = _riccati_terms(s, gamma, t)
    return s * (1 - E) / (w + v * E)


def sigma_beta(s, gamma, t):
    """Singular values of beta(t) = W1 W2 under gradient flow on whitened data (Theorem C.12,
    ``thm-linear-riccati-closed``), in the numerically stable form gamma s (1-E)(w+vE) / (gamma w + 2 s^2 E - gamma
    v E^2); v = s^2/(root+gamma) avoids the cancellation root - gamma for small s/gamma. Equals 2 gamma sigma_alpha
    / (1 - sigma_alpha^2)."""
    s, gamma, v, w, E = _riccati_terms(s, gamma, t)
    return gamma * s * (1 - E) * (w + v * E) / (gamma * w + 2 * s ** 2 * E - gamma * v * E ** 2)


def sigma_beta_paper(s, gamma, t):
    """Theorem C.12 as printed: the paper's literal (C.33) for sigma_alpha, then sigma_beta = 2 gamma sigma_alpha / (1
    - sigma_alpha^2). Loses accuracy when gamma/s is tiny (1 - sigma_alpha^2 cancels); kept to compare with the
    stable form."""
    s, gamma, t = np.asarray(s, float), np.asarray(gamma, float), np.asarray(t, float)
    root = np.sqrt(s ** 2 + gamma ** 2)
    E = np.exp(-2 * t * root)
    a = np.sqrt(1 + gamma ** 2 / s ** 2) * (gamma + root - E * (root - gamma)) / (gamma + root + E * (root - gamma))
    a = a - gamma / s
    return 2 * gamma * a / (1 - a ** 2)


def sigma_beta_ode(s: float, gamma: float, times, rtol: float = 1e-12, atol: float = 1e-30) -> np.ndarray:
    """Theorem C.12 (``thm-linear-riccati-closed``), independent reference: integrate sigma' = 2 sqrt(gamma^2 +
    sigma^2) (s - sigma), sigma(0) = 0 (DOP853). This is the corrected mirror flow of Theorem 3.2(a) with R = beta_*
    - beta (whitened data)."""
    sol = solve_ivp(lambda _t, y: 2 * np.sqrt(gamma ** 2 + y ** 2) * (s - y), (0, float(np.max(times))), [0.0],
                    t_eval=np.asarray(times, float), method="DOP853", rtol=rtol, atol=atol)
    return sol.y[0]


def half_time(s, gamma):
    """Proposition ``thm-linear-riccati-halftime`` (derived): exact time at which sigma_beta = s/2 (whitened gradient
    flow): the root E in (0,1) of gamma v E^2 + (4 gamma^2 + 2 s^2) E - gamma w = 0, written without cancellation, t
    = -ln(E) / (2 root)."""
    s, gamma = np.asarray(s, float), np.asarray(gamma, float)
    root = np.sqrt(s ** 2 + gamma ** 2)
    w = root + gamma
    B = 4 * gamma ** 2 + 2 * s ** 2
    E = 2 * gamma * w / (B + np.sqrt(B ** 2 + 4 * gamma ** 2 * s ** 2))
    return -np.log(E) / (2 * root)

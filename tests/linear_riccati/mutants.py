"""Deliberately broken functions for tests/linear_riccati/test_linear_mutation.py."""
import numpy as np


def slow_sigma_beta(s, gamma, t, original):
    """Theorem C.12 with a wrong rate: E = exp(-sqrt(s^2 + gamma^2) t) instead of exp(-2 sqrt(s^2 + gamma^2) t),
    i.e. the closed form evaluated at half the time."""
    return original(s, gamma, np.asarray(t, float) / 2)


def flipped_sign_corollary(sigma_star, gamma, d, original):
    """Corollary 3.1 with a flipped sign: sigma_i(W1)^2 = -gamma + sqrt(gamma^2 + sigma_i^2) on the active branches
    (the W2 formula put on W1)."""
    out = np.array(original(sigma_star, gamma, d), float) ** 2
    g = np.asarray(gamma, float)[..., None] if np.ndim(gamma) else gamma
    return np.sqrt(np.clip(out - 2 * g, 0.0, None))

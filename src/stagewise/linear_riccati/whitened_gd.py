"""Exact gradient descent on whitened data, one mode at a time (derived; section on Theorem C.12)."""
from __future__ import annotations

import numpy as np


def whitened_mode_recursion(s, gamma: float, eta: float, steps: int) -> dict:
    """Exact GD on whitened data, per mode: a <- a + eta r b, b <- b + eta a r, r = s - a b, a0 = sqrt(2 gamma),
    b0 = 0 (vectorized over modes s); derived, section of Theorem C.12 (``thm-linear-riccati-closed``).
    Returns a dict: ``sigma_beta`` = a b at every step (steps + 1, modes), the final ``a`` and ``b``, and
    ``invariant_law`` = 2 gamma prod(1 - eta^2 r^2), which equals a^2 - b^2 exactly."""
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


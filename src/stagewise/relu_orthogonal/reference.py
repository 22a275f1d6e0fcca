"""Plain reference loops of the relu-orthogonal chapter, for the tests and the benchmark.

Slow on purpose: one run, one step at a time, in NumPy. The compiled, batched code in
``stagewise.relu_orthogonal.training`` must give the same numbers.
"""
from __future__ import annotations

import numpy as np


def gd_reference(y: np.ndarray, U: np.ndarray, b: np.ndarray, ell: np.ndarray, eta: float, c: float, steps: int,
             renorm: int = 16, rec_every: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Plain per-step NumPy reference of the log-scale GD on L_c (eq. 2) of ``training.gd_numba``, one
    run (U (m, n)), ``steps`` updates; returns the final (U, b, ell) and the loss every ``rec_every``
    steps. Used by tests and the benchmark."""
    U, b, ell = U.astype(float).copy(), b.astype(float).copy(), ell.astype(float).copy()
    n = U.shape[1]
    losses = []
    for step in range(steps):
        act = U > 0
        h = (np.exp(2 * ell) * b) @ (U * act)
        res = c / n * (y - h)
        if step % rec_every == 0:
            losses.append(c / (2 * n) * np.sum((y - h) ** 2))
        D = act * res
        gb = np.sum(U * D, axis=1)
        U = U + eta * b[:, None] * D
        b = b + eta * gb
        if (step + 1) % renorm == 0:
            nu = np.sqrt(0.5 * (b ** 2 + np.sum(U ** 2, axis=1)))
            ell, b, U = ell + np.log(nu), b / nu, U / nu[:, None]
    return U, b, ell, np.array(losses)

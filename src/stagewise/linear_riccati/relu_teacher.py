"""Beyond linear networks (Varre et al. 2023, Figs. 2 and 5): a ReLU teacher-student, qualitatively.

Teacher y = sum_j a_j relu(w_j^T x) with two neurons; student f(x) = sum_i c_i relu(v_i^T x) with m neurons,
both student layers Gaussian with standard deviation ``scale``; full-batch GD on 1/(2n) sum (f - y)^2.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _relu_kernel(X, y, V, c, eta, steps, record_every):  # pragma: no cover (compiled)
    B, m, d = V.shape
    n = X.shape[0]
    n_rec = steps // record_every + 1
    loss = np.zeros((n_rec, B))
    sv = np.zeros((n_rec, B, min(m, d)))
    for b in range(B):
        W, a = V[b].copy(), c[b].copy()
        r = 0
        for step in range(steps + 1):
            H = X @ W.T                       # n x m pre-activations
            A = np.maximum(H, 0.0)
            res = A @ a - y[b]                # n residuals
            if step % record_every == 0:
                loss[r, b] = 0.5 * (res ** 2).sum() / n
                sv[r, b] = np.linalg.svd(W)[1]
                r += 1
            if step == steps:
                break
            ga = A.T @ res / n
            G = np.zeros((n, m))
            for i in range(n):
                for j in range(m):
                    if H[i, j] > 0:
                        G[i, j] = res[i] * a[j]
            gW = G.T @ X / n
            W -= eta * gW
            a -= eta * ga
        V[b], c[b] = W, a
    return loss, sv


def teacher_student(n: int, d: int, m: int, scales, seeds, eta: float, steps: int, record_every: int) -> dict:
    """Figs. 2 and 5 of the paper (no theorem; qualitative), batched over (seed, scale): data X ~ N(0, I_d) (n
    samples), teacher directions random unit vectors with output weights (1, 1), student V ~ N(0, scale^2) (m x d),
    c ~ N(0, scale^2) (m). Returns time, loss and the singular values of the student's hidden weights V, shaped
    (records, seeds, scales, ...)."""
    losses, svs = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((n, d))
        T = rng.standard_normal((2, d))
        T /= np.linalg.norm(T, axis=1, keepdims=True)
        y = np.maximum(X @ T.T, 0.0).sum(1)
        V0, c0 = rng.standard_normal((m, d)), rng.standard_normal(m)
        scales_a = np.asarray(scales, float)
        loss, sv = teacher_student_block(X, np.repeat(y[None], len(scales_a), 0),
                                         scales_a[:, None, None] * V0[None], scales_a[:, None] * c0[None],
                                         eta, steps, record_every)
        losses.append(loss); svs.append(sv)
    loss, sv = np.stack(losses, axis=1), np.stack(svs, axis=1)
    t = np.arange(loss.shape[0]) * record_every * eta
    return {"t": t, "loss": loss, "sv": sv}


def teacher_student_block(X, y, V, c, eta, steps, record_every):
    """Figs. 2 and 5, one data set, a batch of initializations: returns loss (records, B) and svdvals (records, B,
    min(m, d))."""
    if not np.all(np.isfinite(V)):
        raise ValueError("non-finite initialization")
    loss, sv = _relu_kernel(np.ascontiguousarray(X), np.ascontiguousarray(y), np.ascontiguousarray(V).copy(),
                            np.ascontiguousarray(c).copy(), float(eta), int(steps), int(record_every))
    if not np.all(np.isfinite(loss)):
        from stagewise.numerics.flows import DivergenceError
        raise DivergenceError(f"parameter eta={eta}: ReLU training diverged (NaN/overflow); lower it")
    return loss, sv


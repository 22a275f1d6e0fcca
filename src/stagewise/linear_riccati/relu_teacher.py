"""Beyond linear networks (Varre et al. 2023, Figs. 2 and 5): a ReLU teacher-student, qualitatively.

Teacher y = sum_j a_j relu(w_j^T x) with two neurons; student f(x) = sum_i c_i relu(v_i^T x) with m neurons,
both student layers Gaussian with standard deviation ``scale``; full-batch GD on 1/(2n) sum (f - y)^2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import torch

from stagewise.numerics.flows import assert_finite


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
                if not (np.isfinite(loss[r, b]) and np.isfinite(W).all()):
                    loss[r, b] = np.nan          # diverged: keep the record for the caller's check, stop
                    break
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


@dataclass
class TeacherStudentRun:
    """Records of :func:`teacher_student`: times ``t`` (records,), training ``loss`` (records, seeds, scales) and
    singular values ``sv`` of the student's hidden weights (records, seeds, scales, min(m, d))."""
    t: np.ndarray
    loss: np.ndarray
    sv: np.ndarray


def teacher_student(n: int, d: int, m: int, scales, seed: int, n_seeds: int, eta: float, steps: int,
                    record_every: int, progress=None) -> TeacherStudentRun:
    """Figs. 2 and 5 of the paper (no theorem; qualitative), batched over (data set, scale): ``n_seeds`` data sets
    from independent children of ``seed`` (``np.random.SeedSequence(seed).spawn``), each with X ~ N(0, I_d)
    (n samples), teacher directions random unit vectors with output weights (1, 1), student V ~ N(0, scale^2)
    (m x d), c ~ N(0, scale^2) (m), the same draw scaled for every scale. ``progress`` (an iterable wrapper, e.g.
    ``run.progress``) shows the loop over data sets."""
    losses, svs = [], []
    scales_a = np.asarray(scales, float)
    children = np.random.SeedSequence(seed).spawn(n_seeds)
    for child in (progress(children) if progress is not None else children):
        rng = np.random.default_rng(child)
        X = rng.standard_normal((n, d))
        T = rng.standard_normal((2, d))
        T /= np.linalg.norm(T, axis=1, keepdims=True)
        y = np.maximum(X @ T.T, 0.0).sum(1)
        V0, c0 = rng.standard_normal((m, d)), rng.standard_normal(m)
        loss, sv = teacher_student_block(X, np.repeat(y[None], len(scales_a), 0),
                                         scales_a[:, None, None] * V0[None], scales_a[:, None] * c0[None],
                                         eta, steps, record_every)
        losses.append(loss); svs.append(sv)
    loss, sv = np.stack(losses, axis=1), np.stack(svs, axis=1)
    t = np.arange(loss.shape[0]) * record_every * eta
    return TeacherStudentRun(t, loss, sv)


def teacher_student_block(X, y, V, c, eta, steps, record_every):
    """Figs. 2 and 5, one data set, a batch of initializations: returns loss (records, B) and svdvals (records, B,
    min(m, d)). Divergence stops with :class:`~stagewise.numerics.flows.DivergenceError` naming ``eta``."""
    if not np.all(np.isfinite(V)):
        raise ValueError("non-finite initialization")
    loss, sv = _relu_kernel(np.ascontiguousarray(X), np.ascontiguousarray(y), np.ascontiguousarray(V).copy(),
                            np.ascontiguousarray(c).copy(), float(eta), int(steps), int(record_every))
    bad = np.flatnonzero(~np.isfinite(loss).all(axis=1))
    if bad.size:
        assert_finite("eta", eta, int(bad[0]) * int(record_every), torch.from_numpy(loss))
    return loss, sv


@dataclass
class RankRatios:
    """sigma_3 / sigma_1 of the student's hidden weights at the end, per data set, at small and large scale."""
    small: np.ndarray
    large: np.ndarray
    median_small: float
    median_large: float
    final_loss_small: float
    median_small_untrained: float = float("nan")


def rank_ratios(result: TeacherStudentRun) -> RankRatios:
    """Figs. 2 and 5's comparative claim: final sigma_3/sigma_1 (scale index 0 = small, 1 = large), their medians
    over data sets, and the largest final loss at small scale; control: the median sigma_3/sigma_1 of the untrained
    small-scale students (first record)."""
    r31 = result.sv[-1, :, :, 2] / result.sv[-1, :, :, 0]        # (seeds, scales)
    return RankRatios(r31[:, 0], r31[:, 1], float(np.median(r31[:, 0])), float(np.median(r31[:, 1])),
                      float(result.loss[-1, :, 0].max()),
                      float(np.median(result.sv[0, :, 0, 2] / result.sv[0, :, 0, 0])))


def median_ratio_small_over_large(result: TeacherStudentRun, record: int = -1) -> float:
    """The comparative claim of Figs. 2 and 5: median over data sets of sigma_3/sigma_1 of the small-scale students
    at ``record`` (-1: the end) over the same median of the trained large-scale students; ``record`` 0 takes the
    untrained small-scale students (the control)."""
    small = result.sv[record, :, 0, 2] / result.sv[record, :, 0, 0]
    large = result.sv[-1, :, 1, 2] / result.sv[-1, :, 1, 0]
    return float(np.median(small) / np.median(large))

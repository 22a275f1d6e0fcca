"""Data, initialisation and the activation mask (Assumptions 3 and 4) of the relu-orthogonal chapter.

Labels ``y`` in R^n on orthonormal inputs (taken as ``X = I_n`` by rotation invariance), the
balanced small initialisation of Assumption 3 (unit directions ``U`` and output signs ``s``; the
weights are ``w_j = lam U_j``, ``a_j = s_j lam``), the PyTorch-default (uniform He) initialisation of Fig. 6, the mask ``M`` of Assumption 4, and
seeded draws. Draw ``k`` of a random stream with seed ``seed`` uses
``np.random.SeedSequence(seed, spawn_key=(k,))`` (``draw_seed``): independent draws, no seed offsets.
"""
from __future__ import annotations

import numpy as np


LABELS = ("abs_gaussian", "gaussian", "rademacher", "uniform", "bounded")


def make_labels(n: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """Labels y in R^n of the chapter's setting (y_i != 0): |N(0,1)| (Fig. 1), N(0,1) (Fig. 5),
    Rademacher (ties, Assumption 4(ii) fails), U[1,2], and ``bounded``: U(-1, 1), the bounded labels of
    Theorem 3's hypothesis."""
    if kind == "abs_gaussian":
        return np.abs(rng.standard_normal(n))
    if kind == "gaussian":
        return rng.standard_normal(n)
    if kind == "rademacher":
        return rng.choice([-1.0, 1.0], size=n)
    if kind == "uniform":
        return rng.uniform(1.0, 2.0, size=n)
    if kind == "bounded":
        return rng.uniform(-1.0, 1.0, size=n)
    raise ValueError(f"unknown label kind {kind!r}; allowed: {LABELS}")


def balanced_init(m: int, n: int, signs: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Unit directions ``U`` (m, n) uniform on the sphere and output signs ``s`` (Assumption 3).

    The weights are ``w_j = lam * U_j`` and ``a_j = s_j * lam``; ``signs`` is ``positive``
    (all s_j = +1, Fig. 1) or ``random`` (Rademacher, Fig. 5).
    """
    U = rng.standard_normal((m, n))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    s = np.ones(m) if signs == "positive" else rng.choice([-1.0, 1.0], size=m)
    return U, s


def activation_mask(W0: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Mask M (n, m) of Assumption 4: M_ij = 1{s_j y_i > 0} 1{<w_j(0), x_i> > 0} [2.1]."""
    return ((s[None, :] * y[:, None]) > 0) & (W0.T > 0)


def uncovered_points(M: np.ndarray) -> np.ndarray:
    """Points never covered: the zero rows of the mask M (Assumption 4(i) fails there)."""
    return np.flatnonzero(~M.any(axis=1))


def coverage_report(M: np.ndarray) -> dict:
    """Which rows/columns of the mask are empty and whether columns repeat (Assumption 4(i))."""
    rows = uncovered_points(M)
    cols = np.flatnonzero(~M.any(axis=0))
    live = [tuple(M[:, j]) for j in range(M.shape[1]) if M[:, j].any()]
    return {"uncovered_points": rows, "dormant_neurons": cols, "distinct_columns": len(set(live)) == len(live)}


def he_init(rng: np.random.Generator, runs: int, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's default (uniform He) initialisation of ``runs`` networks, the lazy contrast of Fig. 6:
    ``W ~ U(-1, 1)/sqrt(n)`` (runs, m, n) and ``a ~ U(-1, 1)/sqrt(m)`` (runs, m); E||theta_0||^2 = (m+1)/3."""
    W = rng.uniform(-1, 1, (runs, m, n)) / np.sqrt(n)
    a = rng.uniform(-1, 1, (runs, m)) / np.sqrt(m)
    return W, a


def draw_seed(seed: int, *key: int) -> np.random.SeedSequence:
    """Seed of draw ``key`` (e.g. ``k`` or ``(n, k)``) of the random stream with seed ``seed``."""
    return np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key))


def draw_instance(seed: int | np.random.SeedSequence, n: int, m: int, labels: str,
                  signs: str) -> tuple[np.ndarray, ...]:
    """One seeded draw (NumPy generator): labels ``y``, unit init directions ``U0`` and output signs ``s``
    (Assumption 3) and the mask ``M`` (Assumption 4); returns ``(y, U0, s, M)``."""
    rng = np.random.default_rng(seed)
    y = make_labels(n, labels, rng)
    U0, s = balanced_init(m, n, signs, rng)
    return y, U0, s, activation_mask(U0, y, s)

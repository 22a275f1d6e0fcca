"""Data, initialisation and the activation mask (Assumptions 3 and 4) of the relu-orthogonal chapter.

Labels ``y`` in R^n on orthonormal inputs (taken as ``X = I_n`` by rotation invariance), the
balanced small initialisation of Assumption 3 (unit directions ``U`` and output signs ``s``; the
weights are ``w_j = lam U_j``, ``a_j = s_j lam``), the mask ``M`` of Assumption 4, and the seeded
draws the chapter selects with Algorithm 1.
"""
from __future__ import annotations

import numpy as np

from stagewise.relu_orthogonal.algorithm import algorithm1, merged_groups, min_gap


LABELS = ("abs_gaussian", "gaussian", "rademacher", "uniform")


def make_labels(n: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """Labels y in R^n of the chapter's setting (y_i != 0): |N(0,1)| (Fig. 1), N(0,1) (Fig. 5),
    Rademacher (ties, Assumption 4(ii) fails), U[1,2]."""
    if kind == "abs_gaussian":
        return np.abs(rng.standard_normal(n))
    if kind == "gaussian":
        return rng.standard_normal(n)
    if kind == "rademacher":
        return rng.choice([-1.0, 1.0], size=n)
    if kind == "uniform":
        return rng.uniform(1.0, 2.0, size=n)
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


def coverage_report(M: np.ndarray) -> dict:
    """Which rows/columns of the mask are empty and whether columns repeat (Assumption 4(i))."""
    rows = np.flatnonzero(~M.any(axis=1))
    cols = np.flatnonzero(~M.any(axis=0))
    live = [tuple(M[:, j]) for j in range(M.shape[1]) if M[:, j].any()]
    return {"uncovered_points": rows, "dormant_neurons": cols, "distinct_columns": len(set(live)) == len(live)}


def draw_instance(seed: int, n: int, m: int, labels: str, signs: str) -> tuple[np.ndarray, ...]:
    """One seeded draw (NumPy generator): labels ``y``, unit init directions ``U0`` and output signs ``s``
    (Assumption 3) and the mask ``M`` (Assumption 4); returns ``(y, U0, s, M)``."""
    rng = np.random.default_rng(seed)
    y = make_labels(n, labels, rng)
    U0, s = balanced_init(m, n, signs, rng)
    return y, U0, s, activation_mask(U0, y, s)


def find_instances(base: int, count: int, n: int, m: int, labels: str, signs: str, gap: float = 0.3,
                   t_max: float = np.inf, tries: int = 2000, cover: bool = True) -> list[tuple[int, tuple]]:
    """First ``count`` seeds base, base+1, ... whose draw satisfies Assumption 4 (all points covered,
    no tie, no merged group of identical columns, at least one jump) with jumps separated by >= ``gap``
    and the last jump before ``t_max`` (Algorithm 1, c = 1). ``cover=False`` drops the coverage
    requirement. Returns ``[(seed, (y, U0, s, M)), ...]``. Selection uses Algorithm 1 only, never training."""
    found = []
    for seed in range(base, base + tries):
        inst = draw_instance(seed, n, m, labels, signs)
        lp = algorithm1(inst[0], inst[3], inst[2])
        if ((lp.uncovered.size == 0 or not cover) and lp.tie is None and merged_groups(lp) == 0 and lp.K
                and min_gap(lp) >= gap and lp.times[-1] <= t_max):
            found.append((seed, inst))
            if len(found) == count:
                break
    return found

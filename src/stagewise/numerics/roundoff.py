"""Zero tests that do not depend on the machine: a computed float is "zero" below its rounding error.

A quantity computed in floating point from data of size ``scale`` (a norm, a largest singular value)
through ``dim`` additions carries a rounding error of about ``eps * scale * dim``; the BLAS kernel
(OpenBLAS picks Haswell, SkylakeX or Zen code paths by CPU) decides its exact value. So a decision
such as "the rate is positive" or "the residual vanishes" must compare with that error, never with
``0.0`` exactly: ``5.3e-17 > 0`` on one CPU and ``0.0 > 0`` on another gave a finite and an infinite
horizon from the same data. ``SAFETY`` covers the constants of accumulated rounding (pairwise and
blocked sums, a few chained products) with room, as ``numpy.linalg.matrix_rank`` does with its
``S.max() * max(M, N) * eps``.
"""
from __future__ import annotations

import numpy as np

EPS = float(np.finfo(np.float64).eps)
SAFETY = 64.0


def roundoff(scale: float, dim: int = 1, eps: float = EPS) -> float:
    """The rounding error of a quantity of size ``scale`` computed through ``dim`` operations:
    ``SAFETY * eps * scale * dim`` (``eps``: the machine epsilon of the dtype used, float64 by default)."""
    return SAFETY * eps * abs(float(scale)) * max(int(dim), 1)


def is_zero(x: float, scale: float, dim: int = 1, eps: float = EPS) -> bool:
    """``|x|`` is within rounding error of zero, for a quantity of size ``scale`` (see :func:`roundoff`)."""
    return abs(float(x)) <= roundoff(scale, dim, eps)


def is_positive(x: float, scale: float, dim: int = 1, eps: float = EPS) -> bool:
    """``x`` is positive beyond rounding error (a rounding-level ``x`` counts as zero, not positive)."""
    return float(x) > roundoff(scale, dim, eps)


def numerical_rank(singular_values, dim: int, eps: float = EPS) -> int:
    """Rank from singular values, with ``numpy.linalg.matrix_rank``'s threshold ``s_max * dim * eps``
    times :data:`SAFETY`: the same answer when the input is perturbed at rounding level."""
    s = np.abs(np.asarray(singular_values, dtype=float))
    if s.size == 0:
        return 0
    return int((s > roundoff(s.max(), dim, eps)).sum())

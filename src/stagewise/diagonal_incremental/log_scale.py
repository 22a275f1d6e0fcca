"""Theorem 4.1's log-scale bookkeeping on the exact flow: ``b = log_alpha(u + v)`` against Algorithm 1's ``b^k``.

:func:`log_scale_study` compares the simulated ``b`` with the piecewise-linear interpolation of the ``b^k``
(eq. 12) on the inactive coordinates, and reports the initial offset ``log(u_0 + v_0)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stagewise.diagonal_incremental.flow import normalize_init
from stagewise.diagonal_incremental.staircase import FlowStudy


@dataclass
class LogScaleStudy:
    """Simulated ``b(tau)`` at the smallest alpha against the piecewise-linear interpolation of the ``b^k``."""

    b_sim: np.ndarray
    knots: np.ndarray
    b_knots: np.ndarray
    b_err: float
    b_err_const: float
    b0_offset_const: float


def log_scale_study(fs: FlowStudy) -> LogScaleStudy:
    """Largest deviation of ``b`` from the bookkeeping on inactive coordinates inside ``(0.05, T_K - 0.05)``,
    also in units of ``1/log(1/alpha)``, and the initial offset ``max |log(u_0 + v_0)|`` (same units)."""
    b_sim = fs.flow["b"][:, fs.j_min, :]
    knots = np.concatenate([[0], fs.T, [fs.tau_end]])            # after T_K, g(theta^K) = 0: b stays put
    b_knots = np.array([s.b for s in fs.stages] + [fs.stages[-1].b])
    inside = (fs.tau > 0.05) & (fs.tau < (fs.T[-1] if fs.K else fs.plateau_end) - 0.05)
    b_pred = np.array([np.interp(fs.tau, knots, b_knots[:, i]) for i in range(b_sim.shape[1])]).T
    inactive = np.abs(fs.beta_min) < 1e-6
    b_err = float(np.abs(b_sim - b_pred)[inside[:, None] & inactive].max())
    un, vn = normalize_init(fs.u0, fs.v0)
    return LogScaleStudy(b_sim, knots, b_knots, b_err, b_err * -math.log(min(fs.alphas)),
                         float(np.abs(np.log(un + vn)).max()))

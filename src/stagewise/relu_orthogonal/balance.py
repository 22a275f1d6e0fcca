"""The balancedness experiment (Proposition 1) of the relu-orthogonal chapter.

Gradient flow keeps a_j^2 - ||w_j||^2 constant; one GD step changes it by
-eta^2 ||w_j||^2 ||D_j||^2 sin^2(w_j, D_j) (balanced neurons), so the largest relative imbalance
along a run should grow like eta: log-log slope 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.numerics.fits import loglog_slope
from stagewise.relu_orthogonal.algorithm import algorithm1, find_instances
from stagewise.relu_orthogonal.training import GDResult, gd_numba, steps_for


@dataclass
class BalanceDrift:
    """Largest relative imbalance max_{j,t} |a_j^2 - ||w_j||^2| / (a_j^2 + ||w_j||^2) per step size."""

    draw: int                  # draw index in the stream (first Figure-1-type draw satisfying Assumption 4)
    etas: np.ndarray           # step sizes, decreasing
    drift: np.ndarray          # largest relative imbalance, one per step size
    slope: float               # log-log slope of drift in eta (Proposition 1 + the one-step identity: 1)
    result: GDResult           # the batched runs (one per step size)
    y: np.ndarray              # the draw: labels, unit initial directions, output signs
    U: np.ndarray
    s: np.ndarray
    log_inv_lam: float
    steps: np.ndarray          # step budget of each run (the same accelerated time for every eta)

    @property
    def sign_flips(self) -> int:
        """Steps at which some output weight a_j changed sign, over all runs (Proposition 1: none)."""
        return int(self.result.sign_flips.sum())


def balancedness_drift(seed: int, etas, n: int = 64, m: int = 6, log_inv_lam: float = 40.0) -> BalanceDrift:
    """Proposition 1 under GD: train one Figure-1-type draw (|N(0,1)| labels, positive signs, c = 1) at
    every step size in one batched call and measure the largest relative imbalance of each run.
    The controls (:func:`same_steps_slope`, :func:`unbalanced_flips`) re-run this draw broken."""
    (draw, (y, U, s, M)), = find_instances(seed, 1, n, m, "abs_gaussian", "positive")
    lp = algorithm1(y, M, s)
    etas = np.array(sorted(etas, reverse=True))
    E = len(etas)
    steps = np.array([steps_for(lp, log_inv_lam, e, 1.0, n) for e in etas])
    res = gd_numba(np.tile(y, (E, 1)), np.repeat(U[None], E, 0), np.tile(s, (E, 1)), np.full((E, m), -log_inv_lam),
                   etas, 1.0, steps, rec_every=1000, track_balance=True, eta_name="bal_etas")
    drift = res.imbalance_max.max(axis=1)
    return BalanceDrift(draw=draw, etas=etas, drift=drift, slope=loglog_slope(etas, drift), result=res,
                        y=y, U=U, s=s, log_inv_lam=log_inv_lam, steps=steps)


def same_steps_slope(bal: BalanceDrift, steps: int = 5) -> float:
    """Control of the drift slope, a broken time axis: every step size run for the same ``steps`` steps (not the
    same accelerated time), measured the same way. The per-step drift eta^2 ||D||^2 sin^2 then gives slope 2."""
    E, m = len(bal.etas), len(bal.s)
    few = gd_numba(np.tile(bal.y, (E, 1)), np.repeat(bal.U[None], E, 0), np.tile(bal.s, (E, 1)),
                   np.full((E, m), -bal.log_inv_lam), bal.etas, 1.0, np.full(E, steps), rec_every=1,
                   track_balance=True, eta_name="bal_etas")
    return loglog_slope(bal.etas, few.imbalance_max.max(axis=1))


def unbalanced_flips(bal: BalanceDrift, a0: float = -0.1) -> int:
    """Control of sign conservation, Proposition 1's premise broken: the same draw at the largest step size from
    a_j(0) = ``a0`` s_j lam (|a_j| < ||w_j||, wrong sign), counted the same way; the dynamics carry a_j through
    zero (its gradient <w_j, D_j> is positive on the active, positive labels)."""
    m = len(bal.s)
    unbal = gd_numba(bal.y[None], bal.U[None], a0 * bal.s[None], np.full((1, m), -bal.log_inv_lam), bal.etas[:1],
                     1.0, bal.steps[:1], rec_every=1000, eta_name="bal_etas")
    return int(unbal.sign_flips.sum())

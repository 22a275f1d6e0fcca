"""Assumptions 4.3-4.5 tested in practice.

Assumption 4.3 is checked inside Algorithm 1 (race margins, ``algorithm.py``), Assumption 4.4 by the
restricted Hessian (``networks.restricted_hessian_min``) and by perturbation (:func:`perturbation_study`),
Assumption 4.5 by rerunning stage (B) (:func:`stage_b_spread`); :func:`assumption_study` collects them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.diagonal_incremental.algorithm import Stage, train_active
from stagewise.diagonal_incremental.descent import descend
from stagewise.diagonal_incremental.flow import weights_from_b
from stagewise.diagonal_incremental.networks import DiagonalModel


def stage_b_spread(model: DiagonalModel, stages: list[Stage], eps2_values=(1e-6, 1e-8, 1e-10),
                   jitter: float = 0.01, seed: int = 0) -> float:
    """Assumption 4.5 in practice: rerun every stage (B) from seeds ``eps^2`` in ``eps2_values`` and from
    ``beta^k`` jittered by +-``jitter`` (relative) on its support; return the largest distance
    ``max |beta - beta^{k+1}|`` between any rerun and Algorithm 1's ``beta^{k+1}``."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for prev, nxt in zip(stages[:-1], stages[1:]):
        starts = []
        for e2 in eps2_values:
            s0 = prev.beta.copy()
            s0[nxt.coordinate] = nxt.sign * e2
            starts.append(s0)
        s0 = starts[0].copy()
        s0[prev.support] *= 1.0 + jitter * rng.uniform(-1, 1, prev.support.size)
        starts.append(s0)
        for s0 in starts:
            beta, _, _ = train_active(model, s0, np.append(prev.support, nxt.coordinate), stage=nxt.k)
            worst = max(worst, float(np.abs(beta - nxt.beta).max()))
    return worst


@dataclass
class AssumptionStudy:
    """Assumptions 4.3-4.5 on Algorithm 1's stages: smallest race margin (4.3), smallest restricted-Hessian
    eigenvalue (4.4), stage (B) rerun spread (4.5) and ``max |g|`` on every support, recomputed."""

    margin_min: float
    hessian_min: float
    spread: float
    stationarity: float


def stationarity(model: DiagonalModel, stages: list[Stage]) -> float:
    """``max_k max_{j in supp theta^k} |g_j(theta^k)|``, recomputed outside the stage (B) solver."""
    gam = [model.g(torch.from_numpy(s.beta)[None].to(model.device))[0].cpu().numpy() for s in stages[1:]]
    return float(max(np.abs(g[s.support]).max() for g, s in zip(gam, stages[1:])))


def saddle_eigenvalue(model: DiagonalModel, stages: list[Stage]) -> float:
    """The control of Assumption 4.4: the smallest Hessian eigenvalue of ``L`` in the FULL weight space at
    ``theta^k``, ``k < K``. An inactive coordinate contributes the block ``[[0, -g_i], [-g_i, 0]]`` in
    ``(u_i, v_i)``, with eigenvalues ``+-|g_i|``; the value is ``min_k (-max_{i not in supp} |g_i(theta^k)|)``,
    negative wherever a next stage exists (``theta^k`` is a saddle there, a minimum only on its support)."""
    vals = []
    for s in stages[:-1]:
        gam = model.g(torch.from_numpy(s.beta)[None].to(model.device))[0].cpu().numpy()
        vals.append(-float(np.abs(np.delete(gam, s.support)).max()))
    return float(min(vals))


def stage_b_wrong_sign(model: DiagonalModel, stages: list[Stage], eps2: float = 1e-8) -> float:
    """The control of Assumption 4.5: stage (B) seeded with the sign ``-sgn g_{i_k}(theta^k)`` (the wrong
    branch); returns the largest ``max |beta - beta^{k+1}|`` (the seed decays, the run stays at ``theta^k``)."""
    worst = 0.0
    for prev, nxt in zip(stages[:-1], stages[1:]):
        s0 = prev.beta.copy()
        s0[nxt.coordinate] = -nxt.sign * eps2
        beta, _, _ = train_active(model, s0, np.append(prev.support, nxt.coordinate), stage=nxt.k)
        worst = max(worst, float(np.abs(beta - nxt.beta).max()))
    return worst


def assumption_study(model: DiagonalModel, stages: list[Stage], seed: int) -> AssumptionStudy:
    """The practical checks of Assumptions 4.3, 4.4 and 4.5 (``seed`` drives the jitter of 4.5)."""
    return AssumptionStudy(float(min(s.margin for s in stages[1:])), float(min(s.hessian_min for s in stages[1:])),
                           stage_b_spread(model, stages, seed=seed), stationarity(model, stages))


@dataclass
class PerturbationStudy:
    """Perturbed minus unperturbed GD in product space: ``dist`` ``(plateaus, records)`` at times ``t``;
    ``i_stop`` ends each plateau's window."""

    t: np.ndarray
    dist: np.ndarray
    i_stop: list

    @property
    def ratio(self) -> float:
        """Largest ``dist`` at the end of a window over its initial value (< 1: the perturbation decays)."""
        return float(max(self.dist[q, i] / self.dist[q, 0] for q, i in enumerate(self.i_stop)))


def perturbation_study(model: DiagonalModel, tau: np.ndarray, b: np.ndarray, alpha: float, T: np.ndarray,
                       mids: np.ndarray, u0: np.ndarray, v0: np.ndarray, rng: np.random.Generator, std: float,
                       eta: float, n_steps: int = 1000, device="cpu", everywhere: bool = False) -> PerturbationStudy:
    """Assumption 4.4 by perturbation (paper App. A, Figs. 3, 10, 11): at each plateau midpoint in ``mids``
    take the weights of the exact flow (``b`` ``(len(tau), p)`` at ``alpha``, eq. 7), add Gaussian noise
    of std ``std`` to the non-negligible ones (``|u_i|`` or ``|v_i| > 1e-5``), and train both by GD. Each
    plateau's window goes 40% of the way from its midpoint to the next transition, ``0.2 (T_{k+1} - T_k)``
    in rescaled time (``mids[q]`` lies between ``T[q]`` and ``T[q + 1]``; the last plateau has no end).

    ``everywhere=True`` is the control: it perturbs the negligible coordinates too, i.e. leaves the
    balanced support of ``theta^k``, along which ``theta^k`` is a saddle, not a minimum."""
    L = -math.log(alpha)
    starts = []
    for m in mids:
        i = int(np.argmin(np.abs(tau - m)))
        u, v = weights_from_b(b[i], L, u0, v0)
        big = (np.abs(u) > 1e-5) | (np.abs(v) > 1e-5) | everywhere
        up, vp = u.copy(), v.copy()
        up[big] += std * rng.standard_normal(big.sum())
        vp[big] += std * rng.standard_normal(big.sum())
        starts += [(u, v), (up, vp)]
    run = descend(model, np.stack([s[0] for s in starts]), np.stack([s[1] for s in starts]), eta, n_steps,
                  device=device)
    t = run.t[0]
    dist = np.abs(run.beta[1::2] - run.beta[0::2]).max(axis=-1)      # (plateaus, records)
    gaps = np.append(np.diff(T), np.inf)
    t_stop = np.minimum(0.2 * gaps * L, t[-1])
    return PerturbationStudy(t, dist, [int(np.searchsorted(t, ts, side="right") - 1) for ts in t_stop])

"""Assumptions 4.3-4.5 tested in practice.

Assumption 4.3 is checked inside Algorithm 1 (race margins, ``algorithm.py``), Assumption 4.4 by the
restricted Hessian (``networks.restricted_hessian_min``, :func:`balanced_hessian_min`), Assumption 4.5 by rerunning
stage (B) (:func:`stage_b_spread`); :func:`assumption_study` collects them. The paper's perturbation protocols
(its Figs. 10 and 11) are in :mod:`.perturbations`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.diagonal_incremental.algorithm import STATIONARITY_TOL, Breakdown, Stage, train_active
from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.numerics.roundoff import is_positive, roundoff


def stage_b_spread(model: DiagonalModel, stages: list[Stage], eps2_values=(1e-6, 1e-8, 1e-10),
                   jitter: float = 0.01, seed: int = 0, off_support: bool = False) -> float:
    """Assumption 4.5 in practice: rerun every stage (B) from seeds ``eps^2`` in ``eps2_values`` and from
    ``beta^k`` jittered by +-``jitter`` (relative) on its support; return the largest distance
    ``max |beta - beta^{k+1}|`` between any rerun and Algorithm 1's ``beta^{k+1}``.

    ``off_support=True`` is the control: the same reruns with noise of the seed's size, ``+-eps^2`` with random
    signs, also on every coordinate outside ``supp u^k + {i_k}`` (Assumption 4.5 promises robustness only to
    starting points supported there; a negligible coordinate seeded along its own ``g`` grows, and stage (B)
    ends elsewhere)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for prev, nxt in zip(stages[:-1], stages[1:]):
        face = np.append(prev.support, nxt.coordinate)
        rest = np.setdiff1d(np.arange(prev.beta.size), face)
        starts = []
        for e2 in eps2_values:
            s0 = prev.beta.copy()
            s0[nxt.coordinate] = nxt.sign * e2
            if off_support:
                s0[rest] = e2 * rng.choice([-1.0, 1.0], rest.size)
            starts.append(s0)
        if not off_support:         # the control keeps the seeds only (each rerun trains every coordinate)
            s0 = starts[0].copy()
            s0[prev.support] *= 1.0 + jitter * rng.uniform(-1, 1, prev.support.size)
            starts.append(s0)
        for s0 in starts:
            beta = train_active(model, s0, face if not off_support else np.flatnonzero(s0), stage=nxt.k).beta
            worst = max(worst, float(np.abs(beta - nxt.beta).max()))
    return worst


@dataclass
class AssumptionStudy:
    """Assumptions 4.3-4.5 on Algorithm 1's stages: smallest race margin (4.3), smallest restricted-Hessian
    eigenvalue (4.4), stage (B) rerun spread (4.5) and ``max |g|`` on every support, recomputed.

    ``margins_resolved``: every margin is above its uncertainty (a tie stops Algorithm 1);
    ``hessians_positive``: every ``lambda_min(H_S)`` is above the rounding error of ``||H||``;
    ``spread_tol``: what the reruns may differ by, from the stationarity tolerance of stage (B): each stops
    with ``max |g_S| < g_tol``, hence ``|beta - beta^{k+1}| <= sqrt|S| g_tol / lambda_min(H_S)`` (first order),
    and two reruns by twice that."""

    margin_min: float
    hessian_min: float
    spread: float
    stationarity: float
    margins_resolved: bool = True
    hessians_positive: bool = True
    spread_tol: float = math.nan


def stationarity(model: DiagonalModel, stages: list[Stage]) -> float:
    """``max_k max_{j in supp theta^k} |g_j(theta^k)|``, recomputed outside the stage (B) solver."""
    gam = [model.g(torch.from_numpy(s.beta)[None].to(model.device))[0].cpu().numpy() for s in stages[1:]]
    return float(max(np.abs(g[s.support]).max() for g, s in zip(gam, stages[1:])))


def off_support_gradient(model: DiagonalModel, stages: list[Stage]) -> np.ndarray:
    """``max_{i not in supp theta^k} |g_i(theta^k)|`` for every stage: the fastest growth of an inactive
    coordinate on plateau ``k`` (rate ``2 |g_i|`` in ``log beta_i``)."""
    out = []
    for s in stages:
        gam = model.g(torch.from_numpy(s.beta)[None].to(model.device))[0].cpu().numpy()
        out.append(float(np.abs(np.delete(gam, s.support)).max(initial=0.0)))
    return np.array(out)


def stage_b_off_support(model: DiagonalModel, stages: list[Stage], seed: int, eps2: float = 1e-8) -> float:
    """The control of Assumption 4.5: :func:`stage_b_spread` with noise ``+-eps2`` also on the coordinates
    outside ``supp u^k + {i_k}`` (``off_support=True``), one seed size."""
    return stage_b_spread(model, stages, eps2_values=(eps2,), seed=seed, off_support=True)


def balanced_hessian_min(model: DiagonalModel, stages: list[Stage], next_coordinate: bool = False) -> float:
    """Assumption 4.4 as the paper states it: the smallest eigenvalue of the Hessian of
    ``u~ -> L(u~, s^k * u~) = Ltilde(s^k * u~^2)`` at ``u^k = sqrt|beta^k|``, on ``supp u^k``, by autograd in
    weight space; the minimum over the stages ``k >= 1`` (``2 c_k`` of the assumption, locally).

    ``next_coordinate=True`` is the control: the same Hessian on ``supp u^k + {i_k}``, the face stage (B)
    trains next, with ``s_{i_k} = sgn g_{i_k}(theta^k)`` and ``u_{i_k} = 0`` (stages ``k < K``). There the
    loss decreases along the new coordinate: ``theta^k`` is a saddle of that face, not a minimum."""
    vals = []
    pairs = zip(stages[:-1], stages[1:]) if next_coordinate else ((s, None) for s in stages[1:])
    for st, nxt in pairs:
        face = st.support if nxt is None else np.append(st.support, nxt.coordinate)
        sign = np.sign(st.beta[face])
        if nxt is not None:
            sign[-1] = nxt.sign
        u = torch.from_numpy(np.sqrt(np.abs(st.beta[face]))).to(model.device)
        base = torch.from_numpy(st.beta).to(model.device)
        idx = torch.from_numpy(np.asarray(face, dtype=np.int64)).to(model.device)
        sg = torch.from_numpy(sign).to(model.device)

        def loss_on_face(x):
            return model.loss(base.index_put((idx,), sg * x * x)[None])[0]

        H = torch.autograd.functional.hessian(loss_on_face, u).detach().cpu().numpy()
        vals.append(float(np.linalg.eigvalsh(0.5 * (H + H.T)).min()))
    return float(min(vals))


def balanced_hessian_margin(stages: list[Stage]) -> float:
    """What "positive" must exceed in :func:`balanced_hessian_min`: at ``u^k`` that Hessian is
    ``D H_S D - 2 diag(s g_S)`` with ``D = diag(2 s u^k)``, and stage (B) stops with ``max |g_S| <
    STATIONARITY_TOL``, so the residual gradient can move its eigenvalues by ``2 STATIONARITY_TOL``; plus the
    rounding error of ``D H_S D`` (size ``4 max|beta^k| ||H||``)."""
    return 2.0 * STATIONARITY_TOL + max(roundoff(4.0 * float(np.abs(s.beta).max()) * s.hessian_norm, s.support.size)
                                        for s in stages[1:])


def assumption_study(model: DiagonalModel, stages: list[Stage], seed: int) -> AssumptionStudy:
    """The practical checks of Assumptions 4.3, 4.4 and 4.5 (``seed`` drives the jitter of 4.5)."""
    st = stages[1:]
    lam_min = min(s.hessian_min for s in st)
    spread_tol = max(2 * math.sqrt(s.support.size) * STATIONARITY_TOL / max(s.hessian_min, roundoff(s.hessian_norm))
                     for s in st)
    return AssumptionStudy(float(min(s.margin for s in st)), float(lam_min), stage_b_spread(model, stages, seed=seed),
                           stationarity(model, stages), all(s.margin > s.margin_err for s in st),
                           all(is_positive(s.hessian_min, s.hessian_norm, s.support.size) for s in st),
                           float(spread_tol))


def stage_hypotheses(stages: list[Stage], bd: Breakdown | None) -> list[tuple[str, bool, str, str]]:
    """The hypotheses of Theorem 4.1 that Algorithm 1 tests on its stages, as ``(name, holds, measured,
    requirement)``: a failing one is the :class:`algorithm.Breakdown` ``bd`` (the stages from there on are
    not covered by the theorem)."""
    st = stages[1:]
    K = len(st)
    span = f"stages 1-{K}" if K else "no stage"
    left = [(j, s) for s in st for j in s.dropped]
    holding = {
        "Assumption 4.3 (unique winner of the race)": (
            f"{span}: smallest margin {min((s.margin for s in st), default=math.inf):.3g}, largest uncertainty "
            f"{max((s.margin_err for s in st), default=0.0):.1e}", "a margin above the uncertainty of the race times"),
        "Assumption 4.3 (last clause)": (
            f"{span}: {len(left)} coordinate(s) left the support" + (", each with |g| above its resolution"
                                                                      if left else ""),
            "g_i(theta^k) != 0 for every coordinate i that leaves the support at stage k"),
        "Assumption 4.4 (strict local minima)": (
            f"{span}: smallest eigenvalue of the product-space Hessian on the support, lambda_min(H_S), "
            f"{min((s.hessian_min for s in st), default=math.inf):.3g}",
            "> 0 beyond rounding"),
        "Assumption 4.5 (stage (B) converges)": (
            f"{span}: every stage (B) reached max |g| <= {max((s.stationarity for s in st), default=0.0):.1e}",
            f"max |g| on the support below {STATIONARITY_TOL:g}"),
    }
    out = []
    for name, (measured, requirement) in holding.items():
        if bd is not None and bd.hypothesis == name:
            out.append((name, False, bd.measured, bd.requirement))
        else:
            out.append((name, True, measured, requirement))
    return out

"""Beyond the theory: one attention head with FULL weight matrices (paper v1, Fig. 2d-f)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from stagewise.diagonal_incremental.attention import softmax
from stagewise.numerics.flows import assert_finite


def one_at_a_time(run: "FullHeadRun", n_teacher: int, threshold: float = 0.05, settled: float = 0.5) -> bool:
    """The paper's picture (its Fig. 2d-f): the count of singular values above ``threshold`` starts at 0, rises
    by at most one between records, never falls, ends at the teacher's number ``n_teacher``, and when a
    singular value switches on, the ones already on are past ``settled`` of their final value
    (:func:`settled_fraction`): one transition is over before the next starts. The count clauses alone hold
    for any continuous growth recorded often enough."""
    count = run.count(threshold)
    return bool(int(count[0]) == 0 and run.max_jump(threshold) <= 1 and run.never_falls(threshold)
                and int(count[-1]) == n_teacher and settled_fraction(run, threshold) >= settled)


def settled_fraction(run: "FullHeadRun", threshold: float = 0.05) -> float:
    """The smallest ``s_j(t_i) / s_j(end)`` over the switch-on records ``t_i`` (the first record where a
    singular value exceeds ``threshold``) and the singular values ``j`` that were already above it before
    ``t_i``: 1 when each transition is complete before the next starts, small when they overlap (``inf`` if
    fewer than two singular values switch on)."""
    S = np.concatenate([run.s_kq, run.s_vo], axis=1)                    # (records, 2d)
    on = S > threshold
    first = np.where(on.any(0), on.argmax(0), -1)                       # switch-on record per column
    worst = np.inf
    for c in np.unique(first[first > 0]):
        before = np.flatnonzero((first >= 0) & (first < c))
        if before.size:
            worst = min(worst, float((S[c, before] / S[-1, before]).min()))
    return float(worst)


def final_sv_error(run: "FullHeadRun", svals_kq, svals_vo) -> float:
    """:meth:`FullHeadRun.sv_err` at the last record: the final singular values against the teacher's."""
    return run.sv_err(svals_kq, svals_vo)


def full_head_teacher(n_samples: int, n_tokens: int, d: int, svals_kq, svals_vo, seed: int, device="cpu"):
    """Teacher ``M_KQ = U_1 diag(s_kq) V_1^T``, ``M_VO = U_2 diag(s_vo) V_2^T`` with random orthonormal
    factors; returns ``(X, Y, M_kq, M_vo)`` with ``Y = softmax(X M_KQ X^T) X M_VO``."""
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n_samples, n_tokens, d, generator=gen, dtype=torch.float64)

    def lowrank(s):
        Q1, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
        Q2, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
        r = len(s)
        return Q1[:, :r] @ torch.diag(torch.tensor(s, dtype=torch.float64)) @ Q2[:, :r].T

    M_kq, M_vo = lowrank(svals_kq), lowrank(svals_vo)
    Y = softmax(X @ M_kq @ X.transpose(1, 2)) @ X @ M_vo
    return X.to(device), Y.to(device), M_kq.to(device), M_vo.to(device)


@dataclass
class FullHeadRun:
    """Records of :func:`full_head_gd`: rescaled time ``tau``, ``loss``, and the singular values ``s_kq``,
    ``s_vo`` ``(records, d)`` of ``W_K W_Q^T`` and ``W_V W_O^T`` (descending)."""

    tau: np.ndarray
    loss: np.ndarray
    s_kq: np.ndarray
    s_vo: np.ndarray

    def count(self, threshold: float = 0.05) -> np.ndarray:
        """Number of singular values of both products above ``threshold``, per record."""
        return (self.s_kq > threshold).sum(1) + (self.s_vo > threshold).sum(1)

    def max_jump(self, threshold: float = 0.05) -> int:
        """Largest rise of :meth:`count` between two records (1: one singular value at a time)."""
        return int(np.diff(self.count(threshold)).max())

    def truncated(self, fraction: float) -> "FullHeadRun":
        """The records of the first ``fraction`` of the run (the control "half the steps")."""
        n = max(1, int(round(fraction * (len(self.tau) - 1))) + 1)
        return FullHeadRun(self.tau[:n], self.loss[:n], self.s_kq[:n], self.s_vo[:n])

    def never_falls(self, threshold: float = 0.05) -> bool:
        """:meth:`count` never decreases between two records (no singular value switches off again)."""
        return bool(np.diff(self.count(threshold)).min(initial=0) >= 0)

    def sv_err(self, svals_kq, svals_vo, record: int = -1) -> float:
        """Largest distance of the top singular values at ``record`` (default: the last) to the teacher's;
        ``record=0`` is the untrained head, the control of the check."""
        return float(max(np.abs(self.s_kq[record, :len(svals_kq)] - svals_kq).max(),
                         np.abs(self.s_vo[record, :len(svals_vo)] - svals_vo).max()))


def full_head_gd(X, Y, alpha: float, eta: float, n_steps: int, generator: torch.Generator,
                 record_every: int = 10, progress: Callable | None = None) -> FullHeadRun:
    """GD on ``W_K, W_Q, W_V, W_O`` (all ``d x d``) from ``alpha * N(0, 1/d)`` drawn from ``generator``
    (beyond Theorem 4.1: paper v1, Fig. 2d-f); records the singular values of ``W_K W_Q^T`` and
    ``W_V W_O^T`` and the loss against ``tau = eta * step / log(1/alpha)``; ``progress`` wraps the loop over
    steps (the run's progress bar)."""
    d = X.shape[-1]
    gen = generator
    Ws = [(alpha * torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)).to(X.device)
          .requires_grad_(True) for _ in range(4)]
    N = X.shape[0]
    taus, losses, s_kq, s_vo = [], [], [], []
    steps = range(n_steps + 1)
    for step in (progress(steps, desc="full attention head") if progress else steps):
        WK, WQ, WV, WO = Ws
        Mkq, Mvo = WK @ WQ.T, WV @ WO.T
        out = softmax(X @ Mkq @ X.transpose(1, 2)) @ X @ Mvo
        loss = 0.5 * (out - Y).pow(2).sum() / N
        if step % record_every == 0 or step == n_steps:
            taus.append(eta * step / math.log(1 / alpha))
            losses.append(loss.detach().item())   # the loss carries the graph: a plain float() warns
            s_kq.append(torch.linalg.svdvals(Mkq.detach()).cpu().numpy())
            s_vo.append(torch.linalg.svdvals(Mvo.detach()).cpu().numpy())
        if step == n_steps:
            break
        grads = torch.autograd.grad(loss, Ws)
        with torch.no_grad():
            for W, G in zip(Ws, grads):
                W -= eta * G
        if step % 100 == 0:
            assert_finite("full_eta", eta, step, *Ws)
    return FullHeadRun(np.array(taus), np.array(losses), np.array(s_kq), np.array(s_vo))

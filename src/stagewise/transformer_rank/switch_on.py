"""Stagewise learning measured on singular values: do the directions of a learned change switch on one at a time?

The statistic of the diagonal-incremental chapter's full-weight head (its criterion ``settled_fraction``, rebuilt
here because a chapter imports no other), applied to the singular values of the change since initialization
``Delta(W_K W_Q^T)`` or ``Delta(W_V W_O^T)`` of the teacher-student head (the chapter's conjecture
``conj-transformer-rank-stages``, ours). Theorem 4.1 of the paper (``thm-transformer-rank-incremental``) says that in
the small-initialization limit at most one coordinate enters per stage; with full weights the analogue is that each
singular value of the change rises to its final size before the next one starts to rise.
"""
from __future__ import annotations

import math

import numpy as np
import torch

#: A singular value has "switched on" once it exceeds this (the teacher's singular values are 1/4 to 2).
THRESHOLD = 0.05
#: One at a time: when a singular value switches on, the ones switched on before are past this part of their final
#: value (the diagonal-incremental chapter's criterion).
SETTLED = 0.5


def settled_fraction(svals, threshold: float = THRESHOLD) -> float:
    """For singular values ``svals`` ``(records, k)`` (descending per record) of one run: at every record where a
    singular value first exceeds ``threshold``, the ratio ``s_j(record) / s_j(end)`` of each singular value ``j``
    that switched on at an earlier record; the smallest of them. 1 when each direction has arrived before the next
    starts, small when they rise together, 0 when two switch on at the same record; NaN when fewer than two switch
    on (nothing to compare)."""
    s = np.asarray(svals.double().cpu() if isinstance(svals, torch.Tensor) else svals, dtype=float)
    on = s > threshold
    first = np.where(on.any(0), on.argmax(0), -1)                      # switch-on record of each singular value
    if np.count_nonzero(first >= 0) < 2:
        return math.nan
    worst = math.inf
    for record in np.unique(first[first >= 0]):
        if np.count_nonzero(first == record) > 1:                      # two directions switched on together
            return 0.0
        before = np.flatnonzero((first >= 0) & (first < record))
        if before.size:
            worst = min(worst, float((s[record, before] / s[-1, before]).min()))
    return worst


def per_seed_settled(svals: torch.Tensor, threshold: float = THRESHOLD) -> torch.Tensor:
    """:func:`settled_fraction` of every seed of ``svals`` ``(records, seeds, k)``: a ``(seeds,)`` tensor."""
    return torch.tensor([settled_fraction(svals[:, k], threshold) for k in range(svals.shape[1])],
                        dtype=torch.float64)


def switch_on_steps(svals, steps: list[int], threshold: float = THRESHOLD) -> list[int]:
    """The step at which each singular value of ``svals`` ``(records, k)`` first exceeds ``threshold``, in the
    order they switch on (for the prose and the figure)."""
    s = np.asarray(svals.double().cpu() if isinstance(svals, torch.Tensor) else svals, dtype=float)
    on = s > threshold
    return sorted(int(steps[int(i)]) for i in on.argmax(0)[on.any(0)])

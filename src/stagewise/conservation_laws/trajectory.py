"""Records of the invariants along a run, and the drift ``max_t |I(t) - I(0)|`` read off them."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Trajectory:
    """Invariant records: ``invariants[t, e, s, j]`` at ``times[t]`` for step size ``e``, seed ``s``
    (gradient flow has a single "step size" entry, ``e = 0``)."""

    times: np.ndarray
    invariants: torch.Tensor
    layer_norms: torch.Tensor | None = None  # ||W||_F^2 of every parameter tensor, shape (T, E, S, n_tensors)
    states: list | None = None  # gradient flow only: the parameters (a ``Params``) at every record
    final: list | None = None   # gradient descent only: the final parameters, rows (step size, seed) step size major


def max_drift(invariants: torch.Tensor) -> torch.Tensor:
    """``max_t max_j |I_j(t) - I_j(0)|`` for records of shape (T, B, K); returns (B,).

    Zero under gradient flow for the homogeneous families (Theorem
    ``prf:thm-conservation-laws-balancedness``); linear in ``eta`` under gradient descent
    (Proposition ``prf:thm-conservation-laws-one-step``).
    """
    return (invariants - invariants[:1]).abs().amax(dim=(0, 2))

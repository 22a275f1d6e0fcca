"""Theorem 4.1's setting on the exact flow: Algorithm 1's staircase against gradient flow at several alphas.

:func:`flow_study` runs Algorithm 1 and the exact log-scale flow (:class:`FlowStudy`), which the theorem's studies
read: the transition times (:mod:`.transitions`; the finite-alpha correction is in :mod:`.finite_alpha`), the
plateaus (:mod:`.plateau_states`; how fast the flow settles on them in :mod:`.relaxation`) and the log-scale
bookkeeping (:mod:`.log_scale`); :func:`teacher_error` says whether the flow ends at the teacher.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.diagonal_incremental.algorithm import Breakdown, Stage, algorithm1
# ``log_scale_flow`` is looked up here at call time by :mod:`.transitions` and :mod:`.plateau_states` too
# (``staircase.log_scale_flow``), so that the bug catalogue's target ``staircase:log_scale_flow`` reaches every
# exact flow of the studies.
from stagewise.diagonal_incremental.flow import log_scale_flow
from stagewise.diagonal_incremental.networks import DiagonalModel


@dataclass
class FlowStudy:
    """Algorithm 1's stages and the exact flow (dict of :func:`flow.log_scale_flow`) on ``tau``.

    ``stages`` are the stages Theorem 4.1 covers on this instance; ``breakdown`` (or ``None``) the first one
    it does not (a hypothesis fails there, :class:`algorithm.Breakdown`)."""

    alphas: list
    u0: np.ndarray
    v0: np.ndarray
    stages: list[Stage]
    tau: np.ndarray
    flow: dict
    breakdown: Breakdown | None = None

    @property
    def plateau_end(self) -> float:
        """End of the last plateau the theorem describes: ``T_{K+1}`` of the broken stage, else ``tau_end``."""
        return float(self.breakdown.T) if self.breakdown is not None else self.tau_end

    @property
    def K(self) -> int:
        """Number of stages of Algorithm 1."""
        return len(self.stages) - 1

    @property
    def T(self) -> np.ndarray:
        """Algorithm 1's stage times ``T_1, ..., T_K`` (eq. 11)."""
        return np.array([s.T for s in self.stages[1:]])

    @property
    def levels(self) -> np.ndarray:
        """Plateau losses ``L(theta^0), ..., L(theta^K)``."""
        return np.array([s.loss for s in self.stages])

    @property
    def tau_end(self) -> float:
        return float(self.tau[-1])

    @property
    def j_min(self) -> int:
        """Column of the smallest alpha."""
        return int(np.argmin(self.alphas))

    @property
    def beta_min(self) -> np.ndarray:
        """``beta(tau)`` at the smallest alpha, ``(len(tau), p)``."""
        return self.flow["beta"][:, self.j_min, :]

    def first_active(self, threshold: float = 1e-3) -> int:
        """The first coordinate of ``beta`` above ``threshold`` along the flow at the smallest alpha."""
        beta = self.beta_min
        return int(np.argmax(np.abs(beta[np.argmax(np.abs(beta).max(1) > threshold)])))


def flow_study(model: DiagonalModel, alphas, u0: np.ndarray, v0: np.ndarray, rtol: float, device="cpu",
               n_tau: int = 1500, stages=None) -> FlowStudy:
    """Algorithm 1 (or its ``stages``, already computed), then the exact flow (Lemma 4.2, eq. 14) from
    ``alpha theta_0`` up to ``tau = 1.1 T_K + 0.3`` (``T_K``: the last stage, or the time of the stage where a
    hypothesis fails)."""
    stages = stages if stages is not None else algorithm1(model, device=device)
    last = stages.breakdown.T if stages.breakdown is not None else stages[-1].T
    tau = np.linspace(0.0, 1.1 * last + 0.3, n_tau)
    flow = log_scale_flow(model, alphas, u0, v0, tau, rtol=rtol, device=device)
    return FlowStudy(list(alphas), u0, v0, list(stages), tau, flow, stages.breakdown)


def breakdown_note(fs: FlowStudy) -> str:
    """One sentence for the prose: Algorithm 1 ran to its end, or where and why Theorem 4.1 stops applying."""
    bd = fs.breakdown
    if bd is None:
        return "On this instance every hypothesis that Algorithm 1 tests holds at every stage."
    return (f"On this instance Algorithm 1 stops before stage {bd.stage}: {bd.hypothesis} fails ({bd.measured}). "
            f"Theorem 4.1 then covers stages 1 to {fs.K} only; the checks below test those stages, and the later "
            "ones are reported as 'not run'.")



def teacher_error(fs: FlowStudy, beta_star, fraction: float = 1.0) -> float:
    """``||beta(tau) - beta*||_2`` along the exact flow at the smallest alpha at ``tau = fraction * tau_end``
    (the end of the simulation for ``fraction = 1``): whether the data were learned, the teacher ``beta*``
    recovered (the teacher is realizable: its loss is 0). ``fraction = 1/2`` is the same run stopped at half
    its time."""
    beta_star = beta_star.detach().cpu().numpy() if isinstance(beta_star, torch.Tensor) else np.asarray(beta_star)
    i = int(np.argmin(np.abs(fs.tau - fraction * fs.tau_end)))
    return float(np.linalg.norm(fs.beta_min[i] - beta_star))   # every entry counts: a 2-norm, not the largest

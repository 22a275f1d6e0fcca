"""Lemma D.4 on a correlated diagonal linear regression: a coordinate leaves the support and re-enters with the
opposite sign (Algorithm 1 and the exact flow agree).

:func:`correlated_study` runs Algorithm 1 and the exact flow; :func:`algorithm_reenters` is the check's measure on
Algorithm 1 (its control: ``Sigma = I``), :func:`flow_reenters` the one on the flow (its control: the flow at an
alpha that is not yet small), :func:`extrapolation_error` the times extrapolated to ``alpha -> 0`` (its control:
the fit in the wrong variable ``1/log(1/alpha)^2``, as for the chapter's main transition times)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.diagonal_incremental.algorithm import Stage, algorithm1
from stagewise.diagonal_incremental.flow import log_scale_flow
from stagewise.diagonal_incremental.networks import LinearDiagonal
from stagewise.diagonal_incremental.plateaus import transition_times
from stagewise.numerics.fits import inverse_log_fit

SIGMA = [[1, .2, .75], [.2, 1, .75], [.75, .75, 1]]
BETA_STAR = [1.0, 0.6, -0.3]


def correlated_model() -> LinearDiagonal:
    """``Ltilde = 1/2 (beta - beta*)^T Sigma (beta - beta*)``, ``beta* = (1, 0.6, -0.3)``,
    ``Sigma_12 = 0.2``, ``Sigma_13 = Sigma_23 = 0.75`` (the example of Lemma D.4)."""
    return LinearDiagonal(torch.tensor(SIGMA, dtype=torch.float64), torch.tensor(BETA_STAR, dtype=torch.float64))


@dataclass
class CorrelatedStudy:
    """Algorithm 1's ``stages`` and the exact ``flow`` on ``tau`` for ``alphas``; measured transition
    ``times`` ``(len(alphas), K)`` and their extrapolation to ``alpha -> 0``."""

    alphas: list
    stages: list[Stage]
    tau: np.ndarray
    flow: dict
    times: np.ndarray
    extrapolated: np.ndarray

    @property
    def T(self) -> np.ndarray:
        return np.array([s.T for s in self.stages[1:]])

    @property
    def j_min(self) -> int:
        """Column of the smallest alpha."""
        return int(np.argmin(self.alphas))

    @property
    def beta3(self) -> np.ndarray:
        """``beta_3(tau)`` at the smallest alpha (the coordinate that leaves and re-enters)."""
        return self.flow["beta"][:, self.j_min, 2]

    @property
    def between_34(self) -> np.ndarray:
        """Times strictly inside the plateau between the third and fourth stage (one unit from each end)."""
        return (self.tau > self.T[2] + 1) & (self.tau < self.T[3] - 1)

    @property
    def width(self) -> float:
        """``1/log(1/alpha)`` at the largest alpha: the scale (in rescaled time) over which a finite-alpha
        transition is spread, and the order of the 1/log corrections to the transition times."""
        return float(1.0 / -np.log(max(self.alphas)))

    @property
    def resolved(self) -> np.ndarray:
        """Stages separated from the previous one and from the next one by more than three transition widths.

        Stage 2 of this example comes only ``T_2 - T_1`` (about 0.025) after stage 1, less than two widths at
        alpha = 1e-32: at the simulated alphas the two loss drops merge, so neither measured crossing time is
        the time of its own stage and no extrapolation from these alphas can recover them."""
        gaps = np.diff(np.concatenate([[0.0], self.T, [np.inf]]))
        wide = gaps > 3 * self.width
        return wide[:-1] & wide[1:]

    @property
    def closest_gap(self) -> float:
        """The smallest gap ``T_k - T_{k-1}`` between consecutive stages (``T_0 = 0``)."""
        return float(np.diff(np.concatenate([[0.0], self.T])).min())

    @property
    def extrapolation_uncertainty(self) -> float:
        """The extrapolation's own error estimate, as for the chapter's main times: the change of the
        extrapolated ``T_k`` (relative) when the largest alpha is left out of the fit, over the resolved stages."""
        x = 1.0 / -np.log(np.asarray(self.alphas, float))
        keep = np.argsort(x)[:-1]
        order = min(2, keep.size - 1)
        drop = np.array([inverse_log_fit(1.0 / x[keep], self.times[keep, k], order)[0] for k in range(len(self.T))])
        ok = self.resolved
        return float(np.max(np.abs(drop - self.extrapolated)[ok] / self.T[ok]))

    @property
    def tolerance(self) -> float:
        """The main transition-time row's tolerance: ``max(1e-3, 2 x`` :attr:`extrapolation_uncertainty`)."""
        return max(1e-3, 2.0 * self.extrapolation_uncertainty)

    @property
    def extrap_err(self) -> float:
        """Largest relative error of the extrapolated times over the resolved stages."""
        ok = self.resolved
        return float(np.max(np.abs(self.extrapolated[ok] - self.T[ok]) / self.T[ok]))

    @property
    def beta3_between(self) -> float:
        return float(np.abs(self.beta3[self.between_34]).max())

    def flow_reenters(self, j: int | None = None) -> bool:
        """The exact flow at ``alphas[j]`` (the smallest by default) shows the sequence: ``beta_3`` above 1e-3 at
        ``tau = 3`` (on, positive), below 1e-3 on the plateau between the third and fourth stage (left the
        support), below -1e-3 at the end (back, negative); 1e-3 is the support threshold of the rank counts."""
        b3 = self.flow["beta"][:, self.j_min if j is None else j, 2]
        return bool(np.abs(b3[self.between_34]).max() < 1e-3 and b3[-1] < -1e-3
                    and b3[np.argmin(np.abs(self.tau - 3.0))] > 1e-3)

    @property
    def leaves_and_reenters(self) -> bool:
        """Lemma D.4 and its consequence, in Algorithm 1 (:func:`algorithm_reenters`, with ``x_3`` dropped at stage 3
        and re-added negative at stage 4) and in the exact flow at the smallest alpha (:meth:`flow_reenters`)."""
        return bool(algorithm_reenters(correlated_model()) and self.stages[3].dropped == [2]
                    and self.stages[4].coordinate == 2 and self.stages[4].sign == -1 and self.flow_reenters())


def leaves_and_reenters_flipped(stages: list[Stage]) -> bool:
    """Lemma D.4's sequence in Algorithm 1's stages: some coordinate leaves the support at a stage and later
    re-enters with the sign opposite to the one it had before it left."""
    for k, s in enumerate(stages):
        for j in s.dropped:
            before = np.sign(stages[k - 1].beta[j])
            if any(t.coordinate == j and t.sign == -before for t in stages[k + 1:]):
                return True
    return False


def lemma_d4_holds(model, stages: list[Stage], b_tol: float = 1e-9) -> bool:
    """Lemma D.4 in the paper's direction, on Algorithm 1's stages: for ``k >= 1`` and ``i`` outside
    ``supp theta^k``, ``b^k_i`` in ``{0, 2}`` (within ``b_tol``) implies that ``i`` has just left
    (``i`` in ``supp theta^{k-1} minus supp theta^k``), with ``g_i(theta^k) < 0`` if ``b^k_i = 0`` and ``> 0`` if
    ``b^k_i = 2`` (beyond the resolution ``g_err`` of ``g(theta^k)``). ``Delta_k(i_k) > 0`` is asserted by
    Algorithm 1 itself (:class:`algorithm.DegenerateStageError`)."""
    for prev, st in zip(stages[:-1], stages[1:]):
        gam = model.g(torch.from_numpy(st.beta)[None].to(model.device))[0].cpu().numpy()
        just_left = set(np.setdiff1d(prev.support, st.support).tolist())
        for i in np.setdiff1d(np.arange(st.beta.size), st.support):
            at0, at2 = abs(st.b[i]) <= b_tol, abs(st.b[i] - 2.0) <= b_tol
            if (at0 or at2) and (int(i) not in just_left or (at0 and not gam[i] < -st.g_err)
                                  or (at2 and not gam[i] > st.g_err)):
                return False
    return True


def uncorrelated_model() -> LinearDiagonal:
    """The correlated example's ``beta*`` with ``Sigma = I`` (no correlation): the control of Lemma D.4's check."""
    return LinearDiagonal(torch.eye(3, dtype=torch.float64), torch.tensor(BETA_STAR, dtype=torch.float64))


def uncorrelated_stages() -> list[Stage]:
    """Algorithm 1 on :func:`uncorrelated_model`, where every coordinate is learned once and none leaves."""
    return algorithm1(uncorrelated_model())


def algorithm_reenters(model: LinearDiagonal) -> bool:
    """Lemma D.4's sequence (:func:`leaves_and_reenters_flipped`) in Algorithm 1's stages on ``model``, with the
    lemma itself (:func:`lemma_d4_holds`)."""
    stages = algorithm1(model)
    return leaves_and_reenters_flipped(stages) and lemma_d4_holds(model, stages)


def flow_reenters(u0: np.ndarray, v0: np.ndarray, alpha: float) -> bool:
    """The flow half of the leave-and-re-enter check (:meth:`CorrelatedStudy.flow_reenters`) on a fresh exact
    flow from ``alpha (u0, v0)``: the check reads the smallest simulated alpha; the control a larger one, where
    the flow has not yet separated the stages (``x_3`` is still on one time unit after ``T_3``)."""
    return correlated_study(u0, v0, alphas=(alpha,)).flow_reenters()


def extrapolation_error(study: CorrelatedStudy, power: float = 1.0, order: int = 2) -> float:
    """``max_k |T_k^extrap - T_k| / T_k`` over the resolved stages with the times fitted as a polynomial in
    ``x^power``, ``x = 1/log(1/alpha)``: ``power = 1`` is the study's extrapolation; ``power = 2`` the wrong time
    scale, the control (as :func:`transitions.extrapolation_error`)."""
    x = 1.0 / -np.log(np.asarray(study.alphas, float))
    extrap = np.array([inverse_log_fit(x ** -power, study.times[:, k], order)[0] for k in range(len(study.T))])
    ok = study.resolved
    return float(np.max(np.abs(extrap - study.T)[ok] / study.T[ok]))


def correlated_study(u0: np.ndarray, v0: np.ndarray, alphas=(1e-32, 1e-64, 1e-128), rtol: float = 1e-9,
                     order: int = 2, max_step: float = 2.0) -> CorrelatedStudy:
    """Algorithm 1 and the exact flow from ``alpha (u0, v0)`` on the correlated example; the time grid is
    fine up to 8 and then reaches ``1.05 T_K``; extrapolation by ``numerics.fits.inverse_log_fit``.

    ``max_step`` bounds the solver's step: without it, for most ``theta_0`` LSODA steps over the last
    re-entry (after a plateau of length ~100 in ``tau``) onto a diverging branch at some alpha."""
    model = correlated_model()
    stages = algorithm1(model)
    T = np.array([s.T for s in stages[1:]])
    tau = np.concatenate([np.linspace(0, 8, 800), np.linspace(8.01, 1.05 * T[-1], 800)])
    flow = log_scale_flow(model, list(alphas), u0, v0, tau, rtol=rtol, max_step=max_step)
    levels = [s.loss for s in stages]
    times = np.array([transition_times(tau, flow["loss"][:, j], levels,
                                       lambda t, j=j: float(model.loss(flow["dense"](t)[j:j + 1])[0]))
                      for j in range(len(alphas))])
    log_inv = -np.log(np.asarray(alphas, float))
    extrap = np.array([inverse_log_fit(log_inv, times[:, k], order)[0] for k in range(len(T))])
    return CorrelatedStudy(list(alphas), stages, tau, flow, times, extrap)

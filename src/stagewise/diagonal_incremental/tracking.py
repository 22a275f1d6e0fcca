"""Gradient descent against the exact flow at the same alpha (Remark rem-diagonal-incremental-gd-flow).

By Proposition prop-diagonal-incremental-gd, one step of gradient descent multiplies ``w = u + v`` by
``1 + eta g`` and ``w~ = u - v`` by ``1 - eta g``. With time ``t = eta n`` and ``g`` frozen over a step, GD is
therefore the flow of the two log-scale clocks at the *discrete rates*

    d log w / dt = log(1 + eta g) / eta,    d log w~ / dt = log(1 - eta g) / eta,

which are ``+-g - eta g^2 / 2 + O(eta^2)``: every race runs at ``|g| (1 - eta |g| / 2)``, and GD's transitions
come later than the flow's by a relative ``eta |g| / 2`` to leading order. :func:`rate_flow` integrates these
clocks exactly on the log scale (``eta = 0`` is gradient flow itself, :func:`flow.log_scale_flow`);
:func:`tracking_study` reads the transition times of GD, of the flow and of the discrete-rate flow;
:func:`time_miss` is the check's measure (against the discrete rates, or, as the control, against the flow).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.integrate import solve_ivp

from stagewise.diagonal_incremental.flow import normalize_init
from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.diagonal_incremental.plateaus import transition_times


def rate_flow(model: DiagonalModel, alpha: float, u0: np.ndarray, v0: np.ndarray, tau: np.ndarray, eta: float,
              rtol: float = 1e-8, atol: float = 1e-10) -> dict:
    """The log-scale clocks ``p = log_alpha w`` and ``q = log_alpha w~`` from ``alpha theta_0`` in rescaled time
    ``tau = t / log(1/alpha)``, at gradient descent's rates: ``dp/dtau = -log(1 + eta g) / eta`` and
    ``dq/dtau = -log(1 - eta g) / eta``, with ``beta = (alpha^(2p) - alpha^(2q)) / 4``. For ``eta = 0`` the
    rates are ``-g`` and ``+g``: ``p + q`` is conserved and this is gradient flow (Lemma 4.2). Returns ``tau``,
    ``beta`` ``(len(tau), p)``, ``loss`` ``(len(tau),)`` and ``dense`` (``tau -> beta (1, p)``)."""
    un, vn = normalize_init(u0, v0)                 # u > |v|: w and w~ are positive
    L, p = -math.log(alpha), model.p
    y0 = np.concatenate([1.0 - np.log(un + vn) / L, 1.0 - np.log(un - vn) / L])

    def beta(y):                                     # exponents clipped: rejected trial steps cannot overflow
        return 0.25 * (np.exp(np.minimum(-2 * L * y[:p], 60.0)) - np.exp(np.minimum(-2 * L * y[p:], 60.0)))

    def rhs(_t, y):
        g = model.g(torch.from_numpy(beta(y))[None].to(model.device))[0].cpu().numpy()
        if eta == 0:
            return np.concatenate([-g, g])
        step = np.clip(eta * g, -1 + 1e-12, None)   # 1 + eta g > 0 wherever GD itself is stable
        return np.concatenate([-np.log1p(step) / eta, -np.log1p(-np.clip(eta * g, None, 1 - 1e-12)) / eta])

    sol = solve_ivp(rhs, (0.0, float(tau[-1])), y0, method="LSODA", rtol=rtol, atol=atol, dense_output=True)
    if not sol.success:
        raise RuntimeError(f"discrete-rate flow failed: {sol.message}; loosen ode_rtol")
    b = np.stack([beta(sol.sol(t)) for t in tau])
    loss = model.loss(torch.from_numpy(b).to(model.device)).cpu().numpy()

    def dense(t: float) -> torch.Tensor:
        return torch.from_numpy(beta(sol.sol(t)))[None].to(model.device)

    return {"tau": tau, "beta": b, "loss": loss, "dense": dense}


def flow_transition_times(model: DiagonalModel, flow: dict, levels) -> np.ndarray:
    """Midpoint crossings (:func:`plateaus.transition_times`) of a :func:`rate_flow`, refined on its dense output."""
    return np.array(transition_times(flow["tau"], flow["loss"], levels,
                                     lambda t: float(model.loss(flow["dense"](t))[0])), float)


@dataclass
class TrackingStudy:
    """Transition times at one ``alpha`` from one start ``alpha theta_0``: gradient descent with step ``eta``
    (``gd_times``), gradient flow (``flow_times``) and the discrete-rate flow (``rate_times``, the remark's
    prediction). NaN where a run does not reach a transition within the simulated time. ``included``: the stages
    the comparison is held to (all when None; :meth:`settled_only`)."""

    alpha: float
    eta: float
    gd_times: np.ndarray
    flow_times: np.ndarray
    rate_times: np.ndarray
    included: np.ndarray | None = None

    def settled_only(self, settled_plateaus) -> "TrackingStudy":
        """The same comparison held only to the stages ``k`` whose plateaus ``k - 1`` and ``k`` are settled
        (one flag per plateau ``0..K``): the remark's race assumes the gradient constant on each plateau."""
        ok = np.asarray(settled_plateaus, bool)
        return TrackingStudy(self.alpha, self.eta, self.gd_times, self.flow_times, self.rate_times,
                             ok[:-1] & ok[1:])

    @property
    def reached(self) -> np.ndarray:
        """The held stages that the prediction reaches within the simulated time (GD must reach them too)."""
        kept = np.ones(len(self.flow_times), bool) if self.included is None else np.asarray(self.included, bool)
        return np.isfinite(self.rate_times) & np.isfinite(self.flow_times) & kept

    @property
    def predicted_delay(self) -> np.ndarray:
        """``(tau_k^rate - tau_k^flow) / tau_k^flow``: the relative delay the discrete rates predict, about
        ``eta |g| / 2`` averaged over the races that lead to stage ``k``."""
        return (self.rate_times - self.flow_times) / self.flow_times

    @property
    def measured_delay(self) -> np.ndarray:
        """``(tau_k^GD - tau_k^flow) / tau_k^flow``, measured."""
        return (self.gd_times - self.flow_times) / self.flow_times

    #: The allowed miss, in units of each stage's predicted delay: a quarter. A prediction without the delay (or
    #: with twice it, ``eta |g|`` in place of ``eta |g| / 2``) misses by about one unit.
    tolerance: float = 0.25


def time_miss(study: TrackingStudy, theory: str = "gd rates") -> float:
    """``max_k |tau_k^GD - tau_k^pred| / (tau_k^rate - tau_k^flow)``: GD's miss against the prediction of
    ``theory``, in units of the delay the remark predicts for stage ``k``, over the held stages the prediction
    reaches. ``theory``: ``"gd rates"`` (the discrete-rate flow, the remark) or ``"flow"`` (gradient flow, no
    discretization delay: the control, about one unit). NaN when GD misses one of them, which no tolerance
    accepts, or when no stage is held."""
    pred = {"gd rates": study.rate_times, "flow": study.flow_times}[theory]
    ok = study.reached
    if not ok.any():
        return math.nan
    unit = study.rate_times[ok] - study.flow_times[ok]
    return float(np.max(np.abs(study.gd_times[ok] - pred[ok]) / unit))


def tracking_study(model: DiagonalModel, gd, row: int, alpha: float, eta: float, u0: np.ndarray, v0: np.ndarray,
                   levels, tau: np.ndarray, rtol: float) -> TrackingStudy:
    """Row ``row`` of the GD run ``gd`` (:func:`descent.gradient_descent` from ``alpha theta_0`` with step
    ``eta``), gradient flow and the discrete-rate flow (:func:`rate_flow`) from the same start on the grid
    ``tau``: their transition times through Algorithm 1's plateau ``levels`` (GD's refined on the linear
    interpolation between its records)."""
    g_tau, g_loss = np.asarray(gd.tau[row]), np.asarray(gd.loss[row])
    gd_times = np.array(transition_times(g_tau, g_loss, levels, lambda t: float(np.interp(t, g_tau, g_loss))), float)
    flow, rates = (flow_transition_times(model, rate_flow(model, alpha, u0, v0, tau, e, rtol=rtol, atol=1e-3 * rtol),
                                         levels) for e in (0.0, eta))
    return TrackingStudy(float(alpha), float(eta), gd_times, flow, rates)

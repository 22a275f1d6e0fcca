"""Plain gradient descent on ``(u, v)`` and the exact discrete identity of Proposition
prop-diagonal-incremental-gd (``c_{n+1} = c_n (1 - eta^2 g_n^2)``, ``c = u^2 - v^2``).

:func:`descend` runs GD from given weight rows (also the paper's perturbation tests of Assumption 4.4);
:func:`gradient_descent` starts it from ``alpha * theta_0`` for (alpha, eta) rows and adds rescaled time;
:func:`conservation_study` measures the O(eta) violation of Lemma 4.2 and the exactness of the identity.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.numerics.fits import loglog_slope
from stagewise.numerics.flows import assert_finite


@dataclass
class DescentRun:
    """Records of :func:`descend`: per row ``t`` and ``loss`` ``(B, records)``, ``beta`` ``(B, records, p)``;
    at the last step, each ``(B, p)``: ``c`` (measured ``u^2 - v^2``), ``c_pred`` (``c_0 prod (1 - eta^2 g^2)``),
    ``c0``, ``scale`` (``max_n (u_n^2 + v_n^2)``), ``u`` and ``v``; ``tau`` (rescaled time) when started by
    :func:`gradient_descent`."""

    t: np.ndarray
    loss: np.ndarray
    beta: np.ndarray
    c: np.ndarray
    c_pred: np.ndarray
    c0: np.ndarray
    scale: np.ndarray
    u: np.ndarray
    v: np.ndarray
    tau: np.ndarray | None = None


def descend(model: DiagonalModel, U0: np.ndarray, V0: np.ndarray, etas, n_steps: int, record_every: int = 10,
            device="cpu", param_name: str = "eta") -> DescentRun:
    """Plain GD ``u <- u + eta v g``, ``v <- v + eta u g`` (``g = -grad Ltilde(u v)``) from weight rows
    ``(U0, V0)`` of shape ``(B, p)``, one step size per row (or one for all).

    Tracks the identity of Proposition prop-diagonal-incremental-gd by accumulating the product
    ``prod (1 - eta^2 g^2)`` alongside the weights.  Divergence raises ``DivergenceError`` naming ``param_name``.
    """
    u = torch.from_numpy(np.ascontiguousarray(U0, dtype=float)).to(device)
    v = torch.from_numpy(np.ascontiguousarray(V0, dtype=float)).to(device)
    etas = np.broadcast_to(np.asarray(etas, float), (u.shape[0],))
    eta = torch.from_numpy(etas[:, None].copy()).to(device)
    c0 = u * u - v * v
    factor = torch.ones_like(u)
    scale = u * u + v * v
    ts, losses, betas = [], [], []
    for step in range(n_steps + 1):
        if step % record_every == 0 or step == n_steps:
            beta = u * v
            ts.append(etas * step)
            losses.append(model.loss(beta).cpu().numpy())
            betas.append(beta.cpu().numpy())
        if step == n_steps:
            break
        g = model.g(u * v)
        factor = factor * (1 - eta * eta * g * g)
        u, v = u + eta * v * g, v + eta * u * g
        scale = torch.maximum(scale, u * u + v * v)
        if step % 100 == 0:
            assert_finite(param_name, float(etas.max()), step, u, v)
    assert_finite(param_name, float(etas.max()), n_steps, u, v)
    return DescentRun(t=np.array(ts).T, loss=np.array(losses).T, beta=np.array(betas).transpose(1, 0, 2),
                      c=(u * u - v * v).cpu().numpy(), c_pred=(c0 * factor).cpu().numpy(), c0=c0.cpu().numpy(),
                      scale=scale.cpu().numpy(), u=u.cpu().numpy(), v=v.cpu().numpy())


def gradient_descent(model: DiagonalModel, u0: np.ndarray, v0: np.ndarray, alphas, etas, n_steps: int,
                     record_every: int = 10, device="cpu", param_name: str = "eta") -> DescentRun:
    """:func:`descend` from ``theta(0) = alpha theta_0`` for each (alpha, eta) row (Proposition
    prop-diagonal-incremental-gd), with rescaled time ``tau = eta * step / log(1/alpha)`` (as in Theorem 4.1)."""
    alphas, etas = np.broadcast_arrays(np.asarray(alphas, float), np.asarray(etas, float))
    out = descend(model, alphas[:, None] * np.asarray(u0)[None], alphas[:, None] * np.asarray(v0)[None], etas,
                  n_steps, record_every, device, param_name)
    out.tau = out.t / -np.log(alphas)[:, None]
    return out


@dataclass
class ConservationStudy:
    """GD run to the same time with step sizes ``etas``: the identity's error (units of steps x eps x
    max(u^2 + v^2)), the violation ``max |c_n / c_0 - 1|`` per step size and its local log-log slopes."""

    etas: list
    drift: list
    identity_err: float
    slopes: np.ndarray

    @property
    def slope(self) -> float:
        """Local slope between the two smallest step sizes (1 for an O(eta) violation)."""
        return float(self.slopes[-1])

    @property
    def slope_extrapolated(self) -> float:
        """Richardson's slope ``2 s(eta/2, eta/4) - s(eta, eta/2)``: for a violation ``A eta (1 + B eta + ...)``
        the local slope is ``1 + O(eta)`` with the O(eta) term halving with the step, so this removes it and
        leaves 1 up to ``O(eta^2)``."""
        return float(2 * self.slopes[-1] - self.slopes[-2])

    @property
    def slope_window(self) -> float:
        """Half-width allowed to :attr:`slope_extrapolated` around 1: half the first-order term it removed,
        ``|1 - s(eta, eta/2)| / 2`` (the remainder is smaller by a further factor O(eta) while the ratio of
        deviations is 1/2, which the next check tests)."""
        return float(abs(1 - self.slopes[-2]) / 2)

    @property
    def slope_dev_ratio(self) -> float:
        """``(1 - slope)`` at the smaller pair over the larger pair: 1/2 for ``A eta (1 + O(eta))``."""
        return float((1 - self.slopes[1]) / (1 - self.slopes[0]))


def identity_error(run: DescentRun, n_steps: int) -> float:
    """Largest ``|c_n - c_0 prod(1 - eta^2 g^2)|`` in units of ``n_steps x eps x max(u^2 + v^2)``
    (Proposition prop-diagonal-incremental-gd holds to rounding when this is O(1))."""
    return float(np.max(np.abs(run.c - run.c_pred) / (n_steps * np.finfo(float).eps * run.scale)))


def conservation_study(model: DiagonalModel, u0: np.ndarray, v0: np.ndarray, etas, t_end: float,
                       alpha: float = 0.01, device="cpu", progress: Callable | None = None,
                       same_steps: bool = False) -> ConservationStudy:
    """Lemma 4.2 broken by GD at O(eta) and Proposition prop-diagonal-incremental-gd exact: one run per step
    size from ``alpha theta_0`` to time ``t_end``; slopes are ``d log drift / d log eta`` of neighbours.

    ``same_steps=True`` is the control (a broken experiment): every step size runs the number of steps
    the largest one needs for ``t_end``, so the runs do not reach the same time; while ``g`` is nearly
    constant (``t_end`` before the first transition) the violation then scales like ``eta^2``, slope 2."""
    etas = list(etas)
    steps = [int(round(t_end / (etas[0] if same_steps else e))) for e in etas]
    runs = [gradient_descent(model, u0, v0, [alpha], [e], n, record_every=10**9, device=device)
            for e, n in zip(progress(etas) if progress else etas, steps)]
    drift = [float(np.max(np.abs(r.c / r.c0 - 1))) for r in runs]
    slopes = np.array([loglog_slope(etas[i:i + 2], drift[i:i + 2]) for i in range(len(etas) - 1)])
    return ConservationStudy(etas, drift, max(identity_error(r, n) for r, n in zip(runs, steps)), slopes)


def drift_slope_extrapolated(model: DiagonalModel, u0: np.ndarray, v0: np.ndarray, etas, t_end: float,
                             **kwargs) -> float:
    """:attr:`ConservationStudy.slope_extrapolated` of a new :func:`conservation_study` (same arguments):
    the controls run the study with ``same_steps=True`` (the runs do not reach the same time)."""
    return conservation_study(model, u0, v0, etas, t_end, **kwargs).slope_extrapolated


def drift_slope_ratio(model: DiagonalModel, u0: np.ndarray, v0: np.ndarray, etas, t_end: float,
                      **kwargs) -> float:
    """:attr:`ConservationStudy.slope_dev_ratio` of a new :func:`conservation_study` (same arguments)."""
    return conservation_study(model, u0, v0, etas, t_end, **kwargs).slope_dev_ratio

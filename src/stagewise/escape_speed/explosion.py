"""Norm explosion along an escape direction (paper Prop. 2.2 = App. A.2, corrected).

Along an escape direction ``rho`` with speed ``s`` (``|rho|^2 = L``), gradient flow on ``L0``
from ``u0 rho`` stays on the ray and the per-layer scale ``u = |theta| / sqrt(L)`` obeys
``u' = s u^{L-1}``. Closed-form solution, escape and blow-up times, and the gradient flow itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.escape_speed.ascent import kkt_residual
from stagewise.escape_speed.closed_forms import single_neuron_escape
from stagewise.escape_speed.network import Weights, mse_loss, speed, sq_norm
from stagewise.numerics.flows import integrate_flow
from stagewise.numerics.params import pack, unpacker
from stagewise.numerics.roundoff import is_positive, roundoff


def ode_scale(u0: float, s: float, L: int, t: np.ndarray) -> np.ndarray:
    """Proposition 2.2 (corrected): solution of ``u' = s u^{L-1}``: ``(u0^{2-L} - (L-2) s t)^{-1/(L-2)}`` (``L >= 3``),
    ``u0 e^{s t}`` (``L = 2``). ``nan`` at and after the blow-up time for ``L >= 3``."""
    t = np.asarray(t, dtype=float)
    if L == 2:
        return u0 * np.exp(s * t)
    base = u0 ** (2 - L) - (L - 2) * s * t
    out = np.full_like(t, np.nan)
    ok = base > roundoff(u0 ** (2 - L))          # before the blow-up, beyond the rounding of u0^{2-L}
    out[ok] = base[ok] ** (-1.0 / (L - 2))
    return out


def paper_scale(u0: float, s: float, L: int, t: np.ndarray) -> np.ndarray:
    """The paper's uncorrected law (Prop. 2.2 as printed, with Definition 2.1's speed ``s``):
    ``|theta(t)| = (|theta_0|^{2-L} + (2-L) L s t)^{1/(2-L)}`` (``|theta_0| e^{2st}`` at ``L = 2``), returned as the
    per-layer scale ``|theta| / sqrt(L)``. A wrong closed form: the control of the chapter's explosion checks."""
    n0 = u0 * math.sqrt(L)
    if L == 2:
        return u0 * np.exp(2 * s * t)
    base = n0 ** (2 - L) + (2 - L) * L * s * t
    out = np.full_like(t, np.inf, dtype=float)
    ok = base > roundoff(n0 ** (2 - L))
    out[ok] = base[ok] ** (1 / (2 - L)) / math.sqrt(L)
    return out


def escape_time(u0: float, u1: float, s: float, L: int, scale: float = 1.0) -> float:
    """Corrected escape time (Proposition 2.2 with '-' instead of the paper's '+', per-layer units):
    ``(u0^{2-L} - u1^{2-L}) / ((L-2) s)`` for ``L >= 3`` and ``log(u1/u0) / s`` for ``L = 2``.
    A zero speed gives ``inf`` (no escape). "Zero" is rounding level relative to ``scale``, the size speeds have
    on this problem (bound (v): ``|X|_F |G|_F``; 1 for the chapter's normalized teacher data)."""
    if not is_positive(s, scale):
        return math.inf
    if L == 2:
        return math.log(u1 / u0) / s
    return (u0 ** (2 - L) - u1 ** (2 - L)) / ((L - 2) * s)


def blowup_time(u0: float, s: float, L: int, scale: float = 1.0) -> float:
    """Proposition 2.2: finite blow-up time ``T* = u0^{2-L} / ((L-2) s)`` of ``u' = s u^{L-1}`` (``L >= 3``;
    ``inf`` for ``L = 2`` or a speed at rounding level relative to ``scale``, see :func:`escape_time`)."""
    return math.inf if L == 2 or not is_positive(s, scale) else u0 ** (2 - L) / ((L - 2) * s)


def flow(Ws0: Weights, X: torch.Tensor, Y: torch.Tensor, times: np.ndarray, localized: bool,
         rtol: float = 1e-10, atol: float = 1e-14) -> list[Weights]:
    """Gradient flow on the MSE loss (or on ``L0`` with ``G = -Y``) with DOP853, batched.

    Returns the weights at each time. Used from aligned initializations ``u0 rho`` (Proposition 2.2:
    on ``L0`` the flow stays on the ray).
    """
    unpack = unpacker(Ws0)

    def field(y: torch.Tensor) -> torch.Tensor:
        Ws = [W.detach().requires_grad_(True) for W in unpack(y)]
        with torch.enable_grad():
            loss = (-speed(Ws, X, -Y) if localized else mse_loss(Ws, X, Y)).sum()
            g = torch.autograd.grad(loss, Ws)
        return -pack(g)

    ys = integrate_flow(field, pack(Ws0), times, rtol=rtol, atol=atol)
    return [unpack(y) for y in ys]


def layer_scale(Ws: Weights) -> torch.Tensor:
    """Per-layer scale ``u = |theta| / sqrt(L)`` of each network (the ``u`` of Proposition 2.2)."""
    return torch.sqrt(sq_norm(Ws) / len(Ws))


@dataclass
class FlowCurve:
    """The per-layer scale along one escape direction: gradient flow on ``L0``, on the MSE loss, and the ODE."""
    L: int
    times: np.ndarray
    u_localized: np.ndarray
    u_full: np.ndarray
    u_ode: np.ndarray
    u0: float = math.nan         # initial per-layer scale
    s: float = math.nan          # speed of the direction


def law_error(curves: list[FlowCurve], law, localized: bool = True) -> float:
    """Largest relative distance ``max_t |u(t) / law(u0, s, L, t) - 1|`` over the curves between the measured
    per-layer scale (gradient flow on ``L0`` when ``localized``, else on the full loss) and a closed-form law:
    :func:`ode_scale` (Proposition 2.2, corrected) or :func:`paper_scale` (the paper's uncorrected law: the control)."""
    err = 0.0
    for c in curves:
        u = c.u_localized if localized else c.u_full
        err = max(err, float(np.max(np.abs(u / law(c.u0, c.s, c.L, c.times) - 1))))
    return err


@dataclass
class AlignedFlow:
    """Proposition 2.2 tested along exact escape directions of the teacher data, one per depth."""
    curves: list[FlowCurve]
    ode_err: float               # max relative distance of the flow on L0 from the ODE
    full_err: float              # the same for the full MSE loss
    kkt: float                   # largest KKT residual of the directions (true critical points: rounding)
    speed: float                 # speed s of the direction (the last depth; the same at every depth)
    paper_err: float = math.nan  # max relative distance of the flow on L0 from the paper's uncorrected law (control)
    paper_full_err: float = math.nan  # the same for the full MSE loss (control)


def aligned_flow(X: torch.Tensor, Y: torch.Tensor, depths: tuple[int, ...], width: int, u0: float, u1: float,
                 n_times: int, generator: torch.Generator) -> AlignedFlow:
    """Proposition 2.2: from ``u0 rho`` (``rho`` the polished single-neuron escape direction for ``G = -Y``,
    :func:`~stagewise.escape_speed.closed_forms.single_neuron_escape`), integrate gradient flow on ``L0`` and on
    the MSE loss up to the ODE's escape time to scale ``u1`` and compare ``u(t)`` with ``u' = s u^{L-1}``. A restart
    batch that misses the interior (kink-free) optimum is drawn again, up to 8 times; the KKT residual reports the result."""
    G = -Y
    curves, ode_err, full_err, kkt, s_rho, paper_err, paper_full = [], 0.0, 0.0, 0.0, math.nan, 0.0, 0.0
    for L in depths:
        for _ in range(8):                     # a restart batch may miss the interior optimum: draw again
            rho, exact = single_neuron_escape(X, G, L, width, generator)
            if exact:
                break
        s_rho = float(speed(rho, X, G)[0])
        kkt = max(kkt, float(kkt_residual(rho, X, G)[0]))
        times = np.linspace(0, escape_time(u0, u1, s_rho, L, float(X.norm() * G.norm())), n_times)
        u_ode = ode_scale(u0, s_rho, L, times)
        u = {localized: np.array([float(layer_scale(W)[0]) for W in flow([u0 * w for w in rho], X, Y, times, localized)])
             for localized in (True, False)}
        ode_err = max(ode_err, float(np.max(np.abs(u[True] / u_ode - 1))))
        full_err = max(full_err, float(np.max(np.abs(u[False] / u_ode - 1))))
        u_paper = paper_scale(u0, s_rho, L, times)
        paper_err = max(paper_err, float(np.max(np.abs(u[True] / u_paper - 1))))
        paper_full = max(paper_full, float(np.max(np.abs(u[False] / u_paper - 1))))
        curves.append(FlowCurve(L, times, u[True], u[False], u_ode, u0, s_rho))
    return AlignedFlow(curves, ode_err, full_err, kkt, s_rho, paper_err, paper_full)

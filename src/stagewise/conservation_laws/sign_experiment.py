"""The sign experiment of Corollary ``prf:thm-conservation-laws-relu`` (Town et al., Proposition 1): a ReLU neuron
with ``|a_j(0)| >= ||w_j(0)||`` never changes the sign of its output weight under gradient flow. Read on the
Gaussian run, from the balanced initialization ``a_j(0) = s_j ||w_j(0)||`` (``balanced_output``) and on one
neuron brought to the edge of a sign change (``boundary_neuron``, run for ``boundary_time``, within
``boundary_bound`` of zero); the control ``boundary_margin`` at ``BOUNDARY_CONTROL`` of the balanced weight."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.conservation_laws.flow_experiment import FLOW_SLACK, FlowResult
from stagewise.conservation_laws.gradient_flow import gradient_flow_study
from stagewise.conservation_laws.models import Params
from stagewise.conservation_laws.problem import Data
from stagewise.conservation_laws.problem_set import Problems
from stagewise.numerics.roundoff import roundoff


@dataclass(frozen=True)
class SignResult:
    """Sign of the ReLU output weights under gradient flow (Corollary ``prf:thm-conservation-laws-relu``).

    ``qualifying`` counts the neurons with ``|a_j(0)| >= ||w_j(0)||``, ``w_j(0) != 0`` in the Gaussian run,
    ``flips`` how many of them ever change the sign of ``a_j`` and ``margin`` the smallest ``a_j(t) sign a_j(0)``
    among them (implied by the conservation law: ``a_j^2 >= I_j(0) > 0``). The claim proper is tested from the
    balanced initialization ``a_j(0) = s_j ||w_j(0)||`` (``I_j = 0``, the boundary of the hypothesis), on the
    Gaussian neurons and on one neuron brought to the edge of a sign change (:func:`boundary_margin`):
    ``balanced_margin`` is the smallest ``a_j(t) sign a_j(0) / ||w_j(0)||`` over all of them,
    ``gaussian_balanced`` that of the Gaussian neurons, ``boundary`` that of the boundary neuron and
    ``boundary_bound`` the most the latter can be at the end of its run (:func:`boundary_bound`);
    ``solver_error``: what the solver's error can do to ``a_j / ||w_j(0)||``, ``FLOW_SLACK`` times its relative
    tolerance ``rtol`` plus its absolute one ``rtol / 100`` over the smallest ``||w_j(0)||`` (the balanced row's
    margin on both sides)."""

    qualifying: int
    flips: int
    margin: float
    gaussian_balanced: float
    balanced_margin: float
    boundary: float
    boundary_bound: float
    solver_error: float


def _sign_flips(states: list[Params], mask: torch.Tensor) -> tuple[int, float]:
    """Neurons (``mask``, shape (S, m)) whose ``a_j(t)`` ever has the opposite sign of ``a_j(0)``
    beyond rounding (``a_j(t) sign a_j(0) < -roundoff(max |a|)``: a zero-level wobble is not a crossing)."""
    a = torch.stack([p[1] for p in states])            # (T, S, m)
    signed = a * torch.sign(a[0])
    flipped = ((signed < -roundoff(float(a.abs().max()))).any(0) & mask).sum()
    margin = signed.amin(0)[mask].min() if mask.any() else torch.tensor(float("nan"))
    return int(flipped), float(margin)


def _relative_margin(states: list[Params], mask: torch.Tensor) -> float:
    """``min_t a_j(t) sign a_j(0) / ||w_j(0)||`` over the neurons of ``mask`` (NaN when there are none)."""
    a = torch.stack([p[1] for p in states])            # (T, S, m)
    signed = (a * torch.sign(a[0])).amin(0) / states[0][0].norm(dim=-1).clamp(min=torch.finfo(a.dtype).tiny)
    return float(signed[mask].min()) if mask.any() else float("nan")


def qualifying_neurons(W0: torch.Tensor, a0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The neurons with ``|a_j(0)| >= ||w_j(0)||`` and ``w_j(0) != 0`` (the hypothesis of Corollary
    ``prf:thm-conservation-laws-relu``), and those with ``w_j(0) != 0``; both decided up to the rounding
    of the norms, so that a balanced neuron (``|a| = ||w||`` up to one rounding) qualifies on every
    machine and a rounding-level ``w`` counts as zero."""
    norms = W0.norm(dim=-1)
    level = roundoff(float(norms.max()), W0.shape[-1])
    nonzero = norms > level
    return (a0.abs() >= norms - level) & nonzero, nonzero


def balanced_output(W: torch.Tensor, signs: torch.Tensor) -> torch.Tensor:
    """The balanced output weights ``a_j = s_j ||w_j||`` of incoming weights ``W`` (S, m, d), signs ``s_j``."""
    return signs * W.norm(dim=-1)


#: The boundary neuron's incoming weight is tilted off its input by this fraction of its norm, away from the
#: other inputs, so that it is inactive on them by a margin (not by a pre-activation of 1e-16 either way).
BOUNDARY_TILT = 1e-3
#: The control's output weight, as a fraction of the balanced one: just outside the hypothesis.
BOUNDARY_CONTROL = 0.99


def _boundary_input(data: Data) -> int:
    """The input the boundary neuron is active on: the one with the largest target (the fastest)."""
    return int(data.Y[:, 0].abs().argmax())


def boundary_neuron(data: Data, norm: float, tilt: float = BOUNDARY_TILT) -> tuple[torch.Tensor, float]:
    """A ReLU neuron ``w`` (shape ``(1, 1, d)``) of norm ``norm`` active on one input ``x_i`` only
    (:func:`_boundary_input`): along ``x_i``, tilted by ``tilt`` (a fraction of its norm) towards minus the sum of
    the other inputs (orthogonal to ``x_i``), so that ``<w, x_k> < 0`` by a margin for every ``k != i`` and, the
    inputs being orthogonal, stays so. Returns ``w`` and the tilt used (0 when ``d = 1`` leaves no direction)."""
    X = data.X
    i, (n, d) = _boundary_input(data), X.shape
    x = X[i] / X[i].norm()
    if n > 1:
        other = -sum(X[k] / X[k].norm() for k in range(n) if k != i)
    elif d > 1:                                        # one input: any direction orthogonal to it
        basis = torch.zeros_like(x)
        basis[int(x.abs().argmin())] = 1.0
        other = basis - (basis @ x) * x
    else:
        other, tilt = torch.zeros_like(x), 0.0
    other = other / other.norm() if tilt > 0 else other
    w = norm * (np.sqrt(1.0 - tilt**2) * x + tilt * other)
    return w[None, None, :], tilt


def boundary_time(data: Data, ratio: float = BOUNDARY_CONTROL) -> float:
    """The run of the boundary pair: twice the time the control (``|a(0)| = ratio ||w||``, against its target)
    takes to cross zero when the residual is only ``-y_i``. On input ``x_i`` alone the neuron's part along
    ``x_i``, ``p``, and ``a`` obey ``da/dt = -(|x_i| / n) r p``, ``dp/dt = -(|x_i| / n) r a`` with ``r = a p |x_i|
    - y_i`` (the ``1/n`` of the loss ``(1/2n)||f(X) - Y||^2``): they move on the hyperbola ``p^2 - a^2 = kappa^2``,
    ``kappa^2 = (1 - ratio^2) ||w||^2`` (less the tilt's square), at a hyperbolic angle speed ``|x_i| |r| / n >=
    |x_i| |y_i| / n``. ``a`` reaches 0 after at most ``asinh(ratio / sqrt(1 - ratio^2)) n / (|x_i| |y_i|)``."""
    i, n = _boundary_input(data), data.X.shape[0]
    angle = float(np.arcsinh(ratio / np.sqrt(1.0 - ratio**2)))
    return 2.0 * angle * n / float(data.X[i].norm() * data.Y[i, 0].abs())


def boundary_bound(tilt: float = BOUNDARY_TILT) -> float:
    """The largest ``|a(T)| / ||w(0)||`` the balanced boundary neuron can have at the end of its run ``T``
    (:func:`boundary_time`). With the tilt ``q = tilt ||w||`` (off ``x_i``, frozen) and ``a(0) = -||w||``,
    ``(a, p)`` moves on the hyperbola ``a^2 - p^2 = q^2``: ``|a| = q cosh(phi)``, with ``phi`` falling from
    ``acosh(1 / tilt)`` at the rate ``|x_i| |r| / n >= |x_i| |y_i| / n`` until ``p = 0`` (then the neuron is off and
    ``|a| = q``). So ``|a(T)| / ||w|| <= tilt cosh(max(acosh(1 / tilt) - |x_i| |y_i| T / n, 0))``, and
    ``exp(-|x_i| |y_i| T / n)`` without a tilt, where ``|x_i| |y_i| T / n = 2 asinh(0.99 / sqrt(1 - 0.99^2))`` by
    the choice of ``T``: a number of the design, the same for every data set (computed here from it, not from
    the run's ``T``, so that a wrong run length shows). The balanced neuron comes this close to a sign change and does not
    make it; the control, 1 % smaller, does."""
    angle = 2.0 * float(np.arcsinh(BOUNDARY_CONTROL / np.sqrt(1.0 - BOUNDARY_CONTROL**2)))   # |x_i| |y_i| T / n
    if tilt > 0:
        return tilt * float(np.cosh(max(float(np.arccosh(1.0 / tilt)) - angle, 0.0)))
    return float(np.exp(-angle))


def boundary_margin(problems: Problems, rtol: float, ratio: float = 1.0) -> float:
    """``min_t a(t) sign a(0) / ||w(0)||`` of the boundary neuron (:func:`boundary_neuron`, the norm of the
    first Gaussian neuron) with ``a(0) = -ratio`` times its balanced value, against its target ``y_i``: it
    decays towards zero. ``ratio = 1`` (balanced, inside the hypothesis) comes to within
    :func:`boundary_bound` of zero and keeps its sign; the control ``ratio = 0.99`` crosses. Both run for
    :func:`boundary_time`."""
    family, data = problems.families["relu"], problems.data["relu"]
    W0, _ = problems.params0["relu"]
    w, _tilt = boundary_neuron(data, float(W0[0, 0].norm()))
    i = _boundary_input(data)
    a = -ratio * balanced_output(w, torch.sign(data.Y[i, 0]) * torch.ones(1, 1, dtype=w.dtype, device=w.device))
    flow = gradient_flow_study(family, data, [w, a], boundary_time(data), rtol)
    return _relative_margin(flow.states, torch.ones_like(a, dtype=torch.bool))


def sign_experiment(problems: Problems, flow: FlowResult, horizon: float, rtol: float) -> SignResult:
    """Corollary ``prf:thm-conservation-laws-relu`` (Town et al., Proposition 1): a neuron with
    ``|a_j(0)| >= ||w_j(0)||`` and ``w_j(0) != 0`` never changes the sign of ``a_j``. Reads the Gaussian run
    from ``flow``, integrates the balanced initialization over ``horizon`` and the balanced boundary neuron
    (:func:`boundary_margin`), with relative tolerance ``rtol`` (a sign needs only a solver error far below the
    margins)."""
    family, data = problems.families["relu"], problems.data["relu"]
    W0, a0 = problems.params0["relu"]
    mask, nonzero = qualifying_neurons(W0, a0)
    flips, margin = _sign_flips(flow.trajectories["relu"].states, mask)
    balanced = gradient_flow_study(family, data, [W0, balanced_output(W0, torch.sign(a0))], horizon, rtol)
    boundary = boundary_margin(problems, rtol)
    _w, tilt = boundary_neuron(data, 1.0)
    gaussian = _relative_margin(balanced.states, nonzero)
    overall = float(np.nanmin([gaussian, boundary]))
    smallest = float(W0.norm(dim=-1)[nonzero].min()) if nonzero.any() else float(W0[0, 0].norm())
    error = FLOW_SLACK * rtol * (1.0 + 1e-2 / max(smallest, torch.finfo(W0.dtype).tiny))   # atol = rtol / 100
    return SignResult(int(mask.sum()), flips, margin, gaussian, overall, boundary, boundary_bound(tilt), error)

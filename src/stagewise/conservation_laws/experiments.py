"""The chapter's experiments, each returning a typed result the notebook records and checks.

``build_problems`` sets up the five networks on their data; ``flow_experiment`` (Theorem
``prf:thm-conservation-laws-balancedness``), ``descent_experiment`` and ``one_step_experiment``
(Proposition ``prf:thm-conservation-laws-one-step``) and ``layer_growth`` (Corollary
``prf:thm-conservation-laws-deep``) measure what the statements predict.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from stagewise.conservation_laws.gradient_descent import gd_drift_study
from stagewise.conservation_laws.gradient_flow import gradient_flow_study
from stagewise.conservation_laws.models import FAMILIES, Family, Params
from stagewise.conservation_laws.one_step_law import diagonal_product_law, one_step_change
from stagewise.conservation_laws.problem import Data, init_params, make_orthogonal_data
from stagewise.conservation_laws.trajectory import Trajectory, max_drift
from stagewise.numerics.fits import loglog_slope


@dataclass(frozen=True)
class Problems:
    """The five networks of :data:`~stagewise.conservation_laws.models.FAMILIES`, each with its
    data and ``n_seeds`` initializations (batched), on the run's device."""

    families: dict[str, Family]
    data: dict[str, Data]
    params0: dict[str, Params]

    @property
    def homogeneous(self) -> list[str]:
        """Names of the families the theorem covers (all but ``tanh``)."""
        return [name for name, family in self.families.items() if family.homogeneous]


def build_problems(n_seeds: int, n_samples: int, input_dim: int, width: int, depth: int, init_scale: float,
                   data_generator: torch.Generator, init_generator: torch.Generator,
                   device: torch.device | str = "cpu") -> Problems:
    """Orthogonal data (two outputs for the linear network, so that its invariant is a full
    matrix) and Gaussian initial weights for every family; drawn on the CPU, then moved."""
    data, params0 = {}, {}
    for name, family in FAMILIES.items():
        k = 2 if name == "linear" else 1
        d = make_orthogonal_data(n_samples, input_dim, k, data_generator)
        data[name] = Data(d.X.to(device), d.Y.to(device))
        params = init_params(family, n_seeds, input_dim, k, width, depth, init_scale, init_generator)
        params0[name] = [p.to(device) for p in params]
    return Problems(dict(FAMILIES), data, params0)


@dataclass(frozen=True)
class FlowResult:
    """Gradient flow per family: trajectories, largest drift of any invariant over seeds and time,
    the size ``max |I(0)|`` of the invariants at initialization, and the drift of the *sum*
    ``sum_l ||W_l||_F^2`` (the wrong hypothesis that the total norm, not the difference, is conserved)."""

    trajectories: dict[str, Trajectory]
    drift: dict[str, float]
    scale: dict[str, float]
    sum_drift: dict[str, float]


def flow_experiment(problems: Problems, names: list[str], horizon: float, rtol: float) -> FlowResult:
    """Theorem ``prf:thm-conservation-laws-balancedness``: the drift of the invariants under
    gradient flow (adaptive DOP853, relative tolerance ``rtol``) over ``[0, horizon]``."""
    trajectories, drift, scale, sum_drift = {}, {}, {}, {}
    for name in names:
        family, data, params0 = problems.families[name], problems.data[name], problems.params0[name]
        trajectories[name] = gradient_flow_study(family, data, params0, horizon, rtol)
        drift[name] = float(max_drift(trajectories[name].invariants[:, 0]).max())
        scale[name] = float(family.invariant(params0).abs().max())
        total = trajectories[name].layer_norms[:, 0].sum(-1, keepdim=True)
        sum_drift[name] = float(max_drift(total).max())
    return FlowResult(trajectories, drift, scale, sum_drift)


@dataclass(frozen=True)
class DescentResult:
    """Gradient descent per family: trajectories, drift over the horizon ``(E, S)`` (step size,
    seed), and per seed the log-log slope of the drift against the step size."""

    etas: list[float]
    trajectories: dict[str, Trajectory]
    drift: dict[str, np.ndarray]
    slopes: dict[str, list[float]]


def descent_experiment(problems: Problems, etas: list[float], horizon: float,
                       progress: Callable | None = None) -> DescentResult:
    """Proposition ``prf:thm-conservation-laws-one-step``: over a fixed horizon the drift is
    ``eta C_1 + O(eta^2)``, slope 1 on log-log axes (``progress(iterable, name)`` shows a bar)."""
    trajectories, drift, slopes = {}, {}, {}
    for name, family in problems.families.items():
        bar = None if progress is None else (lambda it, name=name: progress(it, name))
        trajectories[name] = gd_drift_study(family, problems.data[name], problems.params0[name], etas, horizon,
                                            progress=bar)
        seeds = problems.params0[name][0].shape[0]
        drift[name] = max_drift(trajectories[name].invariants.flatten(1, 2)).reshape(len(etas), seeds).cpu().numpy()
        slopes[name] = [loglog_slope(etas, drift[name][:, s]) for s in range(seeds)]
    return DescentResult(list(etas), trajectories, drift, slopes)


@dataclass(frozen=True)
class OneStepResult:
    """One GD step of size ``eta``: per family the largest ``|actual - eta^2 Q(g)|``, the size
    ``max |eta^2 Q(g)|``, and the largest ``|actual - 0|`` (the wrong hypothesis that a GD step
    conserves ``Q`` as the flow does); the relative error of the diagonal product law."""

    eta: float
    error: dict[str, float]
    size: dict[str, float]
    product_law_error: float
    change: dict[str, float]


def one_step_experiment(problems: Problems, eta: float, product_steps: int = 200) -> OneStepResult:
    """Proposition ``prf:thm-conservation-laws-one-step`` from the initialization, and its
    diagonal product form (Corollary ``prf:thm-conservation-laws-diagonal``) over ``product_steps``."""
    error, size, change = {}, {}, {}
    for name, family in problems.families.items():
        actual, predicted = one_step_change(family, problems.params0[name], problems.data[name], eta)
        error[name], size[name] = float((actual - predicted).abs().max()), float(predicted.abs().max())
        change[name] = float(actual.abs().max())
    u0, v0 = problems.params0["diagonal"]
    measured, predicted = diagonal_product_law(u0, v0, problems.data["diagonal"], eta, product_steps)
    product_error = float(((measured - predicted).abs() / predicted.abs().clamp(min=1e-300)).max())
    return OneStepResult(eta, error, size, product_error, change)


@dataclass(frozen=True)
class LayerGrowth:
    """Growth ``||W_l(t)||_F^2 - ||W_l(0)||_F^2`` of each layer, shape ``(T, L)``; its spread
    across layers and its largest value."""

    times: np.ndarray
    growth: np.ndarray
    spread: float
    largest: float


def layer_growth(trajectory: Trajectory, eta_index: int = -1, seed: int = 0) -> LayerGrowth:
    """Corollary ``prf:thm-conservation-laws-deep``: all layers of a deep ReLU network gain the
    same squared norm (by default at the smallest step size, for the first seed)."""
    norms = trajectory.layer_norms[:, eta_index, seed].cpu().numpy()
    growth = norms - norms[0]
    spread = float(np.abs(growth - growth.mean(1, keepdims=True)).max())
    return LayerGrowth(trajectory.times, growth, spread, float(np.abs(growth).max()))


@dataclass(frozen=True)
class SignResult:
    """Sign of the ReLU output weights under gradient flow (Corollary ``prf:thm-conservation-laws-relu``).

    ``qualifying`` counts the neurons with ``|a_j(0)| >= ||w_j(0)||``, ``w_j(0) != 0`` in the
    Gaussian run, ``flips`` how many of them ever change the sign of ``a_j``; ``balanced_flips``
    counts sign changes from the balanced initialization ``a_j(0) = s_j ||w_j(0)||`` (all
    neurons qualify); ``control_flips`` those of one neuron with ``|a(0)| = 0.2 ||w(0)||`` whose
    sign is set against its target, outside the hypothesis. ``margin`` is the smallest
    ``a_j(t) sign a_j(0)`` over qualifying neurons and records (both runs)."""

    qualifying: int
    flips: int
    balanced_flips: int
    control_flips: int
    margin: float


def _sign_flips(states: list[Params], mask: torch.Tensor) -> tuple[int, float]:
    """Neurons (``mask``, shape (S, m)) whose ``a_j(t)`` ever has the opposite sign of ``a_j(0)``."""
    a = torch.stack([p[1] for p in states])            # (T, S, m)
    signed = a * torch.sign(a[0])
    flipped = ((signed < 0).any(0) & mask).sum()
    margin = signed.amin(0)[mask].min() if mask.any() else torch.tensor(float("nan"))
    return int(flipped), float(margin)


def sign_experiment(problems: Problems, flow: FlowResult, horizon: float, rtol: float) -> SignResult:
    """Corollary ``prf:thm-conservation-laws-relu`` (Town et al., Proposition 1): a neuron with
    ``|a_j(0)| >= ||w_j(0)||`` and ``w_j(0) != 0`` never changes the sign of ``a_j``. Reads the
    Gaussian run from ``flow`` and integrates the balanced initialization and the control neuron
    with relative tolerance ``rtol`` (a sign needs only a solver error far below ``margin``)."""
    family, data = problems.families["relu"], problems.data["relu"]
    W0, a0 = problems.params0["relu"]
    norms = W0.norm(dim=-1)
    mask = (a0.abs() >= norms) & (norms > 0)
    flips, margin = _sign_flips(flow.trajectories["relu"].states, mask)
    balanced = gradient_flow_study(family, data, [W0, torch.sign(a0) * norms], horizon, rtol)
    balanced_flips, balanced_margin = _sign_flips(balanced.states, norms > 0)
    i = int(data.Y[:, 0].abs().argmax())          # the control neuron: active on x_i only, a(0) against y_i
    w = (norms[0, 0] * data.X[i] / data.X[i].norm())[None, None, :]
    a = -0.2 * w.norm(dim=-1) * torch.sign(data.Y[i, 0])
    control = gradient_flow_study(family, data, [w, a], horizon, rtol)
    control_flips, _ = _sign_flips(control.states, torch.ones_like(a, dtype=torch.bool))
    return SignResult(int(mask.sum()), flips, balanced_flips, control_flips,
                      float(np.nanmin([margin, balanced_margin])))


@dataclass(frozen=True)
class OrthogonalInit:
    """Two-layer linear network from ``I_gamma`` (Corollary ``prf:thm-conservation-laws-linear``):
    ``W_1(0) = sqrt(2 gamma) P`` with orthonormal columns (or rows), ``W_2(0) = 0``. ``error`` is
    ``max_t |W_1^T W_1 - W_2 W_2^T - 2 gamma P^T P|``, ``control_error`` the same against
    ``gamma P^T P`` (the constant without its 2), ``scale`` is ``2 gamma``."""

    gamma: float
    error: float
    control_error: float
    scale: float


def orthogonal_init_experiment(problems: Problems, gamma: float, horizon: float, rtol: float,
                               generator: torch.Generator) -> OrthogonalInit:
    """Corollary ``prf:thm-conservation-laws-linear`` (Varre et al., Lemma 3.2) from ``I_gamma``:
    gradient flow keeps ``W_1^T W_1 - W_2 W_2^T = 2 gamma P^T P`` (``2 gamma I`` in the reduced
    coordinates ``Z``). One random ``P`` per seed, drawn from ``generator``."""
    family, data = problems.families["linear"], problems.data["linear"]
    W1, W2 = problems.params0["linear"]
    seeds, d, m = W1.shape
    G = torch.randn(seeds, max(d, m), min(d, m), generator=generator, dtype=W1.dtype)
    Q = torch.linalg.qr(G).Q                                            # orthonormal columns
    P = (Q if d >= m else Q.transpose(-1, -2)).to(W1.device)            # (S, d, m)
    start = [np.sqrt(2 * gamma) * P, torch.zeros_like(W2)]
    flow = gradient_flow_study(family, data, start, horizon, rtol)
    target = (P.transpose(-1, -2) @ P).flatten(1)
    error = float((flow.invariants[:, 0] - 2 * gamma * target).abs().max())
    control_error = float((flow.invariants[:, 0] - gamma * target).abs().max())
    return OrthogonalInit(gamma, error, control_error, 2 * gamma)

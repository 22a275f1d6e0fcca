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
    and the size ``max |I(0)|`` of the invariants at initialization."""

    trajectories: dict[str, Trajectory]
    drift: dict[str, float]
    scale: dict[str, float]


def flow_experiment(problems: Problems, names: list[str], horizon: float, rtol: float) -> FlowResult:
    """Theorem ``prf:thm-conservation-laws-balancedness``: the drift of the invariants under
    gradient flow (adaptive DOP853, relative tolerance ``rtol``) over ``[0, horizon]``."""
    trajectories, drift, scale = {}, {}, {}
    for name in names:
        family, data, params0 = problems.families[name], problems.data[name], problems.params0[name]
        trajectories[name] = gradient_flow_study(family, data, params0, horizon, rtol)
        drift[name] = float(max_drift(trajectories[name].invariants[:, 0]).max())
        scale[name] = float(family.invariant(params0).abs().max())
    return FlowResult(trajectories, drift, scale)


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
    """One GD step of size ``eta``: per family the largest ``|actual - eta^2 Q(g)|`` and the size
    ``max |eta^2 Q(g)|``; the relative error of the diagonal product law."""

    eta: float
    error: dict[str, float]
    size: dict[str, float]
    product_law_error: float


def one_step_experiment(problems: Problems, eta: float, product_steps: int = 200) -> OneStepResult:
    """Proposition ``prf:thm-conservation-laws-one-step`` from the initialization, and its
    diagonal product form (Corollary ``prf:thm-conservation-laws-diagonal``) over ``product_steps``."""
    error, size = {}, {}
    for name, family in problems.families.items():
        actual, predicted = one_step_change(family, problems.params0[name], problems.data[name], eta)
        error[name], size[name] = float((actual - predicted).abs().max()), float(predicted.abs().max())
    u0, v0 = problems.params0["diagonal"]
    measured, predicted = diagonal_product_law(u0, v0, problems.data["diagonal"], eta, product_steps)
    product_error = float(((measured - predicted).abs() / predicted.abs().clamp(min=1e-300)).max())
    return OneStepResult(eta, error, size, product_error)


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

"""The gradient-descent drift experiment (Proposition ``prf:thm-conservation-laws-one-step``, section "The drift
is linear in the step size"): over a fixed horizon the drift of the invariants is ``eta C_1 (1 + O(eta
lambda_max))``, fitted per family over the step sizes with ``eta lambda_max <= FIT_BOUND`` (``family_descent``,
``descent_experiment``), with the intercept of its line in ``eta``; and the rows' controls, the same fits on a
wrong quantity (``norm_sum_slope``: the total squared norm) or over every step size (``intercept_ratio_of``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from stagewise.conservation_laws.curvature import hessian_norm, quadratic_model_factor
from stagewise.conservation_laws.gradient_descent import gd_drift_study
from stagewise.conservation_laws.models import Family, Params, terms_per_entry
from stagewise.conservation_laws.problem import Data
from stagewise.conservation_laws.problem_set import Problems
from stagewise.conservation_laws.trajectory import Trajectory, max_drift
from stagewise.numerics.fits import loglog_slope
from stagewise.numerics.flows import DivergenceError
from stagewise.numerics.roundoff import roundoff


#: Step sizes enter the slope fit only while ``eta lambda_max <= FIT_BOUND`` (section "The drift is linear
#: in the step size": there the quadratic model's factor ``1 / (1 - eta lambda / 2)`` is at most 4/3 and
#: its first-order term ``eta lambda / 2`` carries it to within ``(eta lambda / 2)^2 <= 1/16``).
FIT_BOUND = 0.5
#: Step sizes are run at all only while ``eta lambda_max(0) <= RUN_BOUND``, half of gradient descent's
#: stability limit ``eta lambda < 2``, leaving room for the curvature to grow along the run.
RUN_BOUND = 1.0
#: A slope through fewer points does not test a power law (two points always lie on one).
MIN_STEP_SIZES = 3


@dataclass(frozen=True)
class FamilyDescent:
    """Gradient descent of one family. ``etas``: the step sizes run (decreasing); ``trajectory``; ``drift``
    ``(E, S)``; ``curvature`` ``(E, S)``: ``lambda_max``, the larger of ``||Hess L||_2`` at the start and
    at the end of each run; ``qualifies`` ``(E, S)``: ``eta lambda_max <= FIT_BOUND``; per seed the
    log-log ``slope`` over its qualifying step sizes (NaN with fewer than ``MIN_STEP_SIZES``), the
    quadratic model's slope excess ``model_excess`` there, and the window ``[low, high]`` of the check;
    ``intercept_ratio``: the drift extrapolated to ``eta = 0`` (least-squares line in ``eta``, seed
    mean, over the step sizes that qualify for every seed) over the drift at the smallest of them;
    ``skipped``: requested step sizes not run, with ``eta lambda_max(0)`` or the divergence;
    ``resolved`` ``(E, S)``: the drift is above the rounding error of ``N = T / eta`` steps on invariants of
    the initial magnitude ``M`` (``roundoff(M, terms x sqrt(N))``) (a network with zero gradient, all its ReLUs dead, has no drift at all:
    ``C_1 = 0``, and no slope); only resolved rows enter the fits."""

    etas: list[float]
    trajectory: Trajectory | None
    drift: np.ndarray
    resolved: np.ndarray
    curvature0: np.ndarray
    curvature: np.ndarray
    qualifies: np.ndarray
    slopes: list[float]
    model_excess: list[float]
    windows: list[tuple[float, float]]
    intercept_ratio: float
    skipped: dict[float, str]

    @property
    def mean_slope(self) -> float:
        """The mean of the seeds' slopes (NaN when no seed has one)."""
        finite = [s for s in self.slopes if np.isfinite(s)]
        return float(np.mean(finite)) if finite else float("nan")

    def fitted(self, seed: int) -> list[float]:
        """The step sizes of the slope fit of ``seed``."""
        return [eta for eta, q, r in zip(self.etas, self.qualifies[:, seed], self.resolved[:, seed]) if q and r]

    def slope_over(self, etas: list[float], seed: int) -> float:
        """The log-log slope of ``seed``'s drift over those of ``etas`` this family ran (over all it ran
        when fewer than two of them): the control of another family's slope row."""
        rows = [i for i, eta in enumerate(self.etas) if eta in etas]
        rows = rows if len(rows) >= 2 else list(range(len(self.etas)))
        return loglog_slope([self.etas[i] for i in rows], self.drift[rows, seed]) if len(rows) >= 2 else float("nan")

    def intercept_over_all(self) -> float:
        """:attr:`intercept_ratio` over every step size run (the control's fallback)."""
        return _intercept_ratio(np.asarray(self.etas), self.drift.mean(1)) if len(self.etas) else float("nan")

    def products(self) -> dict[float, float]:
        """``eta lambda_max`` (largest over seeds) per step size: along the run for those run,
        ``eta lambda_max(0)`` for those not run."""
        out = {eta: float(eta * self.curvature[i].max()) for i, eta in enumerate(self.etas)}
        out.update({eta: float(eta * self.curvature0.max()) for eta in self.skipped})
        return dict(sorted(out.items(), reverse=True))

    def describe(self) -> str:
        """The measured side of the hypothesis "eta lambda_max small", in one line."""
        products = self.products()
        text = ("eta lambda_max = " + ", ".join(f"{v:.3g}" for v in products.values()) + " at eta = "
                + ", ".join(f"{e:g}" for e in products) + " (largest over seeds)")
        diverged = [f"{e:g}" for e, why in self.skipped.items() if why == "diverged"]
        if diverged:
            text += f"; diverged at eta = {', '.join(diverged)}"
        lam = float(self.curvature.max()) if len(self.etas) else float(self.curvature0.max())
        return text + f"; eta <= {FIT_BOUND:g} / lambda_max = {FIT_BOUND / lam:.3g} qualifies"

    def largest_product(self) -> float:
        """``max eta lambda_max`` over the step sizes run and the seeds (``eta lambda_max(0)`` of the
        smallest requested step size when none ran)."""
        return float((np.asarray(self.etas)[:, None] * self.curvature).max()) if len(self.etas) else float("nan")


#: Half-width of the slope window for what the quadratic model leaves out (the curvature changing along
#: the run, ReLU kinks, several modes); the model's own excess is added above it.
SLOPE_ALLOWANCE = 0.1


@dataclass(frozen=True)
class DescentResult:
    """Gradient descent per family (:class:`FamilyDescent`), for the requested step sizes ``etas``."""

    etas: list[float]
    families: dict[str, FamilyDescent]

    @property
    def trajectories(self) -> dict[str, Trajectory]:
        return {n: f.trajectory for n, f in self.families.items() if f.trajectory is not None}

    @property
    def drift(self) -> dict[str, np.ndarray]:
        return {n: f.drift for n, f in self.families.items()}

    @property
    def slopes(self) -> dict[str, list[float]]:
        return {n: f.slopes for n, f in self.families.items()}


def _intercept_ratio(etas: np.ndarray, drift: np.ndarray) -> float:
    """``F / drift(eta_min)`` for the least-squares line ``drift = F + c eta`` (NaN below two step sizes)."""
    if len(etas) < 2:
        return float("nan")
    A = np.vstack([np.ones_like(etas), etas]).T
    F = np.linalg.lstsq(A, drift, rcond=None)[0][0]
    return float(F / drift[np.argmin(etas)])


def family_descent(family: Family, data: Data, params0: Params, etas: list[float], horizon: float,
                   generator: torch.Generator, progress: Callable | None = None) -> FamilyDescent:
    """Gradient descent of one family over the step sizes that are stable for it, with the curvature
    that decides which of them enter the slope fit (Proposition ``prf:thm-conservation-laws-one-step``)."""
    seeds = params0[0].shape[0]
    curvature0 = hessian_norm(family, params0, data, generator).cpu().numpy()
    skipped: dict[float, str] = {}
    run = []
    for eta in sorted(set(etas), reverse=True):
        if eta * curvature0.max() <= RUN_BOUND:
            run.append(eta)
        else:
            skipped[eta] = f"eta lambda_max(0) = {eta * curvature0.max():.3g} > {RUN_BOUND:g}"
    trajectory = None
    while run:
        try:
            trajectory = gd_drift_study(family, data, params0, run, horizon, progress=progress)
            break
        except DivergenceError:   # the curvature grew past 2 / eta along the run: drop the largest step size
            skipped[run[0]] = "diverged"
            run = run[1:]
    E = len(run)
    if trajectory is None:
        empty = np.zeros((0, seeds))
        return FamilyDescent([], None, empty, empty.astype(bool), curvature0, empty, empty.astype(bool), [float("nan")] * seeds,
                             [float("nan")] * seeds, [(float("nan"), float("nan"))] * seeds, float("nan"), skipped)
    curvature_end = hessian_norm(family, trajectory.final, data, generator).reshape(E, seeds).cpu().numpy()
    curvature = np.maximum(curvature0[None, :], curvature_end)
    drift = max_drift(trajectory.invariants.flatten(1, 2)).reshape(E, seeds).cpu().numpy()
    eta = np.asarray(run)
    qualifies = eta[:, None] * curvature <= FIT_BOUND
    magnitude = family.magnitude(params0).abs().amax(-1).cpu().numpy()                   # (S,)
    # each step rounds every weight at eps |w| with signs that average out: over N steps the invariants pick up
    # about eps M sqrt(N) per squared term (a random walk); a drift at that level is not a measured C_1
    steps = np.round(horizon / eta)
    floor = np.array([[roundoff(m, terms_per_entry(params0) * int(np.ceil(np.sqrt(n)))) for m in magnitude]
                      for n in steps])
    resolved = drift > floor
    slopes, excess, windows = [], [], []
    for s in range(seeds):
        q = qualifies[:, s] & resolved[:, s]
        if q.sum() < MIN_STEP_SIZES:
            slopes.append(float("nan")), excess.append(float("nan")), windows.append((float("nan"), float("nan")))
            continue
        slopes.append(loglog_slope(eta[q], drift[q, s]))
        model = loglog_slope(eta[q], quadratic_model_factor(eta[q] * curvature[q, s], 1.0))  # slope excess over 1
        excess.append(model)
        windows.append((1.0 - SLOPE_ALLOWANCE, 1.0 + SLOPE_ALLOWANCE + max(model, 0.0)))
    common = (qualifies & resolved).all(1)
    ratio = _intercept_ratio(eta[common], drift[common].mean(1))
    return FamilyDescent(list(run), trajectory, drift, resolved, curvature0, curvature, qualifies, slopes, excess,
                         windows, ratio, skipped)


def descent_experiment(problems: Problems, etas: list[float], horizon: float, generator: torch.Generator,
                       progress: Callable | None = None) -> DescentResult:
    """Proposition ``prf:thm-conservation-laws-one-step``: over a fixed horizon the drift is
    ``eta C_1 (1 + O(eta lambda_max))``, slope 1 on log-log axes while ``eta lambda_max`` is small
    (``generator`` draws the curvature's power-iteration starts; ``progress(iterable, name)`` shows a bar)."""
    families = {}
    for name, family in problems.families.items():
        bar = None if progress is None else (lambda it, name=name: progress(it, name))
        families[name] = family_descent(family, problems.data[name], problems.params0[name], etas, horizon,
                                        generator, progress=bar)
    return DescentResult(list(etas), families)


# -- the controls: the same fits on a wrong quantity or over every step size --------------------------------

def norm_sum_slope(result: FamilyDescent, seed: int) -> float:
    """Control of a slope row: the log-log slope, over the same step sizes and runs (``result.fitted(seed)``),
    of the drift of the total squared norm ``sum_l ||W_l||_F^2``, a quantity that is not conserved (it grows
    as the network learns): its drift is that of the flow, nearly independent of ``eta``."""
    rows = [result.etas.index(eta) for eta in result.fitted(seed)]
    total = result.trajectory.layer_norms[:, rows, seed].sum(-1, keepdim=True)    # (T, E', 1)
    drift = max_drift(total).cpu().numpy()
    return loglog_slope([result.etas[i] for i in rows], drift)


def intercept_ratio_of(result: FamilyDescent) -> float:
    """:attr:`FamilyDescent.intercept_ratio`, over every step size run when too few qualify for every seed
    (the control of the ``tanh`` intercept row, read on a homogeneous family)."""
    return result.intercept_ratio if np.isfinite(result.intercept_ratio) else result.intercept_over_all()

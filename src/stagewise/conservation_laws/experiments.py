"""The chapter's experiments, each returning a typed result the notebook records and checks.

``build_problems`` sets up the five networks on their data; ``flow_experiment`` (Theorem
``prf:thm-conservation-laws-balancedness``), ``descent_experiment`` and ``one_step_experiment``
(Proposition ``prf:thm-conservation-laws-one-step``) and ``layer_growth`` (Corollary
``prf:thm-conservation-laws-deep``) measure what the statements predict.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from stagewise.conservation_laws.curvature import hessian_norm, quadratic_model_factor
from stagewise.conservation_laws.gradient_descent import gd_drift_study
from stagewise.conservation_laws.gradient_flow import gradient_flow_study
from stagewise.conservation_laws.models import FAMILIES, Family, Params, terms_per_entry
from stagewise.conservation_laws.one_step_law import diagonal_product_law, one_step_change
from stagewise.conservation_laws.problem import Data, gradients, init_params, make_orthogonal_data
from stagewise.conservation_laws.trajectory import Trajectory, max_drift
from stagewise.numerics.fits import loglog_slope
from stagewise.numerics.flows import DivergenceError
from stagewise.numerics.roundoff import roundoff


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
    the size ``scale`` of the invariants (the largest magnitude ``A + B`` of an entry ``A - B`` along
    the flow: what the solver's relative error multiplies), and the drift of the *sum*
    ``sum_l ||W_l||_F^2`` (the wrong hypothesis that the total norm, not the difference, is conserved)."""

    trajectories: dict[str, Trajectory]
    drift: dict[str, float]
    scale: dict[str, float]
    sum_drift: dict[str, float]


#: The flow rows allow ``FLOW_SLACK x ode_rtol x`` the invariants' magnitude (at least 1). DOP853 keeps each
#: step's error within ``rtol`` of the weights' size; over the whole atlas (``tests/atlas/conservation-laws.yaml``)
#: the global error of an invariant stayed below ``0.4 rtol`` times its magnitude, and a solver 1000x looser
#: than stated gives 5 to 30 times ``ode_rtol`` at the default parameters (section "Gradient flow").
FLOW_SLACK = 10.0


def flow_tolerance(flow: "FlowResult", name: str, rtol: float) -> float:
    """The tolerance of ``name``'s flow row: ``FLOW_SLACK x rtol x max(1, magnitude along the flow)``."""
    return FLOW_SLACK * rtol * max(1.0, flow.scale[name])


def flow_excess(flow: "FlowResult", name: str, rtol: float) -> float:
    """``name``'s flow drift over its tolerance (:func:`flow_tolerance`): below 1 for the homogeneous
    families (the law holds to solver error), above 1 for ``tanh`` (the law fails without homogeneity)."""
    return flow.drift[name] / flow_tolerance(flow, name, rtol)


def flow_experiment(problems: Problems, names: list[str], horizon: float, rtol: float) -> FlowResult:
    """Theorem ``prf:thm-conservation-laws-balancedness``: the drift of the invariants under
    gradient flow (adaptive DOP853, relative tolerance ``rtol``) over ``[0, horizon]``."""
    trajectories, drift, scale, sum_drift = {}, {}, {}, {}
    for name in names:
        family, data, params0 = problems.families[name], problems.data[name], problems.params0[name]
        trajectories[name] = gradient_flow_study(family, data, params0, horizon, rtol)
        drift[name] = float(max_drift(trajectories[name].invariants[:, 0]).max())
        scale[name] = max(float(family.magnitude(p).abs().max()) for p in trajectories[name].states)
        total = trajectories[name].layer_norms[:, 0].sum(-1, keepdim=True)
        sum_drift[name] = float(max_drift(total).max())
    return FlowResult(trajectories, drift, scale, sum_drift)


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


@dataclass(frozen=True)
class OneStepResult:
    """One GD step of size ``eta``: per family the largest ``|actual - eta^2 Q(g)|``, the size
    ``max |eta^2 Q(g)|``, and the rounding bound ``tolerance`` of the comparison
    (:func:`stagewise.numerics.roundoff.roundoff` of the largest magnitude ``A + B`` of an entry
    before, after and of ``eta^2 Q(g)``, over the squares summed in one entry); the error of the
    diagonal product law relative to the magnitude ``u^2 + v^2``, and its rounding bound."""

    eta: float
    error: dict[str, float]
    size: dict[str, float]
    product_law_error: float
    tolerance: dict[str, float]
    product_law_tolerance: float


def one_step_experiment(problems: Problems, eta: float, product_steps: int = 200) -> OneStepResult:
    """Proposition ``prf:thm-conservation-laws-one-step`` from the initialization, and its
    diagonal product form (Corollary ``prf:thm-conservation-laws-diagonal``) over ``product_steps``."""
    error, size, tolerance = {}, {}, {}
    for name, family in problems.families.items():
        params = problems.params0[name]
        actual, predicted = one_step_change(family, params, problems.data[name], eta)
        error[name], size[name] = float((actual - predicted).abs().max()), float(predicted.abs().max())
        grads = gradients(family, params, problems.data[name])
        after = [p - eta * g for p, g in zip(params, grads)]
        magnitude = family.magnitude(params) + family.magnitude(after) + eta**2 * family.magnitude(grads)
        tolerance[name] = roundoff(float(magnitude.max()), terms_per_entry(params))
    u0, v0 = problems.params0["diagonal"]
    measured, predicted, magnitude = diagonal_product_law(u0, v0, problems.data["diagonal"], eta, product_steps)
    product_error = float(((measured - predicted).abs() / magnitude).max())
    # each step rounds u, v and the factor a few times, relative to the magnitude u^2 + v^2: 4 operations a step
    return OneStepResult(eta, error, size, product_error, tolerance, roundoff(1.0, 4 * product_steps))


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


def gamma_width(width: int, input_dim: int) -> int:
    """Width of the ``I_gamma`` network: Lemma 3.2 of Varre et al. needs ``P P^T = I_d``, a width ``l >= d``, and
    with ``l >= 2 d`` the weights have ``d`` directions outside the row space of ``P`` to leave it by (Lemma 3.1
    says they do not). The chapter's own width when it is larger."""
    return max(width, 2 * input_dim)


@dataclass(frozen=True)
class OrthogonalInit:
    """Two-layer linear network of width ``width`` from ``I_gamma`` (Corollary ``prf:thm-conservation-laws-linear``;
    Varre et al., Lemmas 3.1 and 3.2): ``W_1(0) = sqrt(2 gamma) P`` with ``P P^T = I_d``, ``W_2(0) = 0``, in the
    reduced coordinates ``Z_1 = W_1 P^T``, ``Z_2 = P W_2``. ``error``: ``max_t |Z_1^T Z_1 - Z_2 Z_2^T - 2 gamma I_d|``
    (largest entry, over seeds); ``scale``: the largest magnitude ``|Z_1|^T |Z_1| + |Z_2| |Z_2|^T`` of an entry
    along the flow (what the solver's relative error multiplies); ``outside``: ``max_t`` of the weights' part
    outside the row space of ``P``, ``|W_1 - Z_1 P|`` and ``|W_2 - P^T Z_2|`` (Lemma 3.1: 0); ``orthonormality``:
    ``|P P^T - I_d|``; ``start`` and ``P`` (``(S, d, l)``) for the control (:func:`orthogonal_descent_error`)."""

    gamma: float
    width: int
    error: float
    scale: float
    outside: float
    orthonormality: float
    start: Params
    P: torch.Tensor


def orthogonal_start(seeds: int, d: int, width: int, k: int, gamma: float, generator: torch.Generator,
                     dtype=torch.float64) -> tuple[Params, torch.Tensor]:
    """``I_gamma``: ``W_1(0) = sqrt(2 gamma) P`` with one random ``P`` (``d x width``, orthonormal rows, ``P P^T =
    I_d``; orthonormal columns when ``width < d``, where no ``P`` has ``P P^T = I_d``) per seed, drawn from
    ``generator``, and ``W_2(0) = 0`` (``width x k``); returns the weights and ``P``, shape ``(S, d, width)``."""
    G = torch.randn(seeds, max(d, width), min(d, width), generator=generator, dtype=dtype)
    Q = torch.linalg.qr(G).Q                                            # orthonormal columns
    P = Q.transpose(-1, -2) if width >= d else Q                        # (S, d, width)
    return [np.sqrt(2 * gamma) * P, torch.zeros(seeds, width, k, dtype=dtype)], P


def reduced_coordinates(params: Params, P: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Varre et al.'s reduced coordinates ``Z_1 = W_1 P^T`` (``d x d``) and ``Z_2 = P W_2`` (``d x k``)."""
    W1, W2 = params
    return W1 @ P.transpose(-1, -2), P @ W2


def reduced_invariant(params: Params, P: torch.Tensor) -> torch.Tensor:
    """``Z_1^T Z_1 - Z_2 Z_2^T`` (Lemma 3.2 of Varre et al.), entries flattened: shape ``(S, d * d)``."""
    Z1, Z2 = reduced_coordinates(params, P)
    return (Z1.transpose(-1, -2) @ Z1 - Z2 @ Z2.transpose(-1, -2)).flatten(1)


def isotropy_error(invariants: torch.Tensor, gamma: float) -> float:
    """``max |Z_1^T Z_1 - Z_2 Z_2^T - 2 gamma I_d|`` over records ``(..., d * d)`` of :func:`reduced_invariant`."""
    d = int(round(np.sqrt(invariants.shape[-1])))
    eye = torch.eye(d, dtype=invariants.dtype, device=invariants.device).flatten()
    return float((invariants - 2 * gamma * eye).abs().max())


def orthogonal_init_experiment(problems: Problems, gamma: float, width: int, horizon: float, rtol: float,
                               generator: torch.Generator) -> OrthogonalInit:
    """Corollary ``prf:thm-conservation-laws-linear`` (Varre et al., Lemmas 3.1 and 3.2) from ``I_gamma`` at width
    ``width`` (:func:`gamma_width`), on the linear network's data: gradient flow keeps ``Z_1^T Z_1 - Z_2 Z_2^T =
    2 gamma I_d`` and the weights in the row space of ``P``. One random ``P`` per seed, drawn from ``generator``."""
    family, data = problems.families["linear"], problems.data["linear"]
    seeds, d, k = problems.params0["linear"][0].shape[0], data.X.shape[1], data.Y.shape[1]
    start, P = orthogonal_start(seeds, d, width, k, gamma, generator)
    start, P = [p.to(data.X.device) for p in start], P.to(data.X.device)
    flow = gradient_flow_study(family, data, start, horizon, rtol)
    invariants = torch.stack([reduced_invariant(p, P) for p in flow.states])
    outside, scale = 0.0, 0.0
    for p in flow.states:
        Z1, Z2 = reduced_coordinates(p, P)
        outside = max(outside, float((p[0] - Z1 @ P).abs().max()), float((p[1] - P.transpose(-1, -2) @ Z2).abs().max()))
        scale = max(scale, float((Z1.abs().transpose(-1, -2) @ Z1.abs() + Z2.abs() @ Z2.abs().transpose(-1, -2)).max()))
    eye = torch.eye(d, dtype=P.dtype, device=P.device)
    orthonormality = float((P @ P.transpose(-1, -2) - eye).abs().max())
    return OrthogonalInit(gamma, width, isotropy_error(invariants, gamma), scale, outside, orthonormality, start, P)


def _reduced_family(family: Family, P: torch.Tensor) -> Family:
    """``family`` (the linear one) recording :func:`reduced_invariant` with ``P`` in place of its invariant."""
    def invariant(params: Params) -> torch.Tensor:
        return reduced_invariant(params, P.repeat(params[0].shape[0] // P.shape[0], 1, 1))
    return dataclasses.replace(family, invariant=invariant, magnitude=None)


def orthogonal_descent_error(problems: Problems, orthogonal: OrthogonalInit, etas: list[float],
                             horizon: float) -> float:
    """Control of the ``I_gamma`` row: Lemma 3.2's error read along *gradient descent* from the same ``I_gamma``
    over the same horizon, at the largest of ``etas`` that does not diverge (NaN when all do). The invariant is
    exact at ``t = 0`` and leaves ``2 gamma I_d`` only through the steps, by ``eta^2 Q(g)`` each
    (Proposition ``prf:thm-conservation-laws-one-step``): the lemma is a property of the flow."""
    family = _reduced_family(problems.families["linear"], orthogonal.P)
    for eta in sorted(set(etas), reverse=True):
        try:
            run = gd_drift_study(family, problems.data["linear"], orthogonal.start, [eta], horizon)
        except DivergenceError:
            continue
        return isotropy_error(run.invariants, orthogonal.gamma)
    return float("nan")


# -- the controls: the same measurements on a broken run or a wrong quantity ---------------------------------

def broken_flow_drift(problems: Problems, name: str, horizon: float, rtol: float, factor: float = 0.5) -> float:
    """Control of a flow row: the drift of ``name``'s invariants along a flow whose output layer's gradient
    is multiplied by ``factor`` (a gradient with a missing ``1/2`` in one layer). The Euler identity no longer
    balances the two layers, and the invariants move at a rate ``(1 - factor) <theta_out, grad_out>`` from
    the first instant."""
    family, params0 = problems.families[name], problems.params0[name]
    scale = [1.0] * (len(params0) - 1) + [factor]
    flow = gradient_flow_study(family, problems.data[name], params0, horizon, rtol, gradient_scale=scale)
    return float(max_drift(flow.invariants[:, 0]).max())


def one_step_error(problems: Problems, name: str, eta: float, gradient_scale: list[float] | None = None) -> float:
    """``max |Q(theta - eta g) - Q(theta) - eta^2 Q(g)|`` for one step from the initialization: the one-step
    row's error with ``g = grad L`` (Proposition ``prf:thm-conservation-laws-one-step``), and its control with
    ``g`` the gradient scaled per tensor by ``gradient_scale`` (the output layer's halved: a step that is no
    gradient step of ``L``). The expansion ``Q(theta - eta g) = Q(theta) - 2 eta B(theta, g) + eta^2 Q(g)`` holds
    for any ``g``; the remainder is ``eta^2 Q(g)`` only when ``B(theta, g) = 0``, the Euler identity of the true
    gradient, so the control is off by ``2 eta |B(theta, g)|``."""
    family, params = problems.families[name], problems.params0[name]
    grads = gradients(family, params, problems.data[name])
    if gradient_scale is not None:
        grads = [c * g for c, g in zip(gradient_scale, grads, strict=True)]
    after = [p - eta * g for p, g in zip(params, grads)]
    actual = family.invariant(after) - family.invariant(params)
    return float((actual - eta**2 * family.invariant(grads)).abs().max())


def one_step_excess(one_step: OneStepResult, name: str) -> float:
    """``name``'s one-step error over its rounding bound: below 1 for a homogeneous family, above 1 for
    ``tanh`` (the first-order term ``-2 eta B(theta, g)`` no longer vanishes)."""
    return one_step.error[name] / one_step.tolerance[name]


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


def convergence_steps(result: FamilyDescent) -> list[float]:
    """The two smallest step sizes with ``eta lambda_max <= FIT_BOUND`` for every seed (empty with fewer):
    those of :func:`descent_flow_gap`."""
    qualify = [eta for eta, q in zip(result.etas, result.qualifies.all(1)) if q]
    return sorted(qualify)[:2] if len(qualify) >= 2 else []


def _change_curves(invariants: torch.Tensor) -> np.ndarray:
    """``max_j |I_j(t) - I_j(0)|`` for records ``(T, S, K)``; shape ``(T, S)``."""
    return (invariants - invariants[:1]).abs().amax(-1).cpu().numpy()


def descent_flow_gap(result: FamilyDescent, flow: Trajectory) -> float:
    """How far gradient descent at the smallest step size ``eta_1`` is from the flow, in units of its own
    first-order error estimate: per seed, ``max_t |D_eta1(t) - D_flow(t)|`` over
    ``max_t |D_eta2(t) - D_eta1(t)| eta_1 / (eta_2 - eta_1)`` (Richardson: for an error ``c(t) eta`` both are
    ``max_t |c(t)| eta_1``), with ``D(t) = max_j |I_j(t) - I_j(0)|`` on the common record times and
    ``eta_1 < eta_2`` the two smallest step sizes of :func:`convergence_steps`; the largest over seeds.
    About 1 when the descent runs converge to this flow at first order; NaN without two step sizes."""
    steps = convergence_steps(result)
    if not steps:
        return float("nan")
    (e1, e2), index = steps, [result.etas.index(eta) for eta in steps]
    D1, D2 = (_change_curves(result.trajectory.invariants[:, i]) for i in index)
    D0 = _change_curves(flow.invariants[:, 0])
    gap = np.abs(D1 - D0).max(0)
    estimate = np.abs(D2 - D1).max(0) * e1 / (e2 - e1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.max(gap / estimate))


def descent_gap_to_flow(problems: Problems, name: str, result: FamilyDescent, horizon: float, rtol: float,
                        gradient_scale: list[float]) -> float:
    """:func:`descent_flow_gap` against a flow run with its gradient scaled by ``gradient_scale`` (the
    control: ``0.5`` on every tensor is the flow of ``L / 2``, the same path at half speed, what a descent
    run on a time axis off by a factor 2 would be compared with)."""
    flow = gradient_flow_study(problems.families[name], problems.data[name], problems.params0[name], horizon, rtol,
                               gradient_scale=gradient_scale)
    return descent_flow_gap(result, flow)

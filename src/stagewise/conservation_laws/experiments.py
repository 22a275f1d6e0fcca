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

    ``qualifying`` counts the neurons with ``|a_j(0)| >= ||w_j(0)||``, ``w_j(0) != 0`` in the
    Gaussian run, ``flips`` how many of them ever change the sign of ``a_j``; ``balanced_flips``
    counts sign changes from the balanced initialization ``a_j(0) = s_j ||w_j(0)||`` (all
    neurons qualify). ``margin`` is the smallest ``a_j(t) sign a_j(0)`` over qualifying neurons and
    records (both runs). The controls are :func:`control_neuron_flips` and :func:`against_drift_flips`."""

    qualifying: int
    flips: int
    balanced_flips: int
    margin: float


def _sign_flips(states: list[Params], mask: torch.Tensor) -> tuple[int, float]:
    """Neurons (``mask``, shape (S, m)) whose ``a_j(t)`` ever has the opposite sign of ``a_j(0)``
    beyond rounding (``a_j(t) sign a_j(0) < -roundoff(max |a|)``: a zero-level wobble is not a crossing)."""
    a = torch.stack([p[1] for p in states])            # (T, S, m)
    signed = a * torch.sign(a[0])
    flipped = ((signed < -roundoff(float(a.abs().max()))).any(0) & mask).sum()
    margin = signed.amin(0)[mask].min() if mask.any() else torch.tensor(float("nan"))
    return int(flipped), float(margin)


def qualifying_neurons(W0: torch.Tensor, a0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The neurons with ``|a_j(0)| >= ||w_j(0)||`` and ``w_j(0) != 0`` (the hypothesis of Corollary
    ``prf:thm-conservation-laws-relu``), and those with ``w_j(0) != 0``; both decided up to the rounding
    of the norms, so that a balanced neuron (``|a| = ||w||`` up to one rounding) qualifies on every
    machine and a rounding-level ``w`` counts as zero."""
    norms = W0.norm(dim=-1)
    level = roundoff(float(norms.max()), W0.shape[-1])
    nonzero = norms > level
    return (a0.abs() >= norms - level) & nonzero, nonzero


def sign_experiment(problems: Problems, flow: FlowResult, horizon: float, rtol: float) -> SignResult:
    """Corollary ``prf:thm-conservation-laws-relu`` (Town et al., Proposition 1): a neuron with
    ``|a_j(0)| >= ||w_j(0)||`` and ``w_j(0) != 0`` never changes the sign of ``a_j``. Reads the
    Gaussian run from ``flow`` and integrates the balanced initialization with relative tolerance
    ``rtol`` (a sign needs only a solver error far below ``margin``)."""
    family, data = problems.families["relu"], problems.data["relu"]
    W0, a0 = problems.params0["relu"]
    norms = W0.norm(dim=-1)
    mask, nonzero = qualifying_neurons(W0, a0)
    flips, margin = _sign_flips(flow.trajectories["relu"].states, mask)
    balanced = gradient_flow_study(family, data, [W0, torch.sign(a0) * norms], horizon, rtol)
    balanced_flips, balanced_margin = _sign_flips(balanced.states, nonzero)
    return SignResult(int(mask.sum()), flips, balanced_flips, float(np.nanmin([margin, balanced_margin])))


def control_neuron_flips(problems: Problems, horizon: float, rtol: float, ratio: float = 0.2) -> int:
    """Control of the Gaussian sign row: sign changes of one ReLU neuron outside the hypothesis,
    ``|a(0)| = ratio ||w(0)||``, active on the single input ``x_i`` with the largest target and with ``a(0)``
    against ``y_i``. While ``a`` is small, ``da/dt = <w, x_i> y_i / n``, so ``a`` reaches 0 after about
    ``ratio n / (||x_i|| |y_i|)``; the flow runs for four times that when ``horizon`` is shorter."""
    family, data = problems.families["relu"], problems.data["relu"]
    W0, _ = problems.params0["relu"]
    i = int(data.Y[:, 0].abs().argmax())
    w = (W0[0, 0].norm() * data.X[i] / data.X[i].norm())[None, None, :]
    a = -ratio * w.norm(dim=-1) * torch.sign(data.Y[i, 0])
    crossing = ratio * data.X.shape[0] / float(data.X[i].norm() * data.Y[i, 0].abs())
    control = gradient_flow_study(family, data, [w, a], max(horizon, 4 * crossing), rtol)
    return _sign_flips(control.states, torch.ones_like(a, dtype=torch.bool))[0]


def against_drift_flips(problems: Problems, horizon: float, rtol: float, ratio: float = 0.2) -> int:
    """Control of the balanced sign row: every neuron of the balanced run, ``w_j(0)``, run as a network of its
    own (all in one batch) with ``a_j(0)`` outside the hypothesis and against its drift. With
    ``u_j = (1/n) sum_i y_i 1[<w_j, x_i> > 0] x_i``, ``a_j`` starts moving at ``c_j = <w_j, u_j>``; the pair
    ``(a_j, <w_j, u_j> / |u_j|)`` follows a hyperbola ``a^2 - w_par^2 = const``, and the smaller of the two in
    magnitude is the one that crosses zero. So ``a_j(0) = -ratio |c_j| / |u_j| sign(c_j)``: ``ratio`` times the
    part of ``w_j`` along ``u_j`` (at most ``ratio ||w_j||``, outside the hypothesis by at least ``1 / ratio``).
    Counts sign changes over the neurons with ``c_j != 0``; ``a_j`` reaches 0 after about ``ratio / |u_j|``,
    and the flow runs for four times the shortest of these (``horizon`` when no neuron moves), long enough for
    the fastest neurons to cross and no longer, for speed. (Against ``||w_j||``
    itself, a wide input lets ``w_par`` cross first, and ``a_j`` keeps its sign.)"""
    family, data = problems.families["relu"], problems.data["relu"]
    W0, _ = problems.params0["relu"]
    W = W0.reshape(-1, 1, W0.shape[-1])                                          # (S m, 1, d): one neuron each
    active = (torch.einsum("nd,smd->smn", data.X, W) > 0).to(W.dtype)            # (S m, 1, n)
    u = torch.einsum("smn,n,nd->smd", active, data.Y[:, 0], data.X) / data.X.shape[0]
    c, size = (W * u).sum(-1), u.norm(dim=-1)                                    # (S m, 1)
    moving = c.abs() > roundoff(float(c.abs().max()), data.X.shape[1])
    a = -ratio * c.abs() / size.clamp(min=torch.finfo(W.dtype).tiny) * torch.sign(c)
    crossing = float((ratio / size[moving]).min()) if moving.any() else 0.0
    run = gradient_flow_study(family, data, [W, a], 4 * crossing if moving.any() else horizon, rtol)
    return _sign_flips(run.states, moving)[0]


@dataclass(frozen=True)
class OrthogonalInit:
    """Two-layer linear network from ``I_gamma`` (Corollary ``prf:thm-conservation-laws-linear``):
    ``W_1(0) = sqrt(2 gamma) P`` with orthonormal columns (or rows), ``W_2(0) = 0``. ``error`` is
    ``max_t |W_1^T W_1 - W_2 W_2^T - 2 gamma P^T P|``, ``scale`` the largest magnitude of an entry along the
    flow (``2 gamma`` at the start, the size that the solver's relative error multiplies); ``start`` the
    initial weights and ``P`` (``(S, d, m)``) for the control (:func:`orthogonal_error`)."""

    gamma: float
    error: float
    scale: float
    start: Params
    P: torch.Tensor


def orthogonal_start(W1: torch.Tensor, W2: torch.Tensor, gamma: float, generator: torch.Generator
                     ) -> tuple[Params, torch.Tensor]:
    """``I_gamma``: ``W_1(0) = sqrt(2 gamma) P`` with one random ``P`` (orthonormal columns, or rows when
    ``d < m``) per seed, drawn from ``generator``, and ``W_2(0) = 0``; returns the weights and ``P``."""
    seeds, d, m = W1.shape
    G = torch.randn(seeds, max(d, m), min(d, m), generator=generator, dtype=W1.dtype)
    Q = torch.linalg.qr(G).Q                                            # orthonormal columns
    P = (Q if d >= m else Q.transpose(-1, -2)).to(W1.device)            # (S, d, m)
    return [np.sqrt(2 * gamma) * P, torch.zeros_like(W2)], P


def orthogonal_error(problems: Problems, orthogonal: OrthogonalInit, horizon: float, rtol: float,
                     gradient_scale: tuple[float, float] | None = None) -> float:
    """``max_t |W_1^T W_1 - W_2 W_2^T - 2 gamma P^T P|`` along the flow from ``orthogonal.start`` over
    ``horizon``; ``gradient_scale`` breaks the flow (:func:`~stagewise.conservation_laws.gradient_flow.gradient_flow_field`),
    for the control."""
    family, data = problems.families["linear"], problems.data["linear"]
    flow = gradient_flow_study(family, data, orthogonal.start, horizon, rtol, gradient_scale=gradient_scale)
    target = (orthogonal.P.transpose(-1, -2) @ orthogonal.P).flatten(1)
    return float((flow.invariants[:, 0] - 2 * orthogonal.gamma * target).abs().max())


def orthogonal_init_experiment(problems: Problems, gamma: float, horizon: float, rtol: float,
                               generator: torch.Generator) -> OrthogonalInit:
    """Corollary ``prf:thm-conservation-laws-linear`` (Varre et al., Lemma 3.2) from ``I_gamma``:
    gradient flow keeps ``W_1^T W_1 - W_2 W_2^T = 2 gamma P^T P`` (``2 gamma I`` in the reduced
    coordinates ``Z``). One random ``P`` per seed, drawn from ``generator``."""
    family, data = problems.families["linear"], problems.data["linear"]
    W1, W2 = problems.params0["linear"]
    start, P = orthogonal_start(W1, W2, gamma, generator)
    flow = gradient_flow_study(family, data, start, horizon, rtol)
    target = (P.transpose(-1, -2) @ P).flatten(1)
    error = float((flow.invariants[:, 0] - 2 * gamma * target).abs().max())
    scale = max(float(family.magnitude(p).abs().max()) for p in flow.states)   # 2 gamma at t = 0
    return OrthogonalInit(gamma, error, scale, start, P)


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

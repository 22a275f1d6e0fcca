"""Gradient descent from small initialization: escape times and which escape it finds.

Escape times from random small initialization, measured with an adaptive explicit Euler
scheme that accumulates physical time (batched over initializations, hand-written backward
pass); the speed of the direction reached (Definition 2.1); several widths in one padded batch;
the escape-time law of Proposition 2.2 against the initialization scale; the alignment of gradient
descent with the computed optimal escape direction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.escape_speed.ascent import projected_ascent
from stagewise.escape_speed.network import Weights, direction, forward, init_sphere, pad_hidden, speed
from stagewise.escape_speed.proposition_34 import prop34_sides
from stagewise.numerics.fits import loglog_slope
from stagewise.numerics.flows import assert_finite
from stagewise.numerics.params import flatten_batched, unflatten_batched
from stagewise.numerics.roundoff import roundoff


@dataclass
class EscapeRun:
    """Result of :func:`euler_escape`: escape time per network (``inf`` if none), weights then, steps taken."""
    times: torch.Tensor          # (R,) physical time at which the loss first fell by `drop`
    Ws: Weights                  # weights at that moment
    steps: int                   # Euler steps taken
    steps_hit: torch.Tensor = None   # (R,) Euler steps until the loss fell by `drop` (inf if never)


def _mm(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Batched product ``A @ B`` that avoids batched GEMM when a dimension is 1 (a broadcast
    product and a sum are several times faster there for the tiny matrices of this chapter)."""
    if A.shape[-1] == 1:                                        # outer product
        return A * B
    if A.shape[-2] == 1:                                        # row vector times matrix
        return (A.transpose(-1, -2) * B).sum(dim=-2, keepdim=True)
    if B.shape[-1] == 1:                                        # matrix times column vector
        return (A * B.transpose(-1, -2)).sum(dim=-1, keepdim=True)
    return torch.matmul(A, B)


def mse_grad(Ws: Weights, X: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, Weights]:
    """Loss ``C = |f_theta(X) - Y|_F^2 / 2`` per network and its gradient, by an explicit backward pass.

    Forward ``Z_l = W_l Z^sigma_{l-1}`` (Sec. 1, no ReLU on the output). Backward
    ``D_L = f - Y``, ``D_l = (W_{l+1}^T D_{l+1}) * 1[Z_l > 0]`` and ``dC/dW_l = D_l (Z^sigma_{l-1})^T``,
    with the autograd convention ``sigma'(0) = 0``. Batched over networks (``Ws[l]`` is
    ``(R, n_l, n_{l-1})``); about twice as fast as autograd on the tiny nets here
    (``benchmarks/bench_escape_speed.py``). ``G = -Y`` is the gradient of Definition "Localized loss".
    """
    R = Ws[0].shape[0]
    hs = [X]
    h = torch.relu((Ws[0].reshape(-1, X.shape[0]) @ X).view(R, -1, X.shape[1]))   # one GEMM for all nets
    for W in Ws[1:-1]:
        hs.append(h)
        h = torch.relu(_mm(W, h))
    hs.append(h)
    r = _mm(Ws[-1], h) - Y
    loss = 0.5 * (r * r).sum(dim=(1, 2))
    grads: Weights = [r] * len(Ws)
    d = r
    for l in range(len(Ws) - 1, 0, -1):
        grads[l] = _mm(d, hs[l].transpose(-1, -2))
        d = torch.ops.aten.threshold_backward(_mm(Ws[l].transpose(1, 2), d), hs[l], 0.0)  # relu' = 1[relu(z) > 0]
    grads[0] = (d.reshape(-1, X.shape[1]) @ X.T).view(Ws[0].shape)
    return loss, grads


def dead_gradient(grad_norm: torch.Tensor, loss: torch.Tensor, theta_norm: torch.Tensor, X: torch.Tensor,
                  depth: int, dim: int) -> torch.Tensor:
    """Which networks have a zero gradient (all ReLUs dead: gradient descent never moves them again), per network.

    "Zero" is rounding level at the size the gradient of a live network of this norm would have: each
    ``dC/dW_l = D_l (Z^sigma_{l-1})^T`` is at most ``|f - Y|_F |X|_F prod_{k != l} |W_k|_F``, and by AM-GM
    ``prod_{k != l} |W_k|_F <= (|theta|^2 / (L-1))^{(L-1)/2}``; ``dim`` counts the terms of the sums. At small
    initialization a live gradient is ``O(alpha^{L-1})``, tiny in absolute terms but not at this scale, and a dead
    network's gradient is zero on one machine and ``1e-300`` on another: both are stopped alike.
    """
    reach = torch.sqrt(2 * loss) * float(X.norm()) * math.sqrt(depth) \
        * (theta_norm ** 2 / max(depth - 1, 1)) ** ((depth - 1) / 2)
    return grad_norm <= roundoff(1.0, dim) * reach


def euler_escape(Ws0: Weights, X: torch.Tensor, Y: torch.Tensor, rel_step: float, drop: float,
                 max_steps: int) -> EscapeRun:
    """Adaptive explicit Euler on the MSE loss until the loss falls by the fraction ``drop`` (the escape time
    of Proposition 2.2 and its ``alpha^{-(L-2)}`` law, measured from small initialization).

    Step ``eta_k = rel_step |theta| / |grad|`` per initialization (each iterate moves by a
    fixed fraction of its norm), physical time ``t += eta_k``. This follows gradient flow
    with relative error ``O(rel_step)``; the crossing time is interpolated linearly.
    Gradients come from :func:`mse_grad`, and all layers live in one ``(R, P)`` buffer so that
    norms and updates are one operation each. A network with a zero gradient (all ReLUs dead, see
    :func:`dead_gradient`: gradient descent never moves it again) is stopped; its time stays ``inf``.
    """
    R = Ws0[0].shape[0]

    def layers(v: torch.Tensor) -> Weights:
        return unflatten_batched(v, Ws0)

    theta = flatten_batched(Ws0)
    target = (1 - drop) * 0.5 * float((Y ** 2).sum())
    t = torch.zeros(R, dtype=X.dtype, device=X.device)
    done = torch.zeros(R, dtype=torch.bool, device=X.device)
    t_hit = torch.full((R,), math.inf, dtype=X.dtype, device=X.device)
    k_hit = torch.full((R,), math.inf, dtype=X.dtype, device=X.device)
    theta_hit = theta.clone()
    loss, g = mse_grad(layers(theta), X, Y)
    assert_finite("rel_step", rel_step, 0, loss)
    L, dim = len(Ws0), X.shape[1] * max(max(W.shape[1:]) for W in Ws0)
    for k in range(max_steps):
        grad = flatten_batched(g)
        gn = torch.linalg.vector_norm(grad, dim=1)
        theta_norm = torch.linalg.vector_norm(theta, dim=1)
        done = done | dead_gradient(gn, loss, theta_norm, X, L, dim)
        eta = torch.where(done, 0.0, rel_step * theta_norm / gn.clamp_min(1e-300))
        theta = torch.addcmul(theta, eta[:, None], grad, value=-1.0)
        new_loss, g = mse_grad(layers(theta), X, Y)
        assert_finite("rel_step", rel_step, k, new_loss)
        hit = (~done) & (new_loss <= target)
        if bool(hit.any()):
            frac = ((loss - target) / (loss - new_loss).clamp_min(1e-300)).clamp(0, 1)
            t_hit = torch.where(hit, t + frac * eta, t_hit)
            k_hit = torch.where(hit, float(k + 1), k_hit)
            theta_hit = torch.where(hit[:, None], theta, theta_hit)
            done = done | hit
        t = t + eta
        loss = new_loss
        if bool(done.all()):
            return EscapeRun(t_hit, [W.contiguous() for W in layers(theta_hit)], k + 1, k_hit)
    return EscapeRun(t_hit, [W.contiguous() for W in layers(theta_hit)], max_steps, k_hit)


def direction_speed(Ws: Weights, X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """Speed ``-L0(rho)`` of the direction ``rho = sqrt(L) theta / |theta|`` (Definition 2.1), per network."""
    return speed(direction(Ws), X, G)


@dataclass
class WidthSweep:
    widths: list[int]
    speeds: torch.Tensor         # (len(widths), inits) speed of sqrt(L) theta/|theta| when the loss fell by `drop`
    escaped: torch.Tensor        # (len(widths), inits) True where the loss fell by `drop` within max_steps
    steps: int                   # Euler steps taken by the batch


def gd_width_sweep(X: torch.Tensor, Y: torch.Tensor, widths: list[int], depth: int, inits: int, alpha: float,
                   rel_step: float, drop: float, generator: torch.Generator, max_steps: int = 100_000,
                   actual_width: int | None = None, step_from: int = 1) -> WidthSweep:
    """Gradient descent from small initialization for several hidden widths, all in one batch.

    ``inits`` networks per width with every layer of norm ``alpha`` (:func:`stagewise.escape_speed.network.init_sphere`) are
    padded with zero neurons to the largest width (:func:`stagewise.escape_speed.network.pad_hidden`; zero
    neurons get zero gradient and stay zero) and run by :func:`euler_escape` on the squared loss
    with targets ``Y`` until the loss has fallen by ``drop``. Then we record the speed of the
    direction ``sqrt(L) theta / |theta|`` for ``G = -Y`` (Definition 2.1). Runs that never get
    there (dead ReLUs) have speed ``nan``. Tests the paper's conjecture (Sec. 5) on Example 1 against
    Proposition "Closed forms" (iv): width-1 runs cannot beat ``sqrt(2) - 1``. ``actual_width`` (a control): every
    network labelled with a width ``>= step_from`` has that hidden width whatever its label (the width axis lost
    above ``step_from``: a saturated step).
    """
    wmax = max(actual_width or 0, max(widths))
    built = lambda w: actual_width if actual_width and w >= step_from else w
    W0 = [torch.cat(ws) for ws in zip(*[pad_hidden(init_sphere(X.shape[0], [built(w)] * (depth - 1),
                                                                Y.shape[0], inits,
                                                                generator, X.device, alpha), wmax)
                                        for w in widths])]
    r = euler_escape(W0, X, Y, rel_step, drop, max_steps)
    escaped = torch.isfinite(r.times)
    s = torch.where(escaped, direction_speed(r.Ws, X, -Y), torch.nan)
    return WidthSweep(list(widths), s.reshape(len(widths), inits), escaped.reshape(len(widths), inits), r.steps)


def function_cosine(Ws: Weights, ref: Weights, X: torch.Tensor) -> torch.Tensor:
    """Cosine between ``f_theta(X)`` and ``f_ref(X)`` (function-space alignment with an optimal escape direction
    of Definition 2.1), per network of ``Ws``; ``ref`` is a batch of one."""
    f = forward(Ws, X)[0][-1].flatten(1)
    r = forward(ref, X)[0][-1].flatten(1)
    return (f @ r[0]) / (f.norm(dim=1) * r[0].norm()).clamp_min(1e-300)



@dataclass
class EscapeTimeLaw:
    """Median escape time against the initialization scale, per depth (Proposition 2.2's scaling)."""
    alphas: dict[int, np.ndarray]
    median_times: dict[int, list[float]]
    slopes: dict[int, float]     # L = 2: dT / dlog(1/alpha); L >= 3: log-log slope (exact -(L-2) as alpha -> 0)
    reached: dict[int, float] = None  # median speed of the directions reached at the escape, smallest alpha
    direct: float = math.nan     # L = 2: fraction of initializations with a neuron of positive speed (escape directly)
    median_steps: dict[int, list[float]] = None  # median number of Euler steps until the escape, per alpha
    initial: dict[int, Weights] = None  # the initial directions (norm 1 per layer), per depth, before any training


def time_slope(alphas: np.ndarray, times: list[float], depth: int) -> float:
    """The fitted law of the escape time: ``L = 2``, the slope of ``T`` against ``log(1/alpha)``; ``L >= 3``, the
    log-log slope of ``T`` against ``alpha`` (exact ``-(L-2)`` as ``alpha -> 0``, Proposition 2.2)."""
    alphas, times = np.asarray(alphas, dtype=float), np.asarray(times, dtype=float)
    if depth == 2:
        return float(np.polyfit(np.log(1 / alphas), times, 1)[0])
    return loglog_slope(alphas, times)


def escape_slope(law: EscapeTimeLaw, depth: int, clock: str = "time") -> float:
    """:func:`time_slope` of ``law`` at ``depth`` on the physical time of the flow (``clock="time"``) or on the number
    of Euler steps (``clock="steps"``: the adaptive scheme's step count taken for the time, a wrong measure and the
    control of the slope rows; it grows only like ``log(1/alpha)``)."""
    y = law.median_times[depth] if clock == "time" else law.median_steps[depth]
    return time_slope(law.alphas[depth], y, depth)


def log_law_ratio(law: EscapeTimeLaw, speed: float, rate: float = 1.0) -> float:
    """``L = 2``: the fitted ``dT/dlog(1/alpha)`` over the prediction ``1 / (rate * s)``; 1 for the corrected law
    (``rate = 1``), while the paper's printed rate ``2s`` (``rate = 2``, the control) predicts half the slope."""
    return escape_slope(law, 2) * rate * speed


def direct_start(Ws: Weights, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Per two-layer network (``L = 2``, targets ``Y``, ``G = -Y``): does some neuron start with a positive speed
    ``a_i Tr[Y^T sigma(w_i^T X)] > 0``? Such a neuron grows from the start. A network whose every neuron starts with
    a negative one must first shrink them and turn them around, passing near the saddle at the origin a second time;
    that passage costs time ``O(log(1/alpha))`` as well and steepens the log law (with one neuron, half the runs)."""
    pre = torch.relu(torch.bmm(Ws[0], X.unsqueeze(0).expand(Ws[0].shape[0], *X.shape)))   # (R, n, N)
    contrib = Ws[1][:, 0, :] * (pre * Y[0]).sum(dim=2)                                     # (R, n)
    return (contrib > 0).any(dim=1)


def escape_time_law(X: torch.Tensor, Y: torch.Tensor, alphas: list[float], width: int, inits: int, rel_step: float,
                    generator: torch.Generator, depths: tuple[int, ...] = (2, 3, 4),
                    alphas_l2: tuple[float, ...] = (1e-2, 1e-3, 1e-4), drop: float = 0.1,
                    max_steps: int = 200_000) -> EscapeTimeLaw:
    """Proposition 2.2 from random small initialization: the time until the MSE loss has dropped by ``drop``
    scales as ``alpha^{-(L-2)}`` for ``L >= 3`` and grows like ``log(1/alpha) / s*`` for ``L = 2``.

    The same ``inits`` directions (hidden ``width``) are scaled to every ``alpha``; the median time is fitted.
    """
    al, med, slopes, reached, direct, med_steps, initial = {}, {}, {}, {}, math.nan, {}, {}
    for L in depths:
        al[L] = np.array(alphas_l2) if L == 2 else np.array(alphas)
        dirs = initial[L] = init_sphere(X.shape[0], [width] * (L - 1), Y.shape[0], inits, generator, X.device)
        med[L], med_steps[L] = [], []
        for a in al[L]:
            r = euler_escape([float(a) * w for w in dirs], X, Y, rel_step, drop, max_steps)
            med[L].append(float(r.times.median()))
            med_steps[L].append(float(r.steps_hit.median()))
        hit = torch.isfinite(r.times)
        reached[L] = float(direction_speed([W[hit] for W in r.Ws], X, -Y).median()) if bool(hit.any()) else math.nan
        if L == 2:
            direct = float(direct_start(dirs, X, Y).double().mean())
        slopes[L] = time_slope(al[L], med[L], L)
    return EscapeTimeLaw(al, med, slopes, reached, direct, med_steps, initial)


def basin_speed(Ws: Weights, X: torch.Tensor, G: torch.Tensor, steps: int = 2000, eta: float = 0.05,
                eta_final: float = 1e-6) -> float:
    """``L = 2``, before any training: which escape the initializations ``Ws`` lie in the basin of. At small scale the
    neurons of a two-layer network decouple on ``L0``, and the direction of each follows the gradient flow of its own
    speed on the sphere (the magnitudes only change the clock); the network escapes along the fastest direction its
    neurons reach. Each neuron ``(w_i, a_i)`` of each network is run as a width-1 network through
    :func:`stagewise.escape_speed.ascent.projected_ascent` (small normalized steps, ``eta`` to ``eta_final``, so that
    it stays in its basin and settles there to about 1e-4 relative); returns the median over networks of the best
    speed reached by their neurons (``G = -Y``). It does not model neurons that must turn around first (their output
    weight changes sign): :func:`direct_start` is the companion condition. The first and last layers are used."""
    first, last = Ws[0], Ws[-1]
    R, n, d = first.shape
    neurons = [first.reshape(R * n, 1, d), last.permute(0, 2, 1).reshape(R * n, last.shape[1], 1)]
    res = projected_ascent(neurons, X, G, steps, eta, eta_final)
    return float(res.speeds.reshape(R, n).max(dim=1).values.median())


def escape_scale(speed: float, drop: float = 0.1, y_sq: float = 1.0, depth: int = 3) -> float:
    """Per-layer scale ``u1`` at which the loss has dropped by the fraction ``drop`` along an escape direction of
    speed ``speed``: the loss falls by ``s u^L`` to first order (``f = u^L f_rho``), so ``s u1^L = drop |Y|^2 / 2``."""
    return (drop * y_sq / 2 / speed) ** (1.0 / depth)


def finite_alpha_bias(alphas: list[float], depth: int, speed: float, drop: float = 0.1, y_sq: float = 1.0) -> float:
    """The deviation from ``-(L-2)`` of the log-log slope of the escape time over ``alphas`` that the corrected ODE of
    Proposition 2.2 predicts at finite ``alpha`` (``L >= 3``): ``T(alpha) = (alpha^{2-L} - u1^{2-L}) / ((L-2) s)`` with
    the escape scale ``u1`` of :func:`escape_scale`; ``inf`` when some ``alpha`` is not below ``u1`` (no plateau to
    escape from). An upper bound on the bias of gradient descent from random directions, whose alignment phase adds
    time that scales exactly like ``alpha^{2-L}``."""
    u1 = escape_scale(speed, drop, y_sq, depth)
    a = np.asarray(alphas, dtype=float)
    if a.max() >= u1:
        return math.inf
    T = a ** (2 - depth) - u1 ** (2 - depth)
    return abs(loglog_slope(a, T) + (depth - 2))


def slope_band(alphas: list[float], depth: int, speed: float, half_width: float = 0.15) -> tuple[float, float]:
    """The band of the escape-time slope at ``depth >= 3``: ``-(L-2) -+ half_width``, widened on the steep side by the
    finite-``alpha`` bias of the corrected ODE (:func:`finite_alpha_bias`). The slope of gradient descent lies between
    the two limits: the ODE's finite-``alpha`` slope, and ``-(L-2)`` exactly for the alignment phase. ``(nan, nan)``
    when some ``alpha`` is not below the escape scale (the hypothesis fails: there is no plateau to escape from)."""
    bias = finite_alpha_bias(alphas, depth, speed)
    if not math.isfinite(bias):
        return math.nan, math.nan
    return -(depth - 2) - bias - half_width, -(depth - 2) + half_width


@dataclass
class Alignment:
    """Does gradient descent from small initialization find the optimal escape direction (function space)?"""
    cosine_median: float         # median cosine between f_theta(X) and f_rho*(X)
    speed_ratio_median: float    # median speed of sqrt(L) theta / |theta| over s_hat*
    prop34_gap: float            # max LHS - RHS of Proposition 3.4's inequality on the trained networks
    cosine_init_median: float = float("nan")       # the same cosine for the untrained initializations (control)
    speed_ratio_init_median: float = float("nan")  # the same speed ratio for the untrained initializations (control)
    escaped: float = float("nan")                  # fraction of the runs whose loss dropped (the others: dead or slow)
    trained: Weights = None                        # the networks at the 1% drop
    initial: Weights = None                        # their initializations


def cosine_median(Ws: Weights, optimum: Weights, X: torch.Tensor) -> float:
    """Median over networks of :func:`function_cosine` with the computed optimum (trained networks, or their
    initializations: the control)."""
    return float(function_cosine(Ws, optimum, X).median())


def speed_ratio_median(Ws: Weights, X: torch.Tensor, Y: torch.Tensor, best_speed: float) -> float:
    """Median over networks of the speed of ``sqrt(L) theta / |theta|`` over ``s_hat*`` (``G = -Y``)."""
    return float((direction_speed(Ws, X, -Y) / best_speed).median())


def alignment(X: torch.Tensor, Y: torch.Tensor, optimum: Weights, best_speed: float, depth: int, width: int,
              inits: int, alpha: float, rel_step: float, generator: torch.Generator, drop: float = 0.01,
              max_steps: int = 200_000) -> Alignment:
    """Definition 2.1 and Proposition 3.4 on gradient descent: train ``inits`` networks from scale ``alpha`` until the
    loss has dropped by ``drop`` and compare with the computed optimum ``optimum`` of speed ``best_speed`` (``G = -Y``)."""
    W0 = init_sphere(X.shape[0], [width] * (depth - 1), Y.shape[0], inits, generator, X.device, alpha)
    r = euler_escape(W0, X, Y, rel_step, drop, max_steps)
    cosines = function_cosine(r.Ws, optimum, X)
    ratio = direction_speed(r.Ws, X, -Y) / best_speed
    lhs, rhs = prop34_sides(r.Ws, X, -Y)
    cos0 = function_cosine(W0, optimum, X)
    ratio0 = direction_speed(W0, X, -Y) / best_speed
    return Alignment(float(cosines.median()), float(ratio.median()), float((lhs - rhs).max()),
                     float(cos0.median()), float(ratio0.median()), float(torch.isfinite(r.times).double().mean()),
                     r.Ws, W0)

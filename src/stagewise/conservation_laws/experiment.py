"""Conservation laws of gradient flow in the book's model families (Chapter 1).

For a hidden neuron with a positively homogeneous activation (ReLU, the identity),
scaling its incoming weights by ``c`` and its outgoing weights by ``1/c`` leaves the
network unchanged. Differentiating this symmetry at ``c = 1`` gives
``<theta_in, grad_in> = <theta_out, grad_out>`` and hence, under gradient flow,
``d/dt (||theta_in||^2 - ||theta_out||^2) = 0`` (Du, Hu & Lee 2018, Theorem 2.1).

Every invariant here is a quadratic form ``Q(theta)`` whose associated bilinear form
vanishes on ``(theta, grad L(theta))``. One gradient-descent step therefore changes it
by exactly ``Q(theta - eta g) - Q(theta) = eta^2 Q(g)`` (:func:`one_step_change`).
All tensors carry a leading batch dimension (seeds, step sizes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

Params = list[torch.Tensor]


@dataclass(frozen=True)
class Data:
    """Regression data ``X`` (n, d) and targets ``Y`` (n, k)."""

    X: torch.Tensor
    Y: torch.Tensor


@dataclass(frozen=True)
class Family:
    """A model family: parameter shapes, network output and its quadratic invariants."""

    name: str
    forward: Callable[[Params, torch.Tensor], torch.Tensor]   # (B, n, k)
    invariant: Callable[[Params], torch.Tensor]               # (B, K): one entry per conserved quantity
    shapes: Callable[[int, int, int, int], list[tuple[int, ...]]]  # (d, k, width, depth) -> shapes
    homogeneous: bool = True


def _diagonal_forward(p: Params, X: torch.Tensor) -> torch.Tensor:
    u, v = p
    return torch.einsum("nd,bd->bn", X, u * v)[..., None]


def _diagonal_invariant(p: Params) -> torch.Tensor:
    """``u_i^2 - v_i^2`` (Lemma 4.2 of Boix-Adsera et al. 2023)."""
    u, v = p
    return u**2 - v**2


def _linear_forward(p: Params, X: torch.Tensor) -> torch.Tensor:
    W1, W2 = p
    return X @ W1 @ W2


def _linear_invariant(p: Params) -> torch.Tensor:
    """Entries of ``W1^T W1 - W2 W2^T`` (Lemma 3.2 of Varre et al. 2023)."""
    W1, W2 = p
    gram = W1.transpose(-1, -2) @ W1 - W2 @ W2.transpose(-1, -2)
    return gram.flatten(1)


def _two_layer(activation: Callable[[torch.Tensor], torch.Tensor]):
    def forward(p: Params, X: torch.Tensor) -> torch.Tensor:
        W, a = p  # W: (B, m, d), a: (B, m)
        return torch.einsum("bnm,bm->bn", activation(torch.einsum("nd,bmd->bnm", X, W)), a)[..., None]
    return forward


def _two_layer_invariant(p: Params) -> torch.Tensor:
    """``a_j^2 - ||w_j||^2`` per neuron (Proposition 1 of Town et al. 2026)."""
    W, a = p
    return a**2 - (W**2).sum(-1)


def _deep_relu_forward(p: Params, X: torch.Tensor) -> torch.Tensor:
    h = X.expand(p[0].shape[0], *X.shape)
    for W in p[:-1]:
        h = torch.relu(h @ W.transpose(-1, -2))
    return h @ p[-1].transpose(-1, -2)


def _deep_relu_invariant(p: Params) -> torch.Tensor:
    """Per hidden neuron: squared norm of its incoming row minus its outgoing column."""
    return torch.cat([(W_in**2).sum(-1) - (W_out**2).sum(-2) for W_in, W_out in zip(p[:-1], p[1:])], dim=-1)


FAMILIES: dict[str, Family] = {
    "diagonal": Family(
        "diagonal", _diagonal_forward, _diagonal_invariant, lambda d, k, m, L: [(d,), (d,)]),
    "linear": Family(
        "linear", _linear_forward, _linear_invariant, lambda d, k, m, L: [(d, m), (m, k)]),
    "relu": Family(
        "relu", _two_layer(torch.relu), _two_layer_invariant, lambda d, k, m, L: [(m, d), (m,)]),
    "deep_relu": Family(
        "deep_relu", _deep_relu_forward, _deep_relu_invariant,
        lambda d, k, m, L: [(m, d)] + [(m, m)] * (L - 2) + [(k, m)]),
    "tanh": Family(
        "tanh", _two_layer(torch.tanh), _two_layer_invariant, lambda d, k, m, L: [(m, d), (m,)], homogeneous=False),
}


def make_orthogonal_data(n: int, d: int, k: int, generator: torch.Generator, dtype=torch.float64) -> Data:
    """``n <= d`` orthogonal inputs of norm ``sqrt(d)`` and targets from a random tanh teacher.

    Orthogonal inputs keep the two-layer ReLU flow free of sliding modes: the
    pre-activation ``z_ij = <w_j, x_i>`` obeys ``dz_ij/dt = -a_j r_i 1[z_ij > 0] ||x_i||^2``,
    so once it is negative nothing pushes it back towards the kink.
    """
    if n > d:
        raise ValueError(f"orthogonal inputs need n <= d, got n={n}, d={d}")
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=dtype))
    X = np.sqrt(d) * Q[:n]
    teacher = torch.randn(d, k, generator=generator, dtype=dtype) / np.sqrt(d)
    return Data(X, torch.tanh(X @ teacher) + 0.1 * torch.randn(n, k, generator=generator, dtype=dtype))


def init_params(family: Family, batch: int, d: int, k: int, width: int, depth: int, scale: float,
                generator: torch.Generator, dtype=torch.float64) -> Params:
    """Independent Gaussian entries of standard deviation ``scale / sqrt(fan_in)``."""
    params = []
    for shape in family.shapes(d, k, width, depth):
        fan_in = shape[-1] if len(shape) == 2 else 1
        params.append(scale / np.sqrt(fan_in) * torch.randn(batch, *shape, generator=generator, dtype=dtype))
    return params


def loss(family: Family, params: Params, data: Data) -> torch.Tensor:
    """Per-problem loss ``(1/2n) ||f(X) - Y||_F^2``, shape (B,)."""
    residual = family.forward(params, data.X) - data.Y
    return 0.5 * (residual**2).sum(dim=(-2, -1)) / data.X.shape[0]


def gradients(family: Family, params: Params, data: Data) -> Params:
    params = [p.detach().requires_grad_(True) for p in params]
    return list(torch.autograd.grad(loss(family, params, data).sum(), params))


def one_step_change(family: Family, params: Params, data: Data, eta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Actual change of the invariants in one GD step, and the exact prediction ``eta^2 Q(grad)``.

    For a homogeneous family the two agree up to rounding; for tanh they do not,
    because the first-order term ``-2 eta B(theta, grad)`` no longer vanishes.
    """
    grads = gradients(family, params, data)
    after = [p - eta * g for p, g in zip(params, grads)]
    actual = family.invariant(after) - family.invariant(params)
    return actual, eta**2 * family.invariant(grads)


def diagonal_product_law(u0: torch.Tensor, v0: torch.Tensor, data: Data, eta: float, steps: int
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """Run GD on the diagonal network and return ``u^2 - v^2`` measured and predicted.

    The prediction is ``(u_0^2 - v_0^2) prod_t (1 - eta^2 g_t^2)`` with ``g_t`` the
    gradient in the product ``w = u * v`` at step t (001, Lemma 4.2 and its GD form).
    """
    family = FAMILIES["diagonal"]
    u, v = u0.clone(), v0.clone()
    factor = torch.ones_like(u)
    for _ in range(steps):
        w = (u * v).detach().requires_grad_(True)
        residual = torch.einsum("nd,bd->bn", data.X, w)[..., None] - data.Y
        g = torch.autograd.grad((0.5 * (residual**2).sum() / data.X.shape[0]), w)[0]
        u, v = u - eta * g * v, v - eta * g * u
        factor = factor * (1 - eta**2 * g**2)
    return family.invariant([u, v]), family.invariant([u0, v0]) * factor


def flatten(params: Params) -> torch.Tensor:
    """Concatenate parameters into one (B, P) tensor (for the ODE solver)."""
    return torch.cat([p.reshape(p.shape[0], -1) for p in params], dim=1)


def unflatten(flat: torch.Tensor, like: Params) -> Params:
    out, start = [], 0
    for p in like:
        size = p[0].numel()
        out.append(flat[:, start:start + size].reshape(flat.shape[0], *p.shape[1:]))
        start += size
    return out


def gradient_flow_field(family: Family, like: Params, data: Data) -> Callable[[torch.Tensor], torch.Tensor]:
    """The vector field ``-grad L`` on flattened parameters."""
    def field(flat: torch.Tensor) -> torch.Tensor:
        return -flatten(gradients(family, unflatten(flat, like), data))
    return field


def max_drift(invariants: torch.Tensor) -> torch.Tensor:
    """``max_t max_j |I_j(t) - I_j(0)|`` for records of shape (T, B, K); returns (B,)."""
    return (invariants - invariants[:1]).abs().amax(dim=(0, 2))


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


@dataclass(frozen=True)
class Trajectory:
    """Invariant records: ``invariants[t, e, s, j]`` at ``times[t]`` for step size ``e``, seed ``s``."""

    times: np.ndarray
    invariants: torch.Tensor
    layer_norms: torch.Tensor | None = None  # deep ReLU: ||W_l||_F^2, shape (T, E, S, L)


def gd_drift_study(family: Family, data: Data, params0: Params, etas: list[float], horizon: float,
                   n_records: int = 100, progress=None) -> Trajectory:
    """Gradient descent for every (step size, seed) pair in one batched loop.

    Each step size covers the same gradient-flow time ``horizon``; records invariants
    (and, for deep networks, the squared Frobenius norm of every layer).
    """
    from stagewise.numerics.flows import gradient_descent_batched

    seeds = params0[0].shape[0]
    batched = [p.repeat(len(etas), *([1] * (p.dim() - 1))) for p in params0]
    eta = torch.tensor(etas, dtype=params0[0].dtype, device=params0[0].device).repeat_interleave(seeds)
    n_inv = family.invariant(params0).shape[-1]

    def record(p: Params) -> torch.Tensor:
        norms = torch.stack([(W**2).flatten(1).sum(-1) for W in p], dim=-1)
        return torch.cat([family.invariant(p), norms], dim=-1)

    times, records = gradient_descent_batched(batched, lambda p: loss(family, p, data), eta, horizon,
                                              record, n_records, progress=progress)
    records = records.reshape(len(times), len(etas), seeds, -1)
    return Trajectory(times, records[..., :n_inv], records[..., n_inv:])


def gradient_flow_study(family: Family, data: Data, params0: Params, horizon: float, rtol: float,
                        n_records: int = 100) -> Trajectory:
    """Gradient flow by an adaptive DOP853 solver (all seeds in one system)."""
    from stagewise.numerics.flows import integrate_flow

    times = np.linspace(0.0, horizon, n_records + 1)
    states = integrate_flow(gradient_flow_field(family, params0, data), flatten(params0), times,
                            rtol=rtol, atol=rtol * 1e-2)
    invariants = torch.stack([family.invariant(unflatten(s, params0)) for s in states])
    return Trajectory(times, invariants[:, None])


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the conservation-laws chapter."""
    from stagewise.core.parameters import ParameterError

    if values["n_samples"] > values["input_dim"]:
        raise ParameterError(f"parameter n_samples={values['n_samples']}: orthogonal inputs need "
                             f"n_samples <= input_dim={values['input_dim']}")
    if len(set(values["etas"])) < 3:
        raise ParameterError("parameter etas: at least three distinct step sizes are needed to measure the drift slope")
    steps = values["horizon"] / min(values["etas"])
    if steps > 2_000_000:
        raise ParameterError(f"parameter horizon: horizon / min(etas) = {steps:.3g} steps; allowed at most 2e6 "
                             "(raise the smallest step size or shorten the horizon)")

"""The five model families of the chapter and their quadratic invariants.

For a hidden neuron with a positively homogeneous activation (ReLU, the identity),
scaling its incoming weights by ``c`` and its outgoing weights by ``1/c`` leaves the
network unchanged. Differentiating this symmetry at ``c = 1`` gives
``<theta_in, grad_in> = <theta_out, grad_out>`` and hence, under gradient flow,
``d/dt (||theta_in||^2 - ||theta_out||^2) = 0`` (Theorem "Balancedness",
``prf:thm-conservation-laws-balancedness``; Du, Hu & Lee 2018, Theorem 2.1).

Every invariant here is a quadratic form ``Q(theta)`` whose associated bilinear form
vanishes on ``(theta, grad L(theta))``. All tensors carry a leading batch dimension
(seeds, step sizes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

Params = list[torch.Tensor]


@dataclass(frozen=True)
class Family:
    """A model family: parameter shapes, network output and its quadratic invariants."""

    name: str
    forward: Callable[[Params, torch.Tensor], torch.Tensor]   # (B, n, k)
    invariant: Callable[[Params], torch.Tensor]               # (B, K): one entry per conserved quantity
    shapes: Callable[[int, int, int, int], list[tuple[int, ...]]]  # (d, k, width, depth) -> shapes
    homogeneous: bool = True
    # (B, K): per entry of ``invariant = A - B`` (two sums of squares), the sum ``A + B``: the size that
    # sets the rounding error of the entry, which a difference near zero (a balanced neuron) does not show
    magnitude: Callable[[Params], torch.Tensor] | None = None


def _diagonal_forward(p: Params, X: torch.Tensor) -> torch.Tensor:
    u, v = p
    return torch.einsum("nd,bd->bn", X, u * v)[..., None]


def _diagonal_invariant(p: Params) -> torch.Tensor:
    """``u_i^2 - v_i^2`` (Corollary ``prf:thm-conservation-laws-diagonal``; Lemma 4.2 of Boix-Adsera et al. 2023)."""
    u, v = p
    return u**2 - v**2


def _diagonal_magnitude(p: Params) -> torch.Tensor:
    u, v = p
    return u**2 + v**2


def _linear_forward(p: Params, X: torch.Tensor) -> torch.Tensor:
    W1, W2 = p
    return X @ W1 @ W2


def _linear_invariant(p: Params) -> torch.Tensor:
    """Entries of ``W1^T W1 - W2 W2^T`` (Corollary ``prf:thm-conservation-laws-linear``; Arora, Cohen & Hazan 2018,
    Du, Hu & Lee 2018). Lemma 3.2 of Varre et al. 2023 is its special case from ``I_gamma`` in reduced coordinates,
    ``Z1^T Z1 - Z2 Z2^T = 2 gamma I_d`` (:func:`stagewise.conservation_laws.orthogonal_init.reduced_invariant`)."""
    W1, W2 = p
    gram = W1.transpose(-1, -2) @ W1 - W2 @ W2.transpose(-1, -2)
    return gram.flatten(1)


def _linear_magnitude(p: Params) -> torch.Tensor:
    W1, W2 = p
    return (W1.abs().transpose(-1, -2) @ W1.abs() + W2.abs() @ W2.abs().transpose(-1, -2)).flatten(1)


def _two_layer(activation: Callable[[torch.Tensor], torch.Tensor]):
    def forward(p: Params, X: torch.Tensor) -> torch.Tensor:
        W, a = p  # W: (B, m, d), a: (B, m)
        return torch.einsum("bnm,bm->bn", activation(torch.einsum("nd,bmd->bnm", X, W)), a)[..., None]
    return forward


def _two_layer_invariant(p: Params) -> torch.Tensor:
    """``a_j^2 - ||w_j||^2`` per neuron (Corollary ``prf:thm-conservation-laws-relu``; Proposition 1 of Town et al. 2026)."""
    W, a = p
    return a**2 - (W**2).sum(-1)


def _two_layer_magnitude(p: Params) -> torch.Tensor:
    W, a = p
    return a**2 + (W**2).sum(-1)


def _deep_relu_forward(p: Params, X: torch.Tensor) -> torch.Tensor:
    h = X.expand(p[0].shape[0], *X.shape)
    for W in p[:-1]:
        h = torch.relu(h @ W.transpose(-1, -2))
    return h @ p[-1].transpose(-1, -2)


def _deep_relu_invariant(p: Params) -> torch.Tensor:
    """Per hidden neuron: squared norm of its incoming row minus its outgoing column
    (Corollary ``prf:thm-conservation-laws-deep``)."""
    return torch.cat([(W_in**2).sum(-1) - (W_out**2).sum(-2) for W_in, W_out in zip(p[:-1], p[1:])], dim=-1)


def _deep_relu_magnitude(p: Params) -> torch.Tensor:
    return torch.cat([(W_in**2).sum(-1) + (W_out**2).sum(-2) for W_in, W_out in zip(p[:-1], p[1:])], dim=-1)


FAMILIES: dict[str, Family] = {
    "diagonal": Family(
        "diagonal", _diagonal_forward, _diagonal_invariant, lambda d, k, m, L: [(d,), (d,)],
        magnitude=_diagonal_magnitude),
    "linear": Family(
        "linear", _linear_forward, _linear_invariant, lambda d, k, m, L: [(d, m), (m, k)],
        magnitude=_linear_magnitude),
    "relu": Family(
        "relu", _two_layer(torch.relu), _two_layer_invariant, lambda d, k, m, L: [(m, d), (m,)],
        magnitude=_two_layer_magnitude),
    "deep_relu": Family(
        "deep_relu", _deep_relu_forward, _deep_relu_invariant,
        lambda d, k, m, L: [(m, d)] + [(m, m)] * (L - 2) + [(k, m)], magnitude=_deep_relu_magnitude),
    "tanh": Family(
        "tanh", _two_layer(torch.tanh), _two_layer_invariant, lambda d, k, m, L: [(m, d), (m,)], homogeneous=False,
        magnitude=_two_layer_magnitude),
}
"""The four homogeneous families of the corollaries, and ``tanh``, the counterexample to the theorem."""


def terms_per_entry(params: Params) -> int:
    """A bound on the number of squares summed in one invariant entry (the ``dim`` of its rounding
    error, :func:`stagewise.numerics.roundoff.roundoff`): the longest axis of each tensor, added."""
    return int(sum(max(p.shape[1:], default=1) for p in params))

"""The problems ``(X, G)`` of the escape-speed chapter: inputs as columns and the gradient at zero output.

Example 1 and the circle datasets, Gaussian data, the teacher dataset (squared loss, ``G = -Y``)
and the nearly rank-one inputs of Proposition 3.3.
"""
from __future__ import annotations

import math

import torch

from stagewise.escape_speed.closed_forms import single_neuron_escape


def circle_data(n: int, g: str = "alternating") -> tuple[torch.Tensor, torch.Tensor]:
    """``x_j = (sin 2 pi j/n, cos 2 pi j/n)``, j = 1..n, with ``G_j = (-1)^j`` or ``cos(3 angle_j)``; returns ``(X, G)``.

    The depth study of Proposition 3.2 ("Monotonicity in depth"); the ``cos3`` data has ``s*(2) = 0``.
    """
    j = torch.arange(1, n + 1, dtype=torch.float64)
    ang = 2 * math.pi * j / n
    X = torch.stack([torch.sin(ang), torch.cos(ang)])
    if g == "alternating":
        G = ((-1.0) ** j)[None]
    elif g == "cos3":
        G = torch.cos(3 * ang)[None]
    elif g == "cos2":                    # an even harmonic: a single neuron sees it (the control of s*(2) = 0)
        G = torch.cos(2 * ang)[None]
    else:
        raise ValueError(f"unknown circle gradient '{g}'")
    return X, G


def example1_data() -> tuple[torch.Tensor, torch.Tensor]:
    """Proposition "Example 1" (paper Sec. 4): eight points on the circle with alternating gradient ``G_j = (-1)^j``."""
    return circle_data(8, "alternating")


def gaussian_data(n: int, d: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian inputs ``(d, n)`` scaled by ``1/sqrt(d)`` and a Gaussian scalar gradient ``G`` (scaled by ``1/sqrt(n)``)
    for the depth study of Proposition 3.2; returns ``(X, G)``."""
    X = torch.randn(d, n, generator=generator, dtype=torch.float64) / math.sqrt(d)
    G = torch.randn(1, n, generator=generator, dtype=torch.float64) / math.sqrt(n)
    return X, G


def teacher_data(n: int, d: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian inputs ``(d, n)`` (scaled by ``1/sqrt(d)``) and targets ``Y = sigma(w*^T X)`` of a random
    unit teacher neuron, scaled to ``|Y| = 1``; returns ``(X, Y)``. The MSE cost ``|f - Y|^2/2`` has ``G = -Y``
    (Definition "Localized loss")."""
    X = torch.randn(d, n, generator=generator, dtype=torch.float64) / math.sqrt(d)
    w = torch.randn(d, generator=generator, dtype=torch.float64)
    Y = torch.relu((w / w.norm()) @ X)[None]
    return X, Y / Y.norm()


def interior_teacher(n: int, d: int, generator: torch.Generator, tries: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
    """The first teacher dataset (:func:`teacher_data`) whose best single neuron is an exact, kink-free
    escape direction (see :func:`stagewise.escape_speed.closed_forms.single_neuron_escape`), as Proposition 2.2's
    aligned-flow test needs; returns ``(X, Y)``, deterministic given the generator state."""
    for _ in range(tries):
        X, Y = teacher_data(n, d, generator)
        if single_neuron_escape(X, -Y, 2, 1, generator)[1]:
            return X, Y
    raise RuntimeError(f"no teacher dataset with an interior escape direction in {tries} draws")


def near_rank_one_data(d_in: int, n: int, d_out: int, eps: float, generator: torch.Generator,
                       g_noise: float = 0.3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs ``X = u v^T + E`` of Proposition 3.3 (App. A.5) and a gradient ``G``; returns ``(X, G, u, v)``.

    ``u in R^{d_in}`` and ``v in R^n`` are absolute values of Gaussians (entrywise >= 0) with
    ``|u| = |v| = 1``, and ``E`` is Gaussian rescaled to ``|E|_F = eps``. ``G`` is
    ``-(w v^T + g_noise Z / |Z|_F)`` rescaled to ``|G|_F = 1`` (``w`` a random unit vector, ``Z``
    Gaussian), so that ``|G v|`` is close to 1 and the bound of Prop. 3.3 is not vacuous.
    """
    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    u, v = randn(d_in).abs(), randn(n).abs()
    u, v = u / u.norm(), v / v.norm()
    E = randn(d_in, n)
    w, Z = randn(d_out), randn(d_out, n)
    G = -(torch.outer(w / w.norm(), v) + g_noise * Z / Z.norm())
    return torch.outer(u, v) + eps * E / E.norm(), G / G.norm(), u, v


def random_problem(d_in: int, n: int, d_out: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Standard Gaussian ``X (d_in, n)`` and ``G (d_out, n)``: a generic problem with vector outputs, for the
    identities that hold for every ``(X, G)`` (Lemma "Homogeneity", Propositions 3.2 and 3.4, closed forms)."""
    X = torch.randn(d_in, n, generator=generator, dtype=torch.float64)
    G = torch.randn(d_out, n, generator=generator, dtype=torch.float64)
    return X, G

"""Realistic bugs of the escape-speed chapter's experiment and measurement code (issue 22: the mutation matrix).

Each replacement is installed by ``STAGEWISE_BUG=escape-speed:<name>`` in the chapter's kernel (see
:mod:`stagewise.core.sweep.power`); it receives the original function as ``original`` and says in its docstring what the
slip is and why it is plausible. Every bug must make some theorem row of the chapter fail at default parameters.
"""
from __future__ import annotations

import math

import torch

from stagewise.core.checks.catalogue import Bug
from stagewise.escape_speed.closed_forms import LINEAR_ETA


def looser_linear_target(sv_ratio, eta_final, target, eta=LINEAR_ETA, *, original):
    """The deep linear solver is run to a horizon for a target 1000 times looser (``1e-4`` instead of ``1e-7``): the
    target was edited to match the check's tolerance "in the same units" and lost three digits. Plausible: the
    horizon is derived from a model, and nothing but the solver's final gap shows which target it was derived for."""
    return original(sv_ratio, eta_final, target * 1000, eta)


def half_linear_steps(Ws, X, G, steps, *args, original, **kwargs):
    """The closed-forms solver (deep linear study, single-neuron escape) runs half the stated number of steps:
    ``steps // 2`` slipped in when the geometric schedule was rewritten to count step pairs. Plausible: the schedule
    still ends at ``eta_final``, so the trace looks converged."""
    return original(Ws, X, G, steps // 2, *args, **kwargs)


def circle_with_endpoint(n, g="alternating"):
    """The circle data put the points at ``linspace(0, 2 pi, n)``, endpoint included, instead of ``2 pi j / n``: the
    first and last points coincide and the spacing is ``2 pi / (n - 1)``. Plausible: ``np.linspace`` includes its
    endpoint by default, and the figure of eight points on a circle looks the same."""
    ang = torch.linspace(0, 2 * math.pi, n, dtype=torch.float64)
    j = torch.arange(1, n + 1, dtype=torch.float64)
    X = torch.stack([torch.sin(ang), torch.cos(ang)])
    if g == "alternating":
        G = ((-1.0) ** j)[None]
    elif g == "cos3":
        G = torch.cos(3 * ang)[None]
    elif g == "cos2":
        G = torch.cos(2 * ang)[None]
    else:
        raise ValueError(f"unknown circle gradient '{g}'")
    return X, G


def deepen_sign_flipped(Ws, X, G, k=1, choose="best", *, original):
    """Proposition 3.2's construction ranks the neurons by their contribution computed with ``-G`` (the targets
    ``Y`` in place of the cost's gradient ``G = -Y``), so it keeps the neuron that slows the escape most. Plausible:
    the chapter passes ``G = -Y`` in some places and ``Y`` in others, and the sign is easy to lose."""
    return original(Ws, X, -G, k=k, choose=choose)


def flow_from_unit_norm(Ws0, X, Y, times, localized, rtol=1e-10, atol=1e-14, *, original):
    """Gradient flow along an escape direction starts from ``u0 rho / |rho|`` (the direction normalized to
    ``|theta| = 1``) instead of ``u0 rho`` with ``|rho|^2 = L``: the per-layer initial scale is ``u0 / sqrt(L)``, not
    ``u0``. Plausible: "normalize the direction" usually means unit norm, and Definition 2.1's radius sqrt(L) is easy to
    forget."""
    L = len(Ws0)
    return original([W / math.sqrt(L) for W in Ws0], X, Y, times, localized, rtol, atol)


def flow_initial_states(Ws0, X, Y, times, localized, rtol=1e-10, atol=1e-14, *, original):
    """The flow's states are all unpacked from the initial vector (``unpack(ys[0])`` inside the comprehension over
    ``ys``): the initial weights are reported in place of the evolved ones. Plausible: a one-character slip in a
    list comprehension, and the first state is right."""
    ys = original(Ws0, X, Y, times, localized, rtol, atol)
    return [ys[0] for _ in ys]


def direction_radius_l(Ws, *, original):
    """The direction of a trained network is scaled to ``|rho| = L`` instead of ``|rho|^2 = L`` (Definition 2.1): every
    layer is sqrt(L) too large and the measured speed ``L^{L/2}`` times too large. Plausible: "norm L" and "squared
    norm L" are both written in the paper's text."""
    L = len(Ws)
    return [W * math.sqrt(L) for W in original(Ws)]


def fit_swapped(alphas, times, depth, *, original):
    """The fit of the escape time has its arguments swapped (``alpha`` fitted against ``T``): the slope becomes
    ``1 / slope``. Plausible: ``loglog_slope(x, y)`` and ``np.polyfit(x, y)`` take x first, the chapter's prose says
    "T against alpha", and at ``L = 3`` the swapped slope ``-1/1`` still looks right."""
    return original(times, alphas, depth)


def hidden_widths_off_by_one(d_in, widths, d_out, restarts, generator, device="cpu", scale=1.0, *, original):
    """The small initializations of the gradient-descent experiments get one hidden layer too many (``[w] * L``
    instead of ``[w] * (L - 1)``): every network is one layer deeper than stated. Plausible: the classic off-by-one
    between the number of layers and the number of hidden layers."""
    widths = list(widths)
    return original(d_in, widths + widths[-1:], d_out, restarts, generator, device, scale)


def layer_scale_over_l(Ws, *, original):
    """The per-layer scale of Proposition 2.2 is measured as ``|theta| / L`` instead of ``|theta| / sqrt(L)``.
    Plausible: "per layer" suggests dividing by the number of layers, and ``u`` is only compared with itself in a
    plot."""
    return original(Ws) / math.sqrt(len(Ws))


def euler_on_half_the_data(Ws0, X, Y, rel_step, drop, max_steps, *, original):
    """Gradient descent from small initialization trains on the first half of the samples only (a leftover
    ``X[:, :n // 2]`` from a debugging run); the speeds and times are then read as if the whole data set had been
    trained. Plausible: the tiny data sets train in a second either way, and nothing in the loop reports ``N``."""
    half = max(X.shape[1] // 2, 1)
    return original(Ws0, X[:, :half].contiguous(), Y[:, :half].contiguous(), rel_step, drop, max_steps)


def deep_rank_from_first_layer(W, X, z_from=3, *, original):
    """The "deep layers" of Theorem 3.1 are taken from layer 1 on (``rho_W[0:]`` for ``rho_W[1:]``): the first layer,
    which the optimum uses at rank two, is counted as a deep layer. Plausible: 0- and 1-based layer numbers are mixed
    throughout (``W_1`` is ``Ws[0]``), and the slice looks right either way."""
    from stagewise.escape_speed.layer_measures import layer_diagnostics
    w, z, first = original(W, X, z_from)
    return max(layer_diagnostics(W, X)["rho_W"]), z, first


BUGS = [
    Bug("linear-target-looser", "stagewise.escape_speed.closed_forms:linear_steps", looser_linear_target,
        "looser solver", ci=True),
    Bug("linear-half-steps", "stagewise.escape_speed.closed_forms:projected_ascent", half_linear_steps, "fewer steps"),
    Bug("circle-linspace-endpoint", "stagewise.escape_speed.problems:circle_data", circle_with_endpoint, "off-by-one"),
    Bug("deepen-sign-flipped", "stagewise.escape_speed.deepening:deepen", deepen_sign_flipped, "sign error"),
    Bug("flow-start-unit-norm", "stagewise.escape_speed.explosion:flow", flow_from_unit_norm,
        "wrong initialization scale"),
    Bug("flow-initial-states", "stagewise.escape_speed.explosion:flow", flow_initial_states,
        "initial weights for final"),
    Bug("direction-radius-l", "stagewise.escape_speed.gradient_descent:direction", direction_radius_l,
        "wrong constant or exponent"),
    Bug("escape-fit-swapped", "stagewise.escape_speed.gradient_descent:time_slope", fit_swapped, "swapped arguments"),
    Bug("gd-hidden-widths-off-by-one", "stagewise.escape_speed.gradient_descent:init_sphere", hidden_widths_off_by_one,
        "off-by-one"),
    Bug("layer-scale-over-l", "stagewise.escape_speed.explosion:layer_scale", layer_scale_over_l, "wrong measure"),
    Bug("gd-half-the-data", "stagewise.escape_speed.gradient_descent:euler_escape", euler_on_half_the_data,
        "training on a subset"),
    Bug("deep-rank-from-first-layer", "stagewise.escape_speed.theorem_31:_deep_diag", deep_rank_from_first_layer,
        "off-by-one"),
]

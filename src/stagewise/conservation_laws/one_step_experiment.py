"""The one-step experiment of Proposition ``prf:thm-conservation-laws-one-step``: one gradient-descent step from
the initialization changes each invariant by ``eta^2 Q(g)`` up to rounding (``one_step_experiment``, with the
diagonal product law of Corollary ``prf:thm-conservation-laws-diagonal``), the rows' ratio ``one_step_excess``,
and the control ``one_step_error`` (the same step with the output layer's gradient halved)."""
from __future__ import annotations

from dataclasses import dataclass

from stagewise.conservation_laws.models import terms_per_entry
from stagewise.conservation_laws.one_step_law import diagonal_product_law, one_step_change
from stagewise.conservation_laws.problem import gradients
from stagewise.conservation_laws.problem_set import Problems
from stagewise.numerics.roundoff import roundoff


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


# -- the control: the same measurement on a step that is no gradient step ------------------------------------

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

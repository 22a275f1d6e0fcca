"""Deliberately broken package functions for the conservation-laws mutation test
(``STAGEWISE_MUTATION``, see :mod:`stagewise.core.mutation`)."""


def flipped_one_step_law(family, params, data, eta, original):
    """The one-step closed form with its sign flipped: ``-eta^2 Q(grad)`` instead of ``+eta^2 Q(grad)``."""
    actual, predicted = original(family, params, data, eta)
    return actual, -predicted


"""The exact one-step law of gradient descent (Proposition ``prf:thm-conservation-laws-one-step``).

One gradient-descent step changes a conserved quadratic form by exactly
``Q(theta - eta g) - Q(theta) = -2 eta B(theta, g) + eta^2 Q(g) = eta^2 Q(g)``.
"""
from __future__ import annotations

import torch

from stagewise.conservation_laws.models import FAMILIES, Family, Params
from stagewise.conservation_laws.problem import Data, gradients


def one_step_change(family: Family, params: Params, data: Data, eta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Actual change of the invariants in one GD step, and the exact prediction ``eta^2 Q(grad)``
    (Proposition ``prf:thm-conservation-laws-one-step``); both of shape (B, K).

    For a homogeneous family the two agree up to rounding; for tanh they do not,
    because the first-order term ``-2 eta B(theta, grad)`` no longer vanishes.
    """
    grads = gradients(family, params, data)
    after = [p - eta * g for p, g in zip(params, grads)]
    actual = family.invariant(after) - family.invariant(params)
    return actual, eta**2 * family.invariant(grads)


def diagonal_product_law(u0: torch.Tensor, v0: torch.Tensor, data: Data, eta: float, steps: int
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run ``steps`` GD steps on the diagonal network and return ``u^2 - v^2`` measured and predicted,
    and the largest magnitude ``u^2 + v^2`` along the run (the scale of their rounding errors: an error
    relative to ``|u^2 - v^2|`` itself would blow up at a nearly balanced coordinate).

    The prediction is ``(u_0^2 - v_0^2) prod_t (1 - eta^2 g_t^2)`` with ``g_t`` the
    gradient in the product ``w = u * v`` at step t: the diagonal case of Proposition
    ``prf:thm-conservation-laws-one-step``, derived in the chapter (Lemma 4.2 of Boix-Adsera
    et al. 2023 is the gradient-flow law; neither paper states this step form). Each factor is
    the identity ``(u - eta g v)^2 - (v - eta g u)^2 = (u^2 - v^2)(1 - eta^2 g^2)``, true for
    any ``g``: the chapter shows this as a sanity row.
    """
    family = FAMILIES["diagonal"]
    u, v = u0.clone(), v0.clone()
    factor = torch.ones_like(u)
    magnitude = u**2 + v**2
    for _ in range(steps):
        # the diagonal network at (w, 1) is the linear model <w, x>: its u-gradient is dL/dw
        g = gradients(family, [u * v, torch.ones_like(u)], data)[0]
        u, v = u - eta * g * v, v - eta * g * u
        factor = factor * (1 - eta**2 * g**2)
        magnitude = torch.maximum(magnitude, u**2 + v**2)
    return family.invariant([u, v]), family.invariant([u0, v0]) * factor, magnitude

"""The largest curvature of the loss, ``lambda_max = ||Hess L(theta)||_2``, by batched power iteration.

The drift of Proposition ``prf:thm-conservation-laws-one-step`` is ``eta C_1 (1 + O(eta lambda_max))``
over a fixed horizon: the slope-1 law in the step size holds while ``eta lambda_max`` is small (the
chapter's section "The drift is linear in the step size" derives the bound and the check's window
from it). On a quadratic loss with curvature ``lambda`` the sum ``eta sum_t Q(g_t)`` equals the
gradient-flow integral times ``1 / (1 - eta lambda / 2)`` exactly (:func:`quadratic_model_factor`).
"""
from __future__ import annotations

import numpy as np
import torch

from stagewise.conservation_laws.models import Family, Params
from stagewise.conservation_laws.problem import Data, loss


def _norms(v: Params) -> torch.Tensor:
    return torch.sqrt(sum((x**2).flatten(1).sum(-1) for x in v))


def _scaled(v: Params, c: torch.Tensor) -> Params:
    return [x * c.reshape(-1, *([1] * (x.dim() - 1))) for x in v]


def hessian_norm(family: Family, params: Params, data: Data, generator: torch.Generator,
                 iterations: int = 40) -> torch.Tensor:
    """``||Hess L(theta_b)||_2`` (the largest ``|eigenvalue|``) for every problem ``b`` of the batch, shape (B,).

    Power iteration on Hessian-vector products (double backward through the loss; the problems share no
    parameters, so one product serves the whole batch), from a Gaussian start drawn from ``generator``.
    Each iterate ``||H v||`` with ``||v|| = 1`` is a lower bound on the norm; the largest iterate is
    returned. At a ReLU kink this is the curvature of the piece the autograd convention selects.
    """
    params = [p.detach().requires_grad_(True) for p in params]
    grads = torch.autograd.grad(loss(family, params, data).sum(), params, create_graph=True)
    v = [torch.randn(p.shape, generator=generator, dtype=p.dtype).to(p.device) for p in params]
    v = _scaled(v, 1 / _norms(v))
    best = torch.zeros(params[0].shape[0], dtype=params[0].dtype, device=params[0].device)
    for _ in range(iterations):
        hv = torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)
        size = _norms([h.detach() for h in hv])
        best = torch.maximum(best, size)
        tiny = torch.finfo(size.dtype).tiny
        v = _scaled([h.detach() for h in hv], 1 / size.clamp(min=tiny))
    return best.detach()


def quadratic_model_factor(eta, curvature: float) -> np.ndarray:
    """``eta sum_t Q(g_t) / int Q(grad L) dt`` on a quadratic loss of curvature ``curvature`` run to
    convergence: ``1 / (1 - eta lambda / 2)`` (geometric sum of ``(1 - eta lambda)^(2t)``)."""
    x = np.asarray(eta, float) * float(curvature)
    return 1.0 / (1.0 - x / 2.0)

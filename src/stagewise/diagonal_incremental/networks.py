"""Networks with diagonal weights (Definition 3.1): the reduced loss ``Ltilde(beta)`` and ``g = -grad Ltilde``.

A network with diagonal weights is ``f(x; u, v) = h(x; beta)`` with ``beta = u * v``. Everything the theory
needs is ``Ltilde(beta)`` and ``g(beta) = -grad Ltilde(beta)`` (eq. 4), batched over rows of ``beta`` of shape
``(B, p)``. :class:`DiagonalModel` is the interface; :class:`LinearDiagonal` is the diagonal linear network
(closed-form cases, the correlated example of Lemma D.4). The attention head is in ``attention.py``.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import torch


class DiagonalModel(ABC):
    """A network with diagonal weights (Definition 3.1) seen through ``Ltilde(beta)``, ``beta = u * v``.

    Interface: ``loss(beta) -> (B,)``; ``g`` (eq. 4) and ``hessian`` come from autograd unless overridden."""

    p: int

    @property
    @abstractmethod
    def device(self) -> torch.device:
        """The device of the model's tensors (where ``beta`` must live)."""

    @abstractmethod
    def loss(self, beta: torch.Tensor) -> torch.Tensor:
        """The reduced loss of each row of ``beta``, shape ``(B,)``."""

    def g(self, beta: torch.Tensor) -> torch.Tensor:
        """``g(beta) = -grad_beta Ltilde`` row by row (eq. 4); ``beta`` has shape ``(B, p)``."""
        with torch.enable_grad():
            b = beta.detach().clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(self.loss(b).sum(), b)
        return -grad

    def hessian(self, beta: torch.Tensor) -> torch.Tensor:
        """Hessian of ``Ltilde`` at a single ``beta`` of shape ``(p,)`` (for Assumption 4.4)."""
        return torch.autograd.functional.hessian(lambda x: self.loss(x[None])[0], beta.detach())


@dataclass
class LinearDiagonal(DiagonalModel):
    """Diagonal linear network with population square loss: ``g(beta) = Sigma (beta* - beta)``.

    ``Ltilde = 1/2 (beta - beta*)^T Sigma (beta - beta*)``: the closed form of Algorithm 1 for ``Sigma = I``
    and the correlated example of Lemma D.4 (a coordinate that leaves and re-enters)."""

    sigma: torch.Tensor
    beta_star: torch.Tensor

    def __post_init__(self):
        self.p = int(self.beta_star.numel())

    @property
    def device(self) -> torch.device:
        return self.sigma.device

    def loss(self, beta: torch.Tensor) -> torch.Tensor:
        r = beta - self.beta_star
        return 0.5 * torch.einsum("bi,ij,bj->b", r, self.sigma, r)

    def g(self, beta: torch.Tensor) -> torch.Tensor:
        return (self.beta_star - beta) @ self.sigma.T

    def hessian(self, beta: torch.Tensor) -> torch.Tensor:
        return self.sigma.clone()


def hessian_summary(model: DiagonalModel, beta: np.ndarray, support, device=None) -> tuple[float, float]:
    """``(lambda_min(H_S), ||H||_2)`` for ``H = Hess Ltilde(beta)`` and ``S = support`` (``inf`` for an empty
    support): Assumption 4.4 and the scale of the zero tests of Algorithm 1."""
    dev = device if device is not None else model.device
    H = model.hessian(torch.from_numpy(np.asarray(beta, dtype=float)).to(dev)).detach().cpu().numpy()
    H = 0.5 * (H + H.T)
    h_norm = float(np.abs(np.linalg.eigvalsh(H)).max())
    support = np.asarray(support, dtype=int)
    if support.size == 0:
        return math.inf, h_norm
    return float(np.linalg.eigvalsh(H[np.ix_(support, support)]).min()), h_norm


def restricted_hessian_min(model: DiagonalModel, beta: np.ndarray, device=None, support=None) -> float:
    """Assumption 4.4: smallest eigenvalue of ``Hess Ltilde`` restricted to ``supp(beta)``.

    At a stationary point the Hessian of ``u -> Ltilde(s * u^2)`` on the support is ``D H D`` with
    ``D = diag(2 s u)``, so Assumption 4.4 (strict local minimum) holds iff this is positive.
    ``support`` defaults to the entries of ``beta`` that are exactly zero: Algorithm 1 stores inactive
    coordinates as exact zeros (a set, not a computed float), and passes its support explicitly.
    """
    support = np.flatnonzero(beta) if support is None else np.asarray(support, dtype=int)
    return hessian_summary(model, beta, support, device if device is not None else "cpu")[0]

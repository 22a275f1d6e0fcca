"""Gradient flow from I_gamma: the reduced flow (3.4) and the closed beta-ODE (Lemma C.10 inserted).

The beta-ODE is the gradient-flow reference for non-whitened data (Theorem 3.2, ``thm-linear-riccati-mirror``);
on whitened data :func:`singular_value_trajectories` uses the Riccati closed form instead.
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

from stagewise.linear_riccati import riccati
from stagewise.linear_riccati.data import Problem, is_whitened
from stagewise.linear_riccati.initialization import reduced_init
from stagewise.linear_riccati.parameters import check_gamma
from stagewise.numerics.flows import integrate_flow


def psd_sqrt(A: torch.Tensor) -> torch.Tensor:
    """Square root of a symmetric PSD matrix (batched) through eigh: the (gamma^2 I + beta beta^T)^{1/2} of
    Lemma C.10 (``thm-linear-riccati-invariant``)."""
    w, Q = torch.linalg.eigh(A)
    return (Q * w.clamp_min(0).sqrt()[..., None, :]) @ Q.transpose(-2, -1)


def beta_ode_field(XtX: torch.Tensor, XtY: torch.Tensor, gamma: float, w2_sign: float = -1.0):
    """The closed gradient-flow ODE of beta (derived, section of Theorem 3.2 ``thm-linear-riccati-mirror``;
    Lemma C.10 inserted in beta' = Z1 Z1^T R + R Z2^T Z2):

    beta' = (gamma I + (gamma^2 I + beta beta^T)^{1/2}) R + R (-gamma I + (gamma^2 I + beta^T beta)^{1/2}),
    R = X^T (Y - X beta). Valid for any data; for gamma -> 0 it is Arora et al.'s balanced dynamics.
    ``w2_sign`` = +1 flips the sign of the gamma I on the W2 side: a wrong ODE, the control of the GD -> ODE check."""
    d, k = XtY.shape
    Id = torch.eye(d, dtype=XtY.dtype, device=XtY.device)
    Ik = torch.eye(k, dtype=XtY.dtype, device=XtY.device)

    def field(beta: torch.Tensor) -> torch.Tensor:
        R = XtY - XtX @ beta
        left = gamma * Id + psd_sqrt(gamma ** 2 * Id + beta @ beta.T)
        right = w2_sign * gamma * Ik + psd_sqrt(gamma ** 2 * Ik + beta.T @ beta)
        return left @ R + R @ right
    return field


def beta_flow(XtX: torch.Tensor, XtY: torch.Tensor, gamma: float, times: np.ndarray,
              rtol: float = 1e-10, atol: float = 1e-12, w2_sign: float = -1.0) -> torch.Tensor:
    """Integrate the beta-ODE of :func:`beta_ode_field` from beta(0) = 0 (DOP853): the gradient-flow reference for
    any data (Theorem 3.2, ``thm-linear-riccati-mirror``). Returns beta at ``times``, shape (T, d, k). ``w2_sign``
    as in :func:`beta_ode_field` (+1: the flipped-sign control)."""
    check_gamma(gamma)
    y0 = torch.zeros_like(XtY)
    return integrate_flow(beta_ode_field(XtX, XtY, gamma, w2_sign), y0, times, rtol=rtol, atol=atol)


def z_flow(XtX: torch.Tensor, XtY: torch.Tensor, gamma: float, times: np.ndarray,
           rtol: float = 1e-10, atol: float = 1e-12):
    """Integrate the reduced gradient flow (3.4) of Lemma 3.1 (``thm-linear-riccati-reduction``), Z1' = R Z2^T,
    Z2' = Z1^T R, from Z1 = sqrt(2 gamma) I, Z2 = 0. Returns (Z1 (T, d, d), Z2 (T, d, k)) at ``times``."""
    check_gamma(gamma)
    d, k = XtY.shape
    Z1, Z2 = reduced_init([gamma], d, k, device=XtY.device)

    def field(y: torch.Tensor) -> torch.Tensor:
        Z1, Z2 = y[:, :d], y[:, d:]
        R = XtY - XtX @ Z1 @ Z2
        return torch.cat([R @ Z2.T, Z1.T @ R], dim=1)
    y0 = torch.cat([Z1[0], Z2[0]], dim=1)
    ys = integrate_flow(field, y0, times, rtol=rtol, atol=atol)
    return ys[:, :, :d], ys[:, :, d:]


def singular_value_trajectories(problem: Problem, gamma: float, times: np.ndarray) -> tuple[np.ndarray, str]:
    """Singular values of beta(t) under gradient flow: the Riccati closed form (Theorem C.12,
    ``thm-linear-riccati-closed``) when X is
    whitened, otherwise (with a warning) the numerical beta-ODE. Returns (values (T, k), method)."""
    check_gamma(gamma)
    if is_whitened(problem.X):
        s = torch.linalg.svdvals(problem.beta_star).cpu().numpy()
        return riccati.sigma_beta(s[None, :], gamma, np.asarray(times)[:, None]), "closed form"
    warnings.warn("data are not whitened (X^T X != I): the Riccati closed form does not apply; "
                  "integrating the beta-ODE instead", stacklevel=2)
    betas = beta_flow(problem.XtX, problem.XtY, gamma, np.asarray(times))
    return torch.linalg.svdvals(betas).cpu().numpy(), "ode"


"""The gamma sweep's training horizon from the drawn data (Theorem 3.1, derived): the flow linearized at its limit.

Statement ``thm-linear-riccati-main``: the linear map on residuals at the limit of gradient flow from I_gamma (Lemma
C.10), whose smallest eigenvalue is the final rate and largest the loss curvature (GD's stability), the row rank of
X, and the time T after which GD is predicted within a target of beta_*.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.linear_riccati.data import Problem
from stagewise.numerics.roundoff import is_positive, numerical_rank


@dataclass
class Horizon:
    """Training time of the gamma sweep predicted from the drawn data (``horizon_from_data``): ``T``, the slowest
    predicted final rate ``rate`` (smallest over data sets and gammas), the longest predicted learning time
    ``t_learn`` and the predicted distance ``predicted_err`` to beta_* at ``T`` (largest over the batch). Also the
    smallest numerical row rank of X over the data sets (``rank``; Theorem 3.1 needs n) and the largest loss
    curvature at the limit (``sharpness``, over data sets and gammas: the largest eigenvalue of the loss Hessian
    there, which sets GD's stability, eta * sharpness < 2), and that curvature per (data set, gamma), data set
    major (``sharpness_each``)."""
    T: float
    rate: float
    t_learn: float
    predicted_err: float
    rank: int = 0
    sharpness: float = 0.0
    sharpness_each: np.ndarray = None


def limit_operator(problem: Problem, gamma: float) -> np.ndarray:
    """The linear map r -> X M X^T r + X X^T r N on residuals r = Y - X beta (vectorized, nk x nk) at the limit of
    gradient flow from I_gamma: M = gamma I + (gamma^2 I + beta_* beta_*^T)^{1/2}, N = -gamma I + (gamma^2 I +
    beta_*^T beta_*)^{1/2} (Lemma C.10). It linearizes the flow at its limit (its smallest eigenvalue is the final
    rate) and equals J J^T, J the Jacobian of the residual in (W1, W2), so its largest eigenvalue is the largest
    eigenvalue of the loss Hessian at the limit (the Gauss-Newton part; the rest vanishes with the residual)."""
    X, B = problem.X.cpu().numpy(), problem.beta_star.cpu().numpy()
    U, s, Vh = np.linalg.svd(B, full_matrices=False)
    root = np.sqrt(gamma ** 2 + s ** 2) - gamma
    M = 2 * gamma * np.eye(X.shape[1]) + (U * root) @ U.T
    N = (Vh.T * root) @ Vh
    return np.kron(np.eye(B.shape[1]), X @ M @ X.T) + np.kron(N, X @ X.T)


def limit_spectrum(problem: Problem, gamma: float) -> tuple[float, float, bool]:
    """(smallest eigenvalue, largest eigenvalue, whether the smallest is positive beyond rounding) of
    :func:`limit_operator`. The zero test is scaled to the operator (``roundoff(largest, nk)``): a row-rank
    deficient X gives a smallest eigenvalue of about 1e-17 whose sign depends on the BLAS kernel."""
    L = limit_operator(problem, gamma)
    w = np.linalg.eigvalsh(L)
    lo, hi = float(w[0]), float(w[-1])
    return lo, hi, is_positive(lo, hi, L.shape[0])


def final_rate(problem: Problem, gamma: float) -> float:
    """Rate at which GD from I_gamma approaches beta_* once every mode is learned (Theorem 3.1, derived): the
    residual r = Y - X beta obeys r' = -(X M X^T r + X X^T r N) linearized at the limit (:func:`limit_operator`);
    the rate is the smallest eigenvalue of that linear map. Zero when X is row-rank deficient: an eigenvalue
    within rounding of zero (relative to the largest, see :func:`limit_spectrum`) is returned as 0.0."""
    lo, _, positive = limit_spectrum(problem, gamma)
    return lo if positive else 0.0


def sharpness(problems: list[Problem], gammas) -> float:
    """Largest eigenvalue of the loss Hessian at the limit (:func:`limit_operator`) over data sets and gammas: GD
    at step eta is stable near the limit only for eta * sharpness < 2, and in the first-order regime for a small
    eta * sharpness."""
    return float(max(limit_spectrum(p, float(g))[1] for p in problems for g in np.atleast_1d(gammas)))


def row_rank(problem: Problem) -> int:
    """Numerical row rank of X (Theorem 3.1 needs n): singular values against rounding of the largest
    (:func:`stagewise.numerics.roundoff.numerical_rank`), the same answer for inputs perturbed at rounding level."""
    X = problem.X.cpu().numpy()
    return numerical_rank(np.linalg.svd(X, compute_uv=False), max(X.shape))


def horizon_from_data(problems: list[Problem], gammas, target: float = 1e-10) -> Horizon:
    """Training time after which GD is predicted within ``target`` of beta_* (Theorem 3.1) for every data set and
    gamma: T = max over (data set, gamma) of t_learn + ln(||beta_*||_F / target) / rate, where rate is
    :func:`final_rate` and t_learn = ln(max(sigma_*,1 / gamma, 1)) / (2 lambda_min(X X^T) sigma_*,r) bounds the
    saddle-to-saddle phase (sigma_*,r the smallest nonzero singular value of beta_*): the slowest mode grows from
    gamma like exp(2 lambda_min sigma_*,r t) (the whitened learning time ln(1/gamma)/(2 sigma) with the smallest
    growth rate of the drawn data). Infinite when X is row-rank deficient (an assumption of Theorem 3.1 fails).
    Every zero test is scaled to the problem (:mod:`stagewise.numerics.roundoff`), so the decision does not depend
    on the BLAS kernel."""
    T, rate_min, t_learn_max, rank_min, sharp, each = 0.0, np.inf, 0.0, None, 0.0, []
    for p in problems:
        n, d = p.X.shape
        xs = np.linalg.svd(p.X.cpu().numpy(), compute_uv=False)          # n values, n <= d
        rank = numerical_rank(xs, max(n, d))
        rank_min = rank if rank_min is None else min(rank_min, rank)
        s = torch.linalg.svdvals(p.beta_star).cpu().numpy()
        r = numerical_rank(s, max(p.beta_star.shape))
        bnorm = float(np.linalg.norm(s))
        grows = rank == n and r > 0                                        # lambda_min(X X^T) > 0 and beta_* != 0
        growth = 2 * float(xs[-1]) ** 2 * float(s[r - 1]) if grows else 0.0
        for g in np.asarray(gammas, float):
            lo, hi, positive = limit_spectrum(p, float(g))
            rate = lo if positive else 0.0
            t_learn = np.log(max(s[0] / g, 1.0)) / growth if grows else np.inf
            t_conv = np.log(max(bnorm / target, 1.0)) / rate if positive else np.inf
            T, rate_min, t_learn_max = max(T, t_learn + t_conv), min(rate_min, rate), max(t_learn_max, t_learn)
            sharp = max(sharp, hi)
            each.append(hi)
    return Horizon(float(T), float(rate_min), float(t_learn_max), float(target), int(rank_min or 0), float(sharp),
                   np.array(each))

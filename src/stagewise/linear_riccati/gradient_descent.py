"""Batched gradient descent (2.3)-(2.4) on two-layer linear networks, with optional label noise.

Full width or in the reduced d x d coordinates of Lemma 3.1 (``thm-linear-riccati-reduction``), which
are exact for GD as well; label-noise GD is Section 4 (``thm-linear-riccati-noise``). On CPU the loop
is compiled with numba, otherwise one batched torch computation per step.
"""
from __future__ import annotations

import numba
import numpy as np
import torch

from stagewise.numerics.flows import assert_finite


@numba.njit(cache=True)
def _gd_kernel(XtX, XtY, W1, W2, eta, steps, record_every, Ub, Vb, want_modes, noise):  # pragma: no cover
    """Compiled batched GD loop (CPU). Records W1 W1^T and beta every ``record_every`` steps and at the end,
    and diag(Ub^T beta Vb) at every step when ``want_modes``; adds noise[step, g] to E when noise has
    ``steps`` rows (label noise). Returns the records and the first step at which a recorded W1 W1^T or beta was
    non-finite (-1 if never); that record is kept, so the caller's finiteness check finds it."""
    G, d, m = W1.shape
    k = W2.shape[2]
    n_rec = steps // record_every + 2
    gram = np.zeros((n_rec, G, d, d))
    betas = np.zeros((n_rec, G, d, k))
    modes = np.zeros((steps + 1 if want_modes else 1, G, Vb.shape[1]))
    rec_steps = np.full(n_rec, -1, dtype=np.int64)
    bad = -1
    for g in range(G):
        A, C = W1[g].copy(), W2[g].copy()
        r = 0
        for step in range(steps + 1):
            B = A @ C
            E = XtY[g] - XtX[g] @ B
            if want_modes:
                modes[step, g] = np.diag(Ub.T @ B @ Vb)
            if step % record_every == 0 or step == steps:
                gram[r, g] = A @ A.T
                betas[r, g] = B
                rec_steps[r] = step
                r += 1
                if not (np.isfinite(gram[r - 1, g]).all() and np.isfinite(B).all()):
                    if bad < 0 or step < bad:
                        bad = step
                    break
            if step == steps:
                break
            if noise.shape[0] == steps:
                E = E + noise[step, g]
            A, C = A + eta * (E @ C.T), C + eta * (A.T @ E)
        W1[g], W2[g] = A, C
    return gram, betas, modes, rec_steps, bad


def _expand(M: torch.Tensor, G: int) -> np.ndarray:
    return np.ascontiguousarray(M.expand(G, *M.shape[-2:]).cpu().numpy())


def gd(XtX: torch.Tensor, XtY: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor, eta: float, steps: int,
       record_every: int = 100, basis: tuple[torch.Tensor, torch.Tensor] | None = None,
       label_noise=0.0, X: torch.Tensor | None = None, generator: torch.Generator | None = None,
       compiled: bool | None = None, param: str = "eta") -> dict:
    """Batched gradient descent (2.3)-(2.4), exact in reduced coordinates by Lemma 3.1
    (``thm-linear-riccati-reduction``): W1 += eta E W2^T, W2 += eta W1^T E, E = X^T (Y - X W1 W2).

    Shapes: W1 (G, d, m), W2 (G, m, k); XtX (d, d) or (G, d, d), XtY (d, k) or (G, d, k). With m = d and W1(0) =
    sqrt(2 gamma) I this *is* the reduced system of Lemma 3.1 (exact for GD too, by induction). ``label_noise`` =
    delta (scalar or one per batch element) adds X^T xi, xi ~ delta N(0, I_n), each step (label-noise GD, Section 4,
    ``thm-linear-riccati-noise``; needs X and a CPU ``generator``). ``param`` names the chapter parameter that set
    the step size, for the divergence message. Records every ``record_every`` steps and at the end: time ``t``,
    singular values of W1 (``sv_W1``) and of beta (``sv_beta``), ``beta``; with ``basis`` = (U, V) also ``modes`` =
    diag(U^T beta V) at every step. Returns the final W1, W2 and ``inv`` = W1^T W1 - W2 W2^T. On CPU the loop is
    compiled (numba); otherwise one batched torch computation per step. Stops with DivergenceError naming ``param``.
    """
    G = W1.shape[0]
    device = W1.device
    delta = torch.as_tensor(np.broadcast_to(np.asarray(label_noise, float), (G,)).copy())[:, None, None]
    label_noise = bool((delta != 0).any())
    if compiled is None:                     # the compiled loop keeps d x d records: small problems on CPU only
        compiled = device.type == "cpu" and W1.shape[1] <= 64
    if compiled:
        if label_noise:
            xi = torch.randn(steps, G, X.shape[0], W2.shape[-1], generator=generator, dtype=torch.float64)
            noise = np.ascontiguousarray((X.cpu().T @ (xi * delta)).cpu().numpy())
        else:
            noise = np.zeros((1, 1, 1, 1))
        A, C = W1.cpu().numpy().copy(), W2.cpu().numpy().copy()
        Ub = basis[0].cpu().numpy() if basis is not None else np.zeros((1, 1))
        Vb = basis[1].cpu().numpy() if basis is not None else np.zeros((1, 1))
        gram, betas, modes, rec, bad = _gd_kernel(_expand(XtX, G), _expand(XtY, G), A, C, float(eta), int(steps),
                                                  int(record_every), np.ascontiguousarray(Ub),
                                                  np.ascontiguousarray(Vb), basis is not None, noise)
        if bad >= 0:
            assert_finite(param, eta, int(bad), torch.from_numpy(gram), torch.from_numpy(betas))
        keep = rec >= 0
        gram_t, beta_t = torch.from_numpy(gram[keep]), torch.from_numpy(betas[keep])
        W1, W2 = torch.from_numpy(A).to(device), torch.from_numpy(C).to(device)
        out = {"t": rec[keep] * eta, "beta": beta_t}
        if basis is not None:
            out["modes"] = modes
    else:
        grams, bs, modes = [], [], []
        n_noise = X.shape[0] if label_noise else 0
        chunk = 1000
        for step in range(steps + 1):
            B = W1 @ W2
            E = XtY - XtX @ B
            if basis is not None:
                modes.append(torch.diagonal(basis[0].T @ B @ basis[1], dim1=-2, dim2=-1))
            if step % record_every == 0 or step == steps:
                gram = W1 @ W1.transpose(-2, -1)
                assert_finite(param, eta, step, W1, W2, gram, B)
                grams.append(torch.linalg.eigvalsh(gram).flip(-1).clamp_min(0).sqrt().cpu())
                bs.append(B.cpu())
            if step == steps:
                break
            if label_noise:
                if step % chunk == 0:
                    xi = torch.randn(chunk, G, n_noise, W2.shape[-1], generator=generator,
                                     dtype=torch.float64).to(device) * delta.to(device)
                E = E + X.T @ xi[step % chunk]
            W1, W2 = W1 + eta * E @ W2.transpose(-2, -1), W2 + eta * W1.transpose(-2, -1) @ E
        n_rec = len(grams)
        t = np.arange(0, steps + 1, record_every) * eta
        t = np.append(t, steps * eta) if len(t) < n_rec else t
        beta_t = torch.stack(bs)
        out = {"t": t, "beta": beta_t, "sv_W1": torch.stack(grams).cpu().numpy()}
        if basis is not None:
            out["modes"] = torch.stack(modes).cpu().numpy()
    if compiled:
        out["sv_W1"] = torch.linalg.eigvalsh(gram_t).flip(-1).clamp_min(0).sqrt().cpu().numpy()
    out["sv_beta"] = torch.linalg.svdvals(beta_t).cpu().numpy()
    out["beta"] = beta_t.cpu().numpy()
    out["W1"], out["W2"] = W1, W2
    out["inv"] = W1.transpose(-2, -1) @ W1 - W2 @ W2.transpose(-2, -1)
    return out


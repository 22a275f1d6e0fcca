"""Two-layer linear networks from the I_gamma initialization (Varre et al. 2023, Sections 2-3).

Data, initializations, batched gradient descent (full width or in the reduced d x d
coordinates Z1 = W1 P^T, Z2 = P W2 of Lemma 3.1, which are exact for GD as well), the
closed beta-ODE used as the gradient-flow reference for non-whitened data, and the
chapter's cross-parameter validator. The closed forms live in :mod:`stagewise.linear_theory`.

Conventions: the data are rescaled once, (X, Y) <- (X, Y) / sqrt(n), so the loss is
1/2 ||X W1 W2 - Y||_F^2 and GD time is t = eta * (number of steps).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import torch

from stagewise.core.parameters import ParameterError
from stagewise.numerics.flows import DivergenceError, assert_finite, integrate_flow


# ----------------------------------------------------------------------------- validator
def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the linear-riccati chapter (one-line ParameterError)."""
    v = values
    if "n" in v and "d" in v and v["n"] > v["d"]:
        raise ParameterError(f"parameter n: n={v['n']} exceeds d={v['d']}; allowed: n <= d (overparametrized, "
                             "interpolators exist)")
    if "k" in v and "d" in v and v["k"] > v["d"]:
        raise ParameterError(f"parameter k: k={v['k']} exceeds d={v['d']}; allowed: k <= d")
    if "width" in v and "d" in v and v["width"] < v["d"]:
        raise ParameterError(f"parameter width: width={v['width']} is below d={v['d']}; allowed: width >= d "
                             "(P needs orthonormal rows)")
    if "k_white" in v and "d_white" in v and v["k_white"] > v["d_white"]:
        raise ParameterError(f"parameter k_white: k_white={v['k_white']} exceeds d_white={v['d_white']}; "
                             "allowed: k_white <= d_white")
    if v.get("k_white", 1) > 1 and "sigma_min" in v and "sigma_max" in v and not v["sigma_min"] < v["sigma_max"]:
        raise ParameterError(f"parameter sigma_min: sigma_min={v['sigma_min']} must be below sigma_max="
                             f"{v['sigma_max']}; allowed: sigma_min < sigma_max (distinct singular values)")
    if "gamma_min" in v and "gamma_max" in v and not v["gamma_min"] < v["gamma_max"]:
        raise ParameterError(f"parameter gamma_min: gamma_min={v['gamma_min']} must be below gamma_max="
                             f"{v['gamma_max']}; allowed: gamma_min < gamma_max")
    for name in ("gammas_white",):
        if name in v and len(v[name]) == 0:
            raise ParameterError(f"parameter {name}: empty list; allowed: at least one value > 0")


def check_gamma(gamma) -> None:
    """gamma must be positive: gamma = 0 is a saddle (W1 = W2 = 0 never moves) and gamma < 0 is undefined."""
    g = np.atleast_1d(np.asarray(gamma, dtype=float))
    if not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ParameterError(f"parameter gamma: {g[(~np.isfinite(g)) | (g <= 0)][0]!r} is out of range; "
                             "allowed: gamma > 0 (the I_gamma initialization needs W1(0) = sqrt(2 gamma) P)")


# ----------------------------------------------------------------------------- data
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
    """Fig. 1a data: Gaussian X (n x d), labels Y = X beta_gt with beta_gt ~ N(0, 10/d) (= N(0,1) at d=10),
    both rescaled by 1/sqrt(n). beta_* = X^+ Y differs from beta_gt when d > n (erratum 3 of the note)."""
    X = torch.randn(n, d, generator=generator, dtype=torch.float64)
    beta_gt = torch.randn(d, k, generator=generator, dtype=torch.float64) * math.sqrt(10.0 / d)
    X, Y = X / math.sqrt(n), X @ beta_gt / math.sqrt(n)
    beta_star = torch.linalg.pinv(X) @ Y
    return Problem(*(t.to(device) for t in (X, Y, beta_star, beta_gt)))


def random_orthogonal(rows: int, cols: int, generator: torch.Generator) -> torch.Tensor:
    """A rows x cols matrix with orthonormal rows (rows <= cols) or columns, from QR of a Gaussian (CPU)."""
    A = torch.randn(max(rows, cols), min(rows, cols), generator=generator, dtype=torch.float64)
    Q, R = torch.linalg.qr(A)
    Q = Q * torch.sign(torch.diagonal(R))
    return Q.T if rows < cols else Q


def make_whitened(d: int, sigma_star, generator: torch.Generator, device="cpu"):
    """Whitened data X^T X = I_d (so n = d) with beta_* = U diag(sigma_star) V^T.

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


def orthogonal_init(gammas, d: int, width: int, generator: torch.Generator, k: int, device="cpu"):
    """I_gamma (Section 2): W1(0) = sqrt(2 gamma) P with P P^T = I_d, W2(0) = 0, batched over gammas.

    Returns W1 (G, d, width), W2 (G, width, k) and P (d x width), the same P for every gamma."""
    check_gamma(gammas)
    g = torch.as_tensor(np.asarray(gammas, dtype=float), dtype=torch.float64)
    P = random_orthogonal(d, width, generator)
    W1 = torch.sqrt(2 * g)[:, None, None] * P[None]
    W2 = torch.zeros(len(g), width, k, dtype=torch.float64)
    return W1.to(device), W2.to(device), P.to(device)


def reduced_init(gammas, d: int, k: int, device="cpu"):
    """Lemma 3.1: Z1(0) = sqrt(2 gamma) I_d, Z2(0) = 0 (batched over gammas)."""
    check_gamma(gammas)
    g = torch.as_tensor(np.asarray(gammas, dtype=float), dtype=torch.float64, device=device)
    Z1 = torch.sqrt(2 * g)[:, None, None] * torch.eye(d, dtype=torch.float64, device=device)
    return Z1, torch.zeros(len(g), d, k, dtype=torch.float64, device=device)


def gaussian_init(var_w1, var_w2, d: int, width: int, k: int, generator: torch.Generator, device="cpu"):
    """Gaussian initialization (Fig. 1a right, Fig. 4), batched over pairs of variances.

    gamma_eff = var_w1 * width / 2, since W1 W1^T ~ var_w1 * width * I_d for width >> d."""
    v1 = torch.as_tensor(np.asarray(var_w1, dtype=float), dtype=torch.float64)
    v2 = torch.as_tensor(np.asarray(var_w2, dtype=float), dtype=torch.float64)
    W1 = torch.randn(len(v1), d, width, generator=generator, dtype=torch.float64) * v1.sqrt()[:, None, None]
    W2 = torch.randn(len(v2), width, k, generator=generator, dtype=torch.float64) * v2.sqrt()[:, None, None]
    return W1.to(device), W2.to(device), (v1 * width / 2).numpy()


# ----------------------------------------------------------------------------- gradient descent
@numba.njit(cache=True)
def _gd_kernel(XtX, XtY, W1, W2, eta, steps, record_every, Ub, Vb, want_modes, noise):  # pragma: no cover
    """Compiled batched GD loop (CPU). Records W1 W1^T and beta every ``record_every`` steps and at the end,
    and diag(Ub^T beta Vb) at every step when ``want_modes``; adds noise[step, g] to E when noise has
    ``steps`` rows (label noise). Returns the records and the step at which it went non-finite (-1 if never)."""
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
                if not np.isfinite(gram[r - 1, g]).all() or np.abs(A).max() > 1e100:
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
    """Batched gradient descent (2.3)-(2.4): W1 += eta E W2^T, W2 += eta W1^T E, E = X^T (Y - X W1 W2).

    Shapes: W1 (G, d, m), W2 (G, m, k); XtX (d, d) or (G, d, d), XtY (d, k) or (G, d, k). With m = d and
    W1(0) = sqrt(2 gamma) I this *is* the reduced system of Lemma 3.1 (exact for GD too, by induction).
    ``label_noise`` = delta (scalar or one per batch element) adds X^T xi, xi ~ delta N(0, I_n), each step
    (label-noise GD, Section 4; needs X and a CPU ``generator``). ``param`` names the chapter parameter that set
    the step size, for the divergence message.
    Records every ``record_every`` steps and at the end: time ``t``, singular values of W1 (``sv_W1``) and of
    beta (``sv_beta``), ``beta``; with ``basis`` = (U, V) also ``modes`` = diag(U^T beta V) at every step.
    Returns the final W1, W2 and ``inv`` = W1^T W1 - W2 W2^T. On CPU the loop is compiled
    (numba); otherwise one batched torch computation per step. Stops with DivergenceError naming eta.
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
            noise = np.ascontiguousarray((X.cpu().T @ (xi * delta)).numpy())
        else:
            noise = np.zeros((1, 1, 1, 1))
        A, C = W1.cpu().numpy().copy(), W2.cpu().numpy().copy()
        Ub = basis[0].cpu().numpy() if basis is not None else np.zeros((1, 1))
        Vb = basis[1].cpu().numpy() if basis is not None else np.zeros((1, 1))
        gram, betas, modes, rec, bad = _gd_kernel(_expand(XtX, G), _expand(XtY, G), A, C, float(eta), int(steps),
                                                  int(record_every), np.ascontiguousarray(Ub),
                                                  np.ascontiguousarray(Vb), basis is not None, noise)
        if bad >= 0:
            raise DivergenceError(f"parameter {param}={eta}: training diverged (NaN/overflow) at step {bad}; lower it")
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
                assert_finite(param, eta, step, W1, W2)
                if float(W1.abs().max()) > 1e100:
                    raise DivergenceError(f"parameter {param}={eta}: training diverged (overflow) at step {step}; "
                                          "lower it")
                grams.append(torch.linalg.eigvalsh(W1 @ W1.transpose(-2, -1)).flip(-1).clamp_min(0).sqrt().cpu())
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
        out = {"t": t, "beta": beta_t, "sv_W1": torch.stack(grams).numpy()}
        if basis is not None:
            out["modes"] = torch.stack(modes).cpu().numpy()
    if compiled:
        out["sv_W1"] = torch.linalg.eigvalsh(gram_t).flip(-1).clamp_min(0).sqrt().numpy()
    out["sv_beta"] = torch.linalg.svdvals(beta_t).numpy()
    out["beta"] = beta_t.numpy()
    out["W1"], out["W2"] = W1, W2
    out["inv"] = W1.transpose(-2, -1) @ W1 - W2 @ W2.transpose(-2, -1)
    return out


def gd_reference_loop(XtX: np.ndarray, XtY: np.ndarray, gamma: float, eta: float, steps: int) -> np.ndarray:
    """Plain per-step, per-gamma NumPy reference of reduced GD (for the benchmark); returns beta."""
    d, k = XtY.shape
    Z1, Z2 = math.sqrt(2 * gamma) * np.eye(d), np.zeros((d, k))
    for _ in range(steps):
        E = XtY - XtX @ (Z1 @ Z2)
        Z1, Z2 = Z1 + eta * E @ Z2.T, Z2 + eta * Z1.T @ E
    return Z1 @ Z2


# ----------------------------------------------------------------------------- gradient flow
def psd_sqrt(A: torch.Tensor) -> torch.Tensor:
    """Square root of a symmetric PSD matrix (batched) through eigh."""
    w, Q = torch.linalg.eigh(A)
    return (Q * w.clamp_min(0).sqrt()[..., None, :]) @ Q.transpose(-2, -1)


def beta_ode_field(XtX: torch.Tensor, XtY: torch.Tensor, gamma: float):
    """The closed gradient-flow ODE of beta (Lemma C.10 inserted in beta' = Z1 Z1^T R + R Z2^T Z2):

    beta' = (gamma I + (gamma^2 I + beta beta^T)^{1/2}) R + R (-gamma I + (gamma^2 I + beta^T beta)^{1/2}),
    R = X^T (Y - X beta). Valid for any data; for gamma -> 0 it is Arora et al.'s balanced dynamics."""
    d, k = XtY.shape
    Id = torch.eye(d, dtype=XtY.dtype, device=XtY.device)
    Ik = torch.eye(k, dtype=XtY.dtype, device=XtY.device)

    def field(beta: torch.Tensor) -> torch.Tensor:
        R = XtY - XtX @ beta
        left = gamma * Id + psd_sqrt(gamma ** 2 * Id + beta @ beta.T)
        right = -gamma * Ik + psd_sqrt(gamma ** 2 * Ik + beta.T @ beta)
        return left @ R + R @ right
    return field


def beta_flow(XtX: torch.Tensor, XtY: torch.Tensor, gamma: float, times: np.ndarray,
              rtol: float = 1e-10, atol: float = 1e-12) -> torch.Tensor:
    """Integrate the beta-ODE from beta(0) = 0 (DOP853): the gradient-flow reference for any data."""
    check_gamma(gamma)
    y0 = torch.zeros_like(XtY)
    return integrate_flow(beta_ode_field(XtX, XtY, gamma), y0, times, rtol=rtol, atol=atol)


def z_flow(XtX: torch.Tensor, XtY: torch.Tensor, gamma: float, times: np.ndarray,
           rtol: float = 1e-10, atol: float = 1e-12):
    """Integrate the reduced gradient flow (3.4), Z1' = R Z2^T, Z2' = Z1^T R, from Z1 = sqrt(2 gamma) I, Z2 = 0."""
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
    """Singular values of beta(t) under gradient flow: the Riccati closed form (Theorem C.12) when X is
    whitened, otherwise (with a warning) the numerical beta-ODE. Returns (values (T, k), method)."""
    from stagewise.linear_riccati import closed_forms as th
    import warnings
    check_gamma(gamma)
    if is_whitened(problem.X):
        s = torch.linalg.svdvals(problem.beta_star).cpu().numpy()
        return th.sigma_beta(s[None, :], gamma, np.asarray(times)[:, None]), "closed form"
    warnings.warn("data are not whitened (X^T X != I): the Riccati closed form does not apply; "
                  "integrating the beta-ODE instead", stacklevel=2)
    betas = beta_flow(problem.XtX, problem.XtY, gamma, np.asarray(times))
    return torch.linalg.svdvals(betas).cpu().numpy(), "ode"

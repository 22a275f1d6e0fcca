"""Closed forms of the optimal escape speed and explicit escape directions.

Proposition "Closed forms" (one linear layer, deep linear nets, shallow ReLU nets, rank-one
nets) and Example 1 (paper Sec. 4: Eq. (6) and the rank-two construction of Eq. (2)).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.escape_speed.ascent import projected_ascent
from stagewise.escape_speed.network import Weights, init_sphere, speed
from stagewise.numerics.roundoff import is_positive, roundoff

HINGE_MARGIN = 1e-9   # a data point closer than 1e-9 |x|_max to a neuron's hinge is on it (relative to the data)


def rank_one_speed_eq6(phi: np.ndarray, period: float = np.pi / 4) -> np.ndarray:
    """Proposition "Example 1" (a), paper Eq. (6): best rank-one speed of Example 1 at first-layer angle ``phi``.

    ``period`` is the ``pi/4`` of ``xi = phi mod pi/4``; another value gives a wrong closed form (a control)."""
    xi = np.mod(phi, period)
    return np.abs(np.cos(xi + np.pi / 4) - np.cos(xi) + np.cos(xi - np.pi / 4) - np.cos(xi - np.pi / 2))


def neuron_speed(phi: np.ndarray, X: torch.Tensor, G: torch.Tensor) -> np.ndarray:
    """Speed ``|G sigma(X^T w)|`` of one neuron ``w = (cos phi, sin phi)`` with unit output weight.

    Proposition "Closed forms" (iii)-(iv): for ``L = 2`` its maximum over ``phi`` is ``s*(2)``
    (single-neuron optimality); at any depth it is the best speed of networks whose layers are
    all rank one. Needs ``d_in = 2``; returns one speed per angle.
    """
    W = np.stack([np.cos(phi), np.sin(phi)], axis=1)                # (P, 2)
    act = np.maximum(W @ X.cpu().numpy(), 0.0)                       # (P, N)
    return np.linalg.norm(act @ G.cpu().numpy().T, axis=1)          # (P,)


def shallow_speed(X: torch.Tensor, G: torch.Tensor, n_angles: int = 200_000, hinges: bool = True) -> tuple[float, float]:
    """Proposition "Closed forms" (iii): ``s*(2) = max_{|w|=1} |G sigma(X^T w)|`` by a 1-D angle search
    (``d_in = 2``); returns ``(speed, angle)``.

    The maximum sits on a cusp where a data point lies on the hinge, so the candidate hinge
    angles (``w`` orthogonal to a data point) are added to the uniform grid and evaluated exactly.
    ``hinges=False`` searches the uniform grid alone (a control: it misses the cusps by the grid spacing).
    """
    if X.shape[0] != 2:
        raise ValueError("shallow_speed: the angle search needs d_in = 2")
    phi = np.linspace(0, 2 * np.pi, n_angles, endpoint=False)
    xa = np.arctan2(X[1].cpu().numpy(), X[0].cpu().numpy())
    if hinges:
        cusp = np.concatenate([xa + np.pi / 2, xa - np.pi / 2])       # w orthogonal to a data point
        phi = np.concatenate([phi, np.mod(cusp, 2 * np.pi)])
    sp = neuron_speed(phi, X, G)
    i = int(np.argmax(sp))
    return float(sp[i]), float(phi[i])


def shallow_escape_speed(X: torch.Tensor, G: torch.Tensor) -> float:
    """``s*(2)`` of :func:`shallow_speed` alone (the speed, not the angle)."""
    return shallow_speed(X, G)[0]


def linear_speed(X: torch.Tensor, G: torch.Tensor) -> float:
    """Proposition "Closed forms" (ii), deep linear networks (``L >= 2``): ``s*_lin = sigma_max(G X^T)``."""
    return float(torch.linalg.matrix_norm(G @ X.T, ord=2))


def one_layer_speed(X: torch.Tensor, G: torch.Tensor) -> float:
    """Proposition "Closed forms" (i), a single linear layer (``L = 1``): ``s = |G X^T|_F``."""
    return float(torch.linalg.matrix_norm(G @ X.T))


def rank_one_chain(first_row: torch.Tensor, last_column: torch.Tensor, depth: int, width: int) -> Weights:
    """A chain of rank-one layers through neuron 1 (Proposition "Closed forms" (ii), (iv)); a batch of one.

    ``W_1 = e1 first_row^T``, ``depth - 2`` identity-like layers ``e1 e1^T`` and ``W_L = last_column e1^T``;
    hidden ``width``. With unit vectors ``first_row`` and ``last_column`` every layer has ``|W_l|_F = 1``.
    """
    opts = dict(dtype=first_row.dtype, device=first_row.device)
    Ws = [torch.zeros(1, width, first_row.shape[0], **opts)]
    Ws[0][0, 0] = first_row
    for _ in range(depth - 2):
        E = torch.zeros(1, width, width, **opts)
        E[0, 0, 0] = 1.0
        Ws.append(E)
    WL = torch.zeros(1, last_column.shape[0], width, **opts)
    WL[0, :, 0] = last_column
    Ws.append(WL)
    return Ws


def linear_chain(X: torch.Tensor, G: torch.Tensor, depth: int, width: int) -> Weights:
    """Proposition "Closed forms" (ii): the balanced rank-one chain along the top singular pair of ``-G X^T``.

    Every layer has ``|W_l|_F = 1``; with the identity activation its speed is ``sigma_max(G X^T)``.
    A batch of one, on the device of ``X``.
    """
    U, S, Vh = torch.linalg.svd(-(G @ X.T))
    return rank_one_chain(Vh[0], U[:, 0], depth, width)


def rank_two_construction(sign: float = -1.0) -> Weights:
    """Proposition "Example 1" (b), paper Eq. (2): ``f(x) = sign * sigma(|x1| - |x2|) / 4`` with speed 1/2, all ``|W_l|_F = 1``.

    ``sign = -1`` matches ``G_j = (-1)^j`` (the paper's ``W_3 = [1]`` matches ``G = -(-1)^j``).
    """
    W1 = 0.5 * torch.tensor([[1.0, 0], [0, 1], [-1, 0], [0, -1]], dtype=torch.float64)
    W2 = 0.5 * torch.tensor([[1.0, -1, 1, -1]], dtype=torch.float64)
    W3 = torch.tensor([[sign]], dtype=torch.float64)
    return [W1[None], W2[None], W3[None]]


def single_neuron_escape(X: torch.Tensor, G: torch.Tensor, depth: int, width: int, generator: torch.Generator,
                         restarts: int = 32, steps: int = 400) -> tuple[Weights, bool]:
    """The best single-neuron chain as an escape direction; returns (weights, exact).

    A batched ascent over one neuron (``L = 2``, width 1) finds the best angle; then the
    neuron is polished to ``w = -a sum_{j active} g_j x_j`` normalized (``a`` the sign of the
    output weight), the optimum inside its
    activation region, and identity layers ``e1 e1^T`` are stacked. ``exact`` is True when
    the polished neuron has the same active set and no data point within ``1e-9 max_j |x_j|`` of its
    hinge: the result is then a true critical point on the sphere (KKT residual at rounding
    level), which is what the aligned-flow test of Proposition 2.2 needs (Proposition "Closed forms"
    (iii): a single neuron is optimal at ``L = 2``). Scalar output only; a batch of one.
    """
    res = projected_ascent(init_sphere(X.shape[0], [1], 1, restarts, generator, X.device), X, G, steps, 0.1, 1e-5)
    (W1, W2), _ = res.best()
    w, a = W1[0, 0], float(torch.sign(W2[0, 0, 0]))
    act = (w @ X > 0).to(X.dtype)
    v = -a * (X @ (G[0] * act))
    exact = False
    x_max = float(X.norm(dim=0).max())                       # the largest input: the scale of v^T x
    if is_positive(float(v.norm()), x_max * float(G.norm()), X.shape[1]):
        v = v / v.norm()
        pre = v @ X
        exact = bool(torch.equal((pre > 0).to(X.dtype), act)) and float(pre.abs().min()) > HINGE_MARGIN * x_max
        if exact:
            w = v
    return rank_one_chain(w, torch.tensor([a], dtype=X.dtype, device=X.device), depth, width), exact


@dataclass
class LinearStudy:
    """Proposition "Closed forms" (ii) tested: the closed form, the solver's gap to it, the chain's gap."""
    closed_form: float           # sigma_max(G X^T)
    solver_gap: float            # max over depths of |s_hat / sigma_max - 1|, identity activation
    chain_gap: float             # |speed of the rank-one chain - sigma_max|
    frobenius_gap: float = float("nan")  # max over depths of |s_hat / |G X^T|_F - 1|: the one-layer law (control)
    sv_ratio: float = float("nan")       # sigma_2 / sigma_1 of G X^T (a small gap slows the solver)
    steps: int = 0                       # solver steps used (the horizon of linear_steps)
    speeds: list = None                  # best solver speed per depth (nan when the solver was not run)


def closed_form_gap(study: LinearStudy, law, X: torch.Tensor, G: torch.Tensor) -> float:
    """``max over depths |s_hat / law(X, G) - 1|`` for the solver speeds of a :class:`LinearStudy`: ``law`` is
    :func:`linear_speed` (``sigma_max``, Proposition "Closed forms" (ii)) or a wrong closed form such as
    :func:`one_layer_speed` (``|G X^T|_F``, the control)."""
    target = law(X, G)
    return max(abs(s / target - 1) for s in study.speeds) if study.speeds else math.nan


LINEAR_ETA = 1.0        # first step of the deep linear study: the problem is smooth, no cusps to settle on
LINEAR_RATE = 0.5       # measured: the relative gap decays like exp(-0.5 (1 - sigma_2/sigma_1) sum_t eta_t) (L <= 5)
LINEAR_PREFACTOR = 0.1  # measured: ... times at most 0.1 (1 - sigma_2/sigma_1)
LINEAR_MAX_STEPS = 50_000


def linear_steps(sv_ratio: float, eta_final: float, target: float, eta: float = LINEAR_ETA) -> int:
    """Solver steps for the deep linear closed form, derived from the spectrum of ``G X^T``: the horizon at which
    the relative gap ``1 - s_hat / sigma_max`` falls below ``target``.

    With the identity activation the speed is smooth and projected ascent converges to the top singular pair like
    power iteration: the relative gap decays like ``0.1 g exp(-0.5 g S)`` with ``g = 1 - sigma_2/sigma_1`` and
    ``S = sum_t eta_t`` the total step length (measured at depths 2-5 over four schedules, seed 1, ``g = 0.11``). A
    small ``g`` slows the decay but also shrinks the gap (a direction between the two top pairs is nearly as fast).
    ``S`` of the geometric schedule from ``eta`` to ``eta_final`` over ``T`` steps is ``T (eta - eta_final) /
    log(eta / eta_final)``; we solve for ``T`` (at least 100). More than :data:`LINEAR_MAX_STEPS` is returned as is:
    the caller reports that the spectral gap is too small for the budget."""
    g = max(1.0 - sv_ratio, 1e-300)
    need = math.log(max(LINEAR_PREFACTOR * g / target, 1.0)) / (LINEAR_RATE * g)     # total step length S
    per_step = (eta - eta_final) / math.log(eta / eta_final) if eta_final < eta else eta
    return max(100, int(math.ceil(need / per_step)))


def linear_study(X: torch.Tensor, G: torch.Tensor, depths: tuple[int, ...], width: int, restarts: int,
                 eta_final: float, generator: torch.Generator, target: float, chain_depth: int = 3) -> LinearStudy:
    """Proposition "Closed forms" (ii): projected ascent with the identity activation at each depth, and the
    balanced rank-one chain of depth ``chain_depth``, against ``s*_lin = sigma_max(G X^T)``. The solver runs from
    :data:`LINEAR_ETA` to ``eta_final`` for the horizon :func:`linear_steps` at which its gap falls below ``target``
    (``steps`` records it; the solver is not run when it exceeds :data:`LINEAR_MAX_STEPS`: gaps are then nan)."""
    s_lin, s_fro = linear_speed(X, G), one_layer_speed(X, G)
    sv = torch.linalg.svdvals(G @ X.T)
    ratio = float(sv[1] / sv[0]) if len(sv) > 1 else 0.0
    n_steps = linear_steps(ratio, eta_final, target)
    chain = linear_chain(X, G, chain_depth, width)
    chain_gap = abs(float(speed(chain, X, G, relu=False)[0]) - s_lin)
    if n_steps > LINEAR_MAX_STEPS:
        return LinearStudy(s_lin, float("nan"), chain_gap, float("nan"), ratio, n_steps, [])
    gap, fro, speeds = 0.0, 0.0, []
    for L in depths:
        W0 = init_sphere(X.shape[0], [width] * (L - 1), G.shape[0], restarts, generator, X.device)
        r = projected_ascent(W0, X, G, n_steps, LINEAR_ETA, eta_final, relu=False)
        gap = max(gap, abs(float(r.speeds.max()) / s_lin - 1))
        fro = max(fro, abs(float(r.speeds.max()) / s_fro - 1))
        speeds.append(float(r.speeds.max()))
    return LinearStudy(s_lin, gap, chain_gap, fro, ratio, n_steps, speeds)


def neuron_critical_points(X: torch.Tensor, G: torch.Tensor, generator: torch.Generator,
                           samples: int = 20000) -> list[tuple[float, torch.Tensor, float]]:
    """Single-neuron critical points of positive speed (scalar output): ``(speed, w, a)`` with ``|w| = 1``,
    ``a = +-1`` and ``w = c_A / |c_A|``, ``c_A = -a sum_{j in A} g_j x_j``, consistent (``A`` is exactly the set where
    ``w^T x_j > 0``, no point within ``HINGE_MARGIN`` of the hinge). These are the escape directions of Definition 2.1
    that a single neuron followed by identity layers can take (Proposition "Closed forms" (iii)): the fastest is
    the optimum at depth 2, the others are non-optimal escape directions. Found by sampling ``samples`` random
    activation regions per sign; sorted by decreasing speed, one per active set."""
    d = X.shape[0]
    x_max = float(X.norm(dim=0).max())
    found: dict[tuple, tuple[float, torch.Tensor, float]] = {}
    for a in (1.0, -1.0):
        W = torch.randn(samples, d, generator=generator, dtype=X.dtype).to(X.device)
        act = (W @ X > 0).to(X.dtype)
        V = -a * (act * G[0]) @ X.T
        n = V.norm(dim=1)
        live = n > roundoff(x_max * float(G.norm()), X.shape[1])
        Vn = V / n.clamp_min(1e-300)[:, None]
        pre = Vn @ X
        ok = live & ((pre > 0).to(X.dtype) == act).all(dim=1) & (pre.abs().min(dim=1).values > HINGE_MARGIN * x_max)
        for i in torch.nonzero(ok).flatten().tolist():
            key = (a, tuple(act[i].to(torch.int64).tolist()))
            if key not in found:
                found[key] = (float(n[i]), Vn[i].clone(), a)
    return sorted(found.values(), key=lambda t: -t[0])


def other_escape_chain(X: torch.Tensor, G: torch.Tensor, depth: int, width: int, generator: torch.Generator,
                       samples: int = 20000) -> tuple[Weights | None, float]:
    """The fastest *non-optimal* single-neuron critical point of :func:`neuron_critical_points` as a chain of depth
    ``depth`` (neuron, then identity layers): an escape direction gradient descent could take instead of the optimal
    one, ``(None, nan)`` when the data have only one critical point of positive speed."""
    pts = neuron_critical_points(X, G, generator, samples)
    if len(pts) < 2:
        return None, math.nan
    s, w, a = pts[1]
    return rank_one_chain(w, torch.tensor([a], dtype=X.dtype, device=X.device), depth, width), s

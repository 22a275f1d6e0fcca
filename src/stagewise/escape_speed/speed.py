"""Optimal escape directions of deep bias-free ReLU networks (Bantzis, Simon, Jacot).

Near the origin the loss of a depth-``L`` bias-free MLP is, to first order, the
*localized loss* ``L0(theta) = Tr[G^T f_theta(X)]`` (paper Eq. 1) with ``G`` the
gradient of the cost at zero output. ``L0`` is positively ``L``-homogeneous. An escape
direction (Definition 2.1) is a point ``rho`` with ``|rho|^2 = L`` and
``grad L0(rho) = -s rho``; its speed is ``s = -L0(rho)``. The optimal speed is
``s*(L) = max_{|theta|^2 = L} -L0(theta) = max_{|W_l|_F = 1} -L0(theta)`` (AM-GM).

Conventions: ``X`` is ``(d_in, N)``, ``G`` is ``(d_out, N)``; a batch of ``R`` networks
is a list ``Ws`` of tensors ``(R, n_l, n_{l-1})``. Everything is float64 and runs on
the device of its inputs; random numbers are drawn on CPU with a seeded generator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from stagewise.core.parameters import ParameterError
from stagewise.numerics.flows import DivergenceError

Weights = list[torch.Tensor]


class NoEscapeError(ValueError):
    """The localized loss is identically zero (G = 0): no escape direction exists."""


# ----------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------
def check_problem(X: torch.Tensor, G: torch.Tensor, widths: list[int]) -> None:
    """Reject degenerate problems: depth < 2, widths < 1, mismatched shapes, G = 0.

    ``widths`` are the hidden widths (``L - 1`` of them). A zero ``G`` makes ``L0``
    vanish identically, so no escape direction (``s > 0``) exists: we say so.
    """
    if len(widths) < 1:
        raise ParameterError(f"depth {len(widths) + 1}: escape directions need depth >= 2 (one hidden layer)")
    if any(int(w) < 1 for w in widths):
        raise ParameterError(f"hidden widths {list(widths)}: every width must be >= 1")
    if X.ndim != 2 or G.ndim != 2 or X.shape[1] != G.shape[1]:
        raise ParameterError(f"shapes X {tuple(X.shape)}, G {tuple(G.shape)}: need (d_in, N) and (d_out, N)")
    if float(G.abs().max()) == 0.0:
        raise NoEscapeError("G = 0: the localized loss vanishes identically, so no escape direction exists")


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the escape-speed chapter (one-line errors)."""
    depths = values.get("depths", [2, 3])
    if sorted(depths) != list(depths) or len(set(depths)) != len(depths):
        raise ParameterError(f"parameter depths={depths}: must be strictly increasing; allowed: e.g. [2, 3, 4, 5]")
    if values.get("pga_eta_final", 0) > values.get("pga_eta", 1):
        raise ParameterError("parameter pga_eta_final: must not exceed pga_eta; allowed: pga_eta_final <= pga_eta")
    alphas = values.get("alphas", [0.1, 0.05])
    if len(alphas) < 2 or len(set(alphas)) < 2:
        raise ParameterError(f"parameter alphas={alphas}: need at least two distinct init scales to fit a slope")
    if values.get("mnist_depth_small", 4) >= values.get("mnist_depth", 6):
        raise ParameterError("parameter mnist_depth_small: must be below mnist_depth; allowed: mnist_depth_small < mnist_depth")
    if values.get("mnist_source", "digits") == "digits" and values.get("mnist_n", 0) > 1797:
        raise ParameterError(f"parameter mnist_n={values['mnist_n']}: scikit-learn's digits has 1797 images; "
                             "allowed: mnist_n <= 1797, or mnist_source mnist5k (up to 5000)")


# ----------------------------------------------------------------------------------
# network and localized loss
# ----------------------------------------------------------------------------------
def forward(Ws: Weights, X: torch.Tensor, relu: bool = True) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Pre-activations ``Z_l = W_l Z^sigma_{l-1}`` and post-activations ``Z^sigma_l`` (Sec. 1).

    Returns ``(Z, Zs)`` with ``Z[l-1] = Z_l`` (l = 1..L, batched ``(R, n_l, N)``) and
    ``Zs[l] = Z^sigma_l`` for l = 0..L-1 (``Zs[0] = X``). No ReLU on the output layer.
    """
    R = Ws[0].shape[0]
    h = X.unsqueeze(0).expand(R, *X.shape)
    Z, Zs = [], [h]
    for i, W in enumerate(Ws):
        z = torch.bmm(W, h)
        Z.append(z)
        if i < len(Ws) - 1:
            h = torch.relu(z) if relu else z
            Zs.append(h)
    return Z, Zs


def localized_loss(Ws: Weights, X: torch.Tensor, G: torch.Tensor, relu: bool = True) -> torch.Tensor:
    """``L0(theta) = Tr[G^T f_theta(X)]`` for each network of the batch (paper Eq. 1)."""
    return (forward(Ws, X, relu)[0][-1] * G).sum(dim=(1, 2))


def speed(Ws: Weights, X: torch.Tensor, G: torch.Tensor, relu: bool = True) -> torch.Tensor:
    """Speed ``-L0(theta)`` of each network (Definition 2.1 when ``|W_l|_F = 1``)."""
    return -localized_loss(Ws, X, G, relu)


def speed_and_grad(Ws: Weights, X: torch.Tensor, G: torch.Tensor, relu: bool = True) -> tuple[torch.Tensor, Weights]:
    """Speed ``-L0`` and its gradient for every network, one batched forward/backward."""
    leaves = [W.detach().requires_grad_(True) for W in Ws]
    with torch.enable_grad():
        s = speed(leaves, X, G, relu)
        grads = torch.autograd.grad(s.sum(), leaves)
    return s.detach(), [g.detach() for g in grads]


def sq_norm(Ws: Weights) -> torch.Tensor:
    """``|theta|^2 = sum_l |W_l|_F^2`` per network."""
    return sum((W ** 2).sum(dim=(1, 2)) for W in Ws)


def normalize_layers(Ws: Weights) -> Weights:
    """Project onto the product of unit spheres ``|W_l|_F = 1`` (a dead layer stays 0)."""
    out = []
    for W in Ws:
        n = W.flatten(1).norm(dim=1).clamp_min(1e-300)
        out.append(W / n[:, None, None])
    return out


def kkt_residual(Ws: Weights, X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``|grad L0(rho) + s rho| / |grad L0(rho)|`` at ``rho`` scaled to ``|rho|^2 = L``.

    Zero at a differentiable escape direction. Optima on ReLU hinges (data on a kink)
    have a large residual with the autograd convention ``sigma'(0) = 0``; it is then
    not a valid certificate (see :func:`perturbation_gain`).
    """
    L = len(Ws)
    scale = torch.sqrt(L / sq_norm(Ws))
    rho = [W * scale[:, None, None] for W in Ws]
    s, g = speed_and_grad(rho, X, G)  # g = grad(-L0)
    num = torch.sqrt(sum(((gi - s[:, None, None] * r) ** 2).sum(dim=(1, 2)) for gi, r in zip(g, rho)))
    den = torch.sqrt(sum((gi ** 2).sum(dim=(1, 2)) for gi in g)).clamp_min(1e-300)
    return num / den


def perturbation_gain(Ws: Weights, X: torch.Tensor, G: torch.Tensor, delta: float, n_dirs: int,
                      generator: torch.Generator) -> torch.Tensor:
    """Largest speed gain ``max_d s(retract(W + delta d)) - s(W)`` over random unit directions.

    A certificate of local optimality that works on ReLU kinks: at a local maximum the
    gain is at most ``O(delta^2)``; a non-optimal point gains ``O(delta)``.
    """
    R = Ws[0].shape[0]
    base = speed(Ws, X, G)
    best = torch.full_like(base, -math.inf)
    for _ in range(n_dirs):
        d = [torch.randn(W.shape, generator=generator, dtype=W.dtype).to(W.device) for W in Ws]
        nd = torch.sqrt(sum((x ** 2).sum(dim=(1, 2)) for x in d))
        moved = normalize_layers([W + delta * x / nd[:, None, None] for W, x in zip(Ws, d)])
        best = torch.maximum(best, speed(moved, X, G) - base)
    return best[:R]


# ----------------------------------------------------------------------------------
# solver: batched normalized projected ascent with decaying steps
# ----------------------------------------------------------------------------------
def init_sphere(d_in: int, widths: list[int], d_out: int, restarts: int, generator: torch.Generator,
                device: torch.device | str = "cpu") -> Weights:
    """Gaussian weights for ``restarts`` networks, each layer scaled to ``|W_l|_F = 1``."""
    dims = [d_in, *widths, d_out]
    Ws = [torch.randn(restarts, dims[i + 1], dims[i], generator=generator, dtype=torch.float64)
          for i in range(len(dims) - 1)]
    return normalize_layers([W.to(device) for W in Ws])


@dataclass
class AscentResult:
    """Best point per restart (``Ws``, on the product of unit spheres), its speed, and the trace."""
    Ws: Weights
    speeds: torch.Tensor
    trace: torch.Tensor = field(repr=False)  # (steps + 1, R) speed along the run

    def best(self) -> tuple[Weights, float]:
        """The best network over restarts (batch of one) and its speed."""
        i = int(torch.argmax(self.speeds))
        return [W[i:i + 1] for W in self.Ws], float(self.speeds[i])


def projected_ascent(Ws: Weights, X: torch.Tensor, G: torch.Tensor, steps: int, eta: float | torch.Tensor,
                     eta_final: float, relu: bool = True, normalized: bool = True) -> AscentResult:
    """Maximize the speed on ``|W_l|_F = 1`` for all restarts at once (spec Sec. 3.2).

    Each step moves by ``eta_t * grad / |grad|`` (all layers together, per restart) and
    re-normalizes every layer; ``eta_t`` decays geometrically from ``eta`` to
    ``eta_final`` so that iterates settle on the cusps (ReLU hinges) where optima sit.
    ``normalized=False`` uses the raw gradient (the variant that stalls at depth).
    The best iterate of each restart is kept, so the result never decreases. ``eta`` may be a
    tensor ``(R,)`` (one schedule per restart, e.g. small steps for warm starts).
    """
    eta0 = torch.as_tensor(eta, dtype=Ws[0].dtype, device=Ws[0].device).expand(Ws[0].shape[0])
    Ws = normalize_layers([W.detach().clone() for W in Ws])
    best_W = [W.clone() for W in Ws]
    best_s = speed(Ws, X, G, relu)
    trace = [best_s.clone()]
    for t in range(steps):
        eta_t = (eta0 * (eta_final / eta0) ** (t / max(steps - 1, 1)))[:, None, None]
        s, g = speed_and_grad(Ws, X, G, relu)
        if normalized:
            gn = torch.sqrt(sum((gi ** 2).sum(dim=(1, 2)) for gi in g)).clamp_min(1e-300)
            Ws = normalize_layers([W + eta_t * gi / gn[:, None, None] for W, gi in zip(Ws, g)])
        else:
            Ws = normalize_layers([W + eta_t * gi for W, gi in zip(Ws, g)])
        s = speed(Ws, X, G, relu)
        if not bool(torch.isfinite(s).all()):
            raise DivergenceError(f"parameter pga_eta={float(eta0.max())}: projected ascent diverged (NaN/overflow) at step {t}; lower it")
        better = s > best_s
        best_s = torch.where(better, s, best_s)
        best_W = [torch.where(better[:, None, None], W, B) for W, B in zip(Ws, best_W)]
        trace.append(s)
    return AscentResult(best_W, best_s, torch.stack(trace))


def projected_ascent_loop(Ws: Weights, X: torch.Tensor, G: torch.Tensor, steps: int, eta: float,
                          eta_final: float) -> torch.Tensor:
    """Reference: the same ascent, one restart at a time (for the benchmark only)."""
    out = []
    for r in range(Ws[0].shape[0]):
        out.append(projected_ascent([W[r:r + 1] for W in Ws], X, G, steps, eta, eta_final).speeds)
    return torch.cat(out)


def power_iteration(Ws: Weights, X: torch.Tensor, G: torch.Tensor, steps: int) -> torch.Tensor:
    """The naive fixed point ``rho <- sqrt(L) grad(-L0)(rho) / |grad|`` (spec Sec. 3.2).

    Returns the speed trace ``(steps + 1, R)`` on the product of spheres. For ReLU nets it
    oscillates or collapses to a dead network; kept to show why damping is needed.
    """
    L = len(Ws)
    Ws = normalize_layers(Ws)
    trace = [speed(Ws, X, G)]
    for _ in range(steps):
        _, g = speed_and_grad(Ws, X, G)
        gn = torch.sqrt(sum((gi ** 2).sum(dim=(1, 2)) for gi in g)).clamp_min(1e-300)
        rho = [math.sqrt(L) * gi / gn[:, None, None] for gi in g]
        Ws = normalize_layers(rho)
        trace.append(speed(Ws, X, G))
    return torch.stack(trace)


# ----------------------------------------------------------------------------------
# Proposition 3.2: deepening construction and depth continuation
# ----------------------------------------------------------------------------------
def deepen(Ws: Weights, X: torch.Tensor, G: torch.Tensor, k: int = 1) -> Weights:
    """Prop. 3.2 (App. A.3) construction: a depth-``L+k`` network at least as fast.

    For each network of the batch: pick the last-hidden-layer neuron ``i*`` with the most
    negative normalized contribution ``Tr[G^T Wbar_{L,.i} sigma(Wbar_{L-1,i.} Z^sigma_{L-2})]``,
    keep it alone with weight ``c = (sum_i |W_{L,.i}| |W_{L-1,i.}|)^{1/2}``, insert ``k``
    identity-like rank-one layers ``e1 e1^T`` and re-normalize every layer (which only
    increases the speed). Hidden widths are kept; the result has ``|W_l|_F = 1``.
    """
    L = len(Ws)
    _, Zs = forward(Ws, X)
    out_rows, out_last, fronts = [], [], []
    for r in range(Ws[0].shape[0]):
        WL, WL1, H = Ws[-1][r], Ws[-2][r], Zs[L - 2][r]          # (d_out, n), (n, m), (m, N)
        a, b = WL.norm(dim=0), WL1.norm(dim=1)                   # column / row norms
        contrib = torch.einsum("on,oj,nj->n", WL, G, torch.relu(WL1 @ H))
        norm_c = torch.where(a * b > 0, contrib / (a * b).clamp_min(1e-300), torch.zeros_like(contrib))
        i = int(torch.argmin(norm_c))
        c = torch.sqrt((a * b).sum())
        n = WL1.shape[0]
        new_prev = torch.zeros_like(WL1)
        new_last = torch.zeros_like(WL)
        if float(a[i] * b[i]) > 0:
            new_prev[0] = c * WL1[i] / b[i]
            new_last[:, 0] = c * WL[:, i] / a[i]
        out_rows.append(new_prev)
        out_last.append(new_last)
        fronts.append(n)
    n = fronts[0]
    R = Ws[0].shape[0]
    eye = torch.zeros(R, n, n, dtype=Ws[0].dtype, device=Ws[0].device)
    eye[:, 0, 0] = 1.0
    new = [W.clone() for W in Ws[:-2]] + [torch.stack(out_rows)] + [eye.clone() for _ in range(k)] + [torch.stack(out_last)]
    return normalize_layers(new)


def merge_most_linear(Ws: Weights, X: torch.Tensor) -> Weights:
    """A depth-``L-1`` network from a depth-``L`` one (batch of one): the reverse of Prop. 3.2 [ours].

    Pick the hidden layer ``l`` whose ReLU is closest to the identity on the data (smallest
    ``nu_l``, see :func:`layer_diagnostics`), drop that ReLU, replace ``(W_l, W_{l+1})`` by the
    product ``W_{l+1} W_l`` and re-normalize every layer. When ``nu_l = 0`` the function is
    unchanged and ``|W_{l+1} W_l|_F <= |W_{l+1}|_F |W_l|_F = 1``, so normalizing can only raise a
    positive speed: ``s*(L-1) >= speed(theta)``. With Prop. 3.2, an optimal depth-``L`` direction
    with a linear hidden layer gives ``s*(L-1) = s*(L)``.
    """
    if len(Ws) < 3:
        raise ValueError(f"depth {len(Ws)}: merging needs depth >= 3")
    Z, _ = forward(Ws, X)
    nu = [relu_deviation(z[0]) for z in Z[:-1]]
    l = int(np.argmin(nu))                                   # hidden layer l + 1 in 1-based numbering
    return normalize_layers(Ws[:l] + [Ws[l + 1] @ Ws[l]] + Ws[l + 2:])


def with_noise(Ws: Weights, copies: int, noise: float, generator: torch.Generator) -> Weights:
    """``copies`` perturbed copies of a single network (copy 0 unperturbed), re-normalized."""
    out = []
    for W in Ws:
        e = torch.randn((copies, *W.shape[1:]), generator=generator, dtype=W.dtype).to(W.device)
        e[0] = 0
        out.append(W[0:1].expand(copies, *W.shape[1:]) + noise * e)
    return normalize_layers(out)


@dataclass
class DepthResult:
    depths: list[int]
    speeds: list[float]            # continuation estimate s_hat(L) (best of random and warm starts)
    random_speeds: list[float]     # best of the random restarts alone
    warm_speeds: list[float]       # speed of the Prop 3.2 construction before any ascent
    optima: list[Weights]          # best network per depth (batch of one)
    success: list[float]           # fraction of random restarts within 1e-3 of s_hat(L)
    forward_speeds: list[float] = field(default_factory=list)  # s_hat(L) after the forward pass alone
    merged_speeds: list[float] = field(default_factory=list)   # speed of the merged depth-(L+1) optimum (nan at the top)


def escape_by_depth(X: torch.Tensor, G: torch.Tensor, depths: list[int], width: int, restarts: int, steps: int,
                    eta: float, eta_final: float, generator: torch.Generator, warm_eta: float = 0.02,
                    noise: float = 1e-3) -> DepthResult:
    """``s_hat(L)`` for increasing depths: random restarts plus Prop. 3.2 warm starts.

    At each depth one batch holds ``restarts`` random networks and ``restarts // 2``
    perturbed copies of the deepened previous optimum (copy 0 exact). The warm copies use
    the smaller step ``warm_eta``; the best iterate is kept, so ``s_hat`` never decreases.
    """
    d_in, d_out = X.shape[0], G.shape[0]
    res = DepthResult([], [], [], [], [], [])
    prev = None
    for L in depths:
        check_problem(X, G, [width] * (L - 1))
        batch = init_sphere(d_in, [width] * (L - 1), d_out, restarts, generator, X.device)
        etas = [eta] * restarts
        warm_s = float("nan")
        if prev is not None:
            deep = deepen(prev, X, G, k=L - len(prev))
            warm_s = float(speed(deep, X, G)[0])
            warm = with_noise(deep, max(restarts // 2, 1), noise, generator)
            batch = [torch.cat([a, b]) for a, b in zip(batch, warm)]
            etas += [warm_eta] * warm[0].shape[0]
        out = projected_ascent(batch, X, G, steps, torch.tensor(etas, dtype=X.dtype, device=X.device), eta_final)
        best_W, best_s = out.best()
        sr = float(out.speeds[:restarts].max())
        res.depths.append(L)
        res.speeds.append(best_s)
        res.random_speeds.append(sr)
        res.warm_speeds.append(warm_s)
        res.optima.append(best_W)
        res.success.append(float((out.speeds[:restarts] > best_s - 1e-3).double().mean()))
        prev = best_W
    res.forward_speeds = list(res.speeds)
    _backward_pass(res, X, G, steps, warm_eta, eta_final)
    return res


def _backward_pass(res: DepthResult, X: torch.Tensor, G: torch.Tensor, steps: int, eta: float, eta_final: float) -> None:
    """Improve shallower estimates from deeper optima (:func:`merge_most_linear`), then re-deepen.

    From the deepest depth down, the deeper optimum merged down to depth ``L`` is polished by
    ``steps`` of projected ascent (no randomness) and replaces the depth-``L`` optimum when faster.
    A final forward sweep applies :func:`deepen` again, so ``s_hat`` stays non-decreasing.
    """
    res.merged_speeds = [float("nan")] * len(res.depths)
    for i in range(len(res.depths) - 2, -1, -1):
        cand = res.optima[i + 1]
        for _ in range(res.depths[i + 1] - res.depths[i]):
            cand = merge_most_linear(cand, X)
        res.merged_speeds[i] = float(speed(cand, X, G)[0])
        if res.merged_speeds[i] > res.speeds[i]:
            W, s = projected_ascent(cand, X, G, steps, eta, eta_final).best()
            res.optima[i], res.speeds[i] = W, s
    for i in range(1, len(res.depths)):
        deep = deepen(res.optima[i - 1], X, G, k=res.depths[i] - res.depths[i - 1])
        s = float(speed(deep, X, G)[0])
        if s > res.speeds[i]:
            res.optima[i], res.speeds[i] = deep, s


def pad_hidden(Ws: Weights, width: int) -> Weights:
    """Embed networks in a wider one by adding zero neurons to every hidden layer.

    Zero neurons have zero gradient (no input weights, no output weights) and stay zero under
    :func:`projected_ascent`, so networks of different widths can share one batch.
    """
    out = []
    for l, W in enumerate(Ws):
        R, n, m = W.shape
        rows = width if l < len(Ws) - 1 else n
        cols = width if l > 0 else m
        P = torch.zeros(R, rows, cols, dtype=W.dtype, device=W.device)
        P[:, :n, :m] = W
        out.append(P)
    return out


# ----------------------------------------------------------------------------------
# closed forms and data sets
# ----------------------------------------------------------------------------------
def circle_data(n: int, g: str = "alternating") -> tuple[torch.Tensor, torch.Tensor]:
    """``x_j = (sin 2 pi j/n, cos 2 pi j/n)``, j = 1..n, with ``G_j = (-1)^j`` or ``cos(3 angle_j)``."""
    j = torch.arange(1, n + 1, dtype=torch.float64)
    ang = 2 * math.pi * j / n
    X = torch.stack([torch.sin(ang), torch.cos(ang)])
    if g == "alternating":
        G = ((-1.0) ** j)[None]
    elif g == "cos3":
        G = torch.cos(3 * ang)[None]
    else:
        raise ValueError(f"unknown circle gradient '{g}'")
    return X, G


def example1_data() -> tuple[torch.Tensor, torch.Tensor]:
    """Example 1: eight points on the circle with alternating gradient ``G_j = (-1)^j``."""
    return circle_data(8, "alternating")


def gaussian_data(n: int, d: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian inputs ``(d, n)`` scaled by ``1/sqrt(d)`` and a Gaussian scalar gradient ``G``."""
    X = torch.randn(d, n, generator=generator, dtype=torch.float64) / math.sqrt(d)
    G = torch.randn(1, n, generator=generator, dtype=torch.float64) / math.sqrt(n)
    return X, G


def rank_one_speed_eq6(phi: np.ndarray) -> np.ndarray:
    """Paper Eq. (6): best rank-one speed of Example 1 at first-layer angle ``phi``."""
    xi = np.mod(phi, np.pi / 4)
    return np.abs(np.cos(xi + np.pi / 4) - np.cos(xi) + np.cos(xi - np.pi / 4) - np.cos(xi - np.pi / 2))


def neuron_speed(phi: np.ndarray, X: torch.Tensor, G: torch.Tensor) -> np.ndarray:
    """Speed ``|G sigma(X^T w)|`` of one neuron ``w = (cos phi, sin phi)`` with unit output weight.

    For ``L = 2`` its maximum over ``phi`` is ``s*(2)`` (single-neuron optimality); at any
    depth it is the best speed of networks whose layers are all rank one.
    """
    W = np.stack([np.cos(phi), np.sin(phi)], axis=1)                # (P, 2)
    act = np.maximum(W @ X.cpu().numpy(), 0.0)                       # (P, N)
    return np.linalg.norm(act @ G.cpu().numpy().T, axis=1)          # (P,)


def shallow_speed(X: torch.Tensor, G: torch.Tensor, n_angles: int = 200_000) -> tuple[float, float]:
    """``s*(2) = max_{|w|=1} |G sigma(X^T w)|`` by a 1-D angle search (``d_in = 2``); (speed, angle).

    The maximum sits on a cusp where a data point lies on the hinge, so the grid is
    refined around the best angle and the candidate hinge angles are evaluated exactly.
    """
    if X.shape[0] != 2:
        raise ValueError("shallow_speed: the angle search needs d_in = 2")
    phi = np.linspace(0, 2 * np.pi, n_angles, endpoint=False)
    xa = np.arctan2(X[1].cpu().numpy(), X[0].cpu().numpy())
    hinges = np.concatenate([xa + np.pi / 2, xa - np.pi / 2])        # w orthogonal to a data point
    phi = np.concatenate([phi, np.mod(hinges, 2 * np.pi)])
    sp = neuron_speed(phi, X, G)
    i = int(np.argmax(sp))
    return float(sp[i]), float(phi[i])


def linear_speed(X: torch.Tensor, G: torch.Tensor) -> float:
    """Deep linear networks (``L >= 2``): ``s*_lin = sigma_max(G X^T)``."""
    return float(torch.linalg.matrix_norm(G @ X.T, ord=2))


def one_layer_speed(X: torch.Tensor, G: torch.Tensor) -> float:
    """A single linear layer (``L = 1``): ``s = |G X^T|_F``."""
    return float(torch.linalg.matrix_norm(G @ X.T))


def linear_chain(X: torch.Tensor, G: torch.Tensor, depth: int, width: int) -> Weights:
    """Balanced rank-one chain along the top singular pair of ``-G X^T`` (speed ``sigma_max``)."""
    U, S, Vh = torch.linalg.svd(-(G @ X.T))
    Ws = [torch.zeros(1, width, X.shape[0], dtype=X.dtype), ]
    Ws[0][0, 0] = Vh[0]
    for _ in range(depth - 2):
        W = torch.zeros(1, width, width, dtype=X.dtype)
        W[0, 0, 0] = 1.0
        Ws.append(W)
    W = torch.zeros(1, G.shape[0], width, dtype=X.dtype)
    W[0, :, 0] = U[:, 0]
    Ws.append(W)
    return Ws


def rank_two_construction(sign: float = -1.0) -> Weights:
    """Example 1, Eq. (2): ``f(x) = sign * sigma(|x1| - |x2|) / 4`` with speed 1/2, all ``|W_l|_F = 1``.

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
    neuron is polished to ``w = P(a sum_{j active} g_j x_j)``, the optimum inside its
    activation region, and identity layers ``e1 e1^T`` are stacked. ``exact`` is True when
    the polished neuron has the same active set and no data point within ``1e-9`` of its
    hinge: the result is then a true critical point on the sphere (KKT residual at rounding
    level), which is what Prop 2.2's aligned-flow test needs. Scalar output only.
    """
    res = projected_ascent(init_sphere(X.shape[0], [1], 1, restarts, generator, X.device), X, G, steps, 0.1, 1e-5)
    (W1, W2), _ = res.best()
    w, a = W1[0, 0], float(torch.sign(W2[0, 0, 0]))
    act = (w @ X > 0).to(X.dtype)
    v = -a * (X @ (G[0] * act))
    exact = False
    if float(v.norm()) > 0:
        v = v / v.norm()
        pre = v @ X
        exact = bool(torch.equal((pre > 0).to(X.dtype), act)) and float(pre.abs().min()) > 1e-9
        if exact:
            w = v
    Ws = [torch.zeros(1, width, X.shape[0], dtype=X.dtype, device=X.device)]
    Ws[0][0, 0] = w
    for _ in range(depth - 2):
        E = torch.zeros(1, width, width, dtype=X.dtype, device=X.device)
        E[0, 0, 0] = 1.0
        Ws.append(E)
    WL = torch.zeros(1, 1, width, dtype=X.dtype, device=X.device)
    WL[0, 0, 0] = a
    Ws.append(WL)
    return Ws, exact


# ----------------------------------------------------------------------------------
# low-rank diagnostics, Theorem 3.1 and Proposition 3.4
# ----------------------------------------------------------------------------------
def nontop_fraction(M: torch.Tensor) -> float:
    """``rho_nt(M) = 1 - |M|_op^2 / |M|_F^2`` (0 for rank one; 0 for a zero matrix)."""
    f2 = float((M ** 2).sum())
    if f2 == 0.0:
        return 0.0
    return max(0.0, 1.0 - float(torch.linalg.matrix_norm(M, ord=2)) ** 2 / f2)


def relu_deviation(Z: torch.Tensor) -> float:
    """``nu = |sigma(Z) - Z|_F^2 / |Z|_F^2 = |relu(-Z)|_F^2 / |Z|_F^2``: how far the ReLU is from the
    identity on pre-activations ``Z`` (Thm 3.1); 0 for a zero matrix."""
    z2 = float((Z ** 2).sum())
    return float((torch.relu(-Z) ** 2).sum()) / z2 if z2 > 0 else 0.0


def layer_diagnostics(Ws: Weights, X: torch.Tensor) -> dict[str, list[float]]:
    """Per layer of a single network: ``rho_nt(W_l)``, ``rho_nt(Z^sigma_l)``, ``nu_l``, ``s2/s1(W_l)``.

    ``nu_l = |Z^sigma_l - Z_l|_F^2 / |Z_l|_F^2`` measures how far the ReLU is from the
    identity on layer ``l`` (defined for hidden layers only).
    """
    Z, Zs = forward(Ws, X)
    out = {"rho_W": [], "ratio_W": [], "rho_Z": [], "nu": []}
    for l, W in enumerate(Ws):
        sv = torch.linalg.svdvals(W[0])
        out["rho_W"].append(nontop_fraction(W[0]))
        out["ratio_W"].append(float(sv[1] / sv[0]) if len(sv) > 1 and float(sv[0]) > 0 else 0.0)
        if l < len(Ws) - 1:
            out["rho_Z"].append(nontop_fraction(Zs[l + 1][0]))
            out["nu"].append(relu_deviation(Z[l][0]))
    return out


def thm31_constant(X: torch.Tensor, G: torch.Tensor, s: float) -> tuple[float, float]:
    """Theorem 3.1's ``c = kappa sqrt(2 log kappa)``, ``kappa = |X|_F |G|_F / s*``, and ``l_min = c^2``.

    The bound ``8 c l^{-1/2} / (1 - c l^{-1/2})`` says something only for ``l > c^2``.
    A zero speed gives ``c = inf`` (no escape, nothing to bound).
    """
    if s <= 0:
        return math.inf, math.inf
    kappa = float(X.norm() * G.norm()) / s
    c = kappa * math.sqrt(2 * math.log(kappa))
    return c, c * c


def thm31_bound(c: float, ell: int) -> float:
    """The Theorem 3.1 bound at layer ``ell`` (``inf`` where it is vacuous, ``l <= c^2``)."""
    q = c / math.sqrt(ell)
    return 8 * q / (1 - q) if q < 1 else math.inf


def prop34_sides(Ws: Weights, X: torch.Tensor, G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both sides of the deterministic inequality behind Prop. 3.4, per network (log form):

    ``sum_{l=0}^{L-1} log(|Z^s_l|_F^2 / |Z^s_l|_op^2) <= 2 log(|X|_F |G|_F prod_l |W_l|_F / |Tr G^T Z_L|)``.
    Networks with a dead layer or zero output give ``inf`` on the right (nothing to test).
    """
    Z, Zs = forward(Ws, X)
    lhs = torch.zeros(Ws[0].shape[0], dtype=X.dtype, device=X.device)
    for H in Zs:
        f2 = (H ** 2).sum(dim=(1, 2))
        op2 = torch.linalg.matrix_norm(H, ord=2) ** 2
        lhs = lhs + torch.where(op2 > 0, torch.log(f2 / op2.clamp_min(1e-300)), torch.zeros_like(f2))
    prod = torch.ones_like(lhs)
    for W in Ws:
        prod = prod * W.flatten(1).norm(dim=1)
    tr = (Z[-1] * G).sum(dim=(1, 2)).abs()
    rhs = 2 * torch.log(float(X.norm() * G.norm()) * prod / tr.clamp_min(1e-300))
    rhs = torch.where(tr > 0, rhs, torch.full_like(rhs, math.inf))
    return lhs, rhs


def near_rank_one_data(d_in: int, n: int, d_out: int, eps: float, generator: torch.Generator,
                       g_noise: float = 0.3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs ``X = u v^T + E`` of Prop. 3.3 (App. A.5) and a gradient ``G``; returns ``(X, G, u, v)``.

    ``u in R^{d_in}`` and ``v in R^n`` are absolute values of Gaussians (entrywise >= 0) with
    ``|u| = |v| = 1``, and ``E`` is Gaussian rescaled to ``|E|_F = eps``. ``G`` is
    ``-(w v^T + g_noise Z / |Z|_F)`` rescaled to ``|G|_F = 1`` (``w`` a random unit vector, ``Z``
    Gaussian), so that ``|G v|`` is close to 1 and the bound of Prop. 3.3 is not vacuous.
    """
    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    u, v = randn(d_in).abs(), randn(n).abs()
    u, v = u / u.norm(), v / v.norm()
    E = randn(d_in, n)
    w, Z = randn(d_out), randn(d_out, n)
    G = -(torch.outer(w / w.norm(), v) + g_noise * Z / Z.norm())
    return torch.outer(u, v) + eps * E / E.norm(), G / G.norm(), u, v


def prop33_bound(g_norm: float, eps: float, s: float) -> float:
    """Prop. 3.3 (App. A.5): ``8 |G|_F eps / (s* - |G|_F eps)`` bounds ``rho_nt(W_l)``,
    ``rho_nt(Z^sigma_l)`` and ``nu_l`` at the optimum; ``inf`` (no statement) when ``s* <= |G|_F eps``.
    The bound decreases in ``s*``: evaluated at a lower estimate of ``s*`` it is larger (weaker)."""
    den = s - g_norm * eps
    return 8 * g_norm * eps / den if den > 0 else math.inf


def prop33_speed_bracket(X: torch.Tensor, G: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> tuple[float, float]:
    """The bracket ``|Gv||u| -/+ |G|_F |E|_F`` on the optimal speed ``s*`` for ``X = u v^T + E``
    (proof of Prop. 3.3, App. A.5): a rank-one linear chain along ``u`` reaches the lower end, and
    ``|f_theta(u)| <= |u|`` on the ball ``|theta|^2 <= L`` gives the upper end."""
    base = float((G @ v).norm() * u.norm())
    slack = float(G.norm() * (X - torch.outer(u, v)).norm())
    return base - slack, base + slack


def safe_ratio(a: float, b: float) -> float:
    """``a / b``, or ``nan`` when ``b == 0`` (a zero optimal speed is reported, not divided by)."""
    return a / b if b != 0 else float("nan")


def teacher_data(n: int, d: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian inputs ``(d, n)`` (scaled by ``1/sqrt(d)``) and targets ``Y = sigma(w*^T X)`` of a random
    unit teacher neuron, scaled to ``|Y| = 1``; the MSE cost ``|f - Y|^2/2`` has ``G = -Y``."""
    X = torch.randn(d, n, generator=generator, dtype=torch.float64) / math.sqrt(d)
    w = torch.randn(d, generator=generator, dtype=torch.float64)
    Y = torch.relu((w / w.norm()) @ X)[None]
    return X, Y / Y.norm()


def interior_teacher(n: int, d: int, generator: torch.Generator, tries: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
    """The first teacher dataset (:func:`teacher_data`) whose best single neuron is an exact, kink-free
    escape direction (see :func:`single_neuron_escape`); deterministic given the generator state."""
    for _ in range(tries):
        X, Y = teacher_data(n, d, generator)
        if single_neuron_escape(X, -Y, 2, 1, generator)[1]:
            return X, Y
    raise RuntimeError(f"no teacher dataset with an interior escape direction in {tries} draws")

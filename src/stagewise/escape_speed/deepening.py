"""Depth: Proposition 3.2's deepening construction, the reverse merge, and the depth continuation.

``s*(L)`` is non-decreasing in ``L`` (paper Prop. 3.2, App. A.3); merging a linear hidden layer
gives the converse inequality (our Proposition "Merging a linear layer"). Together they drive
the estimate ``s_hat(L)`` over a list of depths.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from stagewise.escape_speed.ascent import projected_ascent
from stagewise.escape_speed.closed_forms import shallow_speed
from stagewise.escape_speed.layer_measures import layer_diagnostics, relu_deviation
from stagewise.escape_speed.network import Weights, check_problem, forward, init_sphere, normalize_layers, speed
from stagewise.numerics.roundoff import is_positive, roundoff


def deepen(Ws: Weights, X: torch.Tensor, G: torch.Tensor, k: int = 1, choose: str = "best") -> Weights:
    """Proposition 3.2 ("Monotonicity in depth", App. A.3) construction: a depth-``L+k`` network at least as fast.

    For each network of the batch: pick the last-hidden-layer neuron ``i*`` with the most
    negative normalized contribution ``Tr[G^T Wbar_{L,.i} sigma(Wbar_{L-1,i.} Z^sigma_{L-2})]``,
    keep it alone with weight ``c = (sum_i |W_{L,.i}| |W_{L-1,i.}|)^{1/2}``, insert ``k``
    identity-like rank-one layers ``e1 e1^T`` and re-normalize every layer (which only
    increases the speed). Hidden widths are kept; the result has ``|W_l|_F = 1``.
    ``choose="worst"`` keeps the neuron with the *largest* contribution instead: a wrong construction, the
    control of the chapter's check (it loses speed).

    A neuron is *zero* (padding, or dead weights) when ``|W_{L,.i}| |W_{L-1,i.}|`` is within rounding error of
    ``|W_L|_F |W_{L-1}|_F``: it is never kept, on every machine alike.
    """
    L = len(Ws)
    _, Zs = forward(Ws, X)
    out_rows, out_last, fronts = [], [], []
    for r in range(Ws[0].shape[0]):
        WL, WL1, H = Ws[-1][r], Ws[-2][r], Zs[L - 2][r]          # (d_out, n), (n, m), (m, N)
        a, b = WL.norm(dim=0), WL1.norm(dim=1)                   # column / row norms
        contrib = torch.einsum("on,oj,nj->n", WL, G, torch.relu(WL1 @ H))
        live = (a * b) > roundoff(float(WL.norm() * WL1.norm()), max(WL.shape[0], WL1.shape[1]))
        norm_c = torch.where(live, contrib / (a * b).clamp_min(1e-300), torch.zeros_like(contrib))
        i = int(torch.argmin(norm_c)) if choose == "best" else int(torch.argmax(norm_c))
        c = torch.sqrt((a * b).sum())
        n = WL1.shape[0]
        new_prev = torch.zeros_like(WL1)
        new_last = torch.zeros_like(WL)
        if bool(live[i]):
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
    """Proposition "Merging a linear layer" [ours]: a depth-``L-1`` network from a depth-``L`` one (batch of one).

    Pick the hidden layer ``l`` whose ReLU is closest to the identity on the data (smallest
    ``nu_l``, see :func:`stagewise.escape_speed.layer_measures.layer_diagnostics`), drop that ReLU, replace ``(W_l, W_{l+1})`` by the
    product ``W_{l+1} W_l`` and re-normalize every layer. When ``nu_l = 0`` the function is
    unchanged and ``|W_{l+1} W_l|_F <= |W_{l+1}|_F |W_l|_F = 1``, so normalizing can only raise a
    positive speed: ``s*(L-1) >= speed(theta)``. With Prop. 3.2, an optimal depth-``L`` direction
    with a linear hidden layer gives ``s*(L-1) = s*(L)``.
    """
    if len(Ws) < 3:
        raise ValueError(f"depth {len(Ws)}: merging needs depth >= 3")
    Z, Zs = forward(Ws, X)
    w_scale = max(float(W[0].norm()) for W in Ws)          # a dead layer is zero relative to the live ones
    nu = [relu_deviation(z[0], w_scale * float(h[0].norm()), W.shape[2]) for z, W, h in zip(Z[:-1], Ws, Zs)]
    l = int(np.argmin(nu))                                   # hidden layer l + 1 in 1-based numbering
    return normalize_layers(Ws[:l] + [Ws[l + 1] @ Ws[l]] + Ws[l + 2:])


def with_noise(Ws: Weights, copies: int, noise: float, generator: torch.Generator) -> Weights:
    """``copies`` perturbed copies of a single network (copy 0 unperturbed), re-normalized: the warm starts
    of the depth continuation (Proposition 3.2)."""
    out = []
    for W in Ws:
        e = torch.randn((copies, *W.shape[1:]), generator=generator, dtype=W.dtype).to(W.device)
        e[0] = 0
        out.append(W[0:1].expand(copies, *W.shape[1:]) + noise * e)
    return normalize_layers(out)


@dataclass
class DepthResult:
    """The depth continuation of :func:`escape_by_depth`: ``s_hat(L)`` per depth (Proposition 3.2) and its optima."""
    depths: list[int]
    speeds: list[float]            # continuation estimate s_hat(L) (best of random and warm starts)
    random_speeds: list[float]     # best of the random restarts alone
    warm_speeds: list[float]       # speed of the Prop 3.2 construction before any ascent
    optima: list[Weights]          # best network per depth (batch of one)
    success: list[float]           # fraction of random restarts within 1e-3 of s_hat(L)
    forward_speeds: list[float] = field(default_factory=list)  # s_hat(L) after the forward pass alone
    merged_speeds: list[float] = field(default_factory=list)   # speed of the merged depth-(L+1) optimum (nan at the top)
    random_optima: list[Weights] = field(default_factory=list)  # best random restart per depth (no construction in it)


def escape_by_depth(X: torch.Tensor, G: torch.Tensor, depths: list[int], width: int, restarts: int, steps: int,
                    eta: float, eta_final: float, generator: torch.Generator, warm_eta: float = 0.02,
                    noise: float = 1e-3) -> DepthResult:
    """``s_hat(L)`` for increasing depths: random restarts plus Proposition 3.2 warm starts, then a backward pass.

    At each depth one batch holds ``restarts`` random networks and ``restarts // 2``
    perturbed copies of the deepened previous optimum (copy 0 exact). The warm copies use
    the smaller step ``warm_eta``; the best iterate is kept, so ``s_hat`` never decreases. Then
    :func:`_backward_pass` merges deeper optima down (Proposition "Merging a linear layer") and
    deepens again; ``forward_speeds`` keeps the estimates of the forward pass alone.
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
        ir = int(torch.argmax(out.speeds[:restarts]))
        sr = float(out.speeds[ir])
        res.random_optima.append([W[ir:ir + 1] for W in out.Ws])
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


def identity_deepen(Ws: Weights, k: int) -> Weights:
    """A wrong construction, the control of the chapter's rank row of Proposition 3.2: ``k`` full identity layers
    inserted before the last layer, every neuron kept (no choice of ``i*``). The function is unchanged, but the inserted
    layers have full rank: the clause "the added layers are rank one" is what the choice of a single neuron buys."""
    n = Ws[-1].shape[2]
    eye = torch.eye(n, dtype=Ws[0].dtype, device=Ws[0].device).expand(Ws[0].shape[0], n, n)
    return normalize_layers([W.clone() for W in Ws[:-1]] + [eye.clone() for _ in range(k)] + [Ws[-1].clone()])


@dataclass
class DeepeningCheck:
    """Proposition 3.2 on random networks: the largest speed the construction lost (at most rounding)."""
    max_loss: float              # max over networks with positive speed of s(theta) - s(deepened), clamped at 0
    n_positive: int              # networks with positive speed (the proposition's hypothesis)
    wrong_max_loss: float = math.nan  # the same with the wrong neuron kept (``choose="worst"``): the control
    nets: Weights = None         # the random networks
    k: int = 1


def max_speed_loss(W: Weights, X: torch.Tensor, G: torch.Tensor, k: int, choose: str = "best") -> float:
    """Proposition 3.2 on the networks ``W``: the largest speed lost by deepening each by ``k`` layers, over the
    networks with positive speed (the hypothesis), clamped at 0. ``choose="worst"`` keeps the neuron with the largest
    contribution (the wrong neuron: the control); nan when no network has a positive speed."""
    before = speed(W, X, G)
    after = torch.cat([speed(deepen([w[i:i + 1] for w in W], X, G, k=k, choose=choose), X, G)
                       for i in range(W[0].shape[0])])
    pos = before > roundoff(float(X.norm() * G.norm()), X.shape[1])   # L0 < 0 beyond rounding (the hypothesis)
    return float((before - after)[pos].max().clamp_min(0)) if bool(pos.any()) else math.nan


def deepening_check(X: torch.Tensor, G: torch.Tensor, widths: list[int], nets: int, k: int,
                    generator: torch.Generator) -> DeepeningCheck:
    """Proposition 3.2: deepen ``nets`` random networks (hidden ``widths``) by ``k`` layers, one at a time."""
    W = init_sphere(X.shape[0], widths, G.shape[0], nets, generator, X.device)
    pos = speed(W, X, G) > roundoff(float(X.norm() * G.norm()), X.shape[1])
    n_wrong = min(nets, 40)
    return DeepeningCheck(max_speed_loss(W, X, G, k), int(pos.sum()),
                          max_speed_loss([w[:n_wrong] for w in W], X, G, k, choose="worst"), W, k)


def excess_over_shallow(result: "DepthResult", depth: int, shallow: float, scale: float) -> float:
    """``(s_hat(depth) - s*(2)) / scale`` for the depth continuation ``result``: at ``depth = 2`` closed forms (iii)
    make it at most 0 (no depth-2 network beats the best single neuron); a deeper depth held to the same bound is the
    control. nan when ``depth`` is not in the continuation."""
    if depth not in result.depths:
        return math.nan
    return (result.speeds[result.depths.index(depth)] - shallow) / scale


def worst_speed(result: "DepthResult", min_depth: int, max_depth: int | None = None) -> float:
    """The smallest ``s_hat(L)`` over the depths ``min_depth <= L <= max_depth`` of a continuation (nan if none)."""
    s = [x for L, x in zip(result.depths, result.speeds) if L >= min_depth and (max_depth is None or L <= max_depth)]
    return min(s) if s else math.nan


def shallow_shortfall(X: torch.Tensor, G: torch.Tensor, shallow: float, width: int, restarts: int, steps: int,
                      eta: float, eta_final: float, generator: torch.Generator) -> float:
    """``s*(2) - s_hat(2)`` for a fresh run of ``restarts`` depth-2 random restarts of projected ascent from ``eta`` to
    ``eta_final``. With ``eta_final = eta`` (the decay dropped: a looser solver) the iterates keep oscillating around
    the cusp where the optimum sits, and the best of them stays about a step away: the control of the chapter's
    "solver reaches s*(2)" rows."""
    W0 = init_sphere(X.shape[0], [width], G.shape[0], restarts, generator, X.device)
    return shallow - float(projected_ascent(W0, X, G, steps, eta, eta_final).speeds.max())


@dataclass
class DepthStudy:
    """The depth continuation (:func:`escape_by_depth`) on several datasets, with what the chapter checks."""
    results: dict[str, DepthResult]
    shallow: dict[str, float]    # s*(2) by the angle search (nan unless d_in = 2)
    min_increment: float         # smallest s_hat(L+1) - s_hat(L) over datasets (Proposition 3.2: >= 0)
    merge_gap: float             # largest speed lost by merging a linear hidden layer (-inf if none)
    n_linear: int                # optima (L >= 3, positive speed) with a hidden layer of nu <= 1e-12
    n_deep: int                  # optima at depths L >= 4
    n_deep_linear: int           # of which with a linear hidden layer
    norm_bound_ok: bool          # s_hat <= |X|_F |G|_F everywhere (Proposition "Closed forms" (v))


def depth_study(data: dict[str, tuple[torch.Tensor, torch.Tensor]], depths: list[int], width: int, restarts: int,
                steps: int, eta: float, eta_final: float, generator: torch.Generator, progress=None) -> DepthStudy:
    """Proposition 3.2 and Proposition "Merging a linear layer" on every dataset ``name -> (X, G)`` of ``data``.

    ``progress`` (optional) wraps the loop over datasets, e.g. ``run.progress``.
    """
    items = data.items() if progress is None else progress(data.items(), desc="depth continuation")
    results, shallow = {}, {}
    for name, (X, G) in items:
        results[name] = escape_by_depth(X, G, depths, width, restarts, steps, eta, eta_final, generator)
        shallow[name] = shallow_speed(X, G)[0] if X.shape[0] == 2 else float("nan")
    mono = min(min(np.diff(r.speeds)) if len(r.speeds) > 1 else 0.0 for r in results.values())
    merge_gap, n_linear, n_deep, n_deep_linear = -math.inf, 0, 0, 0
    for name, r in results.items():
        X, G = data[name]
        for L, W, s_L in zip(r.depths, r.optima, r.speeds):
            linear = L >= 3 and min(layer_diagnostics(W, X)["nu"]) <= 1e-12
            n_deep, n_deep_linear = n_deep + (L >= 4), n_deep_linear + (L >= 4 and linear)
            if linear and is_positive(s_L, float(X.norm() * G.norm()), X.shape[1]):
                n_linear += 1
                merge_gap = max(merge_gap, s_L - float(speed(merge_most_linear(W, X), X, G)[0]))
    bound_ok = all(max(results[name].speeds) <= float(X.norm() * G.norm()) + roundoff(float(X.norm() * G.norm()), X.shape[1])
                   for name, (X, G) in data.items())
    return DepthStudy(results, shallow, mono, merge_gap, n_linear, n_deep, n_deep_linear, bound_ok)

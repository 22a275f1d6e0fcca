"""Theorem 3.1 ("Low-rank deep layers"): its constant and bound, and the ranks of the computed optima.

Theorem 3.1's constant ``c = kappa sqrt(2 log kappa)`` and its bound ``8 c l^{-1/2} / (1 - c l^{-1/2})``; the
deep-layer measure of a network (``max_{l>=2} rho_nt(W_l)``, ``rho_nt(Z^sigma_l)`` and ``nu_l`` of the deeper layers,
``rho_nt(W_1)``) on the optima of the depth continuation, and on untrained networks of the same shapes (the control).
The low-rank picture on random restarts of the solver is :mod:`~stagewise.escape_speed.restart_ranks`; the same
deep-layer measure on Proposition 3.2's construction (its added layers are rank one) is :func:`deepened_rank`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
import torch

from stagewise.escape_speed.deepening import DepthResult, deepen, identity_deepen
from stagewise.escape_speed.layer_measures import layer_diagnostics
from stagewise.escape_speed.network import Weights, init_sphere

ZERO_SPEED = 1e-12   # a speed below ZERO_SPEED * |X|_F |G|_F is zero up to rounding

def thm31_constant(X: torch.Tensor, G: torch.Tensor, s: float) -> tuple[float, float]:
    """Theorem 3.1's ``c = kappa sqrt(2 log kappa)``, ``kappa = |X|_F |G|_F / s*``, and ``l_min = c^2``.

    The bound ``8 c l^{-1/2} / (1 - c l^{-1/2})`` says something only for ``l > c^2``.
    A zero speed gives ``c = inf`` (no escape, nothing to bound). "Zero" is relative: a computed speed at
    rounding level, ``s <= 1e-12 |X|_F |G|_F`` (about ``1e-15`` for the ``cos 3`` data), counts as zero.
    """
    scale = float(X.norm() * G.norm())
    if s <= ZERO_SPEED * scale:
        return math.inf, math.inf
    kappa = scale / s
    c = kappa * math.sqrt(2 * math.log(kappa))
    return c, c * c


def thm31_bound(c: float, ell: int) -> float:
    """The Theorem 3.1 bound ``8 c l^{-1/2} / (1 - c l^{-1/2})`` at layer ``ell`` (``inf`` where it is vacuous, ``l <= c^2``)."""
    q = c / math.sqrt(ell)
    return 8 * q / (1 - q) if q < 1 else math.inf


def safe_ratio(a: float, b: float, scale: float = 1.0) -> float:
    """``a / b``, or ``nan`` when ``|b| <= 1e-12 scale`` (a zero optimal speed, as for the ``cos 3`` data, is about
    ``1e-15``: it is reported, not divided by). ``scale`` is the size ``b`` is compared with, e.g. ``|X|_F |G|_F``."""
    return a / b if abs(b) > ZERO_SPEED * scale else float("nan")


@dataclass
class OptimaRanks:
    """Theorem 3.1's trend on computed optima at depths ``L >= 3`` that reached the plateau."""
    deep_max: float              # max over optima of max_{l >= 2} rho_nt(W_l)
    first_max: float             # max over optima of rho_nt(W_1)
    deep_repr_max: float = math.nan   # max over optima of max_{l >= 2} rho_nt(Z^sigma_l) and nu_l
    count: int = 0               # optima that entered
    rows: list = None            # (dataset, L, speed, best speed, deep rho_W, deep rho_Z / nu, first rho_W)


def _deep_diag(W: Weights, X: torch.Tensor, z_from: int = 3) -> tuple[float, float, float]:
    """``max_{l>=2} rho_nt(W_l)``; ``max_{l>=z_from}`` of ``rho_nt(Z^sigma_l)`` and ``nu_l`` (nan when there is no such
    hidden layer; ``z_from = 3`` by default); ``rho_nt(W_1)``."""
    d = layer_diagnostics(W, X)
    deep_z = d["rho_Z"][z_from - 1:] + d["nu"][z_from - 1:]
    return max(d["rho_W"][1:]), (max(deep_z) if deep_z else math.nan), d["rho_W"][0]


def deepened_rank(Ws: Weights, X: torch.Tensor, G: torch.Tensor, k: int = 2, construction: str = "proposition") -> float:
    """Proposition 3.2's last clause on depth-3 networks ``Ws``: deepen each by ``k`` layers
    (:func:`~stagewise.escape_speed.deepening.deepen`) and return the largest ``max_{l>=2} rho_nt(W_l)``
    (:func:`_deep_diag`). From a depth-3 network every layer from the second on is one the construction built (the kept
    neuron's row, the inserted ``e1 e1^T``, the kept column), so it is 0 up to rounding, whatever the rank of ``W_1``.
    ``construction="identity"`` inserts full identity layers instead
    (:func:`~stagewise.escape_speed.deepening.identity_deepen`, the control)."""
    if len(Ws) != 3:
        raise ValueError(f"depth {len(Ws)}: the rank clause is measured on depth-3 networks")
    out = -math.inf
    for i in range(Ws[0].shape[0]):
        one = [W[i:i + 1] for W in Ws]
        deep = deepen(one, X, G, k=k) if construction == "proposition" else identity_deepen(one, k)
        out = max(out, _deep_diag(deep, X)[0])
    return out


def optima_ranks(results: dict[str, DepthResult], data: dict[str, tuple[torch.Tensor, torch.Tensor]],
                 plateau: float = 1e-3, source: str = "kept", known: dict[str, float] | None = None,
                 min_hits: int = 1, restarts: int = 0) -> OptimaRanks:
    """Theorem 3.1: ``rho_nt`` of the layers of optima at depth ``L >= 3`` with positive speed within the relative
    margin ``plateau`` of the best over depths (a run that stopped short of the optimum may keep a second direction).

    ``source="kept"`` measures the kept optima (for ``L >= 4`` often the Proposition 3.2 construction, rank one by
    construction); ``source="random"`` the best *random* restart per depth (:attr:`DepthResult.random_optima`),
    whose structure is found by the solver, not built in. ``deep_repr_max`` covers ``rho_nt(Z^sigma_l)`` and
    ``nu_l`` for ``l >= 3`` (optima of depth ``L >= 4``). ``count == 0`` when no optimum qualifies (values nan).
    ``known`` gives lower bounds on ``s*(L)``, ``L >= 3``, per dataset (Example 1: the rank-two construction's 1/2): a
    continuation that stayed below one has not found the optimum, and none of its restarts enters. ``min_hits``: a
    depth enters only when at least that many of its ``restarts`` random restarts reached ``s_hat(L)`` within 1e-3
    (:attr:`DepthResult.success`): a value that independent restarts agree on is evidence of the global optimum, a
    value found once may be a local one.
    """
    rows = []
    for name, r in results.items():
        optima = r.optima if source == "kept" else r.random_optima
        speeds = r.speeds if source == "kept" else r.random_speeds
        best = max(max(r.speeds), (known or {}).get(name, -math.inf))
        for L, W, s_L, hit in zip(r.depths, optima, speeds, r.success):
            agreed = min_hits <= 1 or round(hit * restarts) >= min_hits
            if L >= 3 and s_L > ZERO_SPEED * float(data[name][0].norm() * data[name][1].norm()) \
                    and s_L >= best * (1 - plateau) and agreed:
                rows.append((name, L, s_L, best, *_deep_diag(W, data[name][0])))
    if not rows:
        return OptimaRanks(math.nan, math.nan, math.nan, 0, [])
    z = [r[5] for r in rows if not math.isnan(r[5])]
    return OptimaRanks(max(r[4] for r in rows), max(r[6] for r in rows), max(z) if z else math.nan, len(rows), rows)


def untrained_ranks(data: dict[str, tuple[torch.Tensor, torch.Tensor]], depths: list[int], width: int, nets: int,
                    generator: torch.Generator) -> tuple[float, float]:
    """The control of the Theorem 3.1 checks: the same deep-layer measures on *untrained* random networks of the
    study's shapes (``nets`` per dataset and depth ``L >= 3``); medians over networks of ``max_{l>=2} rho_nt(W_l)``
    and of ``max_{l>=3}`` of ``rho_nt(Z^sigma_l)``, ``nu_l`` (depths ``L >= 4``)."""
    w_vals, z_vals = [], []
    for X, G in data.values():
        for L in depths:
            if L < 3:
                continue
            Ws = init_sphere(X.shape[0], [width] * (L - 1), G.shape[0], nets, generator, X.device)
            for i in range(nets):
                a, b, _ = _deep_diag([W[i:i + 1] for W in Ws], X)
                w_vals.append(a)
                if not math.isnan(b):
                    z_vals.append(b)
    med = lambda v: float(torch.tensor(v).median()) if v else math.nan
    return med(w_vals), med(z_vals)


def untrained_rank(data: dict[str, tuple[torch.Tensor, torch.Tensor]], depths: list[int], width: int, nets: int,
                   generator: torch.Generator, part: str = "W") -> float:
    """One of the two medians of :func:`untrained_ranks` (``part`` ``"W"``: weights, ``"Z"``: representations and
    ``nu``) on freshly drawn untrained networks: the initial weights put in place of the optima (the control)."""
    w, z = untrained_ranks(data, depths, width, nets, generator)
    return w if part == "W" else z

"""The paper's low-rank picture (Theorem 3.1's conclusion at depths where its bound is vacuous: the "half-bottleneck"
conjecture) on random restarts of the solver: directions found, not built.

Random restarts of projected ascent at every depth ``L >= 3``, per data set. The best speed *known* at depth ``L`` is
the largest of these restarts, of the depth continuation and of known lower bounds at every depth ``L' <= L``
(``s*(L)`` is non-decreasing in ``L``, Proposition 3.2). The restarts that come within a relative margin of it, at
least two of them, and whose first layer is not rank one (a non-trivial escape) enter the chapter's rows; the fastest
restart that stopped short of the best is their control. What this certifies: the fastest directions this run found,
that independent restarts agree on; not the optimum, which no finite search certifies. The deep-layer measure is
:func:`stagewise.escape_speed.theorem_31._deep_diag`, looked up there at call time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from stagewise.escape_speed import theorem_31
from stagewise.escape_speed.ascent import projected_ascent
from stagewise.escape_speed.network import Weights, init_sphere
from stagewise.escape_speed.theorem_31 import ZERO_SPEED


@dataclass
class RestartBatch:
    """Random restarts of projected ascent at one depth on one data set (Theorem 3.1 on directions found, not built)."""
    name: str
    L: int
    speeds: torch.Tensor         # (R,) best speed of each restart
    Ws: Weights                  # the restarts' best points
    best: float                  # best known speed at this depth (restarts, continuation, known bounds, at depths <= L)
    shallow: float               # best speed at depth 2 (a restart at or below it took a rank-one escape)

    def hits(self, plateau: float) -> int:
        """Restarts within the relative margin ``plateau`` of :attr:`best`."""
        return int((self.speeds >= self.best * (1 - plateau)).sum())

    def diag(self, i: int, X: torch.Tensor, z_from: int = 3) -> tuple[float, float, float]:
        """``max_{l>=2} rho_nt(W_l)``, ``max_{l>=z_from}`` of ``rho_nt(Z^sigma_l)`` and ``nu_l``, ``rho_nt(W_1)`` of
        restart ``i``."""
        return theorem_31._deep_diag([W[i:i + 1] for W in self.Ws], X, z_from)


@dataclass
class RestartRanks:
    """Theorem 3.1 on the random restarts of :func:`restart_ranks`, per data set and depth."""
    batches: list[RestartBatch]
    data: dict
    plateau: float = 1e-3
    min_hits: int = 2
    first_rank_one: float = 1e-2     # rho_nt(W_1) at most this: a single-neuron chain (the trivial case)

    def rows(self, z_from: int = 3) -> list[tuple]:
        """Per batch that qualifies (``min_hits`` restarts within ``plateau`` of the best): (name, L, hits, best speed,
        deep rho_W, deep rho_Z / nu from layer ``z_from``, rho_W(W_1)) of its best restart."""
        out = []
        for b in self.batches:
            if b.best > ZERO_SPEED * float(self.data[b.name][0].norm() * self.data[b.name][1].norm()) \
                    and b.hits(self.plateau) >= self.min_hits:
                i = int(torch.argmax(b.speeds))
                out.append((b.name, b.L, b.hits(self.plateau), float(b.speeds[i]),
                            *b.diag(i, self.data[b.name][0], z_from)))
        return out

    def nontrivial(self, z_from: int = 3) -> list[tuple]:
        """The qualifying rows whose first layer is not rank one (``rho_nt(W_1) > first_rank_one``): depth is used."""
        return [r for r in self.rows(z_from) if r[6] > self.first_rank_one]

    def short_restart(self, min_depth: int = 3, prefer: str = "Example 1", prefer_depth: int = 3) -> tuple | None:
        """The fastest restart that beat the depth-2 speed by ten plateau margins (a non-trivial escape) but stopped at
        least ten plateau margins short of the best (``speed <= best (1 - 10 plateau)``): (name, L, speed, best,
        index, batch). Taken from the data set ``prefer`` at depth ``prefer_depth`` when it has one there (Example 1 at
        depth 3, where a restart that stops short keeps a second direction in ``W_2``), else from any batch of depth
        ``L >= min_depth``."""
        if prefer:
            sub = RestartRanks([b for b in self.batches if b.name == prefer and b.L == prefer_depth], self.data,
                               self.plateau, self.min_hits, self.first_rank_one)
            found = sub.short_restart(min_depth, prefer="")
            if found is not None:
                return found
        cand = None
        for b in self.batches:
            if b.L < min_depth:
                continue
            s = b.speeds
            ok = (s <= b.best * (1 - 10 * self.plateau)) & (s > b.shallow * (1 + 10 * self.plateau))
            if bool(ok.any()):
                i = int(torch.argmax(torch.where(ok, s, torch.full_like(s, -math.inf))))
                rel = float(s[i]) / b.best
                if cand is None or rel > cand[2] / cand[3]:
                    cand = (b.name, b.L, float(s[i]), b.best, i, b)
        return cand


def restart_ranks(data: dict[str, tuple[torch.Tensor, torch.Tensor]], names: list[str], depths: list[int], width: int,
                  restarts: int, steps: int, eta: float, eta_final: float, generator: torch.Generator,
                  continuation: dict | None = None, known: dict[str, float] | None = None) -> RestartRanks:
    """``restarts`` random restarts of projected ascent (``steps`` steps, hidden ``width``) at every depth ``L >= 3`` for
    the data sets ``names``: the low-rank picture measured on directions the solver found, not on the Proposition 3.2
    construction. ``best`` per depth is the best speed known at that depth: the largest of these restarts, the
    continuation's ``s_hat(L')`` and ``known`` lower bounds over every depth ``L' <= L`` (``s*(L)`` is non-decreasing,
    Proposition 3.2); ``shallow`` the continuation's ``s_hat(2)`` (or the best single neuron)."""
    batches = []
    for name in names:
        X, G = data[name]
        r = (continuation or {}).get(name)
        shallow = r.speeds[r.depths.index(2)] if r is not None and 2 in r.depths else 0.0
        known_here = (known or {}).get(name, -math.inf)
        so_far = -math.inf
        for L in sorted(depths):
            if r is not None:
                so_far = max([so_far] + [s for Lc, s in zip(r.depths, r.speeds) if Lc <= L])
            if L < 3:
                continue
            W0 = init_sphere(X.shape[0], [width] * (L - 1), G.shape[0], restarts, generator, X.device)
            out = projected_ascent(W0, X, G, steps, eta, eta_final)
            so_far = max(so_far, float(out.speeds.max()), known_here)
            batches.append(RestartBatch(name, L, out.speeds, out.Ws, so_far, shallow))
    return RestartRanks(batches, data)


def best_known(study: RestartRanks, continuation: dict, name: str) -> tuple[list[int], list[float]]:
    """Per depth of the continuation of data set ``name``: the best speed known there (the continuation's
    ``s_hat(L)``, the random restarts of ``study`` and every shallower depth's, by Proposition 3.2), for the figure."""
    r = continuation[name]
    by_depth = {b.L: float(b.speeds.max()) for b in study.batches if b.name == name}
    out, so_far = [], -math.inf
    for L, s in zip(r.depths, r.speeds):
        so_far = max(so_far, s, by_depth.get(L, -math.inf))
        out.append(so_far)
    return list(r.depths), out


def nontrivial_rank(study: RestartRanks, part: str = "W", z_from: int = 3) -> float:
    """Theorem 3.1 on the qualifying non-trivial restarts: the largest ``max_{l>=2} rho_nt(W_l)`` (``part="W"``) or
    ``max_{l>=z_from}`` of ``rho_nt(Z^sigma_l)``, ``nu_l`` (``part="Z"``, depths ``L >= 4``); nan when none qualifies.
    ``z_from = 2`` (the layer index one too low, where the optimum still uses its ReLU) is the control of the ``Z``
    row."""
    vals = [r[4] if part == "W" else r[5] for r in study.nontrivial(z_from) if part == "W" or r[1] >= 4]
    vals = [v for v in vals if not math.isnan(v)]
    return max(vals) if vals else math.nan


def short_restart_rank(study: RestartRanks, part: str = "W", min_depth: int = 3) -> float:
    """The same measure on the fastest restart that stopped short (:meth:`RestartRanks.short_restart`): a direction
    that is *not* optimal, the control of the low-rank rows; nan when there is none (or, for ``part="Z"``, it has
    depth 3)."""
    c = study.short_restart(min_depth)
    if c is None:
        return math.nan
    name, L, s, best, i, b = c
    w, z, _ = b.diag(i, study.data[name][0])
    return w if part == "W" else z


def restart_table(study: RestartRanks) -> str:
    """Per data set and depth: ``"L=3: 5 (0.49998; 8e-05, 0.50)"``, the restarts within the margin of the best, then
    the best restart's speed, deep ``rho_nt(W_l)`` and ``rho_nt(W_1)`` (only where at least two restarts agree)."""
    parts = {}
    for b in study.batches:
        h = b.hits(study.plateau)
        if h >= study.min_hits:
            i = int(torch.argmax(b.speeds))
            w, _, first = b.diag(i, study.data[b.name][0])
            txt = f"L={b.L}: {h} ({float(b.speeds[i]):.5f}; {w:.0e}, {first:.2f})"
        else:
            txt = f"L={b.L}: {h} (best {float(b.speeds.max()):.5f}, does not enter)"
        parts.setdefault(b.name, []).append(txt)
    return "; ".join(f"{name}: " + ", ".join(v) for name, v in parts.items())


def short_text(study: RestartRanks) -> str:
    """The control restart of :meth:`RestartRanks.short_restart`, for the prose."""
    c = study.short_restart()
    if c is None:
        return "none in this run"
    name, L, s, best, i, b = c
    w, _, _ = b.diag(i, study.data[name][0])
    return f"{name}, L = {L}: speed {s:.4f} against {best:.4f}, deep ρ_nt(W_ℓ) = {w:.3f}"

"""Low-rank structure of escape directions: Theorem 3.1, Propositions 3.3 and 3.4.

Per-layer diagnostics (non-top energy fraction ``rho_nt`` of weights and representations,
ReLU deviation ``nu``), Theorem 3.1's constant and bound, both sides of the inequality behind
Proposition 3.4, and Proposition 3.3's bound and speed bracket.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from stagewise.escape_speed.ascent import projected_ascent
from stagewise.escape_speed.network import Weights, forward, init_sphere
from stagewise.escape_speed.problems import near_rank_one_data
from stagewise.numerics.roundoff import is_positive, is_zero, roundoff
from stagewise.numerics.spectra import nontop_fraction

if TYPE_CHECKING:
    from stagewise.escape_speed.deepening import DepthResult

ZERO_SPEED = 1e-12   # a speed below ZERO_SPEED * |X|_F |G|_F is zero up to rounding


def relu_deviation(Z: torch.Tensor, scale: float | None = None, dim: int = 1) -> float:
    """``nu = |sigma(Z) - Z|_F^2 / |Z|_F^2 = |relu(-Z)|_F^2 / |Z|_F^2``: how far the ReLU is from the
    identity on pre-activations ``Z`` (Theorem 3.1, Proposition 3.3); 0 for a zero (dead) layer.

    ``scale`` is the size ``Z`` would have if it were not dead, ``|W_l|_F |Z^sigma_{l-1}|_F`` for
    ``Z = W_l Z^sigma_{l-1}`` (``dim`` terms per entry): a ``Z`` within rounding error of zero at that scale counts
    as dead, so a layer that is exactly zero on one machine and ``1e-17`` on another gets the same ``nu``. Without
    ``scale`` only an exactly zero ``Z`` counts as dead (the ratio is undefined there)."""
    z2 = float((Z ** 2).sum())
    if is_zero(math.sqrt(z2), float(scale), dim) if scale is not None else not z2:
        return 0.0
    return float((torch.relu(-Z) ** 2).sum()) / z2


def layer_diagnostics(Ws: Weights, X: torch.Tensor) -> dict[str, list[float]]:
    """Per layer of a single network, the quantities bounded by Theorem 3.1 and Proposition 3.3.

    Returns lists under ``rho_W`` (``rho_nt(W_l)``, every layer), ``ratio_W`` (``s2/s1(W_l)``,
    every layer), ``rho_Z`` (``rho_nt(Z^sigma_l)``, hidden layers) and ``nu`` (``nu_l``, hidden
    layers). ``nu_l = |Z^sigma_l - Z_l|_F^2 / |Z_l|_F^2`` measures how far the ReLU is from the
    identity on layer ``l``.
    """
    Z, Zs = forward(Ws, X)
    out = {"rho_W": [], "ratio_W": [], "rho_Z": [], "nu": []}
    w_scale = max(float(W[0].norm()) for W in Ws)            # a dead layer is zero relative to the live ones
    z_scale = max(float(Zl[0].norm()) for Zl in Zs)
    for l, W in enumerate(Ws):
        sv = torch.linalg.svdvals(W[0])
        live = len(sv) > 1 and is_positive(float(sv[0]), w_scale, min(W.shape[1:]))
        out["rho_W"].append(nontop_fraction(W[0], w_scale))
        out["ratio_W"].append(float(sv[1] / sv[0]) if live else 0.0)
        if l < len(Ws) - 1:
            out["rho_Z"].append(nontop_fraction(Zs[l + 1][0], z_scale))
            out["nu"].append(relu_deviation(Z[l][0], w_scale * float(Zs[l][0].norm()), W.shape[2]))
    return out


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


def prop34_sides(Ws: Weights, X: torch.Tensor, G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both sides of the deterministic inequality behind Proposition 3.4 ("Weak control"), per network (log form):

    ``sum_{l=0}^{L-1} log(|Z^s_l|_F^2 / |Z^s_l|_op^2) <= 2 log(|X|_F |G|_F prod_l |W_l|_F / |Tr G^T Z_L|)``.
    Networks with a dead layer or zero output give ``inf`` on the right (nothing to test).
    """
    Z, Zs = forward(Ws, X)
    N = X.shape[1]
    lhs = torch.zeros(Ws[0].shape[0], dtype=X.dtype, device=X.device)
    prod = torch.ones_like(lhs)                       # prod_{k <= l} |W_k|_F: the size a live Z^sigma_l can reach
    for l, H in enumerate(Zs):
        f2 = (H ** 2).sum(dim=(1, 2))
        op2 = torch.linalg.matrix_norm(H, ord=2) ** 2
        # a dead representation (zero up to rounding at its reachable size |X|_F prod |W_k|_F) adds nothing
        live = op2.sqrt() > roundoff(1.0, max(h.shape[1] for h in Zs[:l + 1])) * float(X.norm()) * prod
        lhs = lhs + torch.where(live, torch.log(f2 / op2.clamp_min(1e-300)), torch.zeros_like(f2))
        prod = prod * Ws[l].flatten(1).norm(dim=1)
    tr = (Z[-1] * G).sum(dim=(1, 2)).abs()
    top = float(X.norm() * G.norm()) * prod           # bound (v): |Tr G^T Z_L| <= |X|_F |G|_F prod |W_l|_F
    rhs = 2 * torch.log(top / tr.clamp_min(1e-300))
    # a trace within rounding error of zero at that size: no statement (inf), on every machine alike
    rhs = torch.where(tr > roundoff(1.0, N * G.shape[0] * len(Ws)) * top, rhs, torch.full_like(rhs, math.inf))
    return lhs, rhs


def prop33_bound(g_norm: float, eps: float, s: float) -> float:
    """Proposition 3.3 (App. A.5): ``8 |G|_F eps / (s* - |G|_F eps)`` bounds ``rho_nt(W_l)``,
    ``rho_nt(Z^sigma_l)`` and ``nu_l`` at the optimum; ``inf`` (no statement) when ``s* <= |G|_F eps``.
    The bound decreases in ``s*``: evaluated at a lower estimate of ``s*`` it is larger (weaker). A denominator within
    rounding error of zero (relative to ``s``) counts as zero: no statement."""
    den = s - g_norm * eps
    return 8 * g_norm * eps / den if is_positive(den, max(abs(s), g_norm * eps)) else math.inf


def prop33_speed_bracket(X: torch.Tensor, G: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> tuple[float, float]:
    """The bracket ``|Gv||u| -/+ |G|_F |E|_F`` on the optimal speed ``s*`` for ``X = u v^T + E``
    (proof of Proposition 3.3, App. A.5): a rank-one linear chain along ``u`` reaches the lower end, and
    ``|f_theta(u)| <= |u|`` on the ball ``|theta|^2 <= L`` gives the upper end."""
    base = float((G @ v).norm() * u.norm())
    slack = float(G.norm() * (X - torch.outer(u, v)).norm())
    return base - slack, base + slack


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


def prop34_gap(X: torch.Tensor, G: torch.Tensor, results: dict[str, DepthResult],
               data: dict[str, tuple[torch.Tensor, torch.Tensor]], generator: torch.Generator,
               depths: tuple[int, ...] = (4, 8), width: int = 8, nets: int = 300) -> float:
    """Proposition 3.4's inequality: ``max(LHS - RHS)`` over ``nets`` random networks per depth on ``(X, G)`` and over
    every computed optimum of ``results`` on its own data (at most rounding)."""
    gap = []
    for L in depths:
        lhs, rhs = prop34_sides(init_sphere(X.shape[0], [width] * (L - 1), G.shape[0], nets, generator, X.device), X, G)
        gap.append(float((lhs - rhs).max()))
    for name, r in results.items():
        for W in r.optima:
            lhs, rhs = prop34_sides(W, *data[name])
            gap.append(float((lhs - rhs).max()))
    return max(gap)


@dataclass
class Prop33Row:
    """One case of Proposition 3.3: noise ``eps``, depth ``L``, computed speed and the bracket of the proof."""
    eps: float
    L: int
    s: float                     # s_hat, the best speed found
    lo: float                    # |Gv||u| - |G|_F eps
    hi: float                    # |Gv||u| + |G|_F eps (s_up)
    g: float                     # |G|_F
    x: float                     # rho_nt(X) of the input
    net: float                   # max over layers of rho_nt(W_l), rho_nt(Z^sigma_l), nu_l
    net_untrained: float = math.nan  # the same for the untrained starting networks (largest over restarts): the control
    X: torch.Tensor = None       # the data u v^T + E
    optimum: Weights = None      # the best network found (batch of one)
    start: Weights = None        # the untrained starting networks of the restarts

    @property
    def bound_hat(self) -> float:
        """The bound at ``s_hat`` (weaker than at ``s*``)."""
        return prop33_bound(self.g, self.eps, self.s)

    @property
    def bound_up(self) -> float:
        """The bound at ``s_up``, the smallest value the true bound can take."""
        return prop33_bound(self.g, self.eps, self.hi)


def prop33_study(eps_values: tuple[float, ...], depths: tuple[int, ...], width: int, restarts: int, steps: int,
                 eta: float, eta_final: float, generator: torch.Generator,
                 device: torch.device | str = "cpu") -> list[Prop33Row]:
    """Proposition 3.3 on ``X = u v^T + E`` (``d_in = 5``, ``N = 20``, ``d_out = 2``): for each ``eps`` and depth, the
    best of ``restarts`` projected-ascent runs (hidden ``width``) and its per-layer ratios."""
    rows = []
    for eps in eps_values:
        X, G, u, v = [t.to(device) for t in near_rank_one_data(5, 20, 2, eps, generator)]
        lo, hi = prop33_speed_bracket(X, G, u, v)
        for L in depths:
            W0 = init_sphere(5, [width] * (L - 1), 2, restarts, generator, device)
            W, s_hat = projected_ascent(W0, X, G, steps, eta, eta_final).best()
            d = layer_diagnostics(W, X)
            untrained = []
            for i in range(restarts):
                d0 = layer_diagnostics([w[i:i + 1] for w in W0], X)
                untrained.append(max(d0["rho_W"] + d0["rho_Z"] + d0["nu"]))
            rows.append(Prop33Row(eps, L, s_hat, lo, hi, float(G.norm()), nontop_fraction(X),
                                  max(d["rho_W"] + d["rho_Z"] + d["nu"]), max(untrained), X, W, W0))
    return rows


def prop33_ratio(rows: list[Prop33Row], eps: float, trained: bool = True) -> float:
    """The largest of ``rho_nt(W_l)``, ``rho_nt(Z^sigma_l)``, ``nu_l`` over all layers of the *network* (the input's
    own ``rho_nt(X)`` is the data's, not the network's, and is left out), for the rows at noise ``eps``, measured now
    on the computed optima (``trained``) or on the untrained starting networks of their restarts (the largest of
    them: the control)."""
    out = []
    for r in rows:
        if r.eps != eps:
            continue
        nets = [r.optimum] if trained else [[w[i:i + 1] for w in r.start] for i in range(r.start[0].shape[0])]
        for W in nets:
            d = layer_diagnostics(W, r.X)
            out.append(max(d["rho_W"] + d["rho_Z"] + d["nu"]))
    return max(out) if out else math.nan


def prop33_position(rows: list[Prop33Row], noise_power: float = 1.0) -> float:
    """Where ``s_hat`` sits in Proposition 3.3's bracket ``|Gv||u| -+ |G|_F eps``: the largest over rows of
    ``|s_hat - |Gv||u|| / (|G|_F eps^noise_power)``, at most 1 inside the bracket. ``noise_power = 2`` (the noise
    measured as ``|E|_F^2``, a wrong exponent) is the control: the bracket then shrinks below the first-order effect of
    the noise on the speed."""
    return max(abs(r.s - (r.lo + r.hi) / 2) / (r.g * r.eps ** noise_power) for r in rows)


@dataclass
class RestartBatch:
    """Random restarts of projected ascent at one depth on one data set (Theorem 3.1 on directions found, not built)."""
    name: str
    L: int
    speeds: torch.Tensor         # (R,) best speed of each restart
    Ws: Weights                  # the restarts' best points
    best: float                  # best known speed at this depth (these restarts, the continuation, known bounds)
    shallow: float               # best speed at depth 2 (a restart at or below it took a rank-one escape)

    def hits(self, plateau: float) -> int:
        """Restarts within the relative margin ``plateau`` of :attr:`best`."""
        return int((self.speeds >= self.best * (1 - plateau)).sum())

    def diag(self, i: int, X: torch.Tensor, z_from: int = 3) -> tuple[float, float, float]:
        """``max_{l>=2} rho_nt(W_l)``, ``max_{l>=z_from}`` of ``rho_nt(Z^sigma_l)`` and ``nu_l``, ``rho_nt(W_1)`` of
        restart ``i``."""
        return _deep_diag([W[i:i + 1] for W in self.Ws], X, z_from)


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
    the data sets ``names``: Theorem 3.1 measured on directions the solver found, not on the Proposition 3.2
    construction. ``best`` per depth is the largest of these restarts, the continuation's ``s_hat(L)`` and ``known``
    lower bounds; ``shallow`` the continuation's ``s_hat(2)`` (or the best single neuron)."""
    batches = []
    for name in names:
        X, G = data[name]
        r = (continuation or {}).get(name)
        shallow = r.speeds[r.depths.index(2)] if r is not None and 2 in r.depths else 0.0
        for L in depths:
            if L < 3:
                continue
            W0 = init_sphere(X.shape[0], [width] * (L - 1), G.shape[0], restarts, generator, X.device)
            out = projected_ascent(W0, X, G, steps, eta, eta_final)
            cont = r.speeds[r.depths.index(L)] if r is not None and L in r.depths else -math.inf
            best = max(float(out.speeds.max()), cont, (known or {}).get(name, -math.inf))
            batches.append(RestartBatch(name, L, out.speeds, out.Ws, best, shallow))
    return RestartRanks(batches, data)


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
    that is *not* optimal, the control of the Theorem 3.1 rows; nan when there is none (or, for ``part="Z"``, it has
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

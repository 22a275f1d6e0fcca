"""Proposition 3.3 ("Nearly rank-one nonnegative inputs"): the bound, the speed bracket and the study.

On inputs ``X = u v^T + E``: the bound ``8 |G|_F eps / (s* - |G|_F eps)`` on ``rho_nt(W_l)``, ``rho_nt(Z^sigma_l)``
and ``nu_l`` at the optimum, the bracket ``|Gv||u| -/+ |G|_F |E|_F`` on ``s*`` from the proof (App. A.5), the best of
several projected-ascent runs per noise level and depth, and where their speeds and per-layer ratios fall.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from stagewise.escape_speed.ascent import projected_ascent
from stagewise.escape_speed.layer_measures import layer_diagnostics
from stagewise.escape_speed.network import Weights, init_sphere
from stagewise.escape_speed.problems import near_rank_one_data
from stagewise.numerics.roundoff import is_positive
from stagewise.numerics.spectra import nontop_fraction


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

"""Example 1 of the escape-speed chapter: eight points on the circle (paper Sec. 4, Figs 2, 5 and 6).

Proposition "Example 1": every rank-one network is at most ``sqrt(2) - 1`` fast (Eq. 6), and a
rank-two depth-3 network reaches ``1/2`` (Eq. 2). Which runs find the faster escape, with
projected ascent and with gradient descent from small initialization, as the width grows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import spearmanr

from stagewise.escape_speed.ascent import AscentResult, power_iteration, projected_ascent
from stagewise.escape_speed.closed_forms import neuron_speed, rank_one_speed_eq6, rank_two_construction, shallow_speed
from stagewise.escape_speed.gradient_descent import WidthSweep, gd_width_sweep
from stagewise.escape_speed.network import init_sphere, pad_hidden, speed
from stagewise.numerics.roundoff import roundoff

RANK_ONE_SPEED = math.sqrt(2) - 1     # Proposition "Example 1" (a): the best rank-one speed


@dataclass
class RankOneScan:
    """Proposition "Example 1" on an angle grid: the direct rank-one speed, Eq. (6), and the rank-two speed."""
    phi: np.ndarray              # first-layer angles
    direct: np.ndarray           # |G sigma(X^T w_phi)| (Proposition "Closed forms" (iv))
    eq6: np.ndarray              # paper Eq. (6)
    best_speed: float            # s*(2) by the exact angle search (incl. hinge angles)
    best_angle: float
    rank_two_speed: float        # speed of the construction of Eq. (2)

    @property
    def eq6_gap(self) -> float:
        """``max |direct - Eq. (6)|`` over the grid."""
        return float(np.abs(self.direct - self.eq6).max())

    @property
    def angle_offset(self) -> float:
        """Distance of the best angle from the nearest multiple of ``pi/4``, in units of ``pi/4``."""
        return pi4_offset(self.best_angle)


def pi4_offset(angle: float) -> float:
    """Distance of ``angle`` from the nearest multiple of ``pi/4``, in units of ``pi/4`` (0 to 1/2)."""
    q = angle / (math.pi / 4)
    return abs(q - round(q))


def rank_one_scan(X: torch.Tensor, G: torch.Tensor, n_angles: int = 20001) -> RankOneScan:
    """Proposition "Example 1" (a) and (b) on the data ``(X, G)`` of :func:`~stagewise.escape_speed.problems.example1_data`."""
    phi = np.linspace(0, 2 * np.pi, n_angles)
    best, angle = shallow_speed(X, G)
    rank2 = [w.to(X.device) for w in rank_two_construction()]
    return RankOneScan(phi, neuron_speed(phi, X, G), rank_one_speed_eq6(phi), best, angle,
                       float(speed(rank2, X, G)[0]))


def grows_with_width(widths: list[int], fractions: np.ndarray) -> bool:
    """The robust form of "the success fraction grows with width": at least three widths, the mean over the two
    largest above the mean over widths ``<= 2`` (0 if none), and a positive rank correlation."""
    fractions = np.asarray(fractions, dtype=float)
    if len(widths) < 3:
        return False
    small = fractions[np.array(widths) <= 2]
    # fractions are counts / trials: two means differ by at least 1 / (2 trials) or not at all, so "above" beyond
    # rounding (roundoff) is the exact decision on every machine; the same for the rank correlation
    tol = roundoff(1.0, len(widths))
    if np.ptp(fractions) <= tol:            # constant fractions: no growth (and spearmanr would warn)
        return False
    rho = spearmanr(widths, fractions).statistic
    return bool(fractions[-2:].mean() > (small.mean() if len(small) else 0.0) + tol and rho > tol)


@dataclass
class AscentSweep:
    """Projected ascent on Example 1 at depth 3 for several widths (paper Figs 2 and 6)."""
    widths: list[int]
    runs: dict[int, AscentResult]    # per width: best points, speeds and traces of its restarts
    threshold: float                 # success: speed above sqrt(2) - 1 + margin

    @property
    def fractions(self) -> np.ndarray:
        return np.array([float((self.runs[w].speeds > self.threshold).double().mean()) for w in self.widths])

    @property
    def best(self) -> float:
        return max(float(self.runs[w].speeds.max()) for w in self.widths)

    @property
    def width1_excess(self) -> float:
        """Best width-1 speed minus ``sqrt(2) - 1`` (Proposition "Closed forms" (iv): at most 0); nan without width 1."""
        return float(self.runs[1].speeds.max()) - RANK_ONE_SPEED if 1 in self.widths else math.nan

    @property
    def widest_excess(self) -> float:
        """The same for the widest networks (rank two allowed): the control of the width-1 check."""
        return float(self.runs[max(self.widths)].speeds.max()) - RANK_ONE_SPEED


def ascent_width_sweep(X: torch.Tensor, G: torch.Tensor, widths: list[int], restarts: int, steps: int, eta: float,
                       eta_final: float, generator: torch.Generator, margin: float = 1e-3, progress=None) -> AscentSweep:
    """Proposition "Example 1" with the solver: ``restarts`` depth-3 runs per width in one batch, narrower
    networks padded with zero neurons (:func:`~stagewise.escape_speed.network.pad_hidden`)."""
    wmax = max(widths)
    W0 = [torch.cat(ws).to(X.device) for ws in zip(*[pad_hidden(init_sphere(2, [w, w], 1, restarts, generator), wmax)
                                                     for w in widths])]
    out = projected_ascent(W0, X, G, steps, eta, eta_final, progress=progress)
    part = {w: slice(i * restarts, (i + 1) * restarts) for i, w in enumerate(widths)}
    runs = {w: AscentResult([x[p] for x in out.Ws], out.speeds[p], out.trace[:, p]) for w, p in part.items()}
    return AscentSweep(list(widths), runs, RANK_ONE_SPEED + margin)


def power_iteration_failure(X: torch.Tensor, G: torch.Tensor, width: int, runs: int, steps: int, window: int,
                            generator: torch.Generator) -> float:
    """Fraction of naive fixed-point runs (Definition 2.1's ``rho <- sqrt(L) grad / |grad|``) that, over the last
    ``window`` iterations, still oscillate by more than ``1e-3`` or are dead (speed below ``1e-12``)."""
    W0 = init_sphere(X.shape[0], [width, width], G.shape[0], runs, generator, X.device)
    tail = power_iteration(W0, X, G, steps).cpu().numpy()[-window:]
    return float(((tail.max(0) - tail.min(0) > 1e-3) | (tail[-1] < 1e-12)).mean())


@dataclass
class GDSuccess:
    """Gradient descent from small initialization on Example 1 at depth 3 (paper's conjecture, Sec. 5)."""
    widths: list[int]
    sweep: WidthSweep            # speed of the direction at the loss drop, per width and initialization
    margin: float                # success: speed above sqrt(2) - 1 + margin

    @property
    def fractions(self) -> np.ndarray:
        """Success fraction per width (dead runs, speed nan, fail)."""
        return np.array([float((s > RANK_ONE_SPEED + self.margin).double().mean()) for s in self.sweep.speeds])

    def _finite(self, s: torch.Tensor) -> torch.Tensor:
        return s[torch.isfinite(s)]

    @property
    def width1(self) -> torch.Tensor:
        """Speeds of the width-1 runs that escaped (empty without width 1)."""
        return self._finite(self.sweep.speeds[self.widths.index(1)]) if 1 in self.widths else torch.zeros(0)

    @property
    def offset(self) -> float:
        """Plateau offset ``delta``: largest distance of a width-1 run from ``sqrt(2) - 1`` (Euler chatter)."""
        w1 = self.width1
        return float((RANK_ONE_SPEED - w1).abs().max()) if len(w1) else math.nan

    @property
    def width1_excess(self) -> float:
        """Best width-1 speed minus ``sqrt(2) - 1`` (at most 0, Proposition "Closed forms" (iv)); nan without width 1
        or when no width-1 run escaped."""
        w1 = self.width1
        return float(w1.max()) - RANK_ONE_SPEED if len(w1) else math.nan

    @property
    def widest_excess(self) -> float:
        """The same for the widest networks (rank two allowed): the control of the width-1 check."""
        s = self._finite(self.sweep.speeds[self.widths.index(max(self.widths))])
        return float(s.max()) - RANK_ONE_SPEED if len(s) else math.nan

    @property
    def best(self) -> float:
        return float(self._finite(self.sweep.speeds).max())

    @property
    def half_gap(self) -> float:
        """Median distance of the successful runs below the rank-two speed 1/2 (nan if none succeeded)."""
        s = self._finite(self.sweep.speeds)
        won = s[s > RANK_ONE_SPEED + self.margin]
        return float((0.5 - won).median()) if len(won) else math.nan


def gd_success(X: torch.Tensor, Y: torch.Tensor, widths: list[int], inits: int, alpha: float, rel_step: float,
               generator: torch.Generator, drop: float = 0.01, margin: float = 0.025) -> GDSuccess:
    """Proposition "Example 1" with gradient descent: :func:`~stagewise.escape_speed.gradient_descent.gd_width_sweep`
    at depth 3 on targets ``Y`` (so ``G = -Y``) until the loss has dropped by ``drop``.

    The horizon is derived from the step: each Euler step grows the norm by at most the fraction ``rel_step``, so an
    aligned run needs about ``log(1/alpha) / rel_step`` steps to leave the plateau (921 at the defaults, where the
    batch took 1757); we allow 20 times that plus 2000. A run still on the plateau then has not escaped (speed nan,
    not a success). At ``rel_step`` 0.1 some runs chatter on the plateau for ever, and a fixed horizon of 100000 steps
    made this one call take minutes."""
    horizon = int(20 * math.log(1 / alpha) / rel_step) + 2000
    return GDSuccess(list(widths), gd_width_sweep(X, Y, widths, 3, inits, alpha, rel_step, drop, generator,
                                                  max_steps=horizon), margin)

"""Example 1 of the escape-speed chapter as the width grows: which runs find the faster escape (paper Figs 2 and 6).

Proposition "Example 1" with the solver and with gradient descent from small initialization (the paper's conjecture,
Sec. 5): depth-3 projected-ascent restarts and gradient-descent runs per hidden width. Two fractions per width: the
runs that beat the rank-one speed ``sqrt(2) - 1`` (the paper's criterion: they are in the basin of a faster escape)
and the runs that *reach* the rank-two speed ``1/2`` (the optimal escape found: the chapter's success). The controls
build every network from a given width on at one actual width (a step in width); the naive fixed-point iteration.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.escape_speed.ascent import AscentResult, power_iteration, projected_ascent
from stagewise.escape_speed.example1_rank_one import RANK_ONE_SPEED
from stagewise.escape_speed.gradient_descent import WidthSweep, gd_width_sweep
from stagewise.escape_speed.network import init_sphere, pad_hidden
from stagewise.escape_speed.width_trend import MIN_INFORMATIVE_WIDTH, width_trend

#: The speed of the rank-two construction of Eq. (2), a lower bound on s*(3) of Example 1 (the paper: its optimum).
RANK_TWO_SPEED = 0.5


def excess_at_width(result, width: int) -> float:
    """Best speed of the runs at hidden ``width`` minus ``sqrt(2) - 1`` (:class:`AscentSweep` or :class:`GDSuccess`;
    dead runs left out); nan when the width is not in the sweep or no run there escaped. At width 1 the networks
    are rank one, so Proposition "Closed forms" (iv) makes it at most 0."""
    if width not in result.widths:
        return math.nan
    s = result.speeds_at(width)
    s = s[torch.isfinite(s)]
    return float(s.max()) - RANK_ONE_SPEED if len(s) else math.nan


@dataclass
class AscentSweep:
    """Projected ascent on Example 1 at depth 3 for several widths (paper Figs 2 and 6)."""
    widths: list[int]
    runs: dict[int, AscentResult]    # per width: best points, speeds and traces of its restarts
    threshold: float                 # beyond the rank-one escape: speed above sqrt(2) - 1 + margin (the paper's success)
    reach: float = RANK_TWO_SPEED    # the rank-two speed reached: speed at least 1/2 (1 - margin) (the chapter's success)

    @property
    def fractions(self) -> np.ndarray:
        """Fraction of the restarts per width that reach the rank-two speed (success)."""
        return np.array([float((self.runs[w].speeds >= self.reach).double().mean()) for w in self.widths])

    @property
    def successes(self) -> list[int]:
        """Number of restarts per width that reach the rank-two speed (success)."""
        return [int((self.runs[w].speeds >= self.reach).sum()) for w in self.widths]

    @property
    def beyond_rank_one(self) -> list[int]:
        """Number of restarts per width above ``sqrt(2) - 1 + margin`` (the paper's criterion of Fig. 2)."""
        return [int((self.runs[w].speeds > self.threshold).sum()) for w in self.widths]

    @property
    def trials(self) -> list[int]:
        return [int(self.runs[w].speeds.shape[0]) for w in self.widths]

    def speeds_at(self, width: int) -> torch.Tensor:
        return self.runs[width].speeds

    @property
    def best(self) -> float:
        return max(float(self.runs[w].speeds.max()) for w in self.widths)

    @property
    def width1_excess(self) -> float:
        """Best width-1 speed minus ``sqrt(2) - 1`` (Proposition "Closed forms" (iv): at most 0); nan without width 1."""
        return excess_at_width(self, 1)

    @property
    def widest_excess(self) -> float:
        """The same for the widest networks (rank two allowed)."""
        return excess_at_width(self, max(self.widths))


def median_short_of_half(sweep: AscentSweep) -> float:
    """Median final speed of the restarts that end beyond rank one but short of the rank-two speed (nan if none): where
    the solver leaves the runs that are in the basin of the faster escape but have not reached it."""
    s = torch.cat([sweep.runs[w].speeds for w in sweep.widths])
    mid = s[(s > sweep.threshold) & (s < sweep.reach)]
    return float(mid.median()) if len(mid) else math.nan


def ascent_width_sweep(X: torch.Tensor, G: torch.Tensor, widths: list[int], restarts: int, steps: int, eta: float,
                       eta_final: float, generator: torch.Generator, margin: float = 1e-3, progress=None,
                       actual_width: int | None = None, step_from: int = MIN_INFORMATIVE_WIDTH) -> AscentSweep:
    """Proposition "Example 1" with the solver: ``restarts`` depth-3 runs per width in one batch, narrower
    networks padded with zero neurons (:func:`~stagewise.escape_speed.network.pad_hidden`). A run *reaches* the
    rank-two speed when it ends within the relative ``margin`` of 1/2; it is *beyond rank one* when it ends above
    ``sqrt(2) - 1 + margin``.

    ``actual_width`` (a control, a *step in width*): every network labelled with a width ``>= step_from`` is built at
    that hidden width whatever its label, the narrower ones at their own width. The fractions are then those of the
    narrow widths up to the step and one plateau after it: width has no effect beyond the step, and the growth test
    must see none."""
    wmax = max(actual_width or 0, max(widths))
    built = lambda w: actual_width if actual_width and w >= step_from else w
    W0 = [torch.cat(ws).to(X.device) for ws in zip(*[pad_hidden(init_sphere(2, [built(w)] * 2, 1, restarts,
                                                                            generator), wmax)
                                                     for w in widths])]
    out = projected_ascent(W0, X, G, steps, eta, eta_final, progress=progress)
    part = {w: slice(i * restarts, (i + 1) * restarts) for i, w in enumerate(widths)}
    runs = {w: AscentResult([x[p] for x in out.Ws], out.speeds[p], out.trace[:, p]) for w, p in part.items()}
    return AscentSweep(list(widths), runs, RANK_ONE_SPEED + margin, RANK_TWO_SPEED * (1 - margin))


def ascent_trend(X: torch.Tensor, G: torch.Tensor, widths: list[int], restarts: int, steps: int, eta: float,
                 eta_final: float, generator: torch.Generator, actual_width: int | None = None) -> list[float]:
    """:func:`width_trend` of a fresh :func:`ascent_width_sweep` (``[effect, lower, upper]``, nan without two
    informative widths); with ``actual_width`` the control run in which every network has that width."""
    sw = ascent_width_sweep(X, G, widths, restarts, steps, eta, eta_final, generator, actual_width=actual_width)
    trend = width_trend(sw.widths, sw.successes, sw.trials)
    return trend.value if trend is not None else [math.nan] * 3


def step_width(widths: list[int]) -> int:
    """Where the step-shaped control of the growth rows starts: the second informative width (8 for the default
    widths), so that the control is zero-or-low at the smallest informative width and one plateau after it, the
    shape of a sweep that needs a few neurons and then gains nothing from more."""
    info = sorted(w for w in widths if w >= MIN_INFORMATIVE_WIDTH)
    return info[1] if len(info) > 1 else MIN_INFORMATIVE_WIDTH


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
    margin: float                # success: speed at least 1/2 - margin; beyond rank one: above sqrt(2) - 1 + margin

    @property
    def reach(self) -> float:
        """The success threshold: the rank-two speed less the margin (the Euler chatter keeps runs below 1/2)."""
        return RANK_TWO_SPEED - self.margin

    @property
    def fractions(self) -> np.ndarray:
        """Fraction per width of the runs that reach the rank-two speed (dead runs, speed nan, fail)."""
        return np.array([float((s >= self.reach).double().mean()) for s in self.sweep.speeds])

    @property
    def successes(self) -> list[int]:
        """Runs per width that reach the rank-two speed."""
        return [int((s >= self.reach).sum()) for s in self.sweep.speeds]

    @property
    def beyond_rank_one(self) -> list[int]:
        """Runs per width above ``sqrt(2) - 1 + margin`` (the paper's criterion)."""
        return [int((s > RANK_ONE_SPEED + self.margin).sum()) for s in self.sweep.speeds]

    @property
    def trials(self) -> list[int]:
        return [int(s.shape[0]) for s in self.sweep.speeds]

    def speeds_at(self, width: int) -> torch.Tensor:
        return self.sweep.speeds[self.widths.index(width)]

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
        return excess_at_width(self, 1)

    @property
    def widest_excess(self) -> float:
        """The same for the widest networks (rank two allowed)."""
        return excess_at_width(self, max(self.widths))

    @property
    def best(self) -> float:
        return float(self._finite(self.sweep.speeds).max())


    @property
    def half_gap(self) -> float:
        """Median distance below the rank-two speed 1/2 of the runs beyond rank one (nan if there are none)."""
        s = self._finite(self.sweep.speeds)
        won = s[s > RANK_ONE_SPEED + self.margin]
        return float((RANK_TWO_SPEED - won).median()) if len(won) else math.nan


def speed_excess(result: GDSuccess, bound: float) -> float:
    """Best speed of the gradient-descent directions minus ``bound`` (the rank-two ``1/2`` for the paper's footnote;
    the rank-one ``sqrt(2) - 1`` taken as the bound is the control)."""
    return result.best - bound


def gd_success(X: torch.Tensor, Y: torch.Tensor, widths: list[int], inits: int, alpha: float, rel_step: float,
               generator: torch.Generator, drop: float = 0.01, margin: float = 0.025,
               actual_width: int | None = None, step_from: int = MIN_INFORMATIVE_WIDTH) -> GDSuccess:
    """Proposition "Example 1" with gradient descent: :func:`~stagewise.escape_speed.gradient_descent.gd_width_sweep`
    at depth 3 on targets ``Y`` (so ``G = -Y``) until the loss has dropped by ``drop``.

    The horizon is derived from the step: each Euler step grows the norm by at most the fraction ``rel_step``, so an
    aligned run needs about ``log(1/alpha) / rel_step`` steps to leave the plateau (921 at the defaults, where the
    batch took 1757); we allow 20 times that plus 2000. A run still on the plateau then has not escaped (speed nan,
    not a success). At ``rel_step`` 0.1 some runs chatter on the plateau for ever, and a fixed horizon of 100000 steps
    made this one call take minutes. ``actual_width`` and ``step_from``: the step-shaped control, as in
    :func:`ascent_width_sweep`."""
    return GDSuccess(list(widths), gd_width_sweep(X, Y, widths, 3, inits, alpha, rel_step, drop, generator,
                                                  max_steps=gd_horizon(alpha, rel_step), actual_width=actual_width,
                                                  step_from=step_from), margin)


def plateau_steps(alpha: float, rel_step: float) -> int:
    """Euler steps an aligned run needs to leave the plateau: each grows the norm by at most the fraction
    ``rel_step``, and the norm must grow by the factor ``1 / alpha``."""
    return int(math.log(1 / alpha) / rel_step)


def gd_horizon(alpha: float, rel_step: float) -> int:
    """The step budget of :func:`gd_success`: 20 times :func:`plateau_steps` plus 2000; a run still on the plateau
    then has not escaped."""
    return 20 * plateau_steps(alpha, rel_step) + 2000


def gd_trend(X: torch.Tensor, Y: torch.Tensor, widths: list[int], inits: int, alpha: float, rel_step: float,
             generator: torch.Generator, margin: float, actual_width: int | None = None) -> list[float]:
    """:func:`width_trend` of a fresh :func:`gd_success` (``[effect, lower, upper]``); with ``actual_width`` the
    control run in which every network has that hidden width."""
    gd = gd_success(X, Y, widths, inits, alpha, rel_step, generator, margin=margin, actual_width=actual_width)
    trend = width_trend(gd.widths, gd.successes, gd.trials)
    return trend.value if trend is not None else [math.nan] * 3

"""When Assumption 4 fails: uncovered points (4(i)) and ties in Algorithm 1's line 8 (4(ii)).

``interpolation_iff_covered``: GD interpolates exactly when every row of the mask is non-zero, and
otherwise stops at the uncovered plateau c/(2n) sum_{uncovered} y_i^2 with exactly the uncovered
points unfitted. ``tie_experiment``: Rademacher labels make waiting times coincide; continuous
labels with the same signs (same mask) do not.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.relu_orthogonal.algorithm import LimitProcess, algorithm1
from stagewise.relu_orthogonal.data import draw_instance, draw_seed, make_labels
from stagewise.relu_orthogonal.training import gd_numba, steps_for


@dataclass
class CoverOutcome:
    """GD on Figure-1-type draws against the rows of their masks (def-relu-orthogonal-mask)."""

    kept: int                 # draws trained (no tie, limit process done by t_limit)
    dropped: int              # draws left out for slowness or ties
    iff: list                 # per kept draw: (final loss ~ 0) == (every point covered)
    never_ok: list            # per kept draw: points GD never fits == uncovered points
    plateau_rel: list         # per draw with uncovered points: |final loss - uncovered plateau| / plateau
    uncovered: list           # per draw with uncovered points: the uncovered points


def interpolation_iff_covered(seed: int, count: int, n: int = 64, m: int = 6, log_inv_lam: float = 30.0,
                              eta: float = 0.2, t_limit: float = 60.0) -> CoverOutcome:
    """Train ``count`` draws of stream ``seed`` (|N(0,1)| labels, positive signs, c = 1) to convergence,
    leaving out those whose limit process has a tie or needs longer than ``t_limit``."""
    draws = [draw_instance(draw_seed(seed, q), n, m, "abs_gaussian", "positive") for q in range(count)]
    lps = [algorithm1(y, M, s) for (y, U, s, M) in draws]
    keep = [q for q, lp in enumerate(lps) if lp.tie is None and (lp.K == 0 or lp.times[-1] <= t_limit)]
    if not keep:
        return CoverOutcome(kept=0, dropped=count, iff=[], never_ok=[], plateau_rel=[], uncovered=[])
    res = gd_numba(np.array([draws[q][0] for q in keep]), np.array([draws[q][1] for q in keep]),
                   np.array([draws[q][2] for q in keep]), np.full((len(keep), m), -log_inv_lam),
                   np.full(len(keep), eta), 1.0, np.array([steps_for(lps[q], log_inv_lam, eta, 1.0, n, MARGIN) for q in keep]),
                   rec_every=100, eta_name="sweep_lr")
    iff, plateau_rel, never_ok, uncovered = [], [], [], []
    for r, q in enumerate(keep):
        lp, final = lps[q], res.final_loss[r]
        iff.append((final <= interpolation_threshold(lp, n, MARGIN)) == (lp.uncovered.size == 0))
        if lp.uncovered.size:
            plateau_rel.append(abs(final - lp.plateau_losses[-1]) / lp.plateau_losses[-1])
            uncovered.append(lp.uncovered.tolist())
        never_ok.append(np.array_equal(np.flatnonzero(res.point_fit[r] < 0), lp.uncovered))
    return CoverOutcome(kept=len(keep), dropped=count - len(keep), iff=iff, never_ok=never_ok,
                        plateau_rel=plateau_rel, uncovered=uncovered)


#: Residual e-foldings of the slowest fitted neuron after the last jump (``training.steps_for``'s margin).
MARGIN = 20.0


def interpolation_threshold(lp: LimitProcess, n: int, margin: float = MARGIN) -> float:
    """Loss below which a run counts as interpolating, derived from the draw: the geometric middle between
    the loss left after ``margin`` residual e-foldings, e^{-2 margin} L^(0), and the smallest plateau an
    uncovered point can leave, c/(2n) min_i y_i^2 (about 1e-11 for the chapter's draws)."""
    converged = np.exp(-2 * margin) * lp.plateau_losses[0]
    smallest_plateau = lp.c / (2 * n) * float(np.min(lp.y ** 2))
    return float(np.sqrt(converged * smallest_plateau))


@dataclass
class TieOutcome:
    """Algorithm 1 on ``draws`` Rademacher draws and on continuous labels with the same signs (the same masks)."""

    lp: LimitProcess          # the first Rademacher draw with a tie (or the first draw if none has one)
    lp_continuous: LimitProcess   # continuous labels with the same signs as that draw
    draws: int                # number of draws
    ties_rademacher: int      # draws whose Algorithm 1 stops at a tie, Rademacher labels
    ties_continuous: int      # the same with continuous labels (Proposition 2(ii): none)

    def report(self) -> str:
        first = (f"; first: tie at jump {self.lp.tie[0]} between neurons {self.lp.tie[1].tolist()}"
                 if self.lp.tie is not None else "")
        return (f"ties in {self.ties_rademacher} of {self.draws} Rademacher draws{first}; "
                f"{self.ties_continuous} with continuous labels")


def tie_experiment(seed: int, n: int = 16, m: int = 8, draws: int = 200) -> TieOutcome:
    """Assumption 4(ii) and Proposition 2(ii): line 8's argmin is not unique with positive probability for
    discrete labels (a tie needs two waiting times to coincide, so a given Rademacher draw may have none),
    and with probability 0 for continuous labels. Algorithm 1 reports a tie instead of choosing."""
    rad, cont = [], []
    for q in range(draws):
        y, U, s, M = draw_instance(draw_seed(seed, q), n, m, "rademacher", "random")
        y_cont = np.abs(make_labels(n, "abs_gaussian", np.random.default_rng(draw_seed(seed, q, 1)))) * np.sign(y)
        rad.append(algorithm1(y, M, s)); cont.append(algorithm1(y_cont, M, s))
    first = next((q for q, lp in enumerate(rad) if lp.tie is not None), 0)
    return TieOutcome(lp=rad[first], lp_continuous=cont[first], draws=draws,
                      ties_rademacher=sum(lp.tie is not None for lp in rad),
                      ties_continuous=sum(lp.tie is not None for lp in cont))

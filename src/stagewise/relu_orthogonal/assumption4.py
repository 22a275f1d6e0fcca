"""When Assumption 4 fails: uncovered points (4(i)) and ties in Algorithm 1's line 8 (4(ii)).

``interpolation_iff_covered``: GD interpolates exactly when every row of the mask is non-zero, and
otherwise stops at the uncovered plateau c/(2n) sum_{uncovered} y_i^2 with exactly the uncovered
points unfitted. Output signs are random, so an uncovered point is usually met by an initially active neuron of the
wrong sign, which Algorithm 1 says is driven to zero there: the outcome is decided by the dynamics, not by the
absence of any active neuron. ``tie_experiment``: Rademacher labels make waiting times coincide; continuous
labels with the same signs (same mask) do not.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stagewise.relu_orthogonal.algorithm import LimitProcess, algorithm1
from stagewise.relu_orthogonal.data import draw_instance, draw_seed, make_labels
from stagewise.relu_orthogonal.training import GDResult, gd_numba, steps_for


@dataclass
class CoverOutcome:
    """GD on Figure-1-type draws against the rows of their masks (def-relu-orthogonal-mask)."""

    kept: int                 # draws trained (no tie, limit process done by t_limit)
    dropped: int              # draws left out for slowness or ties
    iff: list                 # per kept draw: (final loss ~ 0) == (every point covered)
    never_ok: list            # per kept draw: points GD never fits == uncovered points
    plateau_rel: list         # per draw with uncovered points: |final loss - uncovered plateau| / plateau
    uncovered: list           # per draw with uncovered points: the uncovered points
    draws: list = field(default_factory=list)     # kept draws (y, U0, s, M)
    lps: list = field(default_factory=list)       # Algorithm 1 on each kept draw
    steps: np.ndarray | None = None                # step budget of each kept draw
    res: GDResult | None = None                    # the batched runs
    log_inv_lam: float = 30.0
    eta: float = 0.2


def interpolation_iff_covered(seed: int, count: int, n: int = 64, m: int = 14, log_inv_lam: float = 30.0,
                              eta: float = 0.2, t_limit: float = 60.0) -> CoverOutcome:
    """Train ``count`` draws of stream ``seed`` (N(0,1) labels, random output signs, c = 1; the width gives a
    coverage probability near 1/2 at n = 64) to convergence, leaving out those whose limit process has a tie or
    needs longer than ``t_limit``."""
    draws = [draw_instance(draw_seed(seed, q), n, m, "gaussian", "random") for q in range(count)]
    lps = [algorithm1(y, M, s) for (y, U, s, M) in draws]
    keep = [q for q, lp in enumerate(lps) if lp.tie is None and (lp.K == 0 or lp.times[-1] <= t_limit)]
    if not keep:
        return CoverOutcome(kept=0, dropped=count, iff=[], never_ok=[], plateau_rel=[], uncovered=[])
    steps = np.array([steps_for(lps[q], log_inv_lam, eta, 1.0, n, MARGIN) for q in keep])
    res = gd_numba(np.array([draws[q][0] for q in keep]), np.array([draws[q][1] for q in keep]),
                   np.array([draws[q][2] for q in keep]), np.full((len(keep), m), -log_inv_lam),
                   np.full(len(keep), eta), 1.0, steps, rec_every=100, eta_name="sweep_lr")
    out = CoverOutcome(kept=len(keep), dropped=count - len(keep), iff=[], never_ok=[], plateau_rel=[], uncovered=[],
                       draws=[draws[q] for q in keep], lps=[lps[q] for q in keep], steps=steps, res=res,
                       log_inv_lam=log_inv_lam, eta=eta)
    out.iff, out.never_ok = iff_per_draw(out)
    for r, lp in enumerate(out.lps):
        if lp.uncovered.size:
            out.plateau_rel.append(plateau_distance(res.final_loss[r], lp.plateau_losses[-1]))
            out.uncovered.append(lp.uncovered.tolist())
    return out


def plateau_distance(loss: float, plateau: float) -> float:
    """|loss - plateau| / max(loss, plateau): the relative distance of a final loss from a predicted plateau, 1 when
    one of them is 0 and the other is not."""
    top = max(loss, plateau)
    return float(abs(loss - plateau) / top) if top > 0 else 0.0


def signs_ignored_cover(draw) -> np.ndarray:
    """A wrong hypothesis (the control of the uncovered-point rows): a point is fitted by any neuron initially active
    on it, whatever its output sign; returns the points no neuron is active on."""
    y, U, s, M = draw
    return np.flatnonzero(~(U.T > 0).any(axis=1))


def wrong_sign_met(cover: CoverOutcome) -> int:
    """Uncovered points (over all kept draws) on which some neuron of the wrong output sign is initially active:
    there, the outcome depends on that neuron being driven to zero, as Algorithm 1 says."""
    return int(sum(np.count_nonzero((d[1].T[lp.uncovered] > 0).any(axis=1)) for d, lp in zip(cover.draws, cover.lps)))


def iff_per_draw(cover: CoverOutcome, signs_ignored: bool = False) -> tuple[list, list]:
    """Per kept draw, at the end of its step budget: whether (loss below the interpolation threshold) ==
    (every point covered), and whether the points not yet fitted are exactly the uncovered ones.
    ``signs_ignored=True`` holds the same runs against the wrong hypothesis that any initially active neuron fits a
    point (``signs_ignored_cover``)."""
    iff, never_ok = [], []
    res = cover.res
    for r, lp in enumerate(cover.lps):
        n = len(lp.y)
        unc = signs_ignored_cover(cover.draws[r]) if signs_ignored else lp.uncovered
        iff.append(bool((res.final_loss[r] <= interpolation_threshold(lp, n, MARGIN)) == (unc.size == 0)))
        fitted = (res.point_fit[r] >= 0) & (res.point_fit[r] <= cover.steps[r])
        never_ok.append(bool(np.array_equal(np.flatnonzero(~fitted), unc)))
    return iff, never_ok


def interpolates_iff_covered(cover: CoverOutcome, signs_ignored: bool = False) -> bool:
    """The row: every kept draw interpolates exactly when its mask covers every point, and the points gradient
    descent never fits are exactly the uncovered ones; ``signs_ignored=True``: the same against coverage by any
    active neuron (the control)."""
    iff, never_ok = iff_per_draw(cover, signs_ignored)
    return bool(cover.kept and all(iff) and all(never_ok))


def uncovered_plateau_error(cover: CoverOutcome) -> float:
    """Largest relative distance (``plateau_distance``) of the final loss from the uncovered plateau
    c/(2n) sum_{uncovered} y_i^2 over the kept draws with uncovered points (NaN when there is none)."""
    return float(max(cover.plateau_rel)) if cover.plateau_rel else float("nan")


def plateau_error_signs_ignored(cover: CoverOutcome) -> float:
    """Control of the uncovered plateau: the same final losses held against the plateau of the wrong hypothesis
    that any initially active neuron fits a point, c/(2n) sum over points with no active neuron at all."""
    out = []
    for r, lp in enumerate(cover.lps):
        if lp.uncovered.size:
            wrong = lp.c / (2 * len(lp.y)) * float(np.sum(lp.y[signs_ignored_cover(cover.draws[r])] ** 2))
            out.append(plateau_distance(cover.res.final_loss[r], wrong))
    return float(max(out)) if out else float("nan")


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
    seed: int = 0             # the stream, size and width of the draws
    n: int = 16
    m: int = 8

    def report(self) -> str:
        first = (f"; first: tie at jump {self.lp.tie[0]} between neurons {self.lp.tie[1].tolist()}"
                 if self.lp.tie is not None else "")
        return (f"ties in {self.ties_rademacher} of {self.draws} Rademacher draws{first}; "
                f"{self.ties_continuous} with continuous labels")


def tie_count(ties: "TieOutcome", labels: str) -> int:
    """Draws of the tie experiment's stream whose Algorithm 1 stops at a tie, recomputed with ``labels``
    ``"continuous"`` (|N(0,1)| magnitudes with the Rademacher draw's signs: the same masks) or ``"rademacher"``."""
    t = tie_experiment(ties.seed, ties.n, ties.m, ties.draws)
    return t.ties_continuous if labels == "continuous" else t.ties_rademacher


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
                      ties_continuous=sum(lp.tie is not None for lp in cont), seed=seed, n=n, m=m)

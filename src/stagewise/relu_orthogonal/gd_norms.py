"""Gradient descent's norm against n (Eq. 15's lower bound, Theorem 2's limit; the GD runs of the paper's Figure 5).

``norm_vs_n_gd``: gradient descent on small n with the Figure 5 initialisation (norms lambda/sqrt(m)), whether
its runs learned their labels (``unlearned_runs``) and its gap to Algorithm 1's norm as lambda -> 0
(``gap_closing``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.relu_orthogonal import norm_scaling
from stagewise.relu_orthogonal.algorithm import algorithm1
from stagewise.relu_orthogonal.data import draw_instance, draw_seed
from stagewise.relu_orthogonal.norms import norm_lower_bound_from_min, off_mask_ceiling, off_mask_share, width_rule
# ``gd_numba`` is looked up here at call time by ``width_study`` too (``gd_norms.gd_numba``), so that the bug
# catalogue's target ``gd_norms:gd_numba`` reaches the Figure 5 and the Figure 6 runs.
from stagewise.relu_orthogonal.training import fit_loss, gd_numba, steps_for


@dataclass
class NormGD:
    """Gradient descent runs of Figure 5: rows (n, GD norm, Algorithm 1 norm, minimal norm, final loss, covered)."""

    rows: np.ndarray          # the final loss (column 4) is read off the final weights against the draw's labels
    labels: list = None       # per run: its labels y
    outputs: list = None      # per run: the final network's outputs h(x_i)
    off_mask: np.ndarray = None  # per run: share of a label carried by neurons outside its mask (norms.off_mask_share)
    off_mask_ceiling: np.ndarray = None  # per run: the most Proposition 1 lets them carry (norms.off_mask_ceiling)
    capped: np.ndarray = None # per run: its step budget was cut at max_steps (Algorithm 1 asked for more)
    seed: int = 0             # the stream, log(1/lambda) and draws per n of the study (to rerun it at smaller lambda)
    log_inv_lam: float = 30.0
    draws: int = 3
    max_steps: int = 60000    # the step cap of every run of the study

    @property
    def interpolating(self) -> np.ndarray:
        """Runs with final loss <= 1e-8 and every point covered."""
        return (self.rows[:, 4] <= 1e-8) & (self.rows[:, 5] == 1)

    @property
    def testable(self) -> np.ndarray:
        """Covered runs given the whole step budget Algorithm 1 asks for: Theorem 2 says they interpolate."""
        return (self.rows[:, 5] == 1) & ~self.capped

    @property
    def over_alg1(self) -> np.ndarray:
        """GD norm / Algorithm 1 norm on the interpolating runs."""
        return self.rows[self.interpolating, 1] / self.rows[self.interpolating, 2]

    @property
    def lower_ok(self) -> bool:
        """Eq. (15)'s lower bound on interpolating runs: GD norm >= minimal norm, less the slack that the run's
        residual allows (``norms.norm_lower_bound``, c = 1), instead of a fixed relative slack."""
        return bool(all(row[1] >= norm_lower_bound_from_min(row[3], row[0], row[4], 1.0)
                        for row in self.rows[self.interpolating]))


#: Default step cap of the Figure 5 GD runs (runs that Algorithm 1 says need more are shown, not tested; the
#: chapter's ``norm_gd_max_steps``; the paper's runs stop at 10^6 epochs).
MAX_STEPS = 60000
#: The Figure 5 GD runs stop at this loss (c = 1).
GD_TOL = 1e-12


def interpolation_threshold_gd(y: np.ndarray, c: float = 1.0) -> float:
    """Loss below which a Figure 5 run has learned its labels: the geometric middle between the loss at which the
    runs stop (GD_TOL) and the smallest plateau one unfitted point leaves, c/(2n) min_i y_i^2 (at least 10 GD_TOL:
    a point whose plateau is below that cannot be told from a stopped run by the loss)."""
    y = np.asarray(y, float)
    return float(max(np.sqrt(GD_TOL * c / (2 * len(y)) * np.min(y ** 2)), 10 * GD_TOL))


def unlearned_runs(gd: NormGD, shift: int = 0) -> int:
    """Covered Figure 5 runs with their whole step budget whose final network has not learned the labels: its
    loss against them, read off the final weights, above :func:`interpolation_threshold_gd`. ``shift`` > 0
    holds each run against the labels of the run ``shift`` further in the same n (a misaligned batch: the
    control, measured the same way)."""
    n_of = gd.rows[:, 0]
    bad = 0
    for r in np.flatnonzero(gd.testable):
        same = np.flatnonzero(n_of == n_of[r])
        y = gd.labels[same[(np.searchsorted(same, r) + shift) % len(same)]]
        if 0.5 * np.mean((y - gd.outputs[r]) ** 2) > interpolation_threshold_gd(y):
            bad += 1
    return bad


def _log_init_norm(log_inv_lam: float, m: int) -> float:
    """log(1/(lambda/sqrt(m))): minus the log of each neuron's initial norm lambda / sqrt(m)."""
    return log_inv_lam + 0.5 * np.log(m)


def _gd_runs_at(seed: int, n: int, log_inv_lam: float, draws: int, max_steps: int = MAX_STEPS):
    """The Figure 5 GD runs at one n: draws, Algorithm 1 (step-size-corrected), step budgets, the batched runs and
    the losses read off the final weights."""
    m_ = width_rule(int(n))
    batch = [draw_instance(draw_seed(seed, n, q), int(n), m_, "gaussian", "random") for q in range(draws)]
    lpg = [algorithm1(y_, M_, s_, eta=1.0) for (y_, U_, s_, M_) in batch]
    Leff = _log_init_norm(log_inv_lam, m_)
    want = np.array([steps_for(lp, Leff, 1.0, 1.0, int(n)) for lp in lpg])
    y_batch = np.array([b[0] for b in batch])
    rg = gd_numba(y_batch, np.array([b[1] for b in batch]), np.array([b[2] for b in batch]),
                  np.full((draws, m_), -Leff), np.ones(draws), 1.0, np.minimum(want, max_steps), rec_every=1000,
                  tol=GD_TOL, eta_name="norm_gd_log_inv_lambda")
    return batch, lpg, want, y_batch, rg, fit_loss(rg, y_batch, 1.0)   # loss read off the weights, own labels


def norm_vs_n_gd(seed: int, log2n_max: int, log_inv_lam: float, draws: int = 3, progress=None,
                 max_steps: int = MAX_STEPS) -> NormGD:
    """GD (MSE, learning rate 0.5: c = 1, eta = 1) from norms lambda/sqrt(m), at most ``max_steps`` steps.
    ``progress(iterable)`` (optional) shows a bar over n."""
    rows, labels, outputs, capped, off, ceiling = [], [], [], [], [], []
    ns = 2 ** np.arange(4, log2n_max + 1)
    for n_ in (ns if progress is None else progress(ns)):
        batch, lpg, want, y_batch, rg, fit = _gd_runs_at(seed, int(n_), log_inv_lam, draws, max_steps)
        h = rg.outputs()
        W, a = rg.weights()
        for q, lp in enumerate(lpg):
            rows.append((int(n_), rg.final_norm_sq()[q], lp.norm_sq(), norm_scaling.min_norm_sq(lp.y), fit[q],
                         lp.uncovered.size == 0))
            labels.append(y_batch[q]); outputs.append(h[q]); capped.append(bool(want[q] > max_steps))
            off.append(off_mask_share(W[q], a[q], batch[q][0], batch[q][3]))
            ceiling.append(off_mask_ceiling(batch[q][1], np.exp(-_log_init_norm(log_inv_lam, len(batch[q][2]))), a[q],
                                            batch[q][0], batch[q][3]))
    return NormGD(rows=np.array(rows, dtype=float), labels=labels, outputs=outputs, capped=np.array(capped, bool),
                  off_mask=np.array(off), off_mask_ceiling=np.array(ceiling),
                  seed=seed, log_inv_lam=log_inv_lam, draws=draws, max_steps=max_steps)


#: The GD/Algorithm 1 gap of Figure 5 is measured again at log(1/lambda) times GAP_FACTOR (lambda -> 0).
GAP_FACTOR = 4


def gap_at(seed: int, n: int, log_inv_lam: float, draws: int, reference: str = "alg1",
           max_steps: int = MAX_STEPS) -> float:
    """Mean relative gap |1 - GD norm / reference norm| over the covered runs that interpolate, Figure 5's GD at one
    n and one lambda; ``reference`` is Algorithm 1's norm (the limit of Theorem 2) or ``"min"``, the minimal norm
    (a reader's plausible alternative: gradient descent finds the minimal-norm interpolator)."""
    batch, lpg, want, y_batch, rg, fit = _gd_runs_at(seed, n, log_inv_lam, draws, max_steps)
    gaps = [abs(1 - rg.final_norm_sq()[q]
                / (lp.norm_sq() if reference == "alg1" else norm_scaling.min_norm_sq(lp.y)))
            for q, lp in enumerate(lpg) if lp.uncovered.size == 0 and fit[q] <= 1e-8]
    return float(np.mean(gaps)) if gaps else float("nan")


def gap_of(gd: NormGD, n: int, reference: str = "alg1") -> float:
    """:func:`gap_at` read off the study's own runs at ``n`` (its lambda, its draws, its step cap): the mean relative
    gap |1 - GD norm / reference norm| over the covered runs that interpolate."""
    rows = gd.rows[(gd.rows[:, 0] == n) & (gd.rows[:, 5] == 1) & (gd.rows[:, 4] <= 1e-8)]
    gaps = np.abs(1 - rows[:, 1] / rows[:, 2 if reference == "alg1" else 3])
    return float(np.mean(gaps)) if len(gaps) else float("nan")


def gap_closing(gd: NormGD, reference: str = "alg1") -> float:
    """Theorem 2 on Figure 5's norms: the GD/Algorithm 1 gap at the largest n of the study, at log(1/lambda) times
    GAP_FACTOR (the same draws trained again) over the same in the study's own runs; below 1 when the gap closes as
    lambda -> 0. ``reference="min"``: the same for the gap to the minimal norm (the control)."""
    n = int(gd.rows[:, 0].max())
    return (gap_at(gd.seed, n, GAP_FACTOR * gd.log_inv_lam, gd.draws, reference, gd.max_steps)
            / gap_of(gd, n, reference))

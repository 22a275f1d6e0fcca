"""Implicit bias experiments (Eq. 15, Theorem 3; the paper's Figures 5 and 6).

``norm_vs_n``: Algorithm 1's norm against the minimal one for n = 2^4 .. 2^k (width m(n) of
``norms.width_rule``); ``norm_vs_n_gd``: gradient descent on small n with the Figure 5
initialisation (norms lambda/sqrt(m)); ``norm_vs_width``: n = 32 and growing width, small balanced
initialisation (Algorithm 1 and GD) against PyTorch's default (lazy) initialisation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from stagewise.numerics.fits import loglog_slope
from stagewise.numerics.roundoff import roundoff
from stagewise.relu_orthogonal.algorithm import algorithm1, merged_groups
from stagewise.relu_orthogonal.data import draw_instance, draw_seed, he_init
from stagewise.relu_orthogonal.norms import min_norm_sq, norm_lower_bound, norm_lower_bound_from_min, sandwich, width_rule
from stagewise.relu_orthogonal.training import fit_loss, gd_numba, steps_for


def _in_sandwich(ratio: float, upper: float, covered: bool, n: int) -> bool:
    """1 <= ratio (interpolating runs only) and ratio <= sqrt(max(K+, K-)), with the rounding error of norms of
    n labels as slack (``numerics.roundoff``)."""
    slack = roundoff(1.0, n)
    return (1 - slack <= ratio if covered else True) and ratio <= upper * (1 + slack)


@dataclass
class NormScaling:
    """Means over draws of Algorithm 1's and the minimal squared norm, per n."""

    ns: np.ndarray
    labels: str               # label distribution of the draws (``data.make_labels``)
    alg_norm: np.ndarray      # mean ||theta_inf||^2 (Eq. 15)
    opt_norm: np.ndarray      # mean ||theta*||^2 = 2(||y_+|| + ||y_-||)
    ratio: np.ndarray         # mean of the per-draw ratio ||theta_inf||^2 / ||theta*||^2
    sandwich_ok: list         # per draw: the sandwich of thm-relu-orthogonal-norms holds
    slope_alg: float          # log-log slope of alg_norm over n in [2^FIT_LOG2N_MIN, 2^log2n_max] (illustrative)
    slope_opt: float          # the same for the minimal norm
    bound: np.ndarray         # per n, the draws' ||theta_inf||^2 / (||y||_inf sqrt(n)) (Theorem 3's quantity)
    split_bound: np.ndarray   # control, per n and draw: the same for K_+- neurons sharing each class equally
    split_ratio: np.ndarray   # control: its mean ratio to the minimal norm per n (the sandwich's upper end)
    point_norm: np.ndarray    # mean 2 ||y||_1, one neuron per point (norm linear in n)


#: The slope of the norm is fitted over n >= 2^FIT_LOG2N_MIN, where the ratio to the optimum creeps slowly.
FIT_LOG2N_MIN = 8
#: Theorem 3's growth test reads the top TOP_POINTS values of n of the window (the validator asks n_max >= 2^13).
TOP_POINTS = 3
#: Growth exponent of the Theorem 3 quantity in ln n that separates a bounded quantity (exponent -> 0) from the
#: sqrt(n ln n) alternative (exponent 1/2): the middle of the two.
GROWTH_TOL = 0.25


def fit_window_name(log2n_max: int) -> str:
    """The top of the window as the checks table names it, built from the parameters."""
    return f"n in [2^{int(log2n_max) - TOP_POINTS + 1}, 2^{int(log2n_max)}]"


def norm_vs_n(seed: int, log2n_max: int, draws: int, labels: str = "gaussian", progress=None) -> NormScaling:
    """Algorithm 1 (c = 1) on ``draws`` draws per n of stream ``seed`` (``labels``, random signs, width
    ``norms.width_rule``). ``progress(iterable)`` (optional) shows a bar over n."""
    ns = 2 ** np.arange(4, log2n_max + 1)
    alg_norm, opt_norm, ratio, sandwich_ok, pn, bound, split, split_r = [], [], [], [], [], [], [], []
    for n_ in (ns if progress is None else progress(ns)):
        m_ = width_rule(int(n_))
        an, on, l1, bd, sp = [], [], [], [], []
        for q in range(draws):
            y_, U_, s_, M_ = draw_instance(draw_seed(seed, n_, q), int(n_), m_, labels, "random")
            lp = algorithm1(y_, M_, s_)
            sandwich_ok.append(_in_sandwich(*sandwich(lp), lp.uncovered.size == 0, int(n_)))
            an.append(lp.norm_sq()); on.append(min_norm_sq(y_)); l1.append(2 * np.abs(y_).sum())
            scale = np.max(np.abs(y_)) * np.sqrt(n_)
            bd.append(lp.norm_sq() / scale); sp.append(equal_split_norm_sq(lp) / scale)
        pn.append(np.mean(l1)); bound.append(bd); split.append(sp)
        split_r.append(np.mean(np.array(sp) / np.array(bd) * np.array(an) / np.array(on)))
        alg_norm.append(np.mean(an)); opt_norm.append(np.mean(on)); ratio.append(np.mean(np.array(an) / np.array(on)))
    alg_norm, opt_norm = np.array(alg_norm), np.array(opt_norm)
    big = ns >= 2 ** FIT_LOG2N_MIN
    return NormScaling(ns=ns, labels=labels, alg_norm=alg_norm, opt_norm=opt_norm, ratio=np.array(ratio),
                       sandwich_ok=sandwich_ok, slope_alg=loglog_slope(ns[big], alg_norm[big]),
                       slope_opt=loglog_slope(ns[big], opt_norm[big]), bound=np.array(bound),
                       split_bound=np.array(split), split_ratio=np.array(split_r), point_norm=np.array(pn))


def nlogn_slope(ns: np.ndarray) -> float:
    """Log-log slope of sqrt(n ln n) over the same fit window as ``NormScaling.slope_alg``."""
    big = ns >= 2 ** FIT_LOG2N_MIN
    return loglog_slope(ns[big], np.sqrt(ns[big] * np.log(ns[big])))


def equal_split_norm_sq(lp) -> float:
    """A wrong-but-plausible interpolator of the same draw (the control of Theorem 3's rows): each sign class split
    into as many equal shares as Algorithm 1 made jumps of that sign, one neuron per share. Its squared norm,
    2 sum_+- sqrt(K_+-) ||y_+-|| for equal label mass, is the upper end of the sandwich of Eq. (15); with
    K_+- ~ log n jumps it grows like sqrt(n ln n)."""
    kp, km = lp.jumps_per_sign()
    y = lp.y
    return float(2 * (np.sqrt(max(kp, 1)) * np.linalg.norm(y[y > 0]) + np.sqrt(max(km, 1)) * np.linalg.norm(y[y < 0])))


def growth_in_log_n(ns: np.ndarray, per_draw: np.ndarray, top: int = TOP_POINTS) -> tuple[float, float]:
    """Theorem 3's growth test: the least-squares slope of log(mean over draws) against log(ln n) over the ``top``
    largest n, and its standard error from the spread of the draws. A bounded quantity has slope -> 0 as n grows;
    one growing like sqrt(ln n) (a norm of order sqrt(n ln n)) has slope 1/2 at every n."""
    x = np.log(np.log(ns[-top:].astype(float)))
    vals = np.asarray(per_draw, float)[-top:]
    mean = vals.mean(axis=1)
    w = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    slope = float(w @ np.log(mean))
    var_log = vals.var(axis=1, ddof=1) / vals.shape[1] / mean ** 2 if vals.shape[1] > 1 else np.zeros(top)
    return slope, float(np.sqrt(np.sum(w ** 2 * var_log)))


def bound_growth(scaling: NormScaling) -> float:
    """The row: growth exponent in ln n of ||theta_inf||^2 / (||y||_inf sqrt(n)) at the top of the window."""
    return growth_in_log_n(scaling.ns, scaling.bound)[0]


def split_growth(scaling: NormScaling) -> float:
    """Control of the growth row: the same exponent for the equal-split interpolator of the same draws."""
    return growth_in_log_n(scaling.ns, scaling.split_bound)[0]


#: The halving heuristic's limit of the ratio to the optimum: each jump fits half of the remaining points of its
#: class, sum_k 2^{-k/2} = 1 + sqrt(2).
HALVING_LIMIT = 1 + np.sqrt(2)


def max_split_ratio(scaling: NormScaling) -> float:
    """Control of the constant-factor row: the largest mean ratio of the equal-split interpolator to the optimum."""
    return float(np.max(scaling.split_ratio))


@dataclass
class NormGD:
    """Gradient descent runs of Figure 5: rows (n, GD norm, Algorithm 1 norm, minimal norm, final loss, covered)."""

    rows: np.ndarray          # the final loss (column 4) is read off the final weights against the draw's labels
    labels: list = None       # per run: its labels y
    outputs: list = None      # per run: the final network's outputs h(x_i)
    capped: np.ndarray = None # per run: its step budget was cut at MAX_STEPS (Algorithm 1 asked for more)
    seed: int = 0             # the stream, log(1/lambda) and draws per n of the study (to rerun it at smaller lambda)
    log_inv_lam: float = 30.0
    draws: int = 3

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


#: Step cap of the Figure 5 GD runs (runs that Algorithm 1 says need more are shown, not tested).
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


def _gd_runs_at(seed: int, n: int, log_inv_lam: float, draws: int):
    """The Figure 5 GD runs at one n: draws, Algorithm 1 (step-size-corrected), step budgets, the batched runs and
    the losses read off the final weights."""
    m_ = width_rule(int(n))
    batch = [draw_instance(draw_seed(seed, n, q), int(n), m_, "gaussian", "random") for q in range(draws)]
    lpg = [algorithm1(y_, M_, s_, eta=1.0) for (y_, U_, s_, M_) in batch]
    Leff = log_inv_lam + 0.5 * np.log(m_)                       # per-neuron init norm lambda / sqrt(m)
    want = np.array([steps_for(lp, Leff, 1.0, 1.0, int(n)) for lp in lpg])
    y_batch = np.array([b[0] for b in batch])
    rg = gd_numba(y_batch, np.array([b[1] for b in batch]), np.array([b[2] for b in batch]),
                  np.full((draws, m_), -Leff), np.ones(draws), 1.0, np.minimum(want, MAX_STEPS), rec_every=1000,
                  tol=GD_TOL, eta_name="norm_gd_log_inv_lambda")
    return batch, lpg, want, y_batch, rg, fit_loss(rg, y_batch, 1.0)   # loss read off the weights, own labels


def norm_vs_n_gd(seed: int, log2n_max: int, log_inv_lam: float, draws: int = 3, progress=None) -> NormGD:
    """GD (MSE, learning rate 0.5: c = 1, eta = 1) from norms lambda/sqrt(m), at most MAX_STEPS steps.
    ``progress(iterable)`` (optional) shows a bar over n."""
    rows, labels, outputs, capped = [], [], [], []
    ns = 2 ** np.arange(4, log2n_max + 1)
    for n_ in (ns if progress is None else progress(ns)):
        batch, lpg, want, y_batch, rg, fit = _gd_runs_at(seed, int(n_), log_inv_lam, draws)
        h = rg.outputs()
        for q, lp in enumerate(lpg):
            rows.append((int(n_), rg.final_norm_sq()[q], lp.norm_sq(), min_norm_sq(lp.y), fit[q],
                         lp.uncovered.size == 0))
            labels.append(y_batch[q]); outputs.append(h[q]); capped.append(bool(want[q] > MAX_STEPS))
    return NormGD(rows=np.array(rows, dtype=float), labels=labels, outputs=outputs, capped=np.array(capped, bool),
                  seed=seed, log_inv_lam=log_inv_lam, draws=draws)


#: The GD/Algorithm 1 gap of Figure 5 is measured again at log(1/lambda) times GAP_FACTOR (lambda -> 0).
GAP_FACTOR = 4


def gap_at(seed: int, n: int, log_inv_lam: float, draws: int, reference: str = "alg1") -> float:
    """Mean relative gap |1 - GD norm / reference norm| over the covered runs that interpolate, Figure 5's GD at one
    n and one lambda; ``reference`` is Algorithm 1's norm (the limit of Theorem 2) or ``"min"``, the minimal norm
    (a reader's plausible alternative: gradient descent finds the minimal-norm interpolator)."""
    batch, lpg, want, y_batch, rg, fit = _gd_runs_at(seed, n, log_inv_lam, draws)
    gaps = [abs(1 - rg.final_norm_sq()[q] / (lp.norm_sq() if reference == "alg1" else min_norm_sq(lp.y)))
            for q, lp in enumerate(lpg) if lp.uncovered.size == 0 and fit[q] <= 1e-8]
    return float(np.mean(gaps)) if gaps else float("nan")


def gap_closing(gd: NormGD, reference: str = "alg1") -> float:
    """Theorem 2 on Figure 5's norms: the GD/Algorithm 1 gap at the largest n of the study, at log(1/lambda) times
    GAP_FACTOR over the same at the study's lambda (same draws); below 1 when the gap closes as lambda -> 0.
    ``reference="min"``: the same for the gap to the minimal norm (the control)."""
    n = int(gd.rows[:, 0].max())
    return (gap_at(gd.seed, n, GAP_FACTOR * gd.log_inv_lam, gd.draws, reference)
            / gap_at(gd.seed, n, gd.log_inv_lam, gd.draws, reference))


@dataclass
class WidthStudy:
    """Figure 6 at n = 32: ratio to the minimal norm against width."""

    widths: np.ndarray        # widths of the Algorithm 1 study
    ratio: np.ndarray         # mean ratio over covered, tie-free draws
    ties: int                 # draws stopped by a tie (excluded)
    merged: int               # draws with a merged group of identical columns
    uncovered: int            # draws with uncovered points (excluded)
    sandwich_ok: list         # per covered, tie-free draw: the sandwich holds
    spearman: float           # Spearman correlation of ratio with width
    gd_widths: np.ndarray     # widths trained by GD
    gd_ratio: np.ndarray      # small init, GD: mean ratio to the minimal norm
    he_norm: np.ndarray       # He init, GD: mean final squared norm
    he_ratio: np.ndarray      # He init, GD: mean ratio to the minimal norm
    gd_lower_ok: bool         # small-init GD norm >= minimal norm on interpolating runs
    he_lazy_rel: np.ndarray   # He init, per width: max over draws |final norm / lazy prediction - 1|
    he_init_rel: np.ndarray   # He init, per width: the same for the untrained network (initial norm)
    he_lazy_dist: np.ndarray  # He init, per width: max over draws ||theta_T - theta_lazy|| / ||theta_lazy - theta_0||
    he_fit: np.ndarray        # He init, per width: max over draws final loss / initial loss (final loss read off
                              # the final weights against the draws' labels)
    ratio_draws: list = None  # per width: the per-draw ratios behind ``ratio``
    he_runs: list = None      # per GD width: (labels, W_he, a_he) of the He runs (for the controls)
    he_final: list = None     # per GD width: (W, a) of the trained He runs
    he_lazy_pred: list = None # per GD width: the lazy predictions of the He runs
    he_rich: list = None      # per GD width: Algorithm 1's norms of the same draws (the small-init prediction)

    @property
    def he_pred(self) -> np.ndarray:
        """E||theta_0||^2 = (m+1)/3 of the He initialisation (lazy training keeps it)."""
        return (self.gd_widths + 1) / 3

    def lazy_widths(self, m_min: int = 1024) -> np.ndarray:
        """Mask of the GD widths >= m_min, where training is lazy (the validator requires one)."""
        big = self.gd_widths >= m_min
        if not big.any():
            raise ValueError(f"width_gd_widths needs a width >= {m_min} for the lazy-training check")
        return big


def norm_vs_width(seed: int, he_seed: int, draws: int, gd_widths, log_inv_lam: float, n: int = 32,
                  widths=2 ** np.arange(4, 15), gd_draws: int = 3, progress=None) -> WidthStudy:
    """Algorithm 1 on ``draws`` draws per width; GD on the first ``gd_draws`` of them with small balanced
    init (MSE, learning rate 1, norms lambda/sqrt(m)) and with He init (learning rate 0.01, 30000 steps)."""
    wr, ties, merged, uncovered, sandwich_ok, wr_draws = [], 0, 0, 0, [], []
    for m_ in widths:
        rr = []
        for q in range(draws):
            y_, U_, s_, M_ = draw_instance(draw_seed(seed, q), n, int(m_), "gaussian", "random")
            lp = algorithm1(y_, M_, s_)
            ties += lp.tie is not None
            merged += merged_groups(lp) > 0
            uncovered += lp.uncovered.size > 0
            if lp.uncovered.size == 0 and lp.tie is None:
                rat, up = sandwich(lp)
                sandwich_ok.append(_in_sandwich(rat, up, True, n))
                rr.append(rat)
        wr.append(np.mean(rr)); wr_draws.append(np.array(rr))
    wr = np.array(wr)
    gd_ratio, he_norm, he_ratio, gd_lower_ok = [], [], [], True
    lazy_rel, fit, he_runs, preds, richs, init_rel, dist, he_final = [], [], [], [], [], [], [], []
    for m_ in (gd_widths if progress is None else progress(gd_widths)):
        batch = [draw_instance(draw_seed(seed, q), n, int(m_), "gaussian", "random") for q in range(gd_draws)]
        y = np.array([b[0] for b in batch])
        Leff = log_inv_lam + 0.5 * np.log(m_)
        lpw = [algorithm1(y_, M_, s_, c=2.0, eta=1.0) for (y_, U_, s_, M_) in batch]
        st = np.array([min(steps_for(lp, Leff, 1.0, 2.0, n), 40000) for lp in lpw])
        rg = gd_numba(y, np.array([b[1] for b in batch]), np.array([b[2] for b in batch]), np.full((gd_draws, m_), -Leff),
                      np.ones(gd_draws), 2.0, st, rec_every=1000, tol=1e-12, eta_name="width_gd_widths")
        opt = np.array([min_norm_sq(b[0]) for b in batch])
        fin = rg.final_loss
        gd_lower_ok = gd_lower_ok and all(rg.final_norm_sq()[q] >= norm_lower_bound(y[q], fin[q], 2.0)
                                          for q in range(gd_draws) if fin[q] <= 1e-8)
        gd_ratio.append(np.mean(rg.final_norm_sq() / opt))
        W_he, a_he = he_init(np.random.default_rng(draw_seed(he_seed, m_)), gd_draws, int(m_), n)
        rh = he_training(y, W_he, a_he, HE_STEPS)
        he_norm.append(np.mean(rh.final_norm_sq())); he_ratio.append(np.mean(rh.final_norm_sq() / opt))
        Wf, af = rh.weights()
        lazy = [lazy_solution(W_he[q], a_he[q], y[q]) for q in range(gd_draws)]
        pred = np.array([th @ th for th in lazy])
        rich = np.array([lp.norm_sq() for lp in lpw])
        lazy_rel.append(np.max(np.abs(rh.final_norm_sq() / pred - 1)))
        init_rel.append(np.max(np.abs((np.sum(a_he ** 2, 1) + np.sum(W_he ** 2, (1, 2))) / pred - 1)))
        dist.append(max(lazy_distance(Wf[q], af[q], W_he[q], a_he[q], lazy[q]) for q in range(gd_draws)))
        fit.append(he_fit_ratio(rh, y, W_he, a_he))
        he_runs.append((y, W_he, a_he)); he_final.append((Wf, af)); preds.append(pred); richs.append(rich)
    return WidthStudy(widths=np.asarray(widths), ratio=wr, ties=int(ties), merged=int(merged), uncovered=int(uncovered),
                      sandwich_ok=sandwich_ok, spearman=float(spearmanr(widths, wr)[0]),
                      gd_widths=np.array(gd_widths), gd_ratio=np.array(gd_ratio), he_norm=np.array(he_norm, float),
                      he_ratio=np.array(he_ratio), gd_lower_ok=gd_lower_ok, he_lazy_rel=np.array(lazy_rel),
                      he_init_rel=np.array(init_rel), he_lazy_dist=np.array(dist), he_final=he_final,
                      he_fit=np.array(fit), ratio_draws=wr_draws, he_runs=he_runs, he_lazy_pred=preds, he_rich=richs)


#: He runs of Figure 6: learning rate 0.01 (the paper's 0.001 with ten times fewer steps), MSE (c = 2), stop at 1e-10.
HE_STEPS, HE_ETA, HE_TOL = 30000, 0.01, 1e-10


def he_training(y: np.ndarray, W: np.ndarray, a: np.ndarray, steps: int):
    """GD from the He initialisation (W, a) on labels y (batched over draws), Figure 6's lazy runs."""
    runs, m = a.shape
    return gd_numba(y, W, a, np.zeros((runs, m)), np.full(runs, HE_ETA), 2.0, np.full(runs, int(steps)),
                    rec_every=1000, tol=HE_TOL, eta_name="width_gd_widths")


def he_fit_ratio(res, y: np.ndarray, W: np.ndarray, a: np.ndarray) -> float:
    """Whether the He runs learned their labels: the largest final loss over the initial one, both read off the
    weights (final and initial) against the draws' labels y, c = 2."""
    h0 = np.einsum("qj,qji->qi", a, np.maximum(W, 0.0))
    loss0 = 2.0 / (2 * y.shape[1]) * np.sum((y - h0) ** 2, axis=1)
    return float(np.max(fit_loss(res, y, 2.0) / loss0))


def he_fit_stopped_early(width: "WidthStudy", fraction: float = 0.01) -> float:
    """Control of the He fit row, a broken run: the same He networks trained for ``fraction`` of the steps,
    measured the same way, at the lazy widths (largest over them)."""
    big = np.flatnonzero(width.lazy_widths())
    out = []
    for k in big:
        y, W, a = width.he_runs[k]
        out.append(he_fit_ratio(he_training(y, W, a, int(fraction * HE_STEPS)), y, W, a))
    return float(max(out))


def lazy_distance(W: np.ndarray, a: np.ndarray, W0: np.ndarray, a0: np.ndarray, theta_lazy: np.ndarray) -> float:
    """Distance of a network (W, a) from the lazy solution theta_lazy, in units of the lazy displacement
    ||theta_lazy - theta_0|| from the initialisation (W0, a0): 0 for exact lazy training, 1 for no training."""
    theta = np.concatenate([a, W.reshape(-1)])
    theta0 = np.concatenate([a0, W0.reshape(-1)])
    return float(np.linalg.norm(theta - theta_lazy) / np.linalg.norm(theta_lazy - theta0))


def lazy_distance_row(width: "WidthStudy", trained: bool = True) -> float:
    """The row: the largest lazy distance of the He runs at the lazy widths; ``trained=False`` measures the
    untrained networks (their initial weights) the same way (the control)."""
    out = []
    for k in np.flatnonzero(width.lazy_widths()):
        y, W0, a0 = width.he_runs[k]
        W, a = width.he_final[k] if trained else (W0, a0)
        out += [lazy_distance(W[q], a[q], W0[q], a0[q], lazy_solution(W0[q], a0[q], y[q])) for q in range(len(y))]
    return float(max(out))


def he_trend_spearman(width: "WidthStudy") -> float:
    """Control of the width trend, the lazy regime measured the same way: Spearman correlation of the He runs'
    ratio to the minimal norm with the width."""
    return float(spearmanr(width.gd_widths, width.he_ratio)[0]) if len(width.gd_widths) > 1 else float("nan")


def width_decrease(width: "WidthStudy", z: float = 1.96) -> tuple[float, float, float]:
    """Effect size of Figure 6's trend: mean ratio at the narrowest minus at the widest width, and its
    ``z``-interval from the spread of the draws at the two ends (independent draws)."""
    a, b = width.ratio_draws[0], width.ratio_draws[-1]
    d = float(np.mean(a) - np.mean(b))
    se = float(np.sqrt(np.var(a, ddof=1) / len(a) + np.var(b, ddof=1) / len(b)))
    return d, d - z * se, d + z * se


def lazy_solution(W: np.ndarray, a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Lazy-training prediction from the init (W, a) (X = I_n): gradient descent on the network linearised at
    theta_0 converges to theta_0 + J^+ (y - h(theta_0)), J the Jacobian of the outputs (d h_i / d a_j =
    relu(W_ji), d h_i / d W_ji = a_j 1{W_ji > 0}); returns that parameter vector (a, W flattened)."""
    m, n = W.shape
    act = np.maximum(W, 0.0)
    r = y - a @ act
    Ja = act.T                                                   # (n, m)
    Jw = np.zeros((n, m, n))
    idx = np.arange(n)
    Jw[idx, :, idx] = (a[:, None] * (W > 0)).T                   # d h_i / d W_ji only for the same i
    J = np.concatenate([Ja, Jw.reshape(n, m * n)], axis=1)
    step = np.linalg.lstsq(J, r, rcond=None)[0]
    return np.concatenate([a, W.reshape(-1)]) + step


def lazy_norm_sq(W: np.ndarray, a: np.ndarray, y: np.ndarray) -> float:
    """Squared norm of :func:`lazy_solution`."""
    theta = lazy_solution(W, a, y)
    return float(theta @ theta)

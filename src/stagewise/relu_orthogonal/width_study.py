"""Norm against width at n = 32 (the paper's Figure 6, prop-relu-orthogonal-width) and the lazy contrast.

``norm_vs_width``: n = 32 and growing width, small balanced initialisation (Algorithm 1 and GD) against
PyTorch's default (lazy) initialisation; the He runs measured against the lazy-training heuristic
(``lazy_solution``, ``lazy_distance``) and by their fit (``he_fit_ratio``). ``small_init_gd`` trains the same
small-init draws at a smaller lambda, and ``gap_closing`` says whether gradient descent's gap below Algorithm 1
closes as lambda -> 0 (Theorem 2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from stagewise.relu_orthogonal import gd_norms, norm_scaling
from stagewise.relu_orthogonal.algorithm import algorithm1, merged_groups
from stagewise.relu_orthogonal.data import draw_instance, draw_seed, he_init
from stagewise.relu_orthogonal.norms import _in_sandwich, norm_lower_bound, off_mask_ceiling, off_mask_share, sandwich
from stagewise.relu_orthogonal.training import fit_loss, steps_for


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
    gd_gap: np.ndarray = None # small init, per GD width: mean gap 1 - GD norm / Algorithm 1 norm over the covered
                              # draws that interpolate (same draws), at the study's lambda
    gd_gap_min: np.ndarray = None  # the same against the minimal norm
    gd_alg1_ratio: np.ndarray = None  # per GD width: Algorithm 1's mean ratio to the minimal norm on the GD draws
    seed: int = 0             # the stream, log(1/lambda) and GD draws of the study (to rerun it at smaller lambda)
    log_inv_lam: float = 30.0
    gd_draws: int = 3
    n: int = 32
    gd_off_mask: np.ndarray = None  # small init, per GD width: largest share of a label carried off its mask
    gd_off_ceiling: np.ndarray = None  # small init, per GD width: the most Proposition 1 lets it be (norms)
    he_off_mask: np.ndarray = None  # He init (unbalanced), the same with s_j = sign a_j(0): Proposition 1's control

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
    stats, alg1_gd, off, he_off, ceiling = [], [], [], [], []
    for m_ in (gd_widths if progress is None else progress(gd_widths)):
        batch, lpw, rg, opt = small_init_runs(seed, n, int(m_), log_inv_lam, gd_draws)
        y = np.array([b[0] for b in batch])
        fin = rg.final_loss
        stats.append(_stats(rg, lpw, opt, y))
        Wg, ag = rg.weights()
        off.append(max(off_mask_share(Wg[q], ag[q], y[q], batch[q][3]) for q in range(gd_draws)))
        ceiling.append(max(off_mask_ceiling(batch[q][1], np.exp(-gd_norms._log_init_norm(log_inv_lam, int(m_))), ag[q],
                                            y[q], batch[q][3]) for q in range(gd_draws)))
        alg1_gd.append(np.mean([lp.norm_sq() / o for lp, o in zip(lpw, opt) if lp.uncovered.size == 0]))
        gd_lower_ok = gd_lower_ok and all(rg.final_norm_sq()[q] >= norm_lower_bound(y[q], fin[q], 2.0)
                                          for q in range(gd_draws) if fin[q] <= 1e-8)
        gd_ratio.append(stats[-1][2])
        W_he, a_he = he_init(np.random.default_rng(draw_seed(he_seed, m_)), gd_draws, int(m_), n)
        rh = he_training(y, W_he, a_he, HE_STEPS)
        he_norm.append(np.mean(rh.final_norm_sq())); he_ratio.append(np.mean(rh.final_norm_sq() / opt))
        Wf, af = rh.weights()
        he_off.append(max(off_mask_share(Wf[q], af[q], y[q], (W_he[q].T > 0) & (np.sign(a_he[q]) * y[q][:, None] > 0))
                          for q in range(gd_draws)))
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
                      he_fit=np.array(fit), ratio_draws=wr_draws, he_runs=he_runs, he_lazy_pred=preds, he_rich=richs,
                      gd_gap=np.array([g[0] for g in stats]), gd_gap_min=np.array([g[1] for g in stats]),
                      gd_alg1_ratio=np.array(alg1_gd), seed=seed, log_inv_lam=log_inv_lam, gd_draws=gd_draws, n=n,
                      gd_off_mask=np.array(off), he_off_mask=np.array(he_off), gd_off_ceiling=np.array(ceiling))


#: Step cap of the small-init GD runs of Figure 6 at log(1/lambda) = 30 (scaled with log(1/lambda)).
GD_CAP = 40000
#: The GD/Algorithm 1 gap of Figure 6 is measured again at log(1/lambda) times GAP_FACTOR (lambda -> 0).
GAP_FACTOR = 4


def small_init_runs(seed: int, n: int, m: int, log_inv_lam: float, draws: int):
    """The small-init GD runs of Figure 6 at one width: the draws, Algorithm 1 on them (MSE, c = 2, step-size
    corrected for learning rate 1), the batched runs from norms lambda/sqrt(m) (at most GD_CAP steps at
    log(1/lambda) = 30, proportionally more at smaller lambda) and the minimal norms."""
    batch = [draw_instance(draw_seed(seed, q), n, m, "gaussian", "random") for q in range(draws)]
    y = np.array([b[0] for b in batch])
    Leff = gd_norms._log_init_norm(log_inv_lam, m)
    lpw = [algorithm1(y_, M_, s_, c=2.0, eta=1.0) for (y_, U_, s_, M_) in batch]
    cap = int(GD_CAP * max(1.0, log_inv_lam / 30.0))
    st = np.array([min(steps_for(lp, Leff, 1.0, 2.0, n), cap) for lp in lpw])
    rg = gd_norms.gd_numba(y, np.array([b[1] for b in batch]), np.array([b[2] for b in batch]),
                           np.full((draws, m), -Leff), np.ones(draws), 2.0, st, rec_every=1000, tol=1e-12,
                           eta_name="width_gd_widths")
    opt = np.array([norm_scaling.min_norm_sq(b[0]) for b in batch])
    return batch, lpw, rg, opt


@dataclass
class SmallInitGD:
    """The small-init GD runs of Figure 6 at one lambda, per GD width: each a mean over the covered draws whose
    final network fits its labels (loss read off the weights, c = 2, below 1e-8); NaN when there is none."""

    log_inv_lam: float
    gap_alg1: np.ndarray      # |1 - GD norm / Algorithm 1's norm| (Theorem 2's limit, same draws)
    gap_min: np.ndarray       # |1 - GD norm / minimal norm| (a reader's alternative limit)
    ratio: np.ndarray         # GD norm / minimal norm (the figure's ordinate)


def _stats(rg, lpw, opt, y) -> tuple[float, float, float]:
    fit = fit_loss(rg, y, 2.0)
    gd = rg.final_norm_sq()
    keep = [q for q, lp in enumerate(lpw) if lp.uncovered.size == 0 and fit[q] <= 1e-8]
    if not keep:
        return float("nan"), float("nan"), float("nan")
    return (float(np.mean([abs(1 - gd[q] / lpw[q].norm_sq()) for q in keep])),
            float(np.mean([abs(1 - gd[q] / opt[q]) for q in keep])), float(np.mean([gd[q] / opt[q] for q in keep])))


def small_init_gd(width: "WidthStudy", log_inv_lam: float) -> SmallInitGD:
    """The study's small-init GD runs (same widths, same draws) trained again at ``log_inv_lam``."""
    rows = []
    for m_ in width.gd_widths:
        batch, lpw, rg, opt = small_init_runs(width.seed, width.n, int(m_), log_inv_lam, width.gd_draws)
        rows.append(_stats(rg, lpw, opt, np.array([b[0] for b in batch])))
    rows = np.array(rows, float).reshape(-1, 3)
    return SmallInitGD(log_inv_lam=log_inv_lam, gap_alg1=rows[:, 0], gap_min=rows[:, 1], ratio=rows[:, 2])


def gap_closing(width: "WidthStudy", smaller: SmallInitGD, reference: str = "alg1") -> float:
    """Theorem 2 on Figure 6's small-init norms: the GD/Algorithm 1 gap, averaged over the GD widths, at the
    smaller lambda of ``smaller`` (``small_init_gd`` at GAP_FACTOR times log(1/lambda)) over the same at the
    study's lambda (same draws); below 1 when the gap closes as lambda -> 0. ``reference="min"``: the same for the
    gap to the minimal norm (the control: a gradient descent that tends to the minimal norm closes that gap)."""
    small = smaller.gap_alg1 if reference == "alg1" else smaller.gap_min
    large = width.gd_gap if reference == "alg1" else width.gd_gap_min
    keep = np.isfinite(small) & np.isfinite(large)
    return float(np.mean(small[keep]) / np.mean(large[keep])) if keep.any() else float("nan")


#: He runs of Figure 6: learning rate 0.01 (the paper's 0.001 with ten times fewer steps), MSE (c = 2), stop at 1e-10.
HE_STEPS, HE_ETA, HE_TOL = 30000, 0.01, 1e-10


def he_training(y: np.ndarray, W: np.ndarray, a: np.ndarray, steps: int):
    """GD from the He initialisation (W, a) on labels y (batched over draws), Figure 6's lazy runs."""
    runs, m = a.shape
    return gd_norms.gd_numba(y, W, a, np.zeros((runs, m)), np.full(runs, HE_ETA), 2.0, np.full(runs, int(steps)),
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


def he_off_mask_row(width: "WidthStudy") -> float:
    """Control of Proposition 1's row on the trained networks: the same share measured on the He runs, whose
    unbalanced start (|a_j| and ||w_j|| independent) Proposition 1 excludes (largest over the GD widths)."""
    return float(np.max(width.he_off_mask))


def he_init_z(width: "WidthStudy", fan_in_bound: bool = False) -> float:
    """Experiment integrity of the He runs at the lazy widths: the largest |mean ||theta_0||^2 - (m+1)/3| in standard
    errors of that mean (entries U(-b, b) have E = b^2/3, Var = 4 b^4/45). ``fan_in_bound``: the same for networks
    drawn with the bound 1/fan_in instead of 1/sqrt(fan_in) (the control: a wrong initialisation scale)."""
    out = []
    for k in np.flatnonzero(width.lazy_widths()):
        y, W, a = width.he_runs[k]
        runs, m, n = W.shape
        if fan_in_bound:
            rng = np.random.default_rng(draw_seed(0, m, n))
            W, a = rng.uniform(-1, 1, (runs, m, n)) / n, rng.uniform(-1, 1, (runs, m)) / m
        norms = np.sum(W ** 2, axis=(1, 2)) + np.sum(a ** 2, axis=1)
        se = np.sqrt((4 * m / (45 * n) + 4 / (45 * m)) / runs)
        out.append(abs(norms.mean() - (m + 1) / 3) / se)
    return float(max(out))


def lazy_distance_identity(width: "WidthStudy") -> float:
    """Experiment integrity of the lazy-distance measurement: at the lazy widths it must give exactly 0 for the lazy
    solution itself and 1 for the initial network; the largest departure from these."""
    out = []
    for k in np.flatnonzero(width.lazy_widths()):
        y, W0, a0 = width.he_runs[k]
        for q in range(len(y)):
            theta = lazy_solution(W0[q], a0[q], y[q])
            m = len(a0[q])
            a_l, W_l = theta[:m], theta[m:].reshape(W0[q].shape)
            out += [abs(lazy_distance(W_l, a_l, W0[q], a0[q], theta)),
                    abs(lazy_distance(W0[q], a0[q], W0[q], a0[q], theta) - 1)]
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
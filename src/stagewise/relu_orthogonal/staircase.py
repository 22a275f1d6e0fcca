"""The Figure 1 run at the paper's scale (Theorem 2 on one draw; the paper's Figures 1, 3 and 4).

``predict_figure1`` picks the draw and runs Algorithm 1 (the whole prediction, before any
training); ``train_figure1`` trains it in log-scale form at lambda = e^{-log_inv_lam};
``measure_figure1`` compares the two (jump order, fitted sets, jump times, plateaus, exponents,
Eq. (15)'s norm).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.core.run.parameters import ParameterError
from stagewise.relu_orthogonal.algorithm import (LimitProcess, algorithm1, find_instances, frozen_jump_times,
                                                  frozen_prediction, frozen_rates, memoryless_staircase,
                                                  order_and_sets_match)
from stagewise.relu_orthogonal.diagnostics import (exponent_errors, jump_offsets_nats, measured_jumps,
                                                   norm_error_scale, plateau_error_scale, plateau_errors,
                                                   record_at)
from stagewise.relu_orthogonal.assumption4 import interpolation_threshold
from stagewise.relu_orthogonal.norms import norm_lower_bound
from stagewise.relu_orthogonal.training import GDResult, balanced_state, gd_numba, steps_for


@dataclass
class Figure1Prediction:
    """The chosen draw and Algorithm 1 on it: step-size-corrected (``lp``) and gradient-flow (``lp_gf``), and the
    wrong predictions the controls hold the run against."""

    draw: int                 # index of the draw in its random stream
    y: np.ndarray             # labels (n,)
    U: np.ndarray             # unit initial directions (m, n)
    s: np.ndarray             # output signs (m,)
    M: np.ndarray             # mask (n, m)
    c: float                  # loss constant
    eta: float                # learning rate
    log_inv_lam: float        # log(1/lambda)
    lp: LimitProcess          # Algorithm 1 with the step-size correction, predicted directions stored
    lp_gf: LimitProcess       # Algorithm 1, gradient-flow form
    lp_memoryless: LimitProcess    # control: neurons never slowed by others' jumps (``algorithm.memoryless_staircase``)
    lp_frozen_times: LimitProcess  # control: each neuron jumps at its initial waiting time (``algorithm.frozen_jump_times``)
    lp_frozen_rates: LimitProcess  # control: exponents fall at their initial rates (``algorithm.frozen_rates``)

    @property
    def n(self) -> int:
        return len(self.y)

    @property
    def m(self) -> int:
        return len(self.s)

    def epochs(self, t) -> np.ndarray:
        """Epoch (GD step) of accelerated time t: t log(1/lambda) / eta."""
        return np.asarray(t) * self.log_inv_lam / self.eta

    def jump_table(self) -> tuple[list[str], list[tuple]]:
        """Algorithm 1's prediction, one row per jump: (columns, rows) for a Markdown table."""
        lp = self.lp
        rows = [(k + 1, lp.neurons[k], len(lp.fitted_sets[k]), self.lp_gf.times[k], lp.times[k],
                 lp.times[k] * self.log_inv_lam / self.eta, lp.plateau_losses[k + 1],
                 np.linalg.norm(self.y[lp.fitted_sets[k]])) for k in range(lp.K)]
        return ["k", "neuron $j_k$", "$|S_k|$", "$t_k$ flow", "$t_k$ GD-corrected", "jump epoch",
                "plateau loss $L^{(k)}$", r"$a_{j_k}^2=\|w_{j_k}\|^2$"], rows

    def exponent_table(self) -> tuple[list[str], list[list]]:
        """The exponents tau_j^{(k)} at t_0 = 0, t_1, ..., t_K (eqs. 10-11): (columns, rows)."""
        return (["stage"] + [f"$\\tau_{j}$" for j in range(self.m)],
                [[f"$t_{k}$"] + list(row) for k, row in enumerate(self.lp.tau)])


def figure1_horizon(n: int) -> float:
    """Accelerated time (c = 1) before which the Figure 1 draw must finish jumping: 3 sqrt(n) (24 at the paper's
    n = 64). A first jump comes near n / ||y_{A_j}|| ~ sqrt(2n) for |N(0,1)| labels (|A_j| ~ n/2), so the horizon
    is about twice that, at every n."""
    return 3.0 * float(np.sqrt(n))


def predict_figure1(seed: int, n: int, m: int, c: float, eta: float, log_inv_lam: float,
                    tries: int = 20000) -> Figure1Prediction:
    """The first draw of stream ``seed`` satisfying Assumption 4 with jumps >= 0.3 apart, a last jump before
    ``figure1_horizon(n)`` (c = 1 units) and consecutive jumps that log(1/lambda) resolves (Theorem 2's offsets,
    ``sweep.ambiguous_order``); if none (width too small to cover the data), the first such draw with uncovered
    points. Then Algorithm 1 (alg-relu-orthogonal-alg1) in both forms."""
    from stagewise.relu_orthogonal.sweep import ambiguous_order, offset_tolerance
    tol = offset_tolerance(n)
    resolved = lambda lp, inst: not ambiguous_order(algorithm1(inst[0], inst[3], inst[2], eta=eta * c), log_inv_lam, tol)
    horizon = figure1_horizon(n)
    picked = find_instances(seed, 1, n, m, "abs_gaussian", "positive", gap=0.3, t_max=horizon, accept=resolved,
                            tries=tries)
    if not picked:   # width too small to cover the data: allowed, and the uncovered points are reported
        picked = find_instances(seed, 1, n, m, "abs_gaussian", "positive", gap=0.3, t_max=horizon, cover=False,
                                accept=resolved, tries=tries)
    if not picked:
        raise ParameterError(f"parameter fig1_log_inv_lambda: no draw among {tries} (n {n}, m {m}) has jumps "
                             f"separated by more than Theorem 2's O(1/log(1/lambda)) offsets at {log_inv_lam:g} "
                             "and a last jump before 3 sqrt(n); allowed: a larger value, e.g. 1000")
    (draw, (y, U, s, M)), = picked
    lp = algorithm1(y, M, s, c=c, eta=eta, directions=True)
    return Figure1Prediction(draw=draw, y=y, U=U, s=s, M=M, c=c, eta=eta, log_inv_lam=log_inv_lam, lp=lp,
                             lp_gf=algorithm1(y, M, s, c=c), lp_memoryless=memoryless_staircase(lp, M),
                             lp_frozen_times=frozen_jump_times(lp), lp_frozen_rates=frozen_rates(lp))


@dataclass
class Figure1Run:
    """The trained run: records, snapshots around the first jump, measured jumps and fitted sets."""

    pred: Figure1Prediction
    res: GDResult             # one run (index 0)
    steps: int                # step budget (steps_for)
    t1_step: float            # predicted epoch of the first jump
    snaps: np.ndarray         # snapshot epochs (Figure 4)
    order: np.ndarray         # neurons in the order they jumped
    that: np.ndarray          # their measured accelerated jump times
    gd_sets: list             # per neuron: points where its own output is >= half the label

    @property
    def gd_epochs(self) -> np.ndarray:
        """Measured jump epochs, in jump order."""
        return self.res.neuron_jump[0, self.order]

    @property
    def norm_sq(self) -> float:
        return float(self.res.final_norm_sq()[0])

    def min_alignment(self) -> float:
        """Smallest cosine, at the last snapshot, between an unfitted neuron and its predicted direction (eq. 9)."""
        lp, res = self.pred.lp, self.res
        stage = lp.stage(self.snaps * self.pred.eta / self.pred.log_inv_lam)[-1]
        cos = [float(res.snaps_dir[0, -1, j] @ lp.directions[stage][j]) for j in range(self.pred.m)
               if lp.active[stage][j]]
        return min(cos) if cos else float("nan")

    def jump_table(self) -> tuple[list[str], list[tuple]]:
        """Predicted against measured jumps (neuron, epoch, |S_k|): (columns, rows)."""
        lp, o = self.pred.lp, self.order
        rows = [(k + 1, lp.neurons[k], o[k] if k < len(o) else "-", f"{int(self.pred.epochs(lp.times[k])):,}",
                 f"{int(self.res.neuron_jump[0, o[k]]):,}" if k < len(o) else "-", len(lp.fitted_sets[k]),
                 len(self.gd_sets[o[k]]) if k < len(o) else "-") for k in range(lp.K)]
        return ["k", "predicted neuron", "measured neuron", "predicted epoch", "measured epoch",
                "predicted $|S_k|$", "measured $|S_k|$"], rows


def train_figure1(pred: Figure1Prediction) -> Figure1Run:
    """GD from Assumption 3's init at lambda = e^{-log_inv_lam} until past Algorithm 1's last jump,
    with six direction snapshots around the first jump (Figure 4)."""
    L, eta, lp = pred.log_inv_lam, pred.eta, pred.lp
    steps = steps_for(lp, L, eta, pred.c, pred.n)
    t1_step = lp.times[0] * L / eta
    offsets = np.array([-0.9 * t1_step, -0.5 * t1_step, -10 / eta, 10 / eta, 30 / eta, 310 / eta])
    snaps = np.clip(np.rint(t1_step + offsets), 0, steps).astype(int)
    U0, b0, l0 = balanced_state(pred.U, pred.s, -L)
    res = gd_numba(pred.y[None], U0[None], b0[None], l0[None], np.array([eta]), pred.c, np.array([steps]),
                   rec_every=max(1, steps // 4000), snap_steps=snaps, eta_name="fig1_lr")
    order, that = measured_jumps(res, 0, eta, L)
    return Figure1Run(pred=pred, res=res, steps=steps, t1_step=t1_step, snaps=snaps, order=order, that=that,
                      gd_sets=res.fitted_sets(pred.y)[0])


@dataclass
class Figure1Errors:
    """The run against Algorithm 1 (Theorem 2, Eq. 15), with the tolerances Algorithm 1 predicts."""

    order_ok: bool            # jump order = Algorithm 1's
    sets_ok: bool             # and every fitted set = Algorithm 1's
    plateau_err: np.ndarray   # |L_GD - L^(k)| / L^(0) at plateau midpoints
    plateau_tol: np.ndarray   # 10 x the predicted scale (floor 1e-10)
    tau_err: np.ndarray       # exponent errors at plateau midpoints
    jump_err: np.ndarray      # |jump-time error| as log-norm offsets (nats); [inf] if the order is wrong
    jump_err_L: float         # max |t_hat - t| log(1/lambda)
    norm_err: float           # |final ||theta||^2 / Eq. (15) - 1|
    norm_tol: float           # lam^{min tau} (floor 1e-10)
    final_loss_err: float     # |final loss - L^(K)| / L^(0)
    final_loss_tol: float     # assumption4.interpolation_threshold / L^(0): between the converged and an uncovered loss
    norm_lower_ok: bool       # final ||theta||^2 >= minimal norm (or some point uncovered)


def measure_figure1(run: Figure1Run, lp: LimitProcess | None = None) -> Figure1Errors:
    """Theorem 2 and Eq. (15) on the Figure 1 run (thm-relu-orthogonal-jumps, thm-relu-orthogonal-norms), against
    ``lp`` (default: the step-size-corrected Algorithm 1; a control passes a wrong prediction)."""
    pred, res = run.pred, run.res
    lp = pred.lp if lp is None else lp
    L, eta = pred.log_inv_lam, pred.eta
    order_ok = list(run.order) == list(lp.neurons)
    sets_ok = order_and_sets_match(run.order, run.gd_sets, lp.neurons, lp.fitted_sets)
    norm = res.final_norm_sq()[0]
    return Figure1Errors(
        order_ok=order_ok, sets_ok=sets_ok, plateau_err=plateau_errors(res, 0, lp, eta, L),
        plateau_tol=np.maximum(10 * plateau_error_scale(lp, L), 1e-10), tau_err=exponent_errors(res, 0, lp, eta, L),
        jump_err=np.abs(jump_offsets_nats(lp, run.that, L)) if order_ok else np.array([np.inf]),
        jump_err_L=float(np.max(np.abs(run.that - lp.times)) * L) if order_ok else float("inf"),
        norm_err=abs(norm / lp.norm_sq() - 1), norm_tol=max(norm_error_scale(lp, L), 1e-10),
        final_loss_err=abs(res.final_loss[0] - lp.plateau_losses[-1]) / lp.plateau_losses[0],
        final_loss_tol=interpolation_threshold(lp, pred.n) / lp.plateau_losses[0],
        norm_lower_ok=bool(lp.uncovered.size > 0 or norm >= norm_lower_bound(pred.y, res.final_loss[0], pred.c)))


# -- the measurements of the checks table, each a function of the run and the prediction it is held against,
# so that a control is the same measurement against a wrong prediction (or on a broken run) ------------------

def order_and_sets_ok(run: Figure1Run, lp: LimitProcess | None = None) -> bool:
    """Theorem 2 on the Figure 1 run: jump order and every fitted set equal Algorithm 1's (``lp``)."""
    err = measure_figure1(run, lp)
    return bool(err.order_ok and err.sets_ok)


def frozen_order_and_sets_ok(run: Figure1Run) -> bool:
    """The same measurement against a wrong hypothesis: neurons never lose points to others
    (``algorithm.frozen_prediction``: each fits its whole A_j, in the order of its initial waiting time)."""
    return order_and_sets_match(run.order, run.gd_sets, *frozen_prediction(run.pred.lp, run.pred.M))


def max_jump_offset(run: Figure1Run, lp: LimitProcess | None = None) -> float:
    """Largest jump-time error as a log-norm offset (nats) against ``lp`` (inf when the order differs)."""
    return float(np.max(measure_figure1(run, lp).jump_err))


def max_plateau_ratio(run: Figure1Run, lp: LimitProcess | None = None) -> float:
    """Largest plateau-loss error over its tolerance (10x the scale ``lp`` predicts) at plateau midpoints."""
    err = measure_figure1(run, lp)
    return float(np.max(err.plateau_err / err.plateau_tol))


def exponent_error_L(run: Figure1Run, lp: LimitProcess | None = None) -> float:
    """Largest exponent error at plateau midpoints, times log(1/lambda) (an offset in nats per unit rate)."""
    return float(np.max(measure_figure1(run, lp).tau_err) * run.pred.log_inv_lam)


def norm_rel_error(run: Figure1Run, predicted_norm_sq: float) -> float:
    """|final ||theta||^2 / predicted - 1| for the trained run (Eq. 15's prediction, or a wrong one)."""
    return float(abs(run.norm_sq / predicted_norm_sq - 1))


def final_loss_error(run: Figure1Run, stage: int = -1) -> float:
    """|final loss - L^(stage)| / L^(0): against Algorithm 1's last plateau L^(K) (``stage=-1``), or, the
    control, against the plateau before the last jump (``stage=-2``: a run that misses its last jump)."""
    lp = run.pred.lp
    return float(abs(run.res.final_loss[0] - lp.plateau_losses[stage]) / lp.plateau_losses[0])

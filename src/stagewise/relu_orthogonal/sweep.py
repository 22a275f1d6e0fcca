"""Theorem 2 as lambda -> 0: several draws trained at several log(1/lambda) in one compiled batch.

Draws (mixed output signs, N(0,1) labels) are selected with Algorithm 1 only; every draw is
trained at every log(1/lambda); jump times are extrapolated through the three smallest lambda with
``stagewise.numerics.fits.inverse_log_fit`` (t_hat = t0 + C / log(1/lambda)).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.core.run.parameters import ParameterError
from stagewise.numerics.fits import inverse_log_fit
from stagewise.relu_orthogonal.algorithm import (algorithm1, find_instances, frozen_prediction, memoryless_staircase,
                                                  order_and_sets_match)
from stagewise.relu_orthogonal.diagnostics import (exponent_errors, jump_offsets_nats, measured_jumps,
                                                   plateau_error_scale, plateau_errors)
from stagewise.relu_orthogonal.training import GDResult, gd_numba, steps_for


@dataclass
class Sweep:
    """The batched runs: run ``d * len(Ls) + a`` is draw d at log(1/lambda) = Ls[a]."""

    draws: list               # [(draw index, (y, U0, s, M)), ...]
    Ls: np.ndarray            # log(1/lambda), increasing
    eta: float
    lps: list                 # Algorithm 1 per draw, step-size-corrected
    lps_gf: list              # Algorithm 1 per draw, gradient-flow form
    lps_memoryless: list      # control: neurons never slowed by others' jumps (``algorithm.memoryless_staircase``)
    res: GDResult

    def run_index(self, d: int, a: int) -> int:
        return d * len(self.Ls) + a


#: Draws tried per stream when selecting sweep draws (Algorithm 1 only, about 0.1 ms each).
SWEEP_TRIES = 20000


def sweep_draws(seed: int, count: int, t_max: float, n: int = 32, m: int = 10, resolve_at: float | None = None,
                eta: float | None = None, tries: int = SWEEP_TRIES) -> list:
    """The first ``count`` draws of stream ``seed`` with Assumption 4, jumps >= 0.3 apart, last jump before t_max
    and, with ``resolve_at`` = log(1/lambda), jumps far enough apart for Theorem 2's O(1/log(1/lambda)) error
    not to swap them at that lambda (``ambiguous_order``, Algorithm 1 with step ``eta``). Too few such draws
    among ``tries`` is a ParameterError naming the parameter that limits them."""
    tol = offset_tolerance(n)
    accept = None if resolve_at is None else (lambda lp, inst: not ambiguous_order(
        algorithm1(inst[0], inst[3], inst[2], eta=eta), resolve_at, tol))
    draws = find_instances(seed, count, n, m, "gaussian", "random", gap=0.3, t_max=t_max, accept=accept, tries=tries)
    if len(draws) < count:
        timely = len(find_instances(seed, count, n, m, "gaussian", "random", gap=0.3, t_max=t_max, tries=tries))
        if timely < count or resolve_at is None:
            raise ParameterError(f"parameter sweep_t_max: only {timely} of {tries} draws finish jumping before "
                                 f"t={t_max:g}, {count} needed (sweep_seeds); allowed: a larger value, e.g. 40")
        raise ParameterError(f"parameter sweep_log_inv_lambdas: only {len(draws)} of {tries} draws have jumps that "
                             f"log(1/lambda)={resolve_at:g} resolves, {count} needed (sweep_seeds); allowed: a "
                             "larger largest value, e.g. 400, or a larger sweep_t_max")
    return draws


#: The rules of ``sweep_draws``, in the order they are applied (``selection_tally``).
SELECTION_RULES = ("uncovered points", "tie, identical columns or no jump", "jumps closer than 0.3",
                   "last jump too late", "jumps not resolved at the smallest lambda")


def selection_tally(seed: int, tried: int, t_max: float, n: int = 32, m: int = 10, resolve_at: float | None = None,
                    eta: float | None = None) -> dict[str, int]:
    """How the selection of ``sweep_draws`` treated the first ``tried`` draws of stream ``seed``: for each rule of
    SELECTION_RULES, the draws it rejected first, and ``kept``. Algorithm 1 only (what the reader is told about the
    draws that Theorem 2 is tested on)."""
    from stagewise.relu_orthogonal.algorithm import merged_groups, min_gap
    from stagewise.relu_orthogonal.data import draw_instance, draw_seed
    tally = dict.fromkeys(SELECTION_RULES + ("kept",), 0)
    tol = offset_tolerance(n)
    for k in range(tried):
        y, U, s, M = draw_instance(draw_seed(seed, k), n, m, "gaussian", "random")
        lp = algorithm1(y, M, s)
        if lp.uncovered.size:
            rule = SELECTION_RULES[0]
        elif lp.tie is not None or merged_groups(lp) or not lp.K:
            rule = SELECTION_RULES[1]
        elif min_gap(lp) < 0.3:
            rule = SELECTION_RULES[2]
        elif lp.times[-1] > t_max:
            rule = SELECTION_RULES[3]
        elif resolve_at is not None and ambiguous_order(algorithm1(y, M, s, eta=eta), resolve_at, tol):
            rule = SELECTION_RULES[4]
        else:
            rule = "kept"
        tally[rule] += 1
    return tally


def run_sweep(draws: list, log_inv_lams, eta: float) -> Sweep:
    """Every draw at every log(1/lambda), c = 1, one compiled batch (Theorem 2's limit lambda -> 0)."""
    Ls = np.array(sorted(log_inv_lams))
    m = len(draws[0][1][2])
    n = len(draws[0][1][0])
    lps = [algorithm1(y, M, s, eta=eta) for _, (y, U, s, M) in draws]
    lps_gf = [algorithm1(y, M, s) for _, (y, U, s, M) in draws]
    lps_memoryless = [memoryless_staircase(lp, M) for lp, (_, (y, U, s, M)) in zip(lps, draws)]
    y = np.array([d[1][0] for d in draws for _ in Ls])
    U = np.array([d[1][1] for d in draws for _ in Ls])
    s = np.array([d[1][2] for d in draws for _ in Ls])
    ell = -np.array([[L] * m for _ in draws for L in Ls])
    steps = np.array([steps_for(lp, L, eta, 1.0, n) for lp in lps for L in Ls])
    res = gd_numba(y, U, s, ell, np.full(len(y), eta), 1.0, steps, rec_every=50, eta_name="sweep_lr")
    return Sweep(draws=draws, Ls=Ls, eta=eta, lps=lps, lps_gf=lps_gf, lps_memoryless=lps_memoryless, res=res)


#: Round-off floor of the plateau-loss tolerance (relative to L^(0)), where lambda^(2 tau) underflows.
PLATEAU_FLOOR = 1e-10


@dataclass
class SweepErrors:
    """Theorem 2's errors over all draws and lambdas."""

    order_ok: list            # per draw, at the smallest lambda: jump order = Algorithm 1's
    sets_ok: list             # ... and fitted sets = Algorithm 1's
    that: np.ndarray          # (draws, lambdas, m) measured jump times (NaN where the order is wrong)
    raw_L: list               # max |log-norm offset| (nats) per (draw, lambda) with the right order
    extra_err: list           # |t0 - t_k| / t_k, t0 extrapolated, Algorithm 1 step-size-corrected
    gf_err: list              # the same against the gradient-flow form
    extra_allow: list         # per jump: the extrapolation's own error allowance (``extrapolation_allowance``)
    extra_ratio: list         # |t0 - t_k| / allowance
    gf_ratio: list            # control: |t0 - t_k(gradient flow)| / allowance
    pl_err: np.ndarray        # rows (L, max plateau error, max plateau error / tolerance)
    tau_err: np.ndarray       # rows (L, max exponent error x L)
    pl_by_L: np.ndarray       # max plateau error per lambda
    tau_by_L: np.ndarray      # max exponent error per lambda
    pl_pred_by_L: np.ndarray  # max predicted plateau-error scale per lambda (``plateau_error_scale``)
    offsets_by_L: np.ndarray  # max |log-norm offset| (nats) per lambda over runs with the right order (NaN: none)
    mismatched: list          # (draw, log(1/lambda)) pairs whose measured jump order differs from Algorithm 1's
    ambiguous: list           # pairs where two consecutive jumps are closer than twice the offset tolerance
    frozen_ok: list           # control, per draw at the smallest lambda: order and sets = frozen_prediction
    frozen_mismatched: list   # control: pairs whose measured order differs from frozen_prediction's

    def convergence_tolerance(self) -> float:
        """Tolerance of the plateau error's drop from the largest to the smallest lambda: the geometric middle
        between no drop (1, what a wrong clock gives) and the drop Algorithm 1 predicts for these lambdas."""
        return float(np.sqrt(self.pl_pred_by_L[-1] / self.pl_pred_by_L[0]))

    def unexplained(self, pairs: list | None = None) -> int:
        """Pairs (default: the mismatched ones) outside the ambiguous set, where Theorem 2 fixes the order."""
        return len(set(self.mismatched if pairs is None else pairs) - set(self.ambiguous))


def ambiguous_by_lambda(sw: "Sweep", err: SweepErrors) -> list[int]:
    """Number of draws whose jumps this lambda cannot resolve (``ambiguous_order``), per log(1/lambda) of the sweep."""
    return [sum(L_ == float(L) for _, L_ in err.ambiguous) for L in sw.Ls]


def mismatch_text(err: SweepErrors) -> str:
    """The (draw, lambda) pairs whose jump order differs from Algorithm 1's, as words for the prose."""
    if not err.mismatched:
        return "none"
    return "; ".join(f"draw {d} at log(1/lambda) = {L:g}" for d, L in err.mismatched)


def offset_tolerance(n: int) -> float:
    """Theorem 2's O(1) log-norm offset at a jump, in nats: 1/2 log n (initial overlap ~ sqrt(|S|/n)) + 1
    (alignment transient and the half-label threshold)."""
    return 0.5 * np.log(n) + 1


def ambiguous_order(lp, log_inv_lam: float, tol_nats: float) -> bool:
    """Whether the measured order of the jumps may differ from Algorithm 1's at this lambda. Each waiting time may be
    off by tol_nats / (log(1/lambda) r), so two jumps, or a jump and a competitor that would have jumped soon after
    it had it not lost its points (line 8's runner-up), closer than the sum of their two allowances cannot be
    resolved at this lambda (a near-tie of Assumption 4(ii): a 0.0005 gap in exponent needs log(1/lambda) >> 5000)."""
    if lp.K == 0:
        return False
    r = lp.rates[np.arange(lp.K), lp.neurons]
    if lp.K >= 2 and np.any(np.diff(lp.times) < tol_nats / log_inv_lam * (1 / r[:-1] + 1 / r[1:])):
        return True
    t_prev = np.concatenate([[0.0], lp.times])
    for k in range(lp.K):
        live = lp.active[k].copy()
        live[lp.members[k]] = False
        if not live.any():
            continue
        rates = lp.rates[k, live]
        gap = lp.tau[k, live] / rates - (lp.times[k] - t_prev[k])        # runner-up's wait minus the winner's
        if np.any(gap < tol_nats / log_inv_lam * (1 / r[k] + 1 / rates)):
            return True
    return False


def extrapolation_allowance(Ls, that, eta: float) -> tuple[float, float]:
    """The extrapolated jump time t0 (linear fit t = t0 + C/log(1/lambda) through the three smallest lambda) and
    the error that this extrapolation itself allows, both from the data: twice its distance to the quadratic
    extrapolation through the same points (the size of the neglected 1/log(1/lambda)^2 term, large for slow
    neurons and small log(1/lambda)), plus the quantisation of the measured times (one step, eta/log(1/lambda))
    carried through both fits (the sums of the absolute weights of their intercepts)."""
    Ls = np.asarray(Ls, float)
    x = 1.0 / Ls
    t_lin = inverse_log_fit(Ls, that, 1)[0]
    t_quad = inverse_log_fit(Ls, that, 2)[0]
    amp = sum(np.abs(np.linalg.pinv(np.vander(x, p + 1, increasing=True))[0]).sum() for p in (1, 2))
    return float(t_lin), float(2 * abs(t_lin - t_quad) + amp * eta / Ls.min())


def measure_sweep(sw: Sweep, lps: list | None = None) -> SweepErrors:
    """Jump order, sets, times (raw and extrapolated), plateau losses and exponents against Algorithm 1
    (``lps``: another prediction per draw, e.g. a control; default the step-size-corrected Algorithm 1)."""
    Ls, res, eta = sw.Ls, sw.res, sw.eta
    lps = sw.lps if lps is None else lps
    tol = offset_tolerance(len(sw.draws[0][1][0]))
    mismatched, ambiguous, frozen_ok, frozen_mis = [], [], [], []
    order_ok, sets_ok, raw_L, extra_err, gf_err, pl_err, tau_err = [], [], [], [], [], [], []
    extra_allow, extra_ratio, gf_ratio = [], [], []
    offsets = [[] for _ in Ls]
    that = np.full((len(sw.draws), len(Ls), len(sw.draws[0][1][2])), np.nan)
    gd_sets_all = res.fitted_sets(np.array([d[1][0] for d in sw.draws for _ in Ls]))
    for d, lp in enumerate(lps):
        for a, L in enumerate(Ls):
            r = sw.run_index(d, a)
            order, tt_ = measured_jumps(res, r, eta, L)
            ok = list(order) == list(lp.neurons)
            if not ok:
                mismatched.append((d, float(L)))
            if list(order) != list(frozen_prediction(lp, sw.draws[d][1][3])[0]):
                frozen_mis.append((d, float(L)))
            if ambiguous_order(lp, L, tol):
                ambiguous.append((d, float(L)))
            if a == len(Ls) - 1:
                order_ok.append(ok)
                gsets = gd_sets_all[r]
                sets_ok.append(order_and_sets_match(order, gsets, lp.neurons, lp.fitted_sets))
                frozen_ok.append(order_and_sets_match(order, gsets, *frozen_prediction(lp, sw.draws[d][1][3])))
            if ok:
                that[d, a, :lp.K] = tt_
                raw_L.append(np.max(np.abs(jump_offsets_nats(lp, tt_, L))))
                offsets[a].append(raw_L[-1])
            pe = plateau_errors(res, r, lp, eta, L)
            pl_err.append((L, pe.max(), np.max(pe / np.maximum(10 * plateau_error_scale(lp, L), PLATEAU_FLOOR))))
            tau_err.append((L, exponent_errors(res, r, lp, eta, L).max() * L))
        top = slice(len(Ls) - 3, len(Ls))
        for k in range(lp.K):
            if np.all(np.isfinite(that[d, top, k])):
                t0, allow = extrapolation_allowance(Ls[top], that[d, top, k], eta)
                extra_err.append(abs(t0 - lp.times[k]) / lp.times[k])
                gf_err.append(abs(t0 - sw.lps_gf[d].times[k]) / sw.lps_gf[d].times[k])
                extra_allow.append(allow)
                extra_ratio.append(abs(t0 - lp.times[k]) / allow)
                gf_ratio.append(abs(t0 - sw.lps_gf[d].times[k]) / allow)
    pl_err, tau_err = np.array(pl_err), np.array(tau_err)
    return SweepErrors(order_ok=order_ok, sets_ok=sets_ok, that=that, raw_L=raw_L, extra_err=extra_err, gf_err=gf_err,
                       extra_allow=extra_allow, extra_ratio=extra_ratio, gf_ratio=gf_ratio,
                       pl_err=pl_err, tau_err=tau_err,
                       pl_by_L=np.array([pl_err[pl_err[:, 0] == L, 1].max() for L in Ls]),
                       tau_by_L=np.array([tau_err[tau_err[:, 0] == L, 1].max() / L for L in Ls]),
                       pl_pred_by_L=np.array([max(max(plateau_error_scale(lp, L).max(), PLATEAU_FLOOR / 10)
                                                  for lp in lps) for L in Ls]),
                       offsets_by_L=np.array([max(o) if o else np.nan for o in offsets]),
                       mismatched=mismatched, ambiguous=ambiguous, frozen_ok=frozen_ok,
                       frozen_mismatched=frozen_mis)



def error_table(sw: Sweep, err: SweepErrors) -> tuple[list[str], list[tuple]]:
    """Errors per lambda (plateau, exponent, log-norm offset): (columns, rows) for a Markdown table."""
    return (["$\\log(1/\\lambda)$", "max plateau error / $L^{(0)}$", "max exponent error",
             "max log-norm offset at jumps (nats)"],
            [(f"{L:g}", err.pl_by_L[a], err.tau_by_L[a], float(err.offsets_by_L[a])) for a, L in enumerate(sw.Ls)])


# -- the measurements of the checks table, each a function of the sweep and the predictions it is held against
# (default: the step-size-corrected Algorithm 1), so that a control is the same measurement against a wrong one --

def order_and_sets_ok(sw: Sweep, lps: list | None = None) -> bool:
    """At the smallest lambda, every draw's jump order and fitted sets equal the prediction's."""
    err = measure_sweep(sw, lps)
    return bool(all(err.order_ok) and all(err.sets_ok))


def frozen_order_and_sets_ok(sw: Sweep) -> bool:
    """The same against a wrong hypothesis: neurons never lose points (``algorithm.frozen_prediction``)."""
    return bool(all(measure_sweep(sw).frozen_ok))


def unexplained_mismatches(sw: Sweep, frozen: bool = False) -> int:
    """(draw, lambda) pairs whose jump order differs from Algorithm 1's (``frozen``: from the frozen
    prediction's) outside the pairs whose jumps this lambda cannot resolve."""
    err = measure_sweep(sw)
    return err.unexplained(err.frozen_mismatched if frozen else None)


def max_offset(sw: Sweep, lps: list | None = None) -> float:
    """Largest jump-time error as a log-norm offset (nats) over the (draw, lambda) pairs in the prediction's order
    (inf when no pair is)."""
    return float(max(measure_sweep(sw, lps).raw_L, default=np.inf))


def extrapolation_ratio(sw: Sweep, lps: list | None = None) -> float:
    """Largest |extrapolated jump time - predicted| / the extrapolation's own allowance."""
    return float(max(measure_sweep(sw, lps).extra_ratio, default=np.inf))


def plateau_ratio(sw: Sweep, lps: list | None = None) -> float:
    """Largest plateau-loss error over its tolerance, all draws and lambdas."""
    return float(measure_sweep(sw, lps).pl_err[:, 2].max())


def plateau_drop(sw: Sweep, lps: list | None = None) -> float:
    """Largest plateau error at the smallest lambda over the same at the largest lambda."""
    err = measure_sweep(sw, lps)
    return float(err.pl_by_L[-1] / err.pl_by_L[0])


def exponent_error_L(sw: Sweep, lps: list | None = None) -> float:
    """Largest exponent error times log(1/lambda), all draws and lambdas."""
    return float(measure_sweep(sw, lps).tau_err[:, 1].max())

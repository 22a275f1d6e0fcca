"""Algorithm 1 of the relu-orthogonal chapter: the limit jump process, computed without training.

Town, Boursier, Lewis, Englert, Lazić (2026), "Mildly overparameterized ReLU networks on
orthogonal data" (``town2026relu``). The seed text lost its formulas; the statements below
follow the reconstruction in ``shared/specs/paper_relu_orthogonal.md`` (sections in brackets).

Conventions. Network ``h(x) = sum_j a_j relu(<w_j, x>)`` (eq. 2), loss
``L_c = c/(2n) sum_i (h(x_i) - y_i)^2`` (c = 1: theory, c = 2: PyTorch MSE-mean), orthonormal
inputs; by rotation invariance we take ``X = I_n`` so that ``<w_j, x_i> = W[j, i]``.
Balanced small initialisation (Assumption 3): ``w_j = lam * unit``, ``a_j = s_j lam``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stagewise.numerics.roundoff import roundoff
from stagewise.relu_orthogonal.data import draw_instance, draw_seed, uncovered_points


@dataclass
class LimitProcess:
    """Output of Algorithm 1 [2.3]: jump times, jumping neurons, fitted sets, saddles, exponents."""

    y: np.ndarray
    s: np.ndarray
    c: float
    eta: float | None
    times: np.ndarray                     # t_1 < ... < t_K (accelerated time)
    neurons: np.ndarray                   # j_1, ..., j_K
    fitted_sets: list                     # S_1, ..., S_K (arrays of point indices)
    plateau_losses: np.ndarray            # L^(0), ..., L^(K)
    tau: np.ndarray                       # (K+1, m): exponents at t_0 = 0, t_1, ..., t_K
    rates: np.ndarray                     # (K+1, m): growth rate of tau on (t_k, t_{k+1}) (0 for fitted)
    active: np.ndarray                    # (K+1, m): neuron unfitted with an unfitted point in A_j on (t_k, t_{k+1})
    W: np.ndarray                         # (m, n) limit neurons theta^(K) (zero rows: never fitted)
    a: np.ndarray                         # (m,)
    uncovered: np.ndarray                 # points never fitted (zero rows of the mask)
    tie: tuple | None = None              # (k, neurons) when line 8's argmin is not unique
    members: list = field(default_factory=list)     # per jump: the neurons that jump together
    directions: list = field(default_factory=list)  # (m, n) predicted unit directions per stage

    @property
    def K(self) -> int:
        return len(self.times)

    def norm_sq(self) -> float:
        """Eq. (15): ||theta_inf||^2 = 2 sum_k ||y_{S_k}||_2."""
        return float(2 * sum(np.linalg.norm(self.y[S]) for S in self.fitted_sets))

    def jumps_per_sign(self) -> tuple[int, int]:
        """(K+, K-): jumps by neurons of each output sign (the sandwich of Eq. (15))."""
        sg = self.s[self.neurons] if self.K else np.array([])
        return int((sg > 0).sum()), int((sg < 0).sum())

    def stage(self, t: np.ndarray) -> np.ndarray:
        """Index k of the plateau (t_k, t_{k+1}) containing each accelerated time t."""
        return np.searchsorted(self.times, np.asarray(t, dtype=float), side="right")

    def loss(self, t: np.ndarray) -> np.ndarray:
        """Limit-process loss L^lim(t) = L^(k) on (t_k, t_{k+1}) (Theorem 2)."""
        return self.plateau_losses[self.stage(t)]

    def exponents(self, t: np.ndarray) -> np.ndarray:
        """Exponents tau_j(t) (len(t), m), piecewise affine (eqs. 10-11); 0 once fitted."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        k = self.stage(t)
        t0 = np.concatenate([[0.0], self.times])[k]
        return np.maximum(self.tau[k] - (t - t0)[:, None] * self.rates[k], 0.0)


def neuron_rates(r: np.ndarray, eta: float | None) -> np.ndarray:
    """Algorithm 1, line 2: growth rate of the log-norm per unit time, r (gradient flow) or
    log(1 + eta r)/eta (GD with step eta, [derived]) [2.4]."""
    return r if eta is None else np.log1p(eta * r) / eta


def algorithm1(y: np.ndarray, M: np.ndarray, s: np.ndarray, c: float = 1.0, eta: float | None = None,
               tie_rtol: float = 1e-9, directions: bool = False, merge_identical: bool = True) -> LimitProcess:
    """Algorithm 1 (limit process, computed without training) [2.3].

    ``eta=None`` gives the gradient-flow form (rates r_j = c/n ||y_{S_j}||); a step size gives the
    step-size-corrected form whose rates ``log(1 + eta r)/eta`` are the exact lambda -> 0 limit of
    gradient descent with that step. When two candidates reach tau = 0 at times equal within
    ``tie_rtol`` (relative), the argmin of line 8 is not unique (Assumption 4(ii) fails): the
    algorithm stops there and reports the tie instead of choosing. The one exception
    (``merge_identical``) is a tie between neurons with identical mask columns (Assumption 4(i)
    fails, likely when m is comparable to 2^{n/2}): they have identical exponents forever, act as one
    rank-1 group and jump together, sharing the fit equally (any split gives the same function and
    the same norm 2||y_S||); ``members`` lists each jump's group. ``directions=True`` also stores
    the predicted unit directions of every stage (eq. 9), an (m, n) array per stage.
    """
    y = np.asarray(y, dtype=float)
    n, m = M.shape
    y2 = y ** 2
    unfitted = np.ones(n, bool)
    fitted = np.zeros(m, bool)
    tau = np.ones(m)
    t = 0.0
    members = []
    times, neurons, sets, losses, taus, rates_hist, dirs = [], [], [], [c / (2 * n) * y2.sum()], [tau.copy()], [], []
    active_hist = []
    W, a = np.zeros((m, n)), np.zeros(m)
    tie = None
    Mf = M.T.astype(float) if directions else None
    # Waiting times equal to rounding are a tie: their rounding error is a few eps per operation on n terms.
    tie_tol = max(tie_rtol, roundoff(1.0, n))
    while True:
        # Which neurons still grow is decided on integers (an unfitted neuron with an unfitted point of its
        # sign class; labels are non-zero), never by testing a computed rate against 0. ||y_{S_j}||^2 is
        # recomputed from the unfitted points at every stage (no running subtraction, no cancellation).
        live = ~fitted & (M[unfitted].sum(axis=0) > 0)
        norms = np.where(live, np.sqrt((y2 * unfitted) @ M), 0.0)
        rate = np.where(live, neuron_rates(c / n * norms, eta), 0.0)
        rates_hist.append(rate)
        active_hist.append(live)
        if directions:
            d = Mf * (np.abs(y) * unfitted)[None, :] / np.where(live, norms, 1.0)[:, None]
            d[~live] = 0.0
            dirs.append(d)
        cand = np.flatnonzero(live)
        if cand.size == 0:
            break
        wait = tau[cand] / rate[cand]
        best = wait.min()
        close = cand[np.abs(wait - best) <= tie_tol * best]
        if close.size > 1:
            same = bool(np.all(M[:, close] == M[:, close[:1]]))
            if not (merge_identical and same):
                tie = (len(times) + 1, close)
                break
            group = close
        else:
            group = cand[np.argmin(wait)][None]
        j = int(group[0])
        t += best
        tau = tau - best * rate
        tau[group] = 0.0
        Sj = np.flatnonzero(M[:, j] & unfitted)
        nu = float(np.linalg.norm(y[Sj]))
        g = len(group)
        for k in group:                                       # eqs. (12-13): a sigma(<w, x_i>) = y_i on S
            W[k, Sj] = s[k] * y[Sj] / np.sqrt(nu * g)
            a[k] = s[k] * np.sqrt(nu / g)
        unfitted[Sj] = False
        fitted[group] = True
        times.append(t); neurons.append(j); sets.append(Sj); taus.append(tau.copy()); members.append(group)
        losses.append(c / (2 * n) * y2[unfitted].sum())
    rates_arr = np.array(rates_hist)
    return LimitProcess(y=y, s=np.asarray(s, float), c=c, eta=eta, times=np.array(times), neurons=np.array(neurons, int),
                        fitted_sets=sets, plateau_losses=np.array(losses), tau=np.array(taus),
                        rates=rates_arr[: len(taus)], active=np.array(active_hist)[: len(taus)], W=W, a=a, uncovered=uncovered_points(M),
                        tie=tie, directions=dirs, members=members)


def merged_groups(lp: LimitProcess) -> int:
    """Number of jumps made by a group of neurons with identical mask columns (Algorithm 1, line 8;
    Assumption 4(i) fails)."""
    return sum(len(g) > 1 for g in lp.members)


def min_gap(lp: LimitProcess) -> float:
    """Smallest gap between consecutive jump times of Algorithm 1 (t_0 = 0 included): how separated the
    jumps of Theorem 2 are."""
    return float(np.min(np.diff(np.concatenate([[0.0], lp.times])))) if lp.K else np.inf


def find_instances(seed: int, count: int, n: int, m: int, labels: str, signs: str, gap: float = 0.3,
                   t_max: float = np.inf, tries: int = 2000, cover: bool = True, accept=None) -> list[tuple[int, tuple]]:
    """The first ``count`` draws k = 0, 1, ... of the stream ``seed`` (``data.draw_seed(seed, k)``)
    that satisfy Assumption 4 (all points covered, no tie, no merged group of identical columns, at
    least one jump) with jumps of Algorithm 1 (c = 1) separated by >= ``gap`` (the separated jumps of
    Theorem 2) and the last jump before ``t_max``. ``cover=False`` drops the coverage requirement.
    ``accept(lp, instance)``, if given, is a further condition on Algorithm 1's output.
    Returns ``[(k, (y, U0, s, M)), ...]``. Selection uses Algorithm 1 only, never training."""
    found = []
    for k in range(tries):
        inst = draw_instance(draw_seed(seed, k), n, m, labels, signs)
        lp = algorithm1(inst[0], inst[3], inst[2])
        if ((lp.uncovered.size == 0 or not cover) and lp.tie is None and merged_groups(lp) == 0 and lp.K
                and min_gap(lp) >= gap and lp.times[-1] <= t_max and (accept is None or accept(lp, inst))):
            found.append((k, inst))
            if len(found) == count:
                break
    return found


def frozen_prediction(lp: LimitProcess, M: np.ndarray) -> tuple[np.ndarray, list]:
    """A wrong hypothesis (control of the order-and-sets checks): neurons grow independently, never losing the
    points fitted by others, so they jump in the order of their initial waiting times 1/r_j(0) and each fits its
    whole activation set A_j. Returns (the first K neurons in that order, their sets A_j)."""
    r0 = lp.rates[0]
    order = np.argsort(-r0, kind="stable")[: lp.K]
    return order, [np.flatnonzero(M[:, j]) for j in order]


def memoryless_staircase(lp: LimitProcess, M: np.ndarray) -> LimitProcess:
    """A wrong theory (the control of the plateau checks): neurons grow independently, never slowed by the points
    that others fit. Neuron j keeps its initial rate r_j(0) (in ``lp``'s clock: gradient flow or step-size
    corrected) and jumps when its exponent 1 - r_j(0) t reaches 0, at t = 1/r_j(0), fitting the points of A_j that
    are still unfitted (a neuron left with none does not jump). Returns its whole staircase as a LimitProcess
    (times, neurons, sets, plateau losses, exponents and rates), so that the plateau measurements read it exactly
    as they read Algorithm 1. It agrees with Algorithm 1 up to the first jump that takes points from a neuron
    still growing."""
    from dataclasses import replace
    n, m = M.shape
    r0 = lp.rates[0]
    y2 = lp.y ** 2
    unfitted, fitted = np.ones(n, bool), np.zeros(m, bool)
    times, neurons, sets, losses = [], [], [], [lp.plateau_losses[0]]
    for j in np.argsort(-r0, kind="stable"):
        if r0[j] <= 0:
            break
        S = np.flatnonzero(M[:, j] & unfitted)
        if S.size == 0:
            continue
        unfitted[S] = False
        times.append(1.0 / r0[j]); neurons.append(int(j)); sets.append(S)
        losses.append(lp.c / (2 * n) * y2[unfitted].sum())
    t = np.concatenate([[0.0], times])
    active = np.ones((len(t), m), bool) & (r0 > 0)
    for k, j in enumerate(neurons):
        active[k + 1:, j] = False
    rates = np.where(active, r0, 0.0)
    tau = np.where(active, np.maximum(1.0 - t[:, None] * r0, 0.0), 0.0)
    return replace(lp, times=np.array(times), neurons=np.array(neurons, int), fitted_sets=sets,
                   plateau_losses=np.array(losses), tau=tau, rates=rates, active=active,
                   members=[np.array([j]) for j in neurons])


def frozen_rates(lp: LimitProcess) -> LimitProcess:
    """A wrong prediction (the control of the exponent checks), the hypothesis of ``frozen_prediction`` for the
    exponents: neurons never lose points to others, so every unfitted neuron keeps its initial rate r_j(0) through
    the others' jumps, tau_j(t) = tau_j(0) - r_j(0) t (jump times, neurons and sets unchanged). It agrees with
    Algorithm 1 before the first jump and departs only where a jump takes points from a neuron that is still
    growing."""
    from dataclasses import replace
    t = np.concatenate([[0.0], lp.times])
    rates = np.repeat(lp.rates[:1], lp.K + 1, axis=0)
    return replace(lp, rates=rates, tau=np.maximum(lp.tau[0] - t[:, None] * rates, 0.0))


def frozen_jump_times(lp: LimitProcess) -> LimitProcess:
    """A wrong prediction (the control of the jump-time checks), the hypothesis of ``frozen_rates`` for the jump
    times: Algorithm 1's neurons in Algorithm 1's order, each predicted to jump at its own initial waiting time
    tau_j(0) / r_j(0), as if no earlier jump had taken points from it (right for the first jump only). Only the
    jump times and the rates that convert them into log-norm offsets are meaningful in the result."""
    from dataclasses import replace
    frozen = frozen_rates(lp)
    j = np.asarray(lp.neurons)
    return replace(frozen, times=lp.tau[0, j] / lp.rates[0, j])


def order_and_sets_match(order, gd_sets, neurons, sets) -> bool:
    """Theorem 2 on one run: the measured jump order equals ``neurons`` and each jumping neuron's measured
    fitted set (``gd_sets[j]``) equals the predicted one."""
    return (list(order) == list(neurons)
            and all(np.array_equal(gd_sets[j], S) for j, S in zip(neurons, sets)))

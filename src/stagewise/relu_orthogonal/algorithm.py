"""Two-layer ReLU networks on orthogonal data: model, data, Algorithm 1, coverage, norms.

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
from math import comb, log

import numpy as np

from stagewise.core.parameters import ParameterError

LABELS = ("abs_gaussian", "gaussian", "rademacher", "uniform")


# ----------------------------------------------------------------------------- data and init
def make_labels(n: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """Labels y in R^n: |N(0,1)| (Fig. 1), N(0,1) (Fig. 5), Rademacher (ties), U[1,2]."""
    if kind == "abs_gaussian":
        return np.abs(rng.standard_normal(n))
    if kind == "gaussian":
        return rng.standard_normal(n)
    if kind == "rademacher":
        return rng.choice([-1.0, 1.0], size=n)
    if kind == "uniform":
        return rng.uniform(1.0, 2.0, size=n)
    raise ValueError(f"unknown label kind {kind!r}; allowed: {LABELS}")


def balanced_init(m: int, n: int, signs: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Unit directions ``U`` (m, n) uniform on the sphere and output signs ``s`` (Assumption 3).

    The weights are ``w_j = lam * U_j`` and ``a_j = s_j * lam``; ``signs`` is ``positive``
    (all s_j = +1, Fig. 1) or ``random`` (Rademacher, Fig. 5).
    """
    U = rng.standard_normal((m, n))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    s = np.ones(m) if signs == "positive" else rng.choice([-1.0, 1.0], size=m)
    return U, s


def activation_mask(W0: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Mask M (n, m) of Assumption 4: M_ij = 1{s_j y_i > 0} 1{<w_j(0), x_i> > 0} [2.1]."""
    return ((s[None, :] * y[:, None]) > 0) & (W0.T > 0)


def coverage_report(M: np.ndarray) -> dict:
    """Which rows/columns of the mask are empty and whether columns repeat (Assumption 4(i))."""
    rows = np.flatnonzero(~M.any(axis=1))
    cols = np.flatnonzero(~M.any(axis=0))
    live = [tuple(M[:, j]) for j in range(M.shape[1]) if M[:, j].any()]
    return {"uncovered_points": rows, "dormant_neurons": cols, "distinct_columns": len(set(live)) == len(live)}


# ----------------------------------------------------------------------------- Algorithm 1
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
    """Growth rate of the log-norm per unit time: r (gradient flow) or log(1 + eta r)/eta (GD) [2.4]."""
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
    W, a = np.zeros((m, n)), np.zeros(m)
    tie = None
    Mf = M.T.astype(float) if directions else None
    sq = y2 @ M                                               # ||y_{S_j}||^2, S_j = A_j ∩ U (updated below)
    cnt = M.sum(axis=0)                                       # |S_j| (exact, so empty sets give rate 0)
    while True:
        norms = np.where(cnt > 0, np.sqrt(np.maximum(sq, 0.0)), 0.0)
        norms[fitted] = 0.0
        rate = neuron_rates(c / n * norms, eta)
        rates_hist.append(rate)
        if directions:
            d = Mf * (np.abs(y) * unfitted)[None, :] / np.where(norms > 0, norms, 1.0)[:, None]
            d[fitted] = 0.0
            dirs.append(d)
        cand = np.flatnonzero(rate > 0)
        if cand.size == 0:
            break
        wait = tau[cand] / rate[cand]
        best = wait.min()
        close = cand[np.abs(wait - best) <= tie_rtol * max(best, 1e-300)]
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
        sq = sq - y2[Sj] @ M[Sj]
        cnt = cnt - M[Sj].sum(axis=0)
        fitted[group] = True
        times.append(t); neurons.append(j); sets.append(Sj); taus.append(tau.copy()); members.append(group)
        losses.append(c / (2 * n) * y2[unfitted].sum())
    rates_arr = np.array(rates_hist)
    return LimitProcess(y=y, s=np.asarray(s, float), c=c, eta=eta, times=np.array(times), neurons=np.array(neurons, int),
                        fitted_sets=sets, plateau_losses=np.array(losses), tau=np.array(taus),
                        rates=rates_arr[: len(taus)], W=W, a=a, uncovered=np.flatnonzero(~M.any(axis=1)),
                        tie=tie, directions=dirs, members=members)


def merged_groups(lp: LimitProcess) -> int:
    """Number of jumps made by a group of neurons with identical mask columns."""
    return sum(len(g) > 1 for g in lp.members)


def min_gap(lp: LimitProcess) -> float:
    """Smallest gap between consecutive jump times (t_0 = 0 included)."""
    return float(np.min(np.diff(np.concatenate([[0.0], lp.times])))) if lp.K else np.inf


# ----------------------------------------------------------------------------- norms
def min_norm_sq(y: np.ndarray) -> float:
    """Squared norm of a minimal-norm interpolator: 2(||y_+|| + ||y_-||) (eq. 15) [2.8]."""
    return float(2 * (np.linalg.norm(y[y > 0]) + np.linalg.norm(y[y < 0])))


def sandwich(lp: LimitProcess) -> tuple[float, float]:
    """Ratio ||theta_inf||^2/||theta*||^2 and the upper bound sqrt(max(K+, K-)) [2.8, derived]."""
    kp, km = lp.jumps_per_sign()
    return lp.norm_sq() / min_norm_sq(lp.y), float(np.sqrt(max(kp, km, 1)))


def width_rule(n: int, failure: float = 0.05) -> int:
    """Width with n (3/4)^m <= failure (union bound over rows), the note's m(n) for Fig. 5."""
    return int(np.ceil((log(n) - log(failure)) / log(4 / 3)))


# ----------------------------------------------------------------------------- Proposition 2
def coverage_exact(m: int, n_pos: int, n_neg: int) -> float:
    """P(every row of M non-zero), exact: sum over m_+ ~ Bin(m, 1/2) [2.5, derived]."""
    k = np.arange(m + 1)
    w = np.array([comb(m, int(i)) for i in k], float) * 0.5 ** m
    return float(np.sum(w * (1 - 0.5 ** k) ** n_pos * (1 - 0.5 ** (m - k)) ** n_neg))


def coverage_union_bound(m: int, n: int) -> float:
    """Union bound on rows: P(all covered) >= 1 - n (3/4)^m (Proposition 2(i), row part)."""
    return 1.0 - n * 0.75 ** m


def assumption4_union_bound(m: int, n_pos: int, n_neg: int) -> float:
    """Full union bound of Proposition 2(i): rows, zero columns and equal columns [2.5]."""
    nmin = min(n_pos, n_neg) if min(n_pos, n_neg) > 0 else max(n_pos, n_neg)
    return 1.0 - (n_pos + n_neg) * 0.75 ** m - (m + comb(m, 2)) * 2.0 ** (-nmin)


def coverage_monte_carlo(m: int, y: np.ndarray, trials: int, rng: np.random.Generator) -> float:
    """Monte Carlo frequency of full coverage: signs s_j and activation bits 1{<w_j, x_i> > 0}.

    For orthonormal x_i and w_j uniform on the sphere the activation bits are i.i.d. fair coins
    (signs of independent Gaussian coordinates), so each (trial, point) draws one m-bit word.
    """
    if m > 62:
        raise ValueError("coverage_monte_carlo packs a neuron per bit: m <= 62")
    n = len(y)
    sign_bits = rng.integers(0, 2 ** m, size=trials, dtype=np.int64)          # bit j: s_j = +1
    act = rng.integers(0, 2 ** m, size=(trials, n), dtype=np.int64)           # bit j: active on x_i
    full = np.int64(2 ** m - 1)
    good = np.where(y[None, :] > 0, sign_bits[:, None], full ^ sign_bits[:, None])
    return float(np.mean(np.all((act & good) != 0, axis=1)))


def half_coverage_width(n_pos: int, n_neg: int, m_max: int = 200) -> float:
    """Width at which the exact coverage probability crosses 1/2 (linear interpolation in m)."""
    p_prev = coverage_exact(1, n_pos, n_neg)
    for m in range(2, m_max):
        p = coverage_exact(m, n_pos, n_neg)
        if p >= 0.5:
            return (m - 1) + (0.5 - p_prev) / (p - p_prev)
        p_prev = p
    return float("nan")


# ----------------------------------------------------------------------------- validator
def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the relu-orthogonal chapter (one-line ParameterError)."""
    lams = values.get("sweep_log_inv_lambdas", [])
    if len(lams) < 3 or len(set(lams)) != len(lams):
        raise ParameterError("parameter sweep_log_inv_lambdas: needs at least 3 distinct values for the "
                             "extrapolation to lambda -> 0; allowed: >= 3 distinct values in [10, 2000]")
    etas = values.get("bal_etas", [])
    if len(etas) < 2 or len(set(etas)) != len(etas):
        raise ParameterError("parameter bal_etas: needs at least 2 distinct step sizes to measure the drift "
                             "slope; allowed: >= 2 distinct values in (0, 0.5]")
    if values.get("norm_gd_log2n_max", 0) > values.get("norm_log2n_max", 99):
        raise ParameterError("parameter norm_gd_log2n_max: must not exceed norm_log2n_max; "
                             f"allowed: <= {values.get('norm_log2n_max')}")
    lr, c = values.get("fig1_lr", 0.01), values.get("fig1_loss_c", 2.0)
    if lr * c * 2 >= 1.0:
        raise ParameterError(f"parameter fig1_lr: lr * loss constant = {lr * c:g} is too large for a "
                             "stable staircase; allowed: fig1_lr * fig1_loss_c < 0.5")


def markdown_table(columns: list[str], rows: list) -> "object":
    """A small Markdown table for display in the chapter (floats to 4 significant digits)."""
    from IPython.display import Markdown

    def cell(v):
        if isinstance(v, (float, np.floating)):
            return f"{v:.4g}"
        return str(v)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return Markdown("\n".join(lines))

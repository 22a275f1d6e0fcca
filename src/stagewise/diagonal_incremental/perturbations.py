"""The paper's perturbation protocols (its App. A, Figs. 3, 10 and 11), run on gradient descent from points of the
exact flow.

:func:`perturbation_study` is Fig. 10's test of Assumption 4.4: on each plateau, perturb the non-negligible
weights and train on; the perturbation decays (``theta^k`` is a strict local minimum on its support).
:func:`new_coordinate_study` is Fig. 11's test of Assumption 4.5: at the moment a coordinate becomes
non-negligible (it crosses ``1e-5``), perturb the non-negligible weights (the new one included) and train through
the stage; the perturbed run ends on the same plateau ``theta^{k}`` as the unperturbed one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stagewise.diagonal_incremental.descent import descend
from stagewise.diagonal_incremental.flow import weights_from_b
from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.diagonal_incremental.relaxation import relaxation_numbers

NEGLIGIBLE = 1e-5           # the paper's threshold: a weight is non-negligible above it
STAGE_B_STD = 1e-2          # the paper's noise for Fig. 11 (Fig. 10 uses 0.05, the chapter's perturb_std)


@dataclass
class PerturbationStudy:
    """Perturbed minus unperturbed GD in product space: ``dist`` ``(plateaus, records)`` at times ``t``;
    ``i_stop`` ends each plateau's window."""

    t: np.ndarray
    dist: np.ndarray
    i_stop: list
    resolved: np.ndarray | None = None     # plateaus whose window is long enough to show the decay

    @property
    def ratios(self) -> np.ndarray:
        """``dist`` at the end of each window over its initial value (NaN where the window is not resolved)."""
        ok = self.resolved if self.resolved is not None else np.ones(len(self.i_stop), bool)
        return np.array([self.dist[q, i] / self.dist[q, 0] if ok[q] else np.nan for q, i in enumerate(self.i_stop)])

    @property
    def ratio(self) -> float:
        """Largest ``dist`` at the end of a window over its initial value (< 1: the perturbation decays), over
        the resolved plateaus."""
        ok = self.resolved if self.resolved is not None else np.ones(len(self.i_stop), bool)
        return float(max((self.dist[q, i] / self.dist[q, 0] for q, i in enumerate(self.i_stop) if ok[q]),
                         default=math.nan))


def perturbation_study(model: DiagonalModel, tau: np.ndarray, b: np.ndarray, alpha: float, T: np.ndarray,
                       mids: np.ndarray, u0: np.ndarray, v0: np.ndarray, rng: np.random.Generator, std: float,
                       eta: float, n_steps: int = 1000, device="cpu", everywhere: bool = False,
                       rates: np.ndarray | None = None, decay: float = 0.01,
                       g_off: np.ndarray | None = None, supports: list | None = None) -> PerturbationStudy:
    """Assumption 4.4 by perturbation (paper App. A, Figs. 3, 10, 11): at each plateau midpoint in ``mids``
    take the weights of the exact flow (``b`` ``(len(tau), p)`` at ``alpha``, eq. 7), add Gaussian noise
    of std ``std`` to the non-negligible ones (``|u_i|`` or ``|v_i| > 1e-5``), and train both by GD. Each
    plateau's window goes 40% of the way from its midpoint to the next transition, ``0.2 (T_{k+1} - T_k)``
    in rescaled time (``mids[q]`` lies between ``T[q]`` and ``T[q + 1]``; the last plateau has no end).

    ``everywhere=True`` is the control: it perturbs the negligible coordinates too, i.e. leaves the
    balanced support of ``theta^k``, along which ``theta^k`` is a saddle, not a minimum.

    ``rates``: the relaxation rate of each plateau in ``mids`` (``relaxation.relaxation_rates``); a plateau is
    resolved when its slowest mode decays below ``decay`` within the window (``rate * t_stop >= log(1/decay)``),
    and :attr:`PerturbationStudy.ratio` covers the resolved plateaus only.

    ``g_off``: ``max_{i not in S_k} |g_i(theta^k)|`` per plateau. An inactive coordinate is at most
    ``exp(-2 log(1/alpha) |g_i| (T_{k+1} - tau))`` in size, and the perturbation changes its growth, so the
    measured distance grows again once it is no longer negligible (the paper's figure shows only the return to
    the plateau). The window then also ends before that bound reaches ``decay * std``.

    ``supports``: ``supp theta^k`` per plateau. Where a coordinate outside it is already non-negligible at the
    midpoint (a short plateau, the next coordinate about to switch on), the perturbation leaves the support,
    along which ``theta^k`` is a saddle (the control's situation): such a plateau is not resolved."""
    L = -math.log(alpha)
    starts, on_support = [], []
    for q, m in enumerate(mids):
        i = int(np.argmin(np.abs(tau - m)))
        u, v = weights_from_b(b[i], L, u0, v0)
        big = (np.abs(u) > NEGLIGIBLE) | (np.abs(v) > NEGLIGIBLE)
        on_support.append(supports is None or set(np.flatnonzero(big)) <= set(np.asarray(supports[q]).tolist()))
        big = big | everywhere
        up, vp = u.copy(), v.copy()
        up[big] += std * rng.standard_normal(big.sum())
        vp[big] += std * rng.standard_normal(big.sum())
        starts += [(u, v), (up, vp)]
    run = descend(model, np.stack([s[0] for s in starts]), np.stack([s[1] for s in starts]), eta, n_steps,
                  device=device)
    t = run.t[0]
    dist = np.abs(run.beta[1::2] - run.beta[0::2]).max(axis=-1)      # (plateaus, records)
    gaps = np.append(np.diff(T), np.inf)[:len(mids)]     # T may end with the end of the last covered plateau
    t_stop = np.minimum(0.2 * gaps * L, t[-1])
    if g_off is not None:       # end while every inactive coordinate is still below decay * std (see above)
        g = np.maximum(np.asarray(g_off, float), 1e-300)
        t_stop = np.minimum(t_stop, 0.5 * gaps * L - math.log(1.0 / (decay * std)) / (2.0 * g))
    resolved = None if rates is None else (np.asarray(rates, float) * np.maximum(t_stop, 0.0) >= math.log(1.0 / decay)
                                           ) & np.array(on_support)
    t_stop = np.maximum(t_stop, 0.0)
    return PerturbationStudy(t, dist, [int(np.searchsorted(t, ts, side="right") - 1) for ts in t_stop], resolved)


def perturbation_ratio(*args, **kwargs) -> float:
    """:attr:`PerturbationStudy.ratio` of a new :func:`perturbation_study` (same arguments): the control
    perturbs the negligible coordinates too (``everywhere=True``)."""
    return perturbation_study(*args, **kwargs).ratio


def new_coordinate_study(model: DiagonalModel, tau: np.ndarray, b: np.ndarray, alpha: float, stages: list,
                         mids: np.ndarray, rates: np.ndarray, u0: np.ndarray, v0: np.ndarray,
                         rng: np.random.Generator, eta: float, std: float = STAGE_B_STD, max_steps: int = 3000,
                         device="cpu", everywhere: bool = False, decay: float = 0.01,
                         record_every: int = 20, g_off: np.ndarray | None = None,
                         times: np.ndarray | None = None) -> PerturbationStudy:
    """Assumption 4.5 by perturbation (paper, Fig. 11): for each stage ``k = 1..K``, take the exact flow at
    ``alpha`` (``b`` ``(len(tau), p)``) at the first record where the new coordinate ``i_{k-1}`` is
    non-negligible (``|u_i|`` or ``|v_i| > 1e-5``), add Gaussian noise of std ``std`` to every non-negligible
    weight, and train both copies by GD (step ``eta``) through stage (B) to the midpoint ``mids[k]`` of the new
    plateau (at most ``max_steps`` steps). Assumption 4.5 says both reach ``theta^k``: the distance between them
    decays.

    A stage is resolved when its window shows this: only ``supp theta^{k-1} + {i_{k-1}}`` is non-negligible
    at the crossing (the face the assumption speaks of), and the window outlasts the transition: after the
    transition (the measured ``times[k - 1]`` of the flow at ``alpha`` when given, else ``T_k``) it runs as long
    again as the crossing took to reach it (the second half of the drop), and then ``log(1/decay)`` e-foldings of
    the new plateau's relaxation (rate ``rates[k]``).

    ``g_off``: ``max_{i not in S_k} |g_i(theta^k)|`` per plateau ``k = 0..K`` (``assumptions.off_support_gradient``).
    The next coordinate is about ``exp(-2 log(1/alpha) |g| (T_{k+1} - tau))`` in size, and the perturbation
    shifts when it switches on; the window then also ends while it is below ``decay * std``, as in
    :func:`perturbation_study`.

    ``everywhere=True`` is the control: the negligible coordinates are perturbed too, off the face the
    assumption covers; a coordinate with ``g_i > 0`` there is lifted from ``alpha``-size to ``std`` and switches
    on early."""
    L = -math.log(alpha)
    u_all, v_all = weights_from_b(np.asarray(b), L, u0, v0)          # (len(tau), p) each
    starts, t_end, resolved = [], [], []
    for k in range(1, len(stages)):
        i_new, face = stages[k].coordinate, np.append(stages[k - 1].support, stages[k].coordinate)
        on = np.flatnonzero((np.abs(u_all[:, i_new]) > NEGLIGIBLE) | (np.abs(v_all[:, i_new]) > NEGLIGIBLE))
        r = int(on[0]) if on.size else len(tau) - 1
        u, v = u_all[r], v_all[r]
        big = (np.abs(u) > NEGLIGIBLE) | (np.abs(v) > NEGLIGIBLE)
        on_face = set(np.flatnonzero(big)) <= set(face.tolist())
        big = big | everywhere
        up, vp = u.copy(), v.copy()
        up[big] += std * rng.standard_normal(big.sum())
        vp[big] += std * rng.standard_normal(big.sum())
        starts += [(u, v), (up, vp)]
        end = min((mids[k] - tau[r]) * L, max_steps * eta)
        if g_off is not None and k + 1 < len(stages):     # before the next coordinate is above decay * std
            quiet = stages[k + 1].T - math.log(1.0 / (decay * std)) / (2.0 * L * max(float(g_off[k]), 1e-300))
            end = max(min(end, (quiet - tau[r]) * L), 0.0)
        t_end.append(end)
        drop = stages[k].T if times is None else float(times[k - 1])
        start = drop + max(drop - tau[r], 0.0)               # the drop's second half mirrors its first
        settle = relaxation_numbers(np.array([rates[k]]), [start], [tau[r] + end / L], alpha)[0]
        resolved.append(on_face and on.size > 0 and settle >= math.log(1.0 / decay))
    n_steps = int(math.ceil(max(t_end, default=0.0) / eta))
    run = descend(model, np.stack([s[0] for s in starts]), np.stack([s[1] for s in starts]), eta, n_steps,
                  record_every=record_every, device=device)
    t = run.t[0]
    dist = np.abs(run.beta[1::2] - run.beta[0::2]).max(axis=-1)
    return PerturbationStudy(t, dist, [int(np.searchsorted(t, te, side="right") - 1) for te in t_end],
                             np.array(resolved, bool))


def new_coordinate_ratio(*args, **kwargs) -> float:
    """:attr:`PerturbationStudy.ratio` of a new :func:`new_coordinate_study` (same arguments): the control
    perturbs the negligible coordinates too (``everywhere=True``)."""
    return new_coordinate_study(*args, **kwargs).ratio

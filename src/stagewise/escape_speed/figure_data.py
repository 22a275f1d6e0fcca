"""What the escape-speed chapter's figures plot, taken out of the experiments' results as plain arrays (the figures'
data sidecars). The drawing itself is in :mod:`stagewise.escape_speed.figures`, which never sees torch: every tensor
becomes NumPy here, and everything computed for a plot (reference lines, jittered positions, ratios, the per-layer
diagnostics of the depth optima) is computed here."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagewise.escape_speed.deepening import DepthStudy
from stagewise.escape_speed.digits import DigitsRun, record_at
from stagewise.escape_speed.example1_rank_one import RANK_ONE_SPEED, RankOneScan
from stagewise.escape_speed.example1_widths import RANK_TWO_SPEED, AscentSweep, GDSuccess
from stagewise.escape_speed.explosion import AlignedFlow
from stagewise.escape_speed.gradient_descent import EscapeTimeLaw
from stagewise.escape_speed.layer_measures import layer_diagnostics
from stagewise.escape_speed.restart_ranks import RestartRanks, best_known
from stagewise.escape_speed.width_trend import wilson

EQ6_EVERY = 400          # the dots of Eq. (6): every 400th angle of the grid


def _np(x, dtype=float) -> np.ndarray:
    """A tensor, list or array as a NumPy array (on the CPU)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype)


def rank_one(scan: RankOneScan) -> dict[str, Any]:
    """Figure "rank-one": the direct rank-one speed against the angle, Eq. (6) on a coarser grid, and the two
    reference speeds (best rank-one, rank-two construction)."""
    return {"phi": _np(scan.phi), "direct": _np(scan.direct),
            "phi_eq6": _np(scan.phi)[::EQ6_EVERY], "eq6": _np(scan.eq6)[::EQ6_EVERY],
            "rank_one_speed": float(RANK_ONE_SPEED), "rank_two_speed": float(scan.rank_two_speed)}


def _fractions(counts: list[int], trials: list[int]) -> dict[str, np.ndarray]:
    """Fractions ``k / n`` per width with their 95% Wilson intervals (``lo``, ``hi``) and the error bars that draw
    them (``err``: distances below and above, clipped at 0 where rounding puts ``p`` a hair outside)."""
    ci = np.array([wilson(k, n) for k, n in zip(counts, trials)])
    p = _np([k / n for k, n in zip(counts, trials)])
    return {"p": p, "lo": ci[:, 0], "hi": ci[:, 1], "err": np.clip([p - ci[:, 0], ci[:, 1] - p], 0.0, None)}


def success(sweep: AscentSweep, gd: GDSuccess) -> dict[str, Any]:
    """Figure "success": per width the speed trace of every projected-ascent restart (float32: the plot needs no more)
    and its class (2: reached the rank-two speed, 1: beyond rank one only, 0: rank one); per width the two fractions
    of projected ascent and of gradient descent ``gd``, with their 95% Wilson intervals."""
    runs = {}
    for w in sweep.widths:
        result = sweep.runs[w]
        cls = (result.speeds > sweep.threshold).long() + (result.speeds >= sweep.reach).long()
        runs[f"w{w}"] = {"width": int(w), "trace": _np(result.trace, np.float32), "cls": _np(cls, int)}
    return {"runs": runs, "widths": _np(sweep.widths, int),
            "reached": _fractions(sweep.successes, sweep.trials),
            "beyond": _fractions(sweep.beyond_rank_one, sweep.trials),
            "gd_widths": _np(gd.widths, int), "gd_reached": _fractions(gd.successes, gd.trials),
            "gd_beyond": _fractions(gd.beyond_rank_one, gd.trials),
            "rank_one_speed": float(RANK_ONE_SPEED), "rank_two_speed": RANK_TWO_SPEED, "ylim": [0.0, 0.55]}


def gd_success(sweep: AscentSweep, gd: GDSuccess, rng: np.random.Generator) -> dict[str, Any]:
    """Figure "gd-success": per width the fractions of gradient descent (rank-two speed reached; beyond rank one) and
    of projected ascent (reached) with 95% Wilson intervals, and the speed of every gradient-descent run at the 1%
    drop (nan: dead) at its width times a random jitter drawn here from ``rng`` (one factor per initialization, the
    same at every width), so that the dots do not overlap."""
    speeds = _np(gd.sweep.speeds)
    jitter = 2 ** rng.uniform(-0.15, 0.15, speeds.shape[1])
    widths = _np(gd.widths)
    return {"pa_widths": _np(sweep.widths, int), "pa": _fractions(sweep.successes, sweep.trials),
            "gd_widths": _np(gd.widths, int), "gd": _fractions(gd.successes, gd.trials),
            "gd_beyond": _fractions(gd.beyond_rank_one, gd.trials),
            "x": widths[:, None] * jitter[None, :], "speeds": speeds,
            "rank_one_speed": float(RANK_ONE_SPEED), "threshold": float(gd.reach),
            "rank_two_speed": RANK_TWO_SPEED}


def depth(study: DepthStudy, depths: list[int], X1, restarts: RestartRanks) -> dict[str, Any]:
    """Figure "depth": per dataset the best speed known at each depth (continuation, random restarts, shallower
    depths) and the continuation's ``s_hat(L)``; ``s2/s1`` of every layer of the fastest *random* restart of Example 1
    at each depth (inputs ``X1``; the continuation's random restarts at ``L = 2``, the restarts of ``restarts`` from
    ``L = 3`` on, whichever is faster), as a depth x layer matrix (nan beyond the depth)."""
    datasets = {}
    for i, (name, r) in enumerate(study.results.items()):
        _, known = best_known(restarts, study.results, name)
        datasets[f"d{i}"] = {"name": name, "depths": _np(r.depths, int), "speeds": _np(known),
                             "continuation": _np(r.speeds)}
    top = max(depths)
    ratios = np.full((len(depths), top), np.nan)
    ex1 = study.results["Example 1"]
    for i, (L, W, s) in enumerate(zip(ex1.depths, ex1.random_optima, ex1.random_speeds)):
        for b in restarts.batches:
            if b.name == "Example 1" and b.L == L and float(b.speeds.max()) > s:
                j = int(b.speeds.argmax())
                W, s = [x[j:j + 1] for x in b.Ws], float(b.speeds[j])
        ratios[i, :len(W)] = layer_diagnostics(W, X1)["ratio_W"]
    return {"datasets": datasets, "depths": _np(depths, int), "ratios": ratios, "layers": np.arange(1, top + 1),
            "extent": _np([0.5, top + 0.5, depths[0] - 0.5, depths[-1] + 0.5])}


def explosion(flow: AlignedFlow) -> dict[str, Any]:
    """Figure "explosion": per depth the per-layer scale on ``L0``, on the MSE loss and by the corrected ODE
    against the time stretched by ``L - 1``."""
    return {"curves": {f"L{c.L}": {"L": int(c.L), "t": _np(c.times) * (c.L - 1), "u_localized": _np(c.u_localized),
                                   "u_full": _np(c.u_full), "u_ode": _np(c.u_ode)} for c in flow.curves}}


def escape_time(law: EscapeTimeLaw) -> dict[str, Any]:
    """Figure "escape-time": median escape time against ``alpha`` per depth, the fitted slope, and for ``L >= 3``
    the reference ``alpha^{-(L-2)}`` through the smallest ``alpha``."""
    out = {}
    for L in sorted(law.alphas):
        al, Ts = _np(law.alphas[L]), _np(law.median_times[L])
        entry = {"L": int(L), "alphas": al, "times": Ts, "slope": float(law.slopes[L])}
        if L >= 3:
            entry["reference"] = Ts[-1] * (al / al[-1]) ** (2 - L)
        out[f"L{L}"] = entry
    return {"depths": out}


def digits(runs: dict[int, DigitsRun], escape_its: dict[int, list[int | None]]) -> dict[str, Any]:
    """Figure "digits": per depth (one row) the loss, ``s2/s1`` of every layer over training, the escapes, and the
    top singular values of every layer divided by the largest, after the first escape and at the end."""
    rows = {}
    for row, (L, rr) in enumerate(runs.items()):
        spectra = _np(rr.spectra)
        entry: dict[str, Any] = {"L": int(L), "loss": _np(rr.loss), "steps": _np(rr.steps, int),
                                 "ratio": spectra[:, :, 1] / spectra[:, :, 0],
                                 "escapes": _np([e for e in escape_its[L] if e is not None])}
        marks = {"first": (escape_its[L][0], "after 1st escape"), "end": (len(rr.loss) - 1, "end")}
        for key, (it, label) in marks.items():
            if it is None:
                entry[key] = {"ran": False, "label": label}
                continue
            j = record_at(rr, it)
            entry[key] = {"ran": True, "label": label, "iteration": int(rr.steps[j]),
                          "k": np.arange(1, spectra.shape[2] + 1), "spectrum": spectra[j] / spectra[j][:, :1]}
        rows[f"r{row}"] = entry
    return {"rows": rows, "max_depth": max(int(L) for L in runs)}

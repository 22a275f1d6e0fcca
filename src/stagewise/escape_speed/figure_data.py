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
from stagewise.escape_speed.example1_widths import AscentSweep, GDSuccess
from stagewise.escape_speed.explosion import AlignedFlow
from stagewise.escape_speed.gradient_descent import EscapeTimeLaw
from stagewise.escape_speed.layer_measures import layer_diagnostics

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


def success(sweep: AscentSweep) -> dict[str, Any]:
    """Figure "success": per width the speed trace of every restart (float32: the plot needs no more) and whether
    it ends above the success threshold; the success fraction per width."""
    runs = {}
    for w in sweep.widths:
        result = sweep.runs[w]
        runs[f"w{w}"] = {"width": int(w), "trace": _np(result.trace, np.float32),
                         "ok": _np(result.speeds > sweep.threshold, bool)}
    return {"runs": runs, "widths": _np(sweep.widths, int), "fractions": _np(sweep.fractions),
            "rank_one_speed": float(RANK_ONE_SPEED), "threshold": float(sweep.threshold), "ylim": [0.0, 0.55]}


def gd_success(sweep: AscentSweep, gd: GDSuccess, rng: np.random.Generator) -> dict[str, Any]:
    """Figure "gd-success": success fractions of gradient descent and projected ascent per width, and the speed of
    every gradient-descent run at the 1% drop (nan: dead) at its width times a random jitter drawn here from
    ``rng`` (one factor per initialization, the same at every width), so that the dots do not overlap."""
    speeds = _np(gd.sweep.speeds)
    jitter = 2 ** rng.uniform(-0.15, 0.15, speeds.shape[1])
    widths = _np(gd.widths)
    return {"pa_widths": _np(sweep.widths, int), "pa_fractions": _np(sweep.fractions),
            "gd_widths": _np(gd.widths, int), "gd_fractions": _np(gd.fractions),
            "x": widths[:, None] * jitter[None, :], "speeds": speeds,
            "rank_one_speed": float(RANK_ONE_SPEED), "threshold": float(RANK_ONE_SPEED + gd.margin),
            "rank_two_speed": 0.5}


def depth(study: DepthStudy, depths: list[int], X1) -> dict[str, Any]:
    """Figure "depth": per dataset ``s_hat(L)`` and the forward pass alone; ``s2/s1`` of every layer of the
    Example 1 optimum at each depth (inputs ``X1``), as a depth x layer matrix (nan beyond the depth)."""
    datasets = {f"d{i}": {"name": name, "depths": _np(r.depths, int), "speeds": _np(r.speeds),
                          "forward_speeds": _np(r.forward_speeds)}
                for i, (name, r) in enumerate(study.results.items())}
    top = max(depths)
    ratios = np.full((len(depths), top), np.nan)
    for i, W in enumerate(study.results["Example 1"].optima):
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

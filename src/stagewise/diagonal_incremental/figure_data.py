"""What the chapter's figures plot, taken out of the studies' results as plain arrays (the figures' data
sidecars). The drawing itself is in :mod:`stagewise.diagonal_incremental.figures`, which never sees torch."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagewise.diagonal_incremental.correlated import CorrelatedStudy
from stagewise.diagonal_incremental.descent import ConservationStudy, DescentRun
from stagewise.diagonal_incremental.full_head import FullHeadRun
from stagewise.diagonal_incremental.log_scale import LogScaleStudy
from stagewise.diagonal_incremental.perturbations import PerturbationStudy
from stagewise.diagonal_incremental.plateau_states import PlateauStudy
from stagewise.diagonal_incremental.staircase import FlowStudy
from stagewise.diagonal_incremental.transitions import TransitionStudy


def _array(x) -> np.ndarray:
    """A float array on the host, whatever the study kept (NumPy arrays, lists, or a torch tensor)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def loss(fs: FlowStudy, gd: DescentRun, alphas_gd) -> dict[str, Any]:
    """Loss against rescaled time: GD per alpha (up to the flow's end), the exact flow per alpha and Algorithm
    1's staircase. ``index`` places each alpha on one colour ramp over all alphas (largest first)."""
    alphas = sorted(set(float(a) for a in alphas_gd) | set(float(a) for a in fs.alphas), reverse=True)
    gd_tau, gd_loss = _array(gd.tau), _array(gd.loss)
    descent = {}
    for j, a in enumerate(alphas_gd):
        keep = gd_tau[j] <= fs.tau_end
        descent[f"a{j}"] = {"alpha": float(a), "index": alphas.index(float(a)),
                            "tau": gd_tau[j][keep], "loss": gd_loss[j][keep]}
    levels = _array(fs.levels)
    return {"n_alphas": len(alphas), "descent": descent,
            "flow": {"alphas": _array(fs.alphas), "index": np.array([alphas.index(float(a)) for a in fs.alphas]),
                     "tau": _array(fs.tau), "loss": _array(fs.flow["loss"])},
            "stairs": {"tau": np.concatenate([[0.0], _array(fs.T), [fs.tau_end]]),
                       "loss": np.concatenate([levels, levels[-1:]])},
            "tau_end": float(fs.tau_end), "loss_top": float(1.5 * levels[0]), "linthresh": 1e-3}


def entries(fs: FlowStudy, ps: PlateauStudy, d: int) -> dict[str, Any]:
    """The diagonal entries of ``W_K W_Q^T`` and ``W_V W_O^T`` along the flow at the smallest alpha, Algorithm 1's
    times, and the rank staircase: the ranks along the flow and Algorithm 1's support sizes at the plateau
    midpoints."""
    beta = _array(fs.beta_min)
    return {"tau": _array(fs.tau), "kq": beta[:, :d], "vo": beta[:, d:2 * d], "T": _array(fs.T),
            "alpha": float(fs.alphas[fs.j_min]), "ranks": _array(ps.ranks_tau), "mids": _array(ps.mids),
            "ranks_alg": _array(ps.ranks_alg), "threshold": 1e-3}


def times(ts: TransitionStudy, n_grid: int = 50) -> dict[str, Any]:
    """Measured transition times against ``x = 1/log(1/alpha)``, the quadratic fits evaluated on a grid from
    ``x = 0`` and Algorithm 1's ``T_k`` (at ``x = 0``)."""
    x = _array(ts.x)
    grid = np.linspace(0.0, x.max() * 1.05, n_grid)
    fits = _array(ts.fits)
    return {"x": x, "times": _array(ts.times), "T": _array(ts.T), "grid": grid,
            "fit": np.stack([np.vander(grid, fits.shape[1], increasing=True) @ f for f in fits], axis=1)}


def logscale(fs: FlowStudy, ls: LogScaleStudy, d: int) -> dict[str, Any]:
    """``b = log_alpha(u + v)`` along the flow (its first ``d`` columns key-query, the rest value-output) and
    Algorithm 1's piecewise-linear bookkeeping through the ``b^k``."""
    return {"tau": _array(fs.tau), "b": _array(ls.b_sim), "knots": _array(ls.knots),
            "b_knots": _array(ls.b_knots), "d": int(d)}


def conservation(cs: ConservationStudy) -> dict[str, Any]:
    """The violation of ``u^2 - v^2`` conservation per step size, and a slope-1 line through the largest."""
    etas, drift = _array(cs.etas), _array(cs.drift)
    return {"etas": etas, "drift": drift, "reference": drift[0] * etas / etas[0]}


def reenter(cs: CorrelatedStudy) -> dict[str, Any]:
    """``beta`` along the exact flow at the smallest alpha of the correlated example, and Algorithm 1's times."""
    return {"tau": _array(cs.tau), "beta": _array(cs.flow["beta"])[:, cs.j_min, :3], "T": _array(cs.T),
            "alpha": float(cs.alphas[cs.j_min]), "tau_start": 0.5}


def _perturbation(ps: PerturbationStudy) -> dict[str, Any]:
    t, dist = _array(ps.t), _array(ps.dist)
    stop = np.asarray(ps.i_stop, dtype=int)
    return {"t": t, "dist": dist, "stop_t": t[stop], "stop_dist": dist[np.arange(len(stop)), stop]}


def perturb(plateau: PerturbationStudy, stage_b: PerturbationStudy) -> dict[str, Any]:
    """Distance between perturbed and unperturbed GD, and where each window ends: for the perturbations on the
    plateaus (the paper's Fig. 10) and at the new coordinates (its Fig. 11)."""
    return {"plateau": _perturbation(plateau), "stage_b": _perturbation(stage_b)}


def fullhead(fh: FullHeadRun, top: int = 4) -> dict[str, Any]:
    """The ``top`` largest singular values of ``W_K W_Q^T`` and ``W_V W_O^T``, and the loss, against rescaled
    time."""
    return {"tau": _array(fh.tau), "s_kq": _array(fh.s_kq)[:, :top], "s_vo": _array(fh.s_vo)[:, :top],
            "loss": _array(fh.loss)}

"""What the transformer-rank chapter's figures plot, taken out of the experiments' results as plain arrays (the
figures' data sidecars): spectra normalized, stable ranks averaged over heads, the loss smoothed. The drawing itself
is in :mod:`stagewise.transformer_rank.figures`, which never sees torch."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from stagewise.transformer_rank.experiments import VitRun
from stagewise.transformer_rank.switch_on import SETTLED, THRESHOLD, per_seed_settled
from stagewise.transformer_rank.teacher import ToyRun

#: The teacher-student variants drawn: the small scale and the default scale 1 (its control).
TOY_VARIANTS = ("small", "default")


def head_stats(srank: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) standard deviation over heads (last axis), as float64 arrays."""
    return (srank.mean(-1).double().cpu().numpy(),
            srank.std(-1, unbiased=False).double().cpu().numpy())


def _normalized(s: torch.Tensor) -> np.ndarray:
    """Singular values (last axis, descending) over the largest one."""
    s = s.double().cpu().numpy()
    return s / s[..., :1]


def spectra(vit: VitRun, replica: int, head: int = 0, picks: int = 4) -> dict[str, Any]:
    """Normalized spectra s_i / s_1 of W_K W_Q^T and W_V W_O^T of one head per layer at initialization, and of
    their change at ``picks`` checkpoints spread over training (paper Figs 1, 5, 14; claim (a))."""
    sp, steps = vit.spectra, vit.result.steps
    chosen = np.unique(np.linspace(1, len(steps) - 1, picks).round().astype(int))
    rows = {}
    for which, init, delta in (("kq", sp.init_kq, sp.delta_kq), ("vo", sp.init_vo, sp.delta_vo)):
        rows[which] = {"init": _normalized(init[replica, :, head]),                       # (L, D)
                       "delta": _normalized(delta[torch.as_tensor(chosen), replica, :, head])}   # (P, L, D)
    return {"rows": rows, "steps": np.asarray([steps[c] for c in chosen], dtype=int), "head": int(head),
            "xmax": int(3 * vit.cfg.head_dim)}


def growth(columns: Sequence[tuple[str, Sequence[int], dict, dict, str]]) -> dict[str, Any]:
    """The signature figure (paper Figs 4, 12, 15, 20 with their controls): per column ``(label, steps, true,
    control, control label)``, with ``true`` and ``control`` mapping ``"kq"``/``"vo"`` to stable ranks ``(C, ...)``
    (heads and layers on the trailing axes), the mean and standard deviation over heads and layers from step 1 on
    (at step 0 the change is zero), and the control's mean."""
    cols = {}
    for i, (label, steps, true, control, control_label) in enumerate(columns):
        col: dict[str, Any] = {"label": label, "control_label": control_label,
                               "steps": np.asarray(steps[1:], dtype=int)}
        for m in ("kq", "vo"):
            flat = true[m][1:].flatten(1).double()
            col[f"{m}_mean"] = flat.mean(1).cpu().numpy()
            col[f"{m}_std"] = flat.std(1, unbiased=False).cpu().numpy()
            col[f"{m}_control"] = control[m][1:].flatten(1).double().mean(1).cpu().numpy()
        cols[f"c{i}"] = col
    return {"columns": cols}


def budget(points: Sequence) -> dict[str, Any]:
    """Verdict against the budget (:mod:`stagewise.transformer_rank.budget`): per growth claim, the fitted change
    of the stable rank and its interval half-width at each budget, on the true and the shuffled labels."""
    keys = points[0].trends.keys()
    out: dict[str, Any] = {"steps": np.asarray([p.steps for p in points], dtype=int), "keys": list(keys)}
    for key in keys:
        for name, field in (("true", "trends"), ("shuffled", "shuffled")):
            out[f"{key}_{name}"] = np.asarray([getattr(p, field)[key].effect for p in points], dtype=float)
            out[f"{key}_{name}_hw"] = np.asarray([getattr(p, field)[key].half_width for p in points], dtype=float)
    out["reproduced"] = {key: [bool(p.reproduced(key)) for p in points] for key in keys}
    return out


def scale_svals(vit: VitRun, layer: int, head: int = 0, top: int = 8) -> dict[str, Any]:
    """The ``top`` largest singular values of Delta(W_K W_Q^T) and Delta(W_V W_O^T) of one head against the step,
    per Adam scale (paper Fig 6; claim (c)): ``(S, C - 1, top)`` each."""
    adam = vit.scale_replicas
    take = lambda delta: delta[1:, adam, layer, head, :top].transpose(0, 1).double().cpu().numpy()  # noqa: E731
    return {"steps": np.asarray(vit.result.steps[1:], dtype=int),
            "scales": np.asarray([vit.scales[r] for r in adam], dtype=float),
            "kq": take(vit.spectra.delta_kq), "vo": take(vit.spectra.delta_vo),
            "layer": int(layer), "head": int(head)}


def scale_srank(vit: VitRun) -> dict[str, Any]:
    """Final stable rank against the initialization scale, per layer, mean and standard deviation over heads,
    of Delta(W_K W_Q^T) and Delta(W_V W_O^T) (paper Fig 7; claim (c)): ``(S, L)`` each."""
    adam = vit.scale_replicas
    data: dict[str, Any] = {"scales": np.asarray([vit.scales[r] for r in adam], dtype=float)}
    for which in ("kq", "vo"):
        mean, std = head_stats(vit.spectra.srank(f"delta_{which}")[-1][adam])
        data[f"{which}_mean"], data[f"{which}_std"] = mean, std
    return data


def toy(run: ToyRun, seed: int = 0) -> dict[str, Any]:
    """Teacher-student regime (ours): the singular values of Delta(W_K W_Q^T) and Delta(W_V W_O^T) of one seed
    against the step, at the small scale and at the default scale 1 (``(C, d)`` each), the switch-on threshold, and
    every seed's one-at-a-time statistic at both scales."""
    data: dict[str, Any] = {"steps": np.asarray(run.steps, dtype=int), "seed": int(seed), "threshold": THRESHOLD,
                            "settled": SETTLED}
    for which in ("kq", "vo"):
        svals = getattr(run, f"svals_{which}")
        for variant in TOY_VARIANTS:
            data[f"{which}_{variant}"] = svals[variant][:, seed].double().cpu().numpy()
            data[f"{which}_{variant}_settled"] = per_seed_settled(svals[variant]).cpu().numpy()
    return data

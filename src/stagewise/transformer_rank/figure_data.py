"""What the transformer-rank chapter's figures plot, taken out of the experiments' results as plain arrays (the
figures' data sidecars): spectra normalized, stable ranks averaged over heads, the loss smoothed. The drawing itself
is in :mod:`stagewise.transformer_rank.figures`, which never sees torch."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from stagewise.transformer_rank.experiments import GptRun, VitRun
from stagewise.transformer_rank.teacher import ToyRun

#: The teacher-student variants drawn: small scale, default scale, small scale with the teacher cut to rank one.
TOY_VARIANTS = ("small", "default", "rank1")


def head_stats(srank: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) standard deviation over heads (last axis), as float64 arrays."""
    return (srank.mean(-1).double().cpu().numpy(),
            srank.std(-1, unbiased=False).double().cpu().numpy())


def _bands(kq: torch.Tensor, vo: torch.Tensor) -> dict[str, np.ndarray]:
    """Mean and standard deviation over heads of ``(C, L, H)`` stable ranks, from the first checkpoint after
    step 0 on (at step 0 the change is zero): ``(C - 1, L)`` each."""
    kq_mean, kq_std = head_stats(kq[1:])
    vo_mean, vo_std = head_stats(vo[1:])
    return {"kq_mean": kq_mean, "kq_std": kq_std, "vo_mean": vo_mean, "vo_std": vo_std}


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


def srank(runs: Sequence[tuple[str, Sequence[int], torch.Tensor, torch.Tensor]],
          references: Sequence[Sequence[int]] | None = None) -> dict[str, Any]:
    """Rows: runs ``(label, steps, srank KQ (C, L, H), srank VO)``; the stable rank's mean and standard deviation
    over heads from step 1 on (paper Figs 4, 12, 15; claim (b)). ``references[row]``: the steps where the transients
    of the KQ and VO curves end."""
    rows = {}
    for i, (label, steps, kq, vo) in enumerate(runs):
        row: dict[str, Any] = {"label": label, "steps": np.asarray(steps[1:], dtype=int), **_bands(kq, vo)}
        row["references"] = np.asarray(references[i] if references else [], dtype=int)
        rows[f"r{i}"] = row
    return {"rows": rows}


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


def gpt(run: GptRun, references: Sequence[int] | None = None) -> dict[str, Any]:
    """Stable rank of Delta(W_Q W_K^T) and Delta(W_V W_O^T) per layer (mean and standard deviation over heads, from
    step 1 on) and the running mean of the training loss over about a fiftieth of training (paper Fig 20; claim
    (b)). ``references``: the steps where the transients of the QK and VO curves end."""
    loss = run.result.losses[:, 0].double().cpu().numpy()
    k = max(1, len(loss) // 50)
    smooth = np.convolve(loss, np.ones(k) / k, mode="valid")
    return {"steps": np.asarray(run.result.steps[1:], dtype=int),
            **_bands(run.spectra.srank("delta_kq")[:, 0], run.spectra.srank("delta_vo")[:, 0]),
            "references": np.asarray(references or [], dtype=int),
            "loss_steps": np.arange(k - 1, len(loss)), "loss": smooth, "window": int(k)}


def toy(run: ToyRun) -> dict[str, Any]:
    """Teacher-student regime: stable rank of Delta(W_K W_Q^T) and Delta(W_V W_O^T) per variant against the step,
    from step 1 on, one column per seed (``(C - 1, S)``), for the variants drawn (:data:`TOY_VARIANTS`; the second
    draw at the default scale is left out), and the teacher's own stable rank."""
    return {"steps": np.asarray(run.steps[1:], dtype=int), "teacher_srank": float(run.teacher_srank),
            **{which: {v: getattr(run, which)[v][1:].double().cpu().numpy() for v in TOY_VARIANTS}
               for which in ("kq", "vo")}}

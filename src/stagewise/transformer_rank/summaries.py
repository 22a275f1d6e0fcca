"""The scalar observables of the chapter's claims (Assumption asm-transformer-rank-claims):
head- and layer-averaged stable ranks at a quarter of training and at the end, per optimizer
and initialization scale, the extraction check, and the verdicts of the claims table."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from stagewise.numerics.datasets import patchify
from stagewise.numerics.spectra import stable_rank_from_svals
from stagewise.transformer_rank.attention_heads import attention_output_error, extraction_error, head_matrices, rank_tail
from stagewise.transformer_rank.experiments import GptRun, VitRun, quarter_index

#: The growth of the stable rank counts as an increase when it exceeds this many standard errors
#: of the per-head growth (the head-to-head spread is the noise of the head-averaged growth).
GROWTH_SE = 2.0
#: The learned change is "low rank" when its stable rank is below this fraction of the initial one.
LOW_RANK_FRACTION = 0.5


@dataclass
class Growth:
    """Head-averaged growth of a stable-rank curve from a quarter of training to the end, and its noise."""
    growth: float                # mean over heads (and layers) of srank(end) - srank(quarter)
    spread: float                # GROWTH_SE standard errors of the per-head growth
    halted: float                # control: the growth if training had stopped at the quarter (flat curve)

    @property
    def significant(self) -> bool:
        """An increase beyond the head-to-head spread (the "gradual increase" of claim (b))."""
        return self.growth > self.spread


def growth_stats(sr: torch.Tensor, quarter: int) -> Growth:
    """:class:`Growth` of stable ranks ``sr`` ``(checkpoint, ...heads)``, all trailing axes being heads."""
    g = (sr[-1] - sr[quarter]).flatten().double()
    spread = GROWTH_SE * float(g.std() / g.numel() ** 0.5) if g.numel() > 1 else float("inf")
    # control: training stopped at the quarter, so every later checkpoint repeats the quarter's matrices
    halted = sr.clone()
    halted[quarter:] = sr[quarter]
    return Growth(float(g.mean()), spread, float((halted[-1] - halted[quarter]).double().mean()))


@dataclass
class VitSummary:
    """Stable ranks of the ViT run; ``kq``/``vo`` are Delta(W_K W_Q^T), Delta(W_V W_O^T)."""
    sr_kq: torch.Tensor          # (checkpoint, replica, layer, head)
    sr_vo: torch.Tensor
    adam: int                    # replica: Adam, scale 1
    sgd: int                     # replica: SGD, scale 1
    small: int                   # replica: Adam, smallest scale
    large: int                   # replica: Adam, largest scale
    quarter: int                 # checkpoint index nearest a quarter of training
    quarter_step: int
    init_kq: float               # mean srank of W_K W_Q^T at init (Adam, scale 1)
    init_vo: float
    final: dict[str, float]      # "adam_kq", "adam_vo", "sgd_kq", "sgd_vo": mean final srank
    growth: dict[str, float]     # same keys: mean srank at the end minus at the quarter
    growth_stats: dict[str, Growth]  # same keys: growth, its head-to-head spread, halted-training control
    small_final: dict[str, float]   # "kq", "vo": mean final srank at the smallest scale
    large_final: dict[str, float]
    low_rank_ratio: float        # final srank(Delta KQ) / srank(KQ init), Adam (claim (a))
    scale_gap: dict[str, float]  # "kq", "vo": final srank at smallest minus largest scale (claim (c))
    init_scale_gap: dict[str, float]  # control of claim (c): the same gap for the untrained matrices at init


def summarize_vit(vit: VitRun) -> VitSummary:
    """Head- and layer-averaged stable ranks of the ViT run for claims (a)-(c)."""
    sr = {"kq": vit.spectra.srank("delta_kq"), "vo": vit.spectra.srank("delta_vo")}
    a, s = vit.adam_default, vit.sgd
    init = {"kq": vit.spectra.srank("init_kq"), "vo": vit.spectra.srank("init_vo")}
    init_kq, init_vo = init["kq"][a], init["vo"][a]
    q = quarter_index(vit.result.steps)
    replicas = {"adam": a, "sgd": s}
    final = {f"{o}_{m}": float(sr[m][-1, r].mean()) for o, r in replicas.items() for m in sr}
    growth = {f"{o}_{m}": float(sr[m][-1, r].mean() - sr[m][q, r].mean()) for o, r in replicas.items() for m in sr}
    stats = {f"{o}_{m}": growth_stats(sr[m][:, r], q) for o, r in replicas.items() for m in sr}
    adam = [r for r, o in enumerate(vit.optimizers) if o == "adam"]
    small, large = adam[0], adam[-1]
    return VitSummary(
        sr["kq"], sr["vo"], a, s, small, large, q, int(vit.result.steps[q]),
        float(init_kq.mean()), float(init_vo.mean()), final, growth, stats,
        {m: float(sr[m][-1, small].mean()) for m in sr}, {m: float(sr[m][-1, large].mean()) for m in sr},
        float(sr["kq"][-1, a].mean() / init_kq.mean()),
        {m: float(sr[m][-1, small].mean() - sr[m][-1, large].mean()) for m in sr},
        {m: float(init[m][small].mean() - init[m][large].mean()) for m in sr})


@dataclass
class GptSummary:
    """Stable ranks of the char-GPT run (replica 0)."""
    sr_kq: torch.Tensor          # (checkpoint, layer, head)
    sr_vo: torch.Tensor
    quarter: int
    quarter_step: int
    kq_quarter: float
    kq_final: float
    vo_quarter: float
    vo_final: float
    init_kq: float               # mean srank of W_Q W_K^T at init
    vo_drop: float               # srank(Delta VO) at the quarter minus at the end (claim (b), Fig 20)
    vo_growth: Growth            # growth of srank(Delta VO), its head-to-head spread and control
    kq_growth: Growth


def summarize_gpt(gpt: GptRun) -> GptSummary:
    """Head- and layer-averaged stable ranks of the char-GPT at a quarter of training and at the end."""
    kq, vo = gpt.spectra.srank("delta_kq")[:, 0], gpt.spectra.srank("delta_vo")[:, 0]
    q = quarter_index(gpt.result.steps)
    return GptSummary(kq, vo, q, int(gpt.result.steps[q]), float(kq[q].mean()), float(kq[-1].mean()),
                      float(vo[q].mean()), float(vo[-1].mean()), float(gpt.spectra.srank("init_kq").mean()),
                      float(vo[q].mean() - vo[-1].mean()), growth_stats(vo, q), growth_stats(kq, q))


def random_change_ratio(vit: VitRun, generator: torch.Generator) -> float:
    """Control of claim (a): the ratio ``srank(Delta KQ) / srank(KQ init)`` (Adam, scale 1, head
    and layer means) for a change of the learned size in a random direction: the initial
    ``to_qkv`` / ``to_out`` of each layer plus Gaussian matrices scaled to the Frobenius norm of
    the learned change of that layer. A change without learned structure has a stable rank
    comparable to the initialization's, so the low-rank check must reject it."""
    a, cfg, res = vit.adam_default, vit.cfg, vit.result
    q0, o0 = res.qkv[0, a].double(), res.out[0, a].double()

    def random_like(w0: torch.Tensor, w1: torch.Tensor) -> torch.Tensor:
        e = torch.randn(w0.shape, generator=generator, dtype=torch.float64)
        return e * ((w1.double() - w0).flatten(1).norm(dim=1) / e.flatten(1).norm(dim=1)).view(-1, 1, 1)

    kq0, _ = head_matrices(q0, o0, cfg.heads, cfg.head_dim)
    kq1, _ = head_matrices(q0 + random_like(q0, res.qkv[-1, a]), o0 + random_like(o0, res.out[-1, a]),
                           cfg.heads, cfg.head_dim)
    delta = stable_rank_from_svals(torch.linalg.svdvals(kq1 - kq0))
    return float(delta.mean() / stable_rank_from_svals(torch.linalg.svdvals(kq0)).mean())


@dataclass
class Extraction:
    """Checks of Proposition prop-transformer-rank-bound and eq. (1) on the trained ViT, with the
    same measures for the wrong extraction (factors swapped: W_Q W_K^T, W_O W_V^T)."""
    error: float                 # relative error of rebuilt first-layer logits
    rank_tail: float             # largest sigma_{d_h+1} / sigma_1 of the final W_K W_Q^T
    output_error: float          # relative error of the rebuilt first-layer attention output (KQ and VO)
    error_swapped: float         # ``error`` with W_Q W_K^T in place of W_K W_Q^T
    output_error_swapped: float  # ``output_error`` with both products' factors swapped


def extraction_checks(vit: VitRun, device: torch.device | str = "cpu", count: int = 64) -> Extraction:
    """Extraction errors on ``count`` test images and the rank tail of the final W_K W_Q^T (Adam, scale 1)."""
    a, cfg = vit.adam_default, vit.cfg
    patches = patchify(vit.images.x_test[:count], vit.settings.patch).to(device)
    errors = [f(vit.params, cfg, patches, replica=a, transpose=t)
              for t in (False, True) for f in (extraction_error, attention_output_error)]
    return Extraction(errors[0], rank_tail(vit.result.qkv[-1, a], vit.result.out[-1, a], cfg.heads, cfg.head_dim),
                      errors[1], errors[2], errors[3])


def verdicts(vit: VitSummary, gpt: GptSummary) -> dict[str, str]:
    """The verdict column of the claims table: ``v_low``, ``v_grow``, ``v_grow_vo``, ``v_sgd``,
    ``v_sgd_vo``, ``v_scale``, ``v_gpt``. A growth is "reproduced" only beyond the head-to-head
    spread (:attr:`Growth.significant`); otherwise the table says it was not reproduced here."""
    word = lambda ok: "reproduced" if ok else "not reproduced"

    def grow(g: Growth) -> str:
        verdict = "reproduced" if g.significant else "not reproduced at this budget"
        return f"{verdict} ({g.growth:+.2f}, spread {g.spread:.2f})"

    st = vit.growth_stats
    return {
        "v_low": word(vit.final["adam_kq"] < LOW_RANK_FRACTION * vit.init_kq),
        "v_grow": grow(st["adam_kq"]),
        "v_grow_vo": grow(st["adam_vo"]),
        "v_sgd": grow(st["sgd_kq"]),
        "v_sgd_vo": grow(st["sgd_vo"]),
        "v_scale": word(vit.small_final["kq"] < vit.large_final["kq"] and vit.small_final["vo"] < vit.large_final["vo"]),
        "v_gpt": grow(gpt.vo_growth),
    }

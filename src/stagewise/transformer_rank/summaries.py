"""The scalar observables of the chapter's claims (Assumption asm-transformer-rank-claims):
head- and layer-averaged stable ranks at the end of the early transient and at the end of training,
per optimizer and initialization scale, their noise over heads, the extraction and initialization
consistency rows, and the verdict words of the claims table (taken from the checks-table rows)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from stagewise.core import checks
from stagewise.core.checks import Check, fmt
from stagewise.numerics.datasets import patchify
from stagewise.numerics.roundoff import roundoff
from stagewise.numerics.spectra import stable_rank_from_svals
from stagewise.transformer_rank.attention_heads import attention_output_error, extraction_error, head_matrices, rank_tail
from stagewise.transformer_rank.experiments import GptRun, VitRun

#: The growth of the stable rank counts as an increase when it exceeds this many standard errors
#: of the per-head growth (the head-to-head spread is the noise of the head-averaged growth).
GROWTH_SE = 2.0
#: The learned change is "low rank" when its stable rank is below this fraction of the initial one.
LOW_RANK_FRACTION = 0.5
#: The early transient must end by this fraction of training, leaving the rest as the late phase.
TRANSIENT_WINDOW = 0.5
#: Machine epsilon of the float32 weights that the stable ranks are computed from.
EPS32 = float(torch.finfo(torch.float32).eps)


@dataclass
class Reference:
    """End of the early transient of a head-averaged stable-rank curve (the reference of claim (b)).

    Rule: within the first ``TRANSIENT_WINDOW`` of training, the curve's highest checkpoint is the top of
    the early jump (``peak``); the transient ends at the lowest checkpoint from the peak to the end of
    the window (the trough, where the fall stops), which is the reference. Values within rounding of each
    other count as equal and the earliest checkpoint is taken, so a perturbation at rounding level never
    moves the reference. When the curve climbs above its early jump within the window, the peak and the
    reference move to the window's end: the rule may then miss a rise, but never counts the fall of the
    transient as part of one.
    """
    index: int                   # checkpoint index of the trough
    step: int                    # its training step
    peak_step: int               # step of the highest checkpoint of the window
    window_step: int             # last checkpoint step of the window (the trough cannot lie later)
    fall: float                  # depth of the fall from the peak to the trough (0: no fall)
    still_falling: bool          # the trough is the window's last checkpoint after a fall

    def describe(self) -> str:
        window = f"the first {TRANSIENT_WINDOW:.0%} of training"
        if math.isnan(self.fall):
            return f"the weights did not change in {window} (the stable rank of a zero change is undefined)"
        if self.still_falling:
            return (f"the stable rank was still falling at step {self.step}, the end of {window}: the early "
                    f"transient may outlast the window")
        if self.peak_step == self.window_step:
            return (f"the stable rank is highest at the end of {window} (step {self.step}), so only the rest of "
                    f"training is compared")
        return f"the early transient falls from step {self.peak_step} to step {self.step} (by {self.fall:.3f})"


def transient_end(curve: torch.Tensor, steps: list[int], heads: int = 1) -> Reference:
    """:class:`Reference` of the head-averaged stable-rank curve ``curve`` ``(checkpoint,)`` at ``steps``.

    Step 0 (no change yet: stable rank undefined) and non-finite values are skipped. Ties are decided
    with :func:`stagewise.numerics.roundoff.roundoff` of the curve's size over ``heads`` summands.
    """
    values = [float(v) for v in curve]
    limit = max(TRANSIENT_WINDOW * steps[-1], 1)
    window = [i for i, s in enumerate(steps) if 0 < s <= limit and math.isfinite(values[i])]
    if not window:                  # the weights never changed (in float32): no stable rank, no transient
        last = len(steps) - 1
        return Reference(last, int(steps[last]), int(steps[last]), int(steps[last]), math.nan, False)
    tol = roundoff(max(abs(values[i]) for i in window), heads)
    top = max(values[i] for i in window)
    peak = next(i for i in window if values[i] >= top - tol)
    after = [i for i in window if i >= peak]
    low = min(values[i] for i in after)
    trough = next(i for i in after if values[i] <= low + tol)
    return Reference(trough, int(steps[trough]), int(steps[peak]), int(steps[window[-1]]),
                     values[peak] - values[trough], trough == window[-1] and trough != peak)


@dataclass
class Growth:
    """Head-averaged growth of a stable-rank curve from the end of the transient to the end, and its noise."""
    growth: float                # mean over heads (and layers) of srank(end) - srank(reference)
    spread: float                # GROWTH_SE standard errors of the per-head growth (inf with one head)
    reference: Reference
    heads: int                   # number of per-head growths (heads times layers)

    @property
    def significant(self) -> bool:
        """An increase beyond the head-to-head spread (the "gradual increase" of claim (b))."""
        return self.growth > self.spread

    def reason(self) -> str:
        """Why the growth does not count as an increase (the 'not reproduced at this budget' reason)."""
        if self.heads < 2:
            noise = "no noise estimate with a single head"
        else:
            noise = f"noise {self.spread:.3f} ({GROWTH_SE:g} s.e. over {self.heads} heads)"
        return (f"growth {self.growth:+.3f} from step {self.reference.step} to the end, {noise}; "
                f"{self.reference.describe()}")


def growth_stats(sr: torch.Tensor, steps: list[int]) -> Growth:
    """:class:`Growth` of stable ranks ``sr`` ``(checkpoint, ...heads)``, all trailing axes being heads,
    from the end of the early transient (:func:`transient_end` of the head mean) to the last checkpoint."""
    heads = sr[0].numel()
    ref = transient_end(sr.flatten(1).double().mean(1), steps, heads)
    g = (sr[-1] - sr[ref.index]).flatten().double()
    spread = GROWTH_SE * float(g.std() / g.numel() ** 0.5) if g.numel() > 1 else float("inf")
    return Growth(float(g.mean()), spread, ref, heads)


@dataclass
class Trend:
    """Claim (b) over all informative checkpoints: the least-squares line of a head-averaged stable-rank curve
    against the training step, over every checkpoint after step 0 (where the change is zero and its stable
    rank undefined). ``effect`` is the fitted change from the first to the last of them, ``half_width``
    ``GROWTH_SE`` standard errors of it, from the scatter of the checkpoints about the line."""
    effect: float
    half_width: float
    start: float                 # the curve at the first informative checkpoint
    end: float                   # ... and at the last
    points: int

    @property
    def lower(self) -> float:
        """Lower end of the effect's interval: positive for a rise beyond the checkpoint scatter."""
        return self.effect - self.half_width

    def describe(self) -> str:
        return (f"fitted change {self.effect:+.3f} +- {self.half_width:.3f} over {self.points} checkpoints "
                f"(curve {self.start:.3f} -> {self.end:.3f})")


def trend(curve: torch.Tensor, steps: list[int]) -> Trend:
    """:class:`Trend` of the head-averaged curve ``curve`` ``(checkpoint,)`` at ``steps``."""
    t = torch.tensor([float(s) for s in steps], dtype=torch.float64)
    y = curve.double()
    keep = (t > 0) & torch.isfinite(y)
    t, y = t[keep], y[keep]
    n = int(t.numel())
    if n < 3:
        return Trend(math.nan, math.inf, math.nan, math.nan, n)
    dt = t - t.mean()
    slope = float((dt * (y - y.mean())).sum() / (dt * dt).sum())
    residual = y - y.mean() - slope * dt
    se = math.sqrt(float((residual ** 2).sum()) / (n - 2) / float((dt * dt).sum()))
    span = float(t[-1] - t[0])
    return Trend(slope * span, GROWTH_SE * se * span, float(y[0]), float(y[-1]), n)


def trend_lower(curve: torch.Tensor, steps: list[int]) -> float:
    """The lower end of the effect interval of :func:`trend` (the value of a growth row and of its control)."""
    return trend(curve, steps).lower


def reproduced_rise(lower: float) -> bool:
    """The criterion of the growth rows: the effect's interval lies above zero (a flat or falling curve fails)."""
    return math.isfinite(lower) and lower > 0


@dataclass
class ScaleGap:
    """Claim (c): final stable rank at the smallest minus at the largest scale, mean over heads, against
    its noise: ``GROWTH_SE`` standard errors of the per-head gaps; ``GROWTH_SE`` times the root-mean-square
    difference between two initialization draws at the same scale (the twin and the default replica, per head)
    over the square root of the number of heads, the draw-to-draw noise of a head mean; and at least ``floor``,
    the rounding level of stable ranks of float32 weights (``64 eps32 srank d_emb``)."""
    gap: float
    spread: float
    floor: float
    draw: float = 0.0            # GROWTH_SE x RMS over heads of (twin - default) / sqrt(heads); 0 without a twin

    @property
    def threshold(self) -> float:
        return -max(self.spread, self.draw, self.floor)

    @property
    def significant(self) -> bool:
        return self.gap < self.threshold


def scale_gap(small: torch.Tensor, large: torch.Tensor, size: float, width: int,
              draws: torch.Tensor | None = None) -> ScaleGap:
    """:class:`ScaleGap` of per-head stable ranks ``small`` and ``large`` (same shape, heads); ``draws``: the
    per-head differences between two initialization draws at one scale (twin minus default), if any."""
    d = (small - large).flatten().double()
    spread = GROWTH_SE * float(d.std() / d.numel() ** 0.5) if d.numel() > 1 else float("inf")
    draw = 0.0 if draws is None else GROWTH_SE * float((draws.flatten().double() ** 2).mean().sqrt()
                                                      / draws.numel() ** 0.5)
    return ScaleGap(float(d.mean()), spread, roundoff(size, width, EPS32), draw)


@dataclass
class VitSummary:
    """Stable ranks of the ViT run; ``kq``/``vo`` are Delta(W_K W_Q^T), Delta(W_V W_O^T)."""
    sr_kq: torch.Tensor          # (checkpoint, replica, layer, head)
    sr_vo: torch.Tensor
    adam: int                    # replica: Adam, scale 1
    sgd: int                     # replica: SGD, scale 1
    small: int                   # replica: Adam, smallest scale
    large: int                   # replica: Adam, largest scale
    twin: int                    # replica: Adam, scale 1, second initialization draw (-1: none)
    init_kq: float               # mean srank of W_K W_Q^T at init (Adam, scale 1)
    init_vo: float
    final: dict[str, float]      # "adam_kq", "adam_vo", "sgd_kq", "sgd_vo": mean final srank
    growth: dict[str, float]     # same keys: mean srank at the end minus at the end of the transient
    growth_stats: dict[str, Growth]  # same keys: growth from the trough and its head-to-head spread (prose)
    trends: dict[str, Trend]     # same keys: claim (b), trend over all checkpoints after step 0
    full_curves: dict[str, torch.Tensor]  # same keys: head-mean srank of W_K W_Q^T (t) itself (the control)
    small_final: dict[str, float]   # "kq", "vo": mean final srank at the smallest scale
    large_final: dict[str, float]
    low_rank_ratio: float        # final srank(Delta KQ) / srank(KQ init), Adam (claim (a))
    first_step_ratio: float      # the same ratio after one Adam step (checkpoint of step 1; NaN without one)
    scale_finals: dict[str, list[float]]  # "kq", "vo": mean final srank per Adam scale of the sweep, smallest first
    scale_gap: dict[str, ScaleGap]  # "kq", "vo": final srank at smallest minus largest scale (claim (c))
    twin_gap: dict[str, ScaleGap]   # control of claim (c): the same gap between two draws at scale 1


def _mean_curve(sr: torch.Tensor) -> torch.Tensor:
    """Head- and layer-mean of stable ranks ``(checkpoint, ...)``."""
    return sr.flatten(1).double().mean(1)


def summarize_vit(vit: VitRun) -> VitSummary:
    """Head- and layer-averaged stable ranks of the ViT run for claims (a)-(c)."""
    sr = {"kq": vit.spectra.srank("delta_kq"), "vo": vit.spectra.srank("delta_vo")}
    full = {"kq": vit.spectra.srank("full_kq"), "vo": vit.spectra.srank("full_vo")}
    a, s = vit.adam_default, vit.sgd
    init = {"kq": vit.spectra.srank("init_kq"), "vo": vit.spectra.srank("init_vo")}
    init_kq, init_vo = init["kq"][a], init["vo"][a]
    steps = vit.result.steps
    replicas = {"adam": a, "sgd": s}
    final = {f"{o}_{m}": float(sr[m][-1, r].mean()) for o, r in replicas.items() for m in sr}
    stats = {f"{o}_{m}": growth_stats(sr[m][:, r], steps) for o, r in replicas.items() for m in sr}
    trends = {f"{o}_{m}": trend(_mean_curve(sr[m][:, r]), steps) for o, r in replicas.items() for m in sr}
    fulls = {f"{o}_{m}": _mean_curve(full[m][:, r]) for o, r in replicas.items() for m in sr}
    sweep = vit.scale_replicas
    small, large = sweep[0], sweep[-1]
    size = float(init_kq.mean())
    twin = vit.twin if vit.twin >= 0 else a
    return VitSummary(
        sr["kq"], sr["vo"], a, s, small, large, vit.twin,
        float(init_kq.mean()), float(init_vo.mean()), final, {k: g.growth for k, g in stats.items()}, stats,
        trends, fulls,
        {m: float(sr[m][-1, small].mean()) for m in sr}, {m: float(sr[m][-1, large].mean()) for m in sr},
        float(sr["kq"][-1, a].mean() / init_kq.mean()),
        float(sr["kq"][steps.index(1), a].mean() / init_kq.mean()) if 1 in steps else math.nan,
        {m: [float(sr[m][-1, r].mean()) for r in sweep] for m in sr},
        {m: scale_gap(sr[m][-1, small], sr[m][-1, large], size, vit.cfg.width,
                      sr[m][-1, twin] - sr[m][-1, a] if vit.twin >= 0 else None) for m in sr},
        {m: scale_gap(sr[m][-1, twin], sr[m][-1, a], size, vit.cfg.width) for m in sr})


@dataclass
class GptSummary:
    """Stable ranks of the char-GPT run (replica 0)."""
    sr_kq: torch.Tensor          # (checkpoint, layer, head)
    sr_vo: torch.Tensor
    init_kq: float               # mean srank of W_Q W_K^T at init
    vo_growth: Growth            # growth of srank(Delta VO) after the transient and its spread (prose)
    kq_growth: Growth
    vo_trend: Trend              # claim (b): trend over all checkpoints after step 0
    kq_trend: Trend
    full_vo: torch.Tensor        # head-mean srank of W_V W_O^T (t) itself (the control)
    full_kq: torch.Tensor

    @property
    def vo_reference(self) -> float:
        return float(self.sr_vo[self.vo_growth.reference.index].mean())

    @property
    def kq_reference(self) -> float:
        return float(self.sr_kq[self.kq_growth.reference.index].mean())

    @property
    def vo_final(self) -> float:
        return float(self.sr_vo[-1].mean())

    @property
    def kq_final(self) -> float:
        return float(self.sr_kq[-1].mean())


def summarize_gpt(gpt: GptRun) -> GptSummary:
    """Head- and layer-averaged stable ranks of the char-GPT: the transient, the trends and their controls."""
    kq, vo = gpt.spectra.srank("delta_kq")[:, 0], gpt.spectra.srank("delta_vo")[:, 0]
    steps = gpt.result.steps
    return GptSummary(kq, vo, float(gpt.spectra.srank("init_kq").mean()), growth_stats(vo, steps),
                      growth_stats(kq, steps), trend(_mean_curve(vo), steps), trend(_mean_curve(kq), steps),
                      _mean_curve(gpt.spectra.srank("full_vo")[:, 0]), _mean_curve(gpt.spectra.srank("full_kq")[:, 0]))

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


def swapped_extraction_error(vit: VitRun, device: torch.device | str = "cpu", output: bool = False,
                             count: int = 64) -> float:
    """Control of the extraction rows: the same error with the factors swapped (``W_Q W_K^T``, ``W_O W_V^T``)."""
    patches = patchify(vit.images.x_test[:count], vit.settings.patch).to(device)
    f = attention_output_error if output else extraction_error
    return f(vit.params, vit.cfg, patches, replica=vit.adam_default, transpose=True)


def claim_verdict(row: Check) -> str:
    """The verdict of the claims table, read from the claim's row of the checks table (one verdict per
    claim): ``reproduced`` or ``not reproduced at this budget``, with the measured value and threshold."""
    word = "reproduced" if row.passed else "not reproduced at this budget"
    return f"{word} ({fmt(row.value)} against {fmt(row.tolerance)})"


def scale_error(vit: VitRun, ignore_scale: bool = False) -> float:
    """Sanity row of the experiment's set-up (Section 5): at initialization the attention weights of the Adam
    replica with the scale alpha farthest from 1 are the default replica's times alpha:
    ``max |W(alpha) - alpha W(1)| / (alpha max |W(1)|)`` over to_qkv and to_out. ``ignore_scale=True`` compares
    with the default replica's weights themselves (the set-up that ignores the scale), the row's control."""
    res, a = vit.result, vit.adam_default
    small = max(vit.scale_replicas, key=lambda r: abs(math.log(vit.scales[r])))
    alpha = vit.scales[small]
    scaled = a if ignore_scale else small

    def err(w_small: torch.Tensor, w_default: torch.Tensor) -> float:
        w1 = w_default.double()
        return float((w_small.double() - alpha * w1).abs().max() / (abs(alpha) * w1.abs().max()))

    return max(err(res.qkv[0, scaled], res.qkv[0, a]), err(res.out[0, scaled], res.out[0, a]))


#: Tolerance of :func:`scale_error`: two float32 roundings, 64 eps32.
SCALE_TOLERANCE = roundoff(1.0, 1, EPS32)


@dataclass
class ClaimRow:
    """One empirical claim of Assumption asm-transformer-rank-claims as a row of the checks table
    (``run.empirical``); ``key`` names the verdict glued into the claims table. The control is an experiment
    the chapter evaluates with ``run.control(control_what, control_experiment, *control_args)``, judged by
    the row's own criterion ``reproduced``."""
    key: str
    name: str
    value: float
    tolerance: float
    reproduced: Callable[[float], bool]
    relation: str
    detail: str
    control_what: str
    control_experiment: Callable
    control_args: tuple
    reason: str


def _trend_row(key: str, name: str, curve: torch.Tensor, full: torch.Tensor, steps: list[int],
               detail: str) -> ClaimRow:
    tr = trend(curve, steps)
    return ClaimRow(key, name, tr.lower, 0.0, reproduced_rise, ">=", detail,
                    "the same trend of the matrix itself, W(t) instead of its change (initialization not subtracted)",
                    trend_lower, (full, steps),
                    f"{tr.describe()}: the interval does not lie above zero")


def claim_rows(vit: VitSummary, gpt: GptSummary, vit_run: VitRun, gpt_run: GptRun,
               control_stream: torch.Generator) -> list[ClaimRow]:
    """The empirical rows of the chapter, one per line of the claims table: (a) low rank of the learned
    change (control: a change of the same size in a random direction), (c) smaller initialization gives lower
    stable rank, both matrices (control: the same gap between two initialization draws at the same scale),
    and (b) the gradual increase, a trend over all checkpoints after step 0, ViT with Adam and SGD and the
    char-GPT (control: the same trend of the matrix itself instead of its change)."""
    low = LOW_RANK_FRACTION
    rows = [ClaimRow("v_low", "srank(Delta KQ) final / srank(KQ init), Adam", vit.low_rank_ratio, low,
                     checks.below(low), "<=",
                     "learned change of W_K W_Q^T is low-rank relative to init (Figs 1, 5)",
                     "change of the learned size in a random direction", random_change_ratio,
                     (vit_run, control_stream), f"ratio {vit.low_rank_ratio:.3f} is not below {low:g}")]
    for m in ("kq", "vo"):
        gap = vit.scale_gap[m]
        rows.append(ClaimRow(
            f"v_scale_{m}", f"srank(Delta {m.upper()}): smallest minus largest scale", gap.gap, gap.threshold,
            checks.below(gap.threshold), "<=", "smaller initialization gives lower stable rank (Figs 6, 7)",
            "two initialization draws at the same scale 1 (the twin minus the default replica)", twin_gap,
            (vit_run, m),
            f"gap {gap.gap:+.4f}, no noise estimate with a single head" if math.isinf(gap.spread) else
            f"gap {gap.gap:+.4f} is not below {gap.threshold:.4f} (the larger of {GROWTH_SE:g} s.e. of the per-head "
            f"gaps, {gap.spread:.4f}, and of the draw-to-draw noise of a head mean, {gap.draw:.4f}; at least the "
            f"float32 rounding level {gap.floor:.1e})"))
    figs = {"adam": "Figs 4, 15", "sgd": "Figs 12, 13"}
    steps = vit_run.result.steps
    r = {"adam": vit.adam, "sgd": vit.sgd}
    for o, label in (("adam", "Adam"), ("sgd", "SGD")):
        for m in ("kq", "vo"):
            sr = vit.sr_kq if m == "kq" else vit.sr_vo
            rows.append(_trend_row(f"v_grow_{o}_{m}", f"srank(Delta {m.upper()}) trend over training, {label}",
                                   _mean_curve(sr[:, r[o]]), vit.full_curves[f"{o}_{m}"], steps,
                                   f"rises over all checkpoints, beyond {GROWTH_SE:g} s.e. ({figs[o]})"))
    gsteps = gpt_run.result.steps
    rows.append(_trend_row("v_gpt_vo", "char-GPT srank(Delta VO) trend over training", _mean_curve(gpt.sr_vo),
                           gpt.full_vo, gsteps, f"rises over all checkpoints, beyond {GROWTH_SE:g} s.e. (Fig 20)"))
    rows.append(_trend_row("v_gpt_kq", "char-GPT srank(Delta QK) trend over training", _mean_curve(gpt.sr_kq),
                           gpt.full_kq, gsteps, f"rises over all checkpoints, beyond {GROWTH_SE:g} s.e. (Fig 20)"))
    return rows


def twin_gap(vit: VitRun, which: str) -> float:
    """Control of claim (c): the final stable-rank gap (mean over heads) between the twin replica (Adam, scale 1,
    a second initialization draw) and the default replica: what two draws at the *same* scale give."""
    sr = vit.spectra.srank(f"delta_{which}")
    twin = vit.twin if vit.twin >= 0 else vit.adam_default
    return float((sr[-1, twin] - sr[-1, vit.adam_default]).double().mean())

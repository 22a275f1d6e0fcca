"""A regime where the rank must grow: one attention head with *full* weights learning a teacher head of known rank
from a small initialization, batched over seeds (paper Appendix A and Figure 2, the student-teacher toy of
Theorem thm-transformer-rank-incremental, here with full instead of diagonal weights, as in arXiv v1's Figure 2(d-f)).

Every seed draws its own teacher, data and initialization; all seeds and all variants (the small scale, the default
scale, a second draw at the default scale, the teacher cut to its top direction) train together in one batched
gradient-descent loop. The growth and scale claims of Assumption asm-transformer-rank-claims are then judged with the
spread *across seeds* (:func:`seed_interval`), not across the heads or checkpoints of one run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from scipy import stats

from stagewise.numerics.spectra import stable_rank_from_svals
from stagewise.transformer_rank.claims_table import ClaimRow
from stagewise.transformer_rank.rank_growth import reproduced_rise, trend
from stagewise.transformer_rank.training import checkpoint_steps

#: Confidence level of the across-seed intervals (two-sided Student t).
LEVEL = 0.95


@dataclass(frozen=True)
class ToySettings:
    """The teacher-student experiment (parameters ``toy_*``); the fixed sizes follow Appendix A, scaled down."""
    seeds: int                   # independent runs (teacher, data, initialization), batched
    rank: int                    # rank of the teacher's W_K W_Q^T and W_V W_O^T
    alpha: float                 # the small initialization scale
    steps: int                   # full-batch gradient-descent steps
    width: int = 8               # d = d_h: square, full W_K, W_Q, W_V, W_O
    tokens: int = 8              # n tokens per input
    samples: int = 64            # N inputs X (n x d, isotropic Gaussian) per seed
    lr: float = 2.0              # gradient-descent step size
    checkpoints: int = 30        # uniformly spaced checkpoints (plus the early ones of checkpoint_steps)


#: The variants trained for every seed: (name, teacher rank cut to 1?, scale is alpha?, second initialization draw?).
VARIANTS = (("small", False, True, 0), ("default", False, False, 0), ("twin", False, False, 1), ("rank1", True, True, 0))


@dataclass
class ToyRun:
    """Stable ranks of the learned changes per checkpoint, variant and seed."""
    steps: list[int]
    kq: dict[str, torch.Tensor]  # variant -> (C, S) srank of Delta(W_K W_Q^T) (NaN at step 0)
    vo: dict[str, torch.Tensor]  # variant -> (C, S) srank of Delta(W_V W_O^T)
    loss: dict[str, torch.Tensor]  # variant -> (C, S) training loss over the teacher's output size
    teacher_srank: float         # srank of the teacher's matrices (the value a fully learned change reaches)


def _teacher(gen: torch.Generator, seeds: int, d: int, rank: int) -> torch.Tensor:
    """``(S, d, d)`` matrices U diag(s) V^T with Haar U, V and singular values linearly from 1 to 1/2."""
    u = torch.linalg.qr(torch.randn(seeds, d, d, generator=gen, dtype=torch.float64))[0][..., :rank]
    v = torch.linalg.qr(torch.randn(seeds, d, d, generator=gen, dtype=torch.float64))[0][..., :rank]
    s = torch.linspace(1.0, 0.5, rank, dtype=torch.float64) if rank > 1 else torch.ones(1, dtype=torch.float64)
    return u * s @ v.transpose(-1, -2)


def head_output(x: torch.Tensor, kq: torch.Tensor, vo: torch.Tensor) -> torch.Tensor:
    """Paper eq. (1) without 1/sqrt(d_h): ``smax(X KQ X^T) X VO`` for x ``(R, N, n, d)``, kq, vo ``(R, d, d)``."""
    a = torch.softmax(x @ kq[:, None] @ x.transpose(-1, -2), dim=-1)     # (R, N, n, n)
    return a @ x @ vo[:, None]                                           # (R, N, n, d)


def run_toy(settings: ToySettings, generator: torch.Generator) -> ToyRun:
    """Train every variant of :data:`VARIANTS` for every seed with full-batch gradient descent on the mean
    squared error to the teacher's output; checkpoint the stable ranks of Delta(W_K W_Q^T), Delta(W_V W_O^T)."""
    s, d = settings, settings.width
    # 1) draws: data, teacher (its top direction for the rank-1 variant), two initialization directions
    x = torch.randn(s.seeds, s.samples, s.tokens, d, generator=generator, dtype=torch.float64)
    kq_t, vo_t = 2 * _teacher(generator, s.seeds, d, s.rank), _teacher(generator, s.seeds, d, s.rank)
    cut = [torch.linalg.svd(m) for m in (kq_t, vo_t)]
    kq_1, vo_1 = ((u[..., :1] * sv[..., None, :1]) @ vh[..., :1, :] for u, sv, vh in cut)
    theta0 = torch.randn(2, 4, s.seeds, d, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
    # 2) replicas: variant-major, seed-minor
    xs = x.repeat(len(VARIANTS), 1, 1, 1)
    y = torch.cat([head_output(x, *((kq_1, vo_1) if r1 else (kq_t, vo_t))) for _, r1, _, _ in VARIANTS])
    w = [torch.cat([(s.alpha if small else 1.0) * theta0[draw, i] for _, _, small, draw in VARIANTS])
         .requires_grad_() for i in range(4)]                            # W_K, W_Q, W_V, W_O: (R, d, d)
    ckpt = set(checkpoint_steps(s.steps, s.checkpoints))
    with torch.no_grad():
        kq0, vo0 = w[0] @ w[1].transpose(-1, -2), w[2] @ w[3].transpose(-1, -2)
    rows: list[tuple] = []
    # 3) full-batch gradient descent, checkpointing the learned changes
    for step in range(s.steps + 1):
        kq, vo = w[0] @ w[1].transpose(-1, -2), w[2] @ w[3].transpose(-1, -2)
        loss = 0.5 * ((head_output(xs, kq, vo) - y) ** 2).mean((1, 2, 3))   # (R,)
        if step in ckpt:
            with torch.no_grad():
                rows.append((step, stable_rank_from_svals(torch.linalg.svdvals(kq - kq0)),
                             stable_rank_from_svals(torch.linalg.svdvals(vo - vo0)), loss.detach().clone()))
        if step == s.steps:
            break
        grads = torch.autograd.grad(loss.sum(), w)
        with torch.no_grad():
            for p, g in zip(w, grads):
                p.sub_(s.lr * g)
    steps = [r[0] for r in rows]
    scale = (y ** 2).mean((1, 2, 3))
    split = {name: slice(k * s.seeds, (k + 1) * s.seeds) for k, (name, *_) in enumerate(VARIANTS)}
    field = lambda i, div=None: {n: torch.stack([r[i] if div is None else r[i] / div for r in rows])[:, sl]
                                 for n, sl in split.items()}
    teacher = float(stable_rank_from_svals(torch.linalg.svdvals(vo_t)).mean())
    return ToyRun(steps, field(1), field(2), field(3, scale), teacher)


@dataclass
class SeedInterval:
    """Mean of a per-seed statistic and its two-sided Student-t interval at :data:`LEVEL` across seeds."""
    mean: float
    half_width: float
    seeds: int

    @property
    def lower(self) -> float:
        return self.mean - self.half_width

    @property
    def upper(self) -> float:
        return self.mean + self.half_width

    def describe(self) -> str:
        return (f"{self.mean:+.3f} [{self.lower:+.3f}, {self.upper:+.3f}] ({LEVEL:.0%} interval over "
                f"{self.seeds} seeds)")


def seed_interval(values: torch.Tensor) -> SeedInterval:
    """:class:`SeedInterval` of per-seed values ``(S,)`` (infinite half-width with fewer than two seeds)."""
    v = values.double()
    n = int(v.numel())
    if n < 2:
        return SeedInterval(float(v.mean()), math.inf, n)
    q = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1))
    return SeedInterval(float(v.mean()), q * float(v.std()) / math.sqrt(n), n)


def per_seed_trend(curves: torch.Tensor, steps: list[int]) -> torch.Tensor:
    """Least-squares fitted change of each seed's curve ``(C, S)`` over all checkpoints after step 0 (the
    effect of :func:`stagewise.transformer_rank.rank_growth.trend`, one per seed)."""
    return torch.tensor([trend(curves[:, k], steps).effect for k in range(curves.shape[1])], dtype=torch.float64)


def growth_lower(toy: ToyRun, which: str, variant: str = "small") -> float:
    """Lower end of the across-seed interval of the per-seed trend of srank(Delta ``which``) in ``variant``
    (the value of a toy growth row; ``variant="rank1"`` is its control: a teacher that needs no growth)."""
    return seed_interval(per_seed_trend(getattr(toy, which)[variant], toy.steps)).lower


def scale_upper(toy: ToyRun, which: str, smaller: str = "small", larger: str = "default") -> float:
    """Upper end of the across-seed interval of the paired final-srank gap ``smaller - larger`` of
    Delta ``which`` (the value of a toy scale row; ``("twin", "default")`` is its control: two draws at one scale)."""
    m = getattr(toy, which)
    return seed_interval(m[smaller][-1] - m[larger][-1]).upper


def reproduced_fall(upper: float) -> bool:
    """The criterion of the toy scale rows: the interval of the gap lies below zero."""
    return math.isfinite(upper) and upper < 0


def toy_rows(toy: ToyRun) -> list[ClaimRow]:
    """The empirical rows of the teacher-student regime, judged across seeds: (b) the stable rank of each learned
    change rises (lower end of the interval of the per-seed trend above zero; control: the same teacher cut to its
    top direction, where nothing has to grow) and (c) it ends lower at the small scale than at the default one
    (upper end of the interval of the paired gap below zero; control: two draws at the default scale)."""
    rows = []
    for m, label in (("kq", "KQ"), ("vo", "VO")):
        g = seed_interval(per_seed_trend(getattr(toy, m)["small"], toy.steps))
        rows.append(ClaimRow(
            f"v_toy_grow_{m}", f"teacher of rank >= 2: srank(Delta {label}) trend, across seeds", g.lower, 0.0,
            reproduced_rise, ">=", f"rises over all checkpoints; {LEVEL:.0%} interval over seeds above zero (Fig 2)",
            "the same teacher cut to its top direction (no rank to grow)", growth_lower, (toy, m, "rank1"),
            f"per-seed trend {g.describe()}: the interval does not lie above zero"))
    for m, label in (("kq", "KQ"), ("vo", "VO")):
        m_ = getattr(toy, m)
        gap = seed_interval(m_["small"][-1] - m_["default"][-1])
        rows.append(ClaimRow(
            f"v_toy_scale_{m}", f"teacher: final srank(Delta {label}), small minus default scale, across seeds",
            gap.upper, 0.0, reproduced_fall, "<=",
            f"smaller initialization, lower stable rank; {LEVEL:.0%} interval over seeds below zero (Figs 6, 7)",
            "two initialization draws at the default scale (second draw minus first)", scale_upper,
            (toy, m, "twin", "default"), f"paired gap {gap.describe()}: the interval does not lie below zero"))
    return rows

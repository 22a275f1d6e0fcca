"""A regime where the rank must grow (the book's own construction, not an experiment of the paper): one attention
head with *full* weights learning a teacher head of known rank from a small initialization, batched over seeds.

Every seed draws its own teacher, data and initialization; all seeds and all variants (the small scale, the
default scale, a second draw at the default scale) train together in one batched gradient-descent loop that records
the singular values of the learned changes densely. Stagewise learning is measured with the one-at-a-time statistic
of :mod:`stagewise.transformer_rank.switch_on` (the chapter's conjecture ``conj-transformer-rank-stages``; control:
the default scale) and the scale claim (observation ``obs-transformer-rank-scale``) with the paired gap of the final
stable ranks; both are judged with the spread *across seeds* (:func:`seed_interval`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from scipy import stats

from stagewise.numerics.spectra import stable_rank_from_svals
from stagewise.transformer_rank.claims_table import ClaimRow
from stagewise.transformer_rank.switch_on import SETTLED, per_seed_settled

#: Confidence level of the across-seed intervals (two-sided Student t).
LEVEL = 0.95
#: The teacher's smallest singular value relative to its largest (geometric spacing in between: for rank 3 a factor of
#: about 2.8 between neighbours, so that their growth rates differ enough to separate at alpha = 0.01).
SPREAD = 0.125
#: The teacher's W_K W_Q^T is this multiple of such a matrix (attention that is not uniform).
KQ_SCALE = 2.0


@dataclass(frozen=True)
class ToySettings:
    """The teacher-student experiment (parameters ``toy_*``); the fixed sizes are ours, chosen small."""
    seeds: int                   # independent runs (teacher, data, initialization), batched
    rank: int                    # rank of the teacher's W_K W_Q^T and W_V W_O^T
    alpha: float                 # the small initialization scale
    steps: int                   # full-batch gradient-descent steps
    width: int = 8               # d = d_h: square, full W_K, W_Q, W_V, W_O
    tokens: int = 8              # n tokens per input
    samples: int = 64            # N inputs X (n x d, isotropic Gaussian) per seed
    lr: float = 2.0              # gradient-descent step size
    record_every: int = 5        # steps between records of the singular values


#: The variants trained for every seed: (name, scale is alpha?, initialization draw).
VARIANTS = (("small", True, 0), ("default", False, 0), ("twin", False, 1))


@dataclass
class ToyRun:
    """Singular values of the learned changes per record, variant and seed, and the losses."""
    steps: list[int]
    svals_kq: dict[str, torch.Tensor]  # variant -> (C, S, d) singular values of Delta(W_K W_Q^T), descending
    svals_vo: dict[str, torch.Tensor]  # variant -> (C, S, d) of Delta(W_V W_O^T)
    loss: dict[str, torch.Tensor]      # variant -> (C, S) training loss over the teacher's output power
    teacher_srank: float         # srank of the teacher's W_V W_O^T (what a change that learned only it has)
    target_srank: dict[str, dict[str, torch.Tensor]]  # "kq"/"vo" -> variant -> (S,) srank of M* - W(0)

    def srank(self, which: str, variant: str) -> torch.Tensor:
        """``(C, S)`` stable ranks of Delta ``which`` (``"kq"``/``"vo"``) of ``variant`` (NaN at step 0)."""
        return stable_rank_from_svals(getattr(self, f"svals_{which}")[variant])


def teacher_matrices(gen: torch.Generator, seeds: int, d: int, rank: int) -> torch.Tensor:
    """``(S, d, d)`` matrices U diag(s) V^T with Haar U, V and singular values geometric from 1 to ``SPREAD``."""
    u = torch.linalg.qr(torch.randn(seeds, d, d, generator=gen, dtype=torch.float64))[0][..., :rank]
    v = torch.linalg.qr(torch.randn(seeds, d, d, generator=gen, dtype=torch.float64))[0][..., :rank]
    s = (SPREAD ** torch.linspace(0.0, 1.0, rank, dtype=torch.float64) if rank > 1
         else torch.ones(1, dtype=torch.float64))
    return u * s @ v.transpose(-1, -2)


def head_output(x: torch.Tensor, kq: torch.Tensor, vo: torch.Tensor) -> torch.Tensor:
    """Paper eq. (1) without 1/sqrt(d_h): ``smax(X KQ X^T) X VO`` for x ``(R, N, n, d)``, kq, vo ``(R, d, d)``."""
    a = torch.softmax(x @ kq[:, None] @ x.transpose(-1, -2), dim=-1)     # (R, N, n, n)
    return a @ x @ vo[:, None]                                           # (R, N, n, d)


def run_toy(settings: ToySettings, generator: torch.Generator) -> ToyRun:
    """Train every variant of :data:`VARIANTS` for every seed with full-batch gradient descent on the mean
    squared error to the teacher's output; record the singular values of Delta(W_K W_Q^T), Delta(W_V W_O^T)."""
    s, d = settings, settings.width
    # 1) draws: data, teacher (W_K W_Q^T twice as strong, so that attention is not uniform), two initial directions
    x = torch.randn(s.seeds, s.samples, s.tokens, d, generator=generator, dtype=torch.float64)
    kq_t = KQ_SCALE * teacher_matrices(generator, s.seeds, d, s.rank)
    vo_t = teacher_matrices(generator, s.seeds, d, s.rank)
    theta0 = torch.randn(2, 4, s.seeds, d, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
    # 2) replicas: variant-major, seed-minor
    n_var = len(VARIANTS)
    xs, y = x.repeat(n_var, 1, 1, 1), head_output(x, kq_t, vo_t).repeat(n_var, 1, 1, 1)
    w = [torch.cat([(s.alpha if small else 1.0) * theta0[draw, i] for _, small, draw in VARIANTS])
         .requires_grad_() for i in range(4)]                            # W_K, W_Q, W_V, W_O: (R, d, d)
    with torch.no_grad():
        kq0, vo0 = w[0] @ w[1].transpose(-1, -2), w[2] @ w[3].transpose(-1, -2)
    rows: list[tuple] = []
    # 3) full-batch gradient descent, recording the singular values of the learned changes
    for step in range(s.steps + 1):
        kq, vo = w[0] @ w[1].transpose(-1, -2), w[2] @ w[3].transpose(-1, -2)
        loss = 0.5 * ((head_output(xs, kq, vo) - y) ** 2).mean((1, 2, 3))   # (R,)
        if step % s.record_every == 0 or step == s.steps:
            with torch.no_grad():
                rows.append((step, torch.linalg.svdvals(kq - kq0), torch.linalg.svdvals(vo - vo0),
                             loss.detach().clone()))
        if step == s.steps:
            break
        grads = torch.autograd.grad(loss.sum(), w)
        with torch.no_grad():
            for p, g in zip(w, grads):
                p.sub_(s.lr * g)
    split = {name: slice(k * s.seeds, (k + 1) * s.seeds) for k, (name, *_) in enumerate(VARIANTS)}
    power = (y ** 2).mean((1, 2, 3))
    field = lambda i: {n: torch.stack([r[i] for r in rows])[:, sl] for n, sl in split.items()}  # noqa: E731
    loss = {n: torch.stack([r[3] / power for r in rows])[:, sl] for n, sl in split.items()}
    targets = {m: {n: stable_rank_from_svals(torch.linalg.svdvals(t.repeat(n_var, 1, 1) - m0))[sl]
                   for n, sl in split.items()} for m, t, m0 in (("kq", kq_t, kq0), ("vo", vo_t, vo0))}
    teacher = float(stable_rank_from_svals(torch.linalg.svdvals(vo_t)).mean())
    return ToyRun([r[0] for r in rows], field(1), field(2), loss, teacher, targets)


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

    def describe(self, digits: int = 3) -> str:
        return (f"{self.mean:+.{digits}f} [{self.lower:+.{digits}f}, {self.upper:+.{digits}f}] "
                f"({LEVEL:.0%} interval over {self.seeds} seeds)")


def seed_interval(values: torch.Tensor) -> SeedInterval:
    """:class:`SeedInterval` of per-seed values ``(S,)`` (infinite half-width with fewer than two seeds; NaN when a
    seed's value is NaN)."""
    v = values.double()
    n = int(v.numel())
    if n < 2:
        return SeedInterval(float(v.mean()), math.inf, n)
    q = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1))
    return SeedInterval(float(v.mean()), q * float(v.std()) / math.sqrt(n), n)


def settled_lower(toy: ToyRun, which: str, variant: str = "small") -> float:
    """Lower end of the across-seed interval of the one-at-a-time statistic of Delta ``which`` in ``variant`` (the
    value of a stage row; ``variant="default"``, the scale 1, is its control)."""
    return seed_interval(per_seed_settled(getattr(toy, f"svals_{which}")[variant])).lower


def scale_upper(toy: ToyRun, which: str, smaller: str = "small", larger: str = "default") -> float:
    """Upper end of the across-seed interval of the paired final-srank gap ``smaller - larger`` of
    Delta ``which`` (the value of a toy scale row; ``("twin", "default")`` is its control: two draws at one scale)."""
    return seed_interval(toy.srank(which, smaller)[-1] - toy.srank(which, larger)[-1]).upper


def reproduced_fall(upper: float) -> bool:
    """The criterion of the toy scale rows: the interval of the gap lies below zero."""
    return math.isfinite(upper) and upper < 0


def reproduced_stages(lower: float) -> bool:
    """The criterion of the stage rows: the interval of the one-at-a-time statistic lies above ``SETTLED``."""
    return math.isfinite(lower) and lower >= SETTLED


def toy_rows(toy: ToyRun) -> list[ClaimRow]:
    """The empirical rows of the teacher-student regime, judged across seeds: the singular values of each learned
    change switch on one at a time at the small scale (lower end of the interval of the per-seed statistic at least
    ``SETTLED``; control: the default scale 1) and the final stable rank is lower at the small scale than at the
    default one (upper end of the interval of the paired gap below zero; control: two draws at the default scale)."""
    rows = []
    for m, label in (("kq", "KQ"), ("vo", "VO")):
        st = seed_interval(per_seed_settled(getattr(toy, f"svals_{m}")["small"]))
        rows.append(ClaimRow(
            f"v_toy_stages_{m}", f"teacher head, small scale: singular values of Delta {label} switch on one at a time",
            st.lower, SETTLED, reproduced_stages, ">=",
            f"at each switch-on the earlier singular values are past {SETTLED:g} of their final value; "
            f"{LEVEL:.0%} interval over seeds", "the same head from the default scale 1", settled_lower,
            (toy, m, "default"), f"one-at-a-time statistic {st.describe(2)}: the interval does not lie above "
            f"{SETTLED:g}", "conj-transformer-rank-stages"))
    for m, label in (("kq", "KQ"), ("vo", "VO")):
        gap = seed_interval(toy.srank(m, "small")[-1] - toy.srank(m, "default")[-1])
        rows.append(ClaimRow(
            f"v_toy_scale_{m}", f"teacher head: final srank(Delta {label}), small minus default scale",
            gap.upper, 0.0, reproduced_fall, "<=",
            f"smaller initialization, lower stable rank; {LEVEL:.0%} interval over seeds below zero",
            "two initialization draws at the default scale (second draw minus first)", scale_upper,
            (toy, m, "twin", "default"), f"paired gap {gap.describe()}: the interval does not lie below zero",
            "obs-transformer-rank-scale"))
    return rows

"""The theorem rows of the transformer-rank chapter: mathematical statements about this run's training and
measurement that hold with certainty (or with a stated failure probability), checked on the recorded weights.

* Proposition ``prop-transformer-rank-first-step`` (the first step from the initialization): with bias
  correction, Adam's first update is ``-eta s_0 g / (|g| + eps)`` for every coordinate, whatever beta_1,
  beta_2 and the initialization scale; SGD with momentum moves by ``-eta s_0 g``. :func:`first_step_error`
  compares the checkpoint of step 1 with the update rule applied to the gradient at the recorded
  initialization on the first minibatch *as the experiment states it*, recomputed from the stated dataset and
  the experiment's random stream (:func:`stated_vit_first_batch`, :func:`stated_gpt_first_batch`), not the
  minibatch the training loop recorded, with the *stated* learning rates and schedule.
* Proposition ``prop-transformer-rank-adam-bound`` (Adam's step bound, Kingma & Ba 2015, Sec. 2.1, with bias
  correction): ``|m_hat_t / (sqrt(v_hat_t) + eps)| <= B_t`` (:func:`adam_step_bound`), so the last step of
  the warmup-cosine cycle moves no weight by more than ``eta s_{T-1} B_T``: :func:`last_step_ratio`.
* Proposition ``prop-transformer-rank-init`` (the initialization, Hoeffding / Laurent-Massart): the mean
  square of the initial ``to_qkv`` / ``to_out`` entries is within a computed ``tau`` of its stated value
  ``alpha^2 b^2 / 3`` (ViT, ``U(-alpha b, alpha b)``, ``b = 1/sqrt(fan_in)``) or ``sigma^2`` (GPT-2),
  except with probability ``2e-10`` per matrix family: :func:`vit_init_deviation`, :func:`gpt_init_deviation`.
* Proposition ``prop-transformer-rank-bound`` on the measured spectra: :func:`rank_bound_tail`.
* Proposition ``prop-transformer-rank-chance`` (a predictor that ignores its input cannot beat chance):
  :func:`chance_accuracy` (Hoeffding) and :func:`unigram_entropy` (Gibbs' inequality).
"""
from __future__ import annotations

import math

import torch

from stagewise.numerics import datasets as data
from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import Config, replica_loss
from stagewise.transformer_rank.optimizer import schedule
from stagewise.transformer_rank.spectra import Spectra
from stagewise.transformer_rank.training import TrainResult

EPS32 = float(torch.finfo(torch.float32).eps)
EPS_BF16 = float(torch.finfo(torch.bfloat16).eps)
#: Adam's constants (torch.optim.Adam defaults, used by ReplicaOptimizer).
BETAS, ADAM_EPS = (0.9, 0.999), 1e-8
#: Failure probability allowed to each concentration bound of Proposition prop-transformer-rank-init.
INIT_DELTA = 1e-10
#: Failure probability of the chance-level bound of Proposition prop-transformer-rank-chance.
CHANCE_DELTA = 1e-9


def _attention_weights(params: dict, depth: int) -> tuple[torch.Tensor, torch.Tensor]:
    qkv = torch.stack([params[f"blocks.{l}.qkv"] for l in range(depth)], 1)
    out = torch.stack([params[f"blocks.{l}.out"] for l in range(depth)], 1)
    return qkv, out


def stated_images(name: str, data_dir: str = "", seed: int = 0, limit: int = 0) -> data.ImageData:
    """The stated image set, loaded by the named dataset's own loader (``load_digits`` / ``make_shapes32`` /
    ``load_cifar``), not through the dispatcher ``load_images`` that the experiment calls: the check's copy
    of the training set does not pass through the experiment's data path."""
    if name == "digits":
        return data.load_digits(seed)
    if name == "shapes32":
        return data.make_shapes32(n=limit or 6000, seed=seed)
    return data.load_cifar(name, data_dir, limit)


def stated_vit_first_batch(settings, images_seed: int, generator: torch.Generator, cfg: Config, draws: int,
                           device: torch.device | str = "cpu", labels: list[str] | None = None,
                           label_generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The ViT's first minibatch as the experiment states it, recomputed outside the training loop: the
    stated dataset (:func:`stated_images`, split by ``images_seed``) cut into patches; ``generator`` (a fresh
    copy of the experiment's stream) advanced past the ``draws`` initialization directions, then the first
    ``batch`` indices of a ``torch.randperm`` of the *whole* training set (patches, labels). With ``labels``
    (``"true"`` / ``"shuffled"`` per replica) and ``label_generator`` (a fresh copy of the label stream), the
    labels are ``(R, B)``: the shuffled replicas read the training labels under the stated permutation."""
    s = settings
    images = stated_images(s.dataset, s.data_dir, images_seed, s.n_images)
    init_params(cfg, [1.0] * draws, generator, "cpu", directions=list(range(draws)))   # advance the stream
    n = len(images.x_train)
    idx = torch.randperm(n, generator=generator)[:min(s.batch, n)]
    x = data.patchify(images.x_train, s.patch)
    y = images.y_train[idx]
    if labels is not None and "shuffled" in labels:
        permuted = images.y_train[torch.randperm(n, generator=label_generator)][idx]
        y = torch.stack([permuted if lab == "shuffled" else y for lab in labels])
    return x[idx].to(device), y.to(device)


def stated_gpt_first_batch(settings, generator: torch.Generator, cfg: Config,
                           device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The char-GPT's first training windows as stated: ``generator`` (a fresh copy of the experiment's
    stream) advanced past the initialization, then ``batch`` uniform window starts in the first 90 % of the
    pydoc text (inputs, targets shifted by one character)."""
    s = settings
    codes = data.load_pydoc_text().codes
    init_params(cfg, [1.0], generator, "cpu")                                         # advance the stream
    n_train = int(0.9 * len(codes))
    starts = torch.randint(0, n_train - s.block - 1, (s.batch,), generator=generator)
    w = codes[starts[:, None] + torch.arange(s.block + 1)]
    return w[:, :-1].to(device), w[:, 1:].to(device)


def first_step_gradient(initial: dict, cfg: Config, batch: tuple, mixed_precision: bool = False):
    """Gradients of the replicas' losses at the initial weights on ``batch``, for ``to_qkv`` and ``to_out``
    of every layer, ``(R, L, ...)`` float64 (the same loss as the training, recomputed independently)."""
    params = {k: v.detach().clone().requires_grad_(True) for k, v in initial.items()}
    device = next(iter(params.values())).device
    amp = mixed_precision and device.type == "cuda"
    ctx = torch.autocast("cuda", dtype=torch.bfloat16) if amp else torch.enable_grad()
    with ctx:
        loss = replica_loss(params, cfg, *batch)
    loss.sum().backward()
    qkv = torch.stack([params[f"blocks.{l}.qkv"].grad for l in range(cfg.depth)], 1)
    out = torch.stack([params[f"blocks.{l}.out"].grad for l in range(cfg.depth)], 1)
    return qkv.double().cpu(), out.double().cpu()


def first_step_error(result: TrainResult, grads: tuple, use_adam: list[bool], lrs: list[float], factor: float,
                     step: int = 1, compute_eps: float = EPS32) -> float:
    """Proposition prop-transformer-rank-first-step: the largest, over replicas, of
    ``||W(step) - W(0) - Delta_pred||_F / bound`` for the fused attention weights, where ``Delta_pred`` is the
    first update predicted from the gradient ``grads`` (:func:`first_step_gradient`) with learning rates
    ``lrs`` and schedule factor ``factor`` (``-eta s_0 g / (|g| + eps)`` for Adam, ``-eta s_0 g`` for SGD), and
    ``bound`` the rounding of the stored float32 weights and of the update,
    ``eps32 ||W(step)||_F / 2 + 8 eps_c ||Delta_pred||_F``. At most 1 when the checkpoint labelled ``step``
    holds one step of the stated optimizer; ``step=2`` is the control (the time axis off by one)."""
    if step not in result.steps:
        return math.inf
    c = result.steps.index(step)
    worst = 0.0
    for r, adam in enumerate(use_adam):
        error2 = stored2 = pred2 = 0.0
        for w, g in zip((result.qkv, result.out), grads):
            u = g[r] / (g[r].abs() + ADAM_EPS) if adam else g[r]
            pred = -lrs[r] * factor * u
            moved = w[c, r].double() - w[0, r].double()
            error2 += float(((moved - pred) ** 2).sum())
            stored2 += float((w[c, r].double() ** 2).sum())
            pred2 += float((pred ** 2).sum())
        bound = EPS32 * math.sqrt(stored2) / 2 + 8 * compute_eps * math.sqrt(pred2)
        worst = max(worst, math.sqrt(error2) / bound)
    return worst


def adam_step_bound(t: int, betas: tuple[float, float] = BETAS) -> float:
    """``B_t``: the largest ``|m_hat_t| / sqrt(v_hat_t)`` any gradient sequence can give at Adam step ``t``
    (Cauchy-Schwarz on the two exponential averages, with bias correction):
    ``(1 - b1) sqrt(1 - b2^t) / ((1 - b1^t) sqrt(1 - b2)) * sqrt((1 - r^t) / (1 - r))``, ``r = b1^2 / b2``."""
    b1, b2 = betas
    r = b1 * b1 / b2
    return (1 - b1) * math.sqrt(1 - b2 ** t) / ((1 - b1 ** t) * math.sqrt(1 - b2)) * math.sqrt((1 - r ** t) / (1 - r))


def last_step_ratio(result: TrainResult, use_adam: list[bool], lrs: list[float], steps: int, warmup: int,
                    pair: tuple[int, int] | None = None) -> float:
    """Proposition prop-transformer-rank-adam-bound at the end of the stated schedule: the largest, over Adam
    replicas, of ``max_i |W_i(b) - W_i(a)| / (eta s_{T-1} B_T + eps32 max_i |W_i(b)|)`` for the checkpoints
    ``(a, b) = (T - 1, T)``. At most 1 when training ran the stated ``T`` steps of the warmup-cosine schedule;
    infinite when a checkpoint of the pair is missing (the run stopped early). ``pair=(T//2 - 1, T//2)`` is
    the control: the last step of a run stopped at half of training, against the stated last step's rate."""
    a, b = pair or (steps - 1, steps)
    if a not in result.steps or b not in result.steps:
        return math.inf
    ca, cb = result.steps.index(a), result.steps.index(b)
    rate = schedule(steps - 1, steps, warmup) * adam_step_bound(steps)
    worst = 0.0
    for r, adam in enumerate(use_adam):
        if not adam:
            continue
        moved = max(float((w[cb, r].double() - w[ca, r].double()).abs().max()) for w in (result.qkv, result.out))
        size = max(float(w[cb, r].double().abs().max()) for w in (result.qkv, result.out))
        worst = max(worst, moved / (lrs[r] * rate + EPS32 * size))
    return worst


def uniform_tau(n: int, delta: float = INIT_DELTA) -> float:
    """Hoeffding for ``n`` i.i.d. ``w^2 / (alpha b)^2`` in [0, 1] with mean 1/3: the relative deviation of the
    mean square from ``alpha^2 b^2 / 3`` exceeds ``3 sqrt(ln(2/delta) / (2n))`` with probability at most delta."""
    return 3 * math.sqrt(math.log(2 / delta) / (2 * n))


def gaussian_tau(n: int, delta: float = INIT_DELTA) -> float:
    """Laurent-Massart for a chi-square with ``n`` degrees of freedom: ``|chi2/n - 1|`` exceeds
    ``2 sqrt(x/n) + 2x/n``, ``x = ln(2/delta)``, with probability at most delta."""
    x = math.log(2 / delta)
    return 2 * math.sqrt(x / n) + 2 * x / n


def vit_init_deviation(result: TrainResult, scales: list[float], fan: str = "in") -> float:
    """Proposition prop-transformer-rank-init for the ViT: the largest, over replicas and the two fused
    matrices, of ``|mean(w^2) / (alpha^2 b^2 / 3) - 1| / tau`` at step 0, with PyTorch's default bound
    ``b = 1/sqrt(fan_in)`` (``fan="out"``: the bound taken from the fan-out, the control)."""
    worst = 0.0
    for w in (result.qkv[0], result.out[0]):                     # (R, L, out, in)
        fan_size = w.shape[-1] if fan == "in" else w.shape[-2]
        for r, alpha in enumerate(scales):
            x = w[r].double()
            ratio = float((x ** 2).mean()) / (alpha ** 2 / fan_size / 3)
            worst = max(worst, abs(ratio - 1) / uniform_tau(x.numel()))
    return worst


def gpt_init_deviation(result: TrainResult, depth: int, residual_scaling: bool = True) -> float:
    """Proposition prop-transformer-rank-init for the char-GPT: the largest, over the two fused matrices, of
    ``|mean(w^2) / sigma^2 - 1| / tau`` at step 0, with GPT-2's ``sigma = 0.02`` (``to_qkv``) and
    ``0.02 / sqrt(2 depth)`` (``to_out``, a residual projection). ``residual_scaling=False``: the theory
    without the residual scaling (the control)."""
    worst = 0.0
    for w, resid in ((result.qkv[0], False), (result.out[0], True)):
        sigma = 0.02 / (math.sqrt(2 * depth) if resid and residual_scaling else 1.0)
        x = w[0].double()
        worst = max(worst, abs(float((x ** 2).mean()) / sigma ** 2 - 1) / gaussian_tau(x.numel()))
    return worst


def rank_bound_tail(spectra: Spectra, head_dim: int) -> float:
    """Proposition prop-transformer-rank-bound on measured spectra: the largest of ``sigma_{d_h+1}`` of
    ``W_K W_Q^T`` and ``W_V W_O^T`` at every checkpoint, and ``sigma_{2 d_h+1}`` of their changes at every
    checkpoint after step 0, each relative to the largest singular value it is computed from (of the change, of
    the matrix at t and at 0: the change is a float64 difference of the two products, whose rounding scales with
    them). Rounding level when every head's matrices are products through ``d_h`` dimensions."""
    tails = [torch.zeros((), dtype=torch.float64)]        # a bound that is vacuous at this size adds nothing
    for full, delta in ((spectra.full_kq, spectra.delta_kq), (spectra.full_vo, spectra.delta_vo)):
        if head_dim < full.shape[-1]:
            tails.append((full[..., head_dim] / full[..., 0]).max())
        if 2 * head_dim < delta.shape[-1]:
            scale = torch.maximum(torch.maximum(delta[1:, ..., 0], full[1:, ..., 0]), full[:1, ..., 0])
            tails.append((delta[1:, ..., 2 * head_dim] / scale).max())
    return float(torch.stack(tails).max())


def first_and_last(result: TrainResult) -> TrainResult:
    """The checkpoints of step 0 and of the end only (for a cheap control of the rank bound)."""
    keep = [0, len(result.steps) - 1]
    return TrainResult([result.steps[i] for i in keep], result.qkv[keep], result.out[keep], result.losses)


def chance_accuracy(labels: torch.Tensor, classes: int, delta: float = CHANCE_DELTA) -> float:
    """Proposition prop-transformer-rank-chance: a classifier whose predictions are independent of the test
    labels scores at most ``p_max + sqrt(ln(1/delta) / (2n))`` on ``n`` test labels, except with probability
    delta (Hoeffding; ``p_max`` the largest class frequency of the test set)."""
    counts = torch.bincount(labels.flatten().cpu(), minlength=classes).double()
    n = float(counts.sum())
    return float(counts.max() / n) + math.sqrt(math.log(1 / delta) / (2 * n))


def unigram_entropy(targets: torch.Tensor, vocabulary: int) -> float:
    """Proposition prop-transformer-rank-chance (Gibbs' inequality): the cross-entropy of any predictor that
    ignores the context on these targets is at least the entropy (nats) of their empirical distribution."""
    p = torch.bincount(targets.flatten().cpu(), minlength=vocabulary).double()
    p = p[p > 0] / p.sum()
    return float(-(p * p.log()).sum())


@torch.no_grad()
def held_out_loss(params: dict, cfg: Config, windows: tuple) -> float:
    """Mean held-out cross-entropy of replica 0 of the char-GPT on ``windows`` (inputs, targets)."""
    return float(replica_loss(params, cfg, *windows)[0])


def _per_head(qkv: torch.Tensor, out: torch.Tensor, heads: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head ``W_K W_Q^T`` and ``W_V W_O^T`` of fused weights ``(L, 3 H d_h, D)``, ``(L, D, H d_h)`` written
    out with einsum (a second implementation, independent of ``attention_heads.head_matrices``)."""
    L, _, D = qkv.shape
    q, k, v = qkv.double().view(L, 3, heads, head_dim, D).unbind(1)                 # (L, H, d_h, D)
    o = out.double().view(L, D, heads, head_dim)                                     # (L, D, H, d_h)
    return torch.einsum("lhad,lhae->lhde", k, q), torch.einsum("lhad,leha->lhde", v, o)


def _srank_by_definition(m: torch.Tensor) -> torch.Tensor:
    """``||M||_F^2 / ||M||_2^2`` from the entries and the spectral norm (Definition def-transformer-rank-srank)."""
    return (m ** 2).sum((-2, -1)) / torch.linalg.matrix_norm(m, ord=2) ** 2


def first_step_srank_error(result: TrainResult, measured: dict, grads: tuple, use_adam: list[bool],
                           lrs: list[float], factor: float, heads: int, head_dim: int,
                           exponent: float = 1.0) -> float:
    """Proposition prop-transformer-rank-first-step, carried to the chapter's measurement: the stable ranks of
    ``Delta(W_K W_Q^T)`` and ``Delta(W_V W_O^T)`` at step 1 *as the chapter measured them* (``measured``:
    ``{"kq": (C, R, L, H), "vo": ...}``, checkpoint 1 is read) against the stable ranks of the changes
    predicted by the update rule, computed by the definition from an independent construction of the heads.
    Each difference is divided by its perturbation bound: with ``d = ||E||_F / ||Delta_pred||_F`` the relative
    size of the measured-minus-predicted change, ``|srank(Delta_pred + E) / srank(Delta_pred) - 1| <=
    2 d (1 + sqrt(srank)) (1 + d)`` (numerator and denominator of the definition each move by at most that),
    plus the float64 rounding ``64 eps64 d_emb``. At most 1 for a correct measure. ``exponent=0.5`` is the
    control: the measured values raised to 1/2 (the ratio of norms without the squares, a wrong measure)."""
    if 1 not in result.steps:
        return math.inf
    c = result.steps.index(1)
    worst = 0.0
    for r, adam in enumerate(use_adam):
        preds = []
        for w, g in zip((result.qkv, result.out), grads):
            u = g[r] / (g[r].abs() + ADAM_EPS) if adam else g[r]
            preds.append(w[0, r].double() - lrs[r] * factor * u)
        kq0, vo0 = _per_head(result.qkv[0, r], result.out[0, r], heads, head_dim)
        kq1, vo1 = _per_head(result.qkv[c, r], result.out[c, r], heads, head_dim)
        kqp, vop = _per_head(preds[0], preds[1], heads, head_dim)
        for key, m1, mp, m0 in (("kq", kq1, kqp, kq0), ("vo", vo1, vop, vo0)):
            dp = mp - m0
            d = ((m1 - mp) ** 2).sum((-2, -1)).sqrt() / (dp ** 2).sum((-2, -1)).sqrt()
            s = _srank_by_definition(dp)
            bound = s * (2 * d * (1 + s.sqrt()) * (1 + d)) + 64 * 2.0 ** -52 * m0.shape[-1] * s
            got = measured[key][c, r].double() ** exponent
            worst = max(worst, float(((got - s).abs() / bound).max()))
    return worst


def compute_eps(mixed_precision: bool, device: torch.device | str) -> float:
    """Machine epsilon of the arithmetic of a training step: bfloat16 under CUDA autocast, else float32."""
    return EPS_BF16 if mixed_precision and torch.device(device).type == "cuda" else EPS32


def replica_accuracy(params: dict, cfg: Config, x_test: torch.Tensor, y_test: torch.Tensor, patch: int,
                     replica: int) -> float:
    """Test accuracy of replica ``replica`` of ViT weights ``params`` (images ``x_test``, patch side ``patch``)."""
    from stagewise.numerics.datasets import patchify
    from stagewise.transformer_rank.experiments import vit_accuracy
    device = next(iter(params.values())).device
    return vit_accuracy(params, cfg, patchify(x_test, patch).to(device), y_test.to(device))[replica]

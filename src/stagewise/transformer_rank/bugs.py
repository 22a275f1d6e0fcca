"""The catalogue of realistic bugs of the transformer-rank chapter's experiment and measurement code
(``stagewise power transformer-rank``; see :mod:`stagewise.core.sweep.power`). Each replacement is a plausible slip in
the training loop, the schedule, the initialization, the data or the measurement, written as it would be."""
from __future__ import annotations

import dataclasses
import math

import torch

from stagewise.core.checks.catalogue import Bug


def warmup_off_by_one(step, steps, warmup, decay=True, original=None):
    """The warmup factor is ``step / warmup`` instead of ``(step + 1) / warmup``: the first step has learning rate
    zero and every warmup step is one step behind. Plausible: zero-based and one-based step counters are mixed up
    all the time, and the curves hardly change (the warmup is a tenth of training)."""
    if step < warmup:
        return step / warmup
    return original(step, steps, warmup, decay)


def schedule_arguments_swapped(step, steps, warmup, decay=True, original=None):
    """``schedule(step, warmup, steps)``: the total number of steps and the warmup length are passed in the wrong
    order, so the whole run is a slow linear warmup that never decays. Plausible: two integer arguments next to
    each other, and training still converges."""
    return original(step, warmup, steps, decay)


def cosine_sign(step, steps, warmup, decay=True, original=None):
    """``0.5 * (1 - cos(...))`` after the warmup: a sign error in the cosine, so the rate drops to zero right
    after the warmup and climbs back to its peak at the end. Plausible: one character, and a cosine ramp reads
    like a schedule either way."""
    if step < warmup or not decay:
        return original(step, steps, warmup, decay)
    return 0.5 * (1 - math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def checkpoint_late(params, cfg, batches, optimizer, steps, ckpt, *args, original=None, **kwargs):
    """The checkpoint labelled ``k`` holds the weights after ``k + 1`` steps: the snapshot is stored under the
    loop's zero-based ``step`` after the update instead of ``step + 1``. Plausible: the classic off-by-one of a
    training loop, invisible in any curve (every point moves by one step)."""
    wanted = sorted({0} | {c + 1 for c in ckpt if c > 0})
    result = original(params, cfg, batches, optimizer, steps, wanted, *args, **kwargs)
    result.steps = [0] + [s - 1 for s in result.steps[1:]]
    return result


def fewer_steps(params, cfg, batches, optimizer, steps, ckpt, *args, original=None, **kwargs):
    """Trains for half the stated number of steps: ``steps // 2`` slipped in when the loop was batched over two
    optimizers (the step count was shared and halved). Plausible: the run is twice as fast and every curve
    looks like a complete run, ending with the decayed learning rate."""
    return original(params, cfg, batches, optimizer, steps // 2, ckpt, *args, **kwargs)


def scales_ignored(cfg, scales, rng, device="cpu", directions=None, original=None):
    """The per-replica initialization scale is not forwarded: every replica starts at the default scale (the
    chapter's former mutation test). Plausible: the scale list is built and then the default list is passed."""
    return original(cfg, [1.0] * len(scales), rng, device, directions)


def uniform_fan_out(gen, shape, fan_in, original=None):
    """PyTorch's default bound ``1/sqrt(fan_in)`` computed from the wrong dimension of the weight: the number of
    output features (``shape[0]`` of an ``(out, in)`` matrix). Plausible: the layout of ``nn.Linear`` weights is
    ``(out, in)``, and for square layers both give the same number."""
    return original(gen, shape, shape[0] if len(shape) == 2 else fan_in)


def gpt_residual_unscaled(cfg, scales, rng, device="cpu", directions=None, original=None):
    """GPT-2's residual projections (attention output and second MLP layer) left at ``N(0, 0.02^2)``, without the
    ``1/sqrt(2 depth)`` of GPT-2. Plausible: the scaling is a footnote of the GPT-2 paper and easily forgotten."""
    params = original(cfg, scales, rng, device, directions)
    if cfg.kind == "gpt":
        with torch.no_grad():
            for name, value in params.items():
                if name.endswith(".out") or name.endswith(".mlp2"):
                    value.mul_(math.sqrt(2 * cfg.depth))
    return params


def labels_misaligned(name, data_dir="", seed=0, limit=0, original=None):
    """The training labels are shifted by one against the training images (the images were reordered in place
    and the labels were not). Plausible: two arrays that must be permuted together; the loss still falls a
    little, as the model memorizes."""
    images = original(name, data_dir, seed, limit)
    return dataclasses.replace(images, y_train=torch.roll(images.y_train, 1))


def train_subset(name, data_dir="", seed=0, limit=0, original=None):
    """Only the first tenth of the training images is used (a debugging slice ``[: n // 10]`` left in).
    Plausible: the run gets faster, accuracy drops a little, and nothing else looks different."""
    images = original(name, data_dir, seed, limit)
    n = max(1, len(images.x_train) // 10)
    return dataclasses.replace(images, x_train=images.x_train[:n], y_train=images.y_train[:n])


def srank_without_squares(svals, original=None):
    """The stable rank computed as ``||W||_F / ||W||_2`` instead of ``||W||_F^2 / ||W||_2^2`` (the squares
    dropped: the square root of the stable rank). Plausible: a wrong exponent in a ratio of norms; it still lies
    between 1 and the rank and is 1 for rank-one matrices."""
    return original(svals).sqrt()


def reference_from_the_end(result, heads, head_dim, device="cpu", reference=0, original=None):
    """The change is measured from the *last* checkpoint instead of the first (``result.qkv[-1]`` for
    ``result.qkv[0]``, after the checkpoint list was reversed for plotting newest first): the final weights stand
    in for the initial ones. Plausible: one index, and the curves keep their shape, mirrored in time."""
    return original(result, heads, head_dim, device, reference=-1)


P = "stagewise.transformer_rank"
BUGS = [
    Bug("warmup-off-by-one", f"{P}.training:schedule", warmup_off_by_one, "off-by-one", ci=True),
    Bug("checkpoint-late", f"{P}.experiments:train", checkpoint_late, "off-by-one"),
    Bug("schedule-arguments-swapped", f"{P}.training:schedule", schedule_arguments_swapped, "swapped arguments"),
    Bug("cosine-sign", f"{P}.training:schedule", cosine_sign, "sign error"),
    Bug("fewer-steps", f"{P}.experiments:train", fewer_steps, "fewer steps"),
    Bug("scales-ignored", f"{P}.experiments:init_params", scales_ignored, "wrong initialization scale"),
    Bug("gpt-residual-unscaled", f"{P}.experiments:init_params", gpt_residual_unscaled,
        "wrong initialization scale"),
    Bug("uniform-fan-out", f"{P}.initialization:_uniform", uniform_fan_out, "wrong constant or exponent"),
    Bug("labels-misaligned", "stagewise.numerics.datasets:load_images", labels_misaligned, "wrong data"),
    Bug("train-subset", "stagewise.numerics.datasets:load_images", train_subset, "training on a subset"),
    Bug("srank-without-squares", f"{P}.spectra:stable_rank_from_svals", srank_without_squares, "wrong measure"),
    Bug("reference-from-the-end", f"{P}.experiments:checkpoint_spectra", reference_from_the_end,
        "initial weights for final"),
]

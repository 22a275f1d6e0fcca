"""Benchmark and step check for gradient descent from small initialization on Example 1
(escape-speed chapter, section "Example 1").

1. Speed: the batched loop with the hand-written backward pass (`escape_training.euler_escape`,
   all widths padded into one batch) against the autograd reference run one initialization at a
   time at its own width (`euler_escape_autograd`), on the same initializations; also the autograd
   reference on the whole padded batch. Ratios come from the same run.
2. Step check: the success classification (speed of the direction at the 1% loss drop above
   sqrt(2) - 1 + 0.025) at `rel_step` and at `rel_step / 2`, for several seeds.
3. Initialization scale: the success fraction at width 32 for several alpha.

Run: .venv/bin/python benchmarks/bench_escape_gd.py [--seeds 0-9] [--skip-loop]
"""
import argparse
import math
import time

import numpy as np
import torch
from scipy.stats import spearmanr

from stagewise.escape_speed import speed as esc
from stagewise.escape_speed import training as tr

torch.set_num_threads(1)

WIDTHS, INITS, ALPHA, REL, DROP, MARGIN = [1, 2, 4, 8, 16, 32], 16, 1e-4, 0.01, 0.01, 0.025
R1 = math.sqrt(2) - 1


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def speed_loop(X, Y, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    nets = [tr.small_init(2, [w, w], 1, INITS, ALPHA, gen) for w in WIDTHS]
    padded = [torch.cat(ws) for ws in zip(*[esc.pad_hidden(W, max(WIDTHS)) for W in nets])]
    tb, rb = timed(lambda: tr.euler_escape(padded, X, Y, REL, DROP, 100_000))
    ta, ra = timed(lambda: tr.euler_escape_autograd(padded, X, Y, REL, DROP, 100_000))

    def one_at_a_time():
        out = []
        for W in nets:
            for i in range(INITS):
                r = tr.euler_escape_autograd([w[i:i + 1] for w in W], X, Y, REL, DROP, 100_000)
                out.append(tr.direction_speed(r.Ws, X, -Y) if torch.isfinite(r.times).all() else torch.full((1,), math.nan))
        return torch.cat(out)

    tl, sl = timed(one_at_a_time)
    sb = torch.where(torch.isfinite(rb.times), tr.direction_speed(rb.Ws, X, -Y), math.nan)
    both = torch.isfinite(sb) & torch.isfinite(sl)
    n = len(WIDTHS) * INITS
    print(f"Example 1, depth 3, widths {WIDTHS} x {INITS} inits, alpha {ALPHA}, rel_step {REL}, until a {DROP:.0%} drop")
    print(f"  manual backward, one padded batch: {tb:6.2f} s ({rb.steps} steps, {1e3 * tb / rb.steps:.2f} ms/step)")
    print(f"  autograd, one padded batch:        {ta:6.2f} s   ratio x{ta / tb:.1f}")
    print(f"  autograd, one init at a time:      {tl:6.2f} s   ratio x{tl / tb:.1f}")
    print(f"  same escapes: {bool((torch.isfinite(sb) == torch.isfinite(sl)).all())}; "
          f"max |speed difference| batched vs one at a time {float((sb - sl)[both].abs().max()):.1e}; "
          f"classification differences {int(((sb > R1 + MARGIN) != (sl > R1 + MARGIN)).sum())} of {n}")
    print(f"  manual vs autograd batch: max |time difference| "
          f"{float(((rb.times - ra.times) / ra.times)[torch.isfinite(ra.times)].abs().max()):.1e} (relative)")


def sweep(X, Y, seed: int, rel: float) -> torch.Tensor:
    return tr.gd_width_sweep(X, Y, WIDTHS, 3, INITS, ALPHA, rel, DROP, torch.Generator().manual_seed(seed)).speeds


def step_check(X, Y, seeds: list[int]) -> None:
    print(f"\nstep check: rel_step {REL} vs {REL / 2}, margin {MARGIN}, seeds {seeds}")
    flips = near = basin = 0
    worst = 0.0
    offsets = {REL: [], REL / 2: []}
    for seed in seeds:
        sa, sb = sweep(X, Y, seed, REL), sweep(X, Y, seed, REL / 2)
        fa, fb = sa > R1 + MARGIN, sb > R1 + MARGIN
        for rel, s in ((REL, sa), (REL / 2, sb)):
            w1 = s[0][torch.isfinite(s[0])]
            offsets[rel].append(float((R1 - w1).abs().max()))
        fr = [f.double().mean(1).numpy() for f in (fa, fb)]
        grow = [bool(f[-2:].mean() > f[:2].mean() and spearmanr(WIDTHS, f).statistic > 0) for f in fr]
        d = fa != fb
        flips += int(d.sum())
        big = (sa - sb).abs() > 0.03
        basin += int((d & big).sum())
        near += int((d & ~big).sum())
        worst = max(worst, float(np.abs(fr[0] - fr[1]).max()))
        print(f"  seed {seed}: fractions {np.round(fr[0], 3).tolist()} | {np.round(fr[1], 3).tolist()}  "
              f"growth {grow[0]} | {grow[1]}  flips {int(d.sum())}")
    n = len(seeds) * len(WIDTHS) * INITS
    print(f"  classification changed for {flips} of {n} runs: {near} within 0.03 of each other (near the threshold), "
          f"{basin} in another basin; largest change of a fraction {worst:.4f}")
    for rel, o in offsets.items():
        print(f"  plateau offset of the width-1 runs at rel_step {rel}: {min(o):.5f}-{max(o):.5f}")


def alpha_study(X, Y) -> None:
    print(f"\ninitialization scale: width 32, 32 inits, seed 0, rel_step {REL}")
    for alpha in (1e-2, 1e-3, 1e-4, 1e-6):
        t, r = timed(lambda: tr.gd_width_sweep(X, Y, [32], 3, 32, alpha, REL, DROP, torch.Generator().manual_seed(0)))
        print(f"  alpha {alpha:.0e}: success fraction {float((r.speeds > R1 + MARGIN).double().mean()):.3f} "
              f"({r.steps} steps, {t:.1f} s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0-2", help="seed range for the step check, e.g. 0-9")
    ap.add_argument("--skip-loop", action="store_true", help="skip the slow one-init-at-a-time reference")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split("-"))
    X, G = esc.example1_data()
    Y = G.clone()                                   # targets (-1)^j, so G = -Y
    if not a.skip_loop:
        speed_loop(X, Y, 0)
    step_check(X, Y, list(range(lo, hi + 1)))
    alpha_study(X, Y)


if __name__ == "__main__":
    main()

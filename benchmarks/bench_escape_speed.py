"""Batched code against plain reference loops (escape-speed chapter), and the step checks the prose quotes.

Same problems, same numbers, same run (ratios only, see ``timing.py``):

1. Projected ascent on Example 1 (depth 3, width 16): all restarts in one batch
   (``stagewise.escape_speed.ascent.projected_ascent``) against one restart at a time
   (``stagewise.escape_speed.reference.projected_ascent_reference``).
2. The projected-ascent width sweep: one padded batch against one batch per width.
3. Gradient descent from small initialization on Example 1 (section "Example 1" of the chapter):
   the batched Euler loop with the hand-written backward pass (``gradient_descent.euler_escape``, all
   widths padded into one batch) against the autograd reference
   (``reference.euler_escape_reference``) on the padded batch and one initialization at a time at
   its own width. ``--inits`` initializations per width (default 4; the chapter's 16 with
   ``--inits 16``, which makes the one-at-a-time reference take several minutes).
4. Step check: the success classification (speed of the direction at the 1% loss drop above
   sqrt(2) - 1 + 0.025) at ``rel_step`` and at ``rel_step / 2``, for several seeds.
5. Initialization scale: the success fraction at width 32 for several alpha (``--alphas``).

    .venv/bin/python benchmarks/bench_escape_speed.py [--threads N] [--inits 16] [--seeds 0-9] [--skip-loop] [--alphas]

The default (4 inits per width in 3., seed 0 for the step check, no alpha study) runs in about
a minute and a half on one idle core.
"""
import argparse
import math

import numpy as np
import torch
from scipy.stats import spearmanr

from timing import Comparison, setup, timed
from stagewise.escape_speed import ascent, network, problems, reference
from stagewise.escape_speed import gradient_descent as gd

WIDTHS, INITS, ALPHA, REL, DROP, MARGIN = [1, 2, 4, 8, 16, 32], 16, 1e-4, 0.01, 0.01, 0.025
R1 = math.sqrt(2) - 1


def ascent_comparison(X: torch.Tensor, G: torch.Tensor) -> None:
    """1. and 2.: batched projected ascent against one restart at a time, padded sweep against per width."""
    steps, R = 300, 32
    W0 = network.init_sphere(2, [16, 16], 1, R, torch.Generator().manual_seed(0))
    with Comparison(f"projected ascent, Example 1, depth 3, width 16, {R} restarts x {steps} steps") as c:
        fast = c.time("batched (stagewise)", lambda: ascent.projected_ascent(W0, X, G, steps, 0.1, 1e-4).speeds)
        slow = c.time("reference (one restart at a time)",
                      lambda: reference.projected_ascent_reference(W0, X, G, steps, 0.1, 1e-4))
        c.same(fast, slow, tol=1e-12)

    widths, Rw = [1, 2, 4, 8, 16, 32], 16
    gen = torch.Generator().manual_seed(1)
    inits = [network.init_sphere(2, [w, w], 1, Rw, gen) for w in widths]

    def padded():
        P = [torch.cat(ws) for ws in zip(*[network.pad_hidden(W, max(widths)) for W in inits])]
        return ascent.projected_ascent(P, X, G, steps, 0.1, 1e-4).speeds

    def per_width():
        return torch.cat([ascent.projected_ascent(W, X, G, steps, 0.1, 1e-4).speeds for W in inits])

    with Comparison(f"projected-ascent width sweep {widths}, {Rw} restarts each, {steps} steps") as c:
        sp = c.time("one padded batch (chapter)", padded)
        sw = c.time("one batch per width", per_width)
        c.same(sp, sw, tol=1e-12)
    print(f"  best speed found {float(sp.max()):.6f} (rank-two optimum 1/2, rank-one bound {R1:.6f})")


def euler_comparison(X: torch.Tensor, Y: torch.Tensor, seed: int, inits: int) -> None:
    """3.: the batched Euler loop against the autograd reference, padded and one init at a time."""
    gen = torch.Generator().manual_seed(seed)
    nets = [network.init_sphere(2, [w, w], 1, inits, gen, scale=ALPHA) for w in WIDTHS]
    padded = [torch.cat(ws) for ws in zip(*[network.pad_hidden(W, max(WIDTHS)) for W in nets])]

    def one_at_a_time():
        out = []
        for W in nets:
            for i in range(inits):
                r = reference.euler_escape_reference([w[i:i + 1] for w in W], X, Y, REL, DROP, 100_000)
                out.append(gd.direction_speed(r.Ws, X, -Y) if torch.isfinite(r.times).all()
                           else torch.full((1,), math.nan))
        return torch.cat(out)

    title = (f"gradient descent on Example 1, depth 3, widths {WIDTHS} x {inits} inits, alpha {ALPHA}, "
             f"rel_step {REL}, until a {DROP:.0%} drop")
    with Comparison(title) as c:
        rb = c.time("manual backward, one padded batch", lambda: gd.euler_escape(padded, X, Y, REL, DROP, 100_000))
        ra = c.time("autograd reference, padded batch",
                    lambda: reference.euler_escape_reference(padded, X, Y, REL, DROP, 100_000))
        sl = c.time("autograd reference, one at a time", one_at_a_time)
        fin = torch.isfinite(ra.times)
        print(f"  {rb.steps} Euler steps, {1e3 * c.times['manual backward, one padded batch'] / rb.steps:.2f} ms/step")
        print(f"  manual vs autograd batch: max relative time difference "
              f"{float(((rb.times - ra.times) / ra.times)[fin].abs().max()):.1e}")
    sb = torch.where(torch.isfinite(rb.times), gd.direction_speed(rb.Ws, X, -Y), math.nan)
    both = torch.isfinite(sb) & torch.isfinite(sl)
    print(f"  same escapes: {bool((torch.isfinite(sb) == torch.isfinite(sl)).all())}; "
          f"max |speed difference| batched vs one at a time {float((sb - sl)[both].abs().max()):.1e}; "
          f"classification differences {int(((sb > R1 + MARGIN) != (sl > R1 + MARGIN)).sum())} of {len(sb)}")


def sweep(X: torch.Tensor, Y: torch.Tensor, seed: int, rel: float) -> torch.Tensor:
    return gd.gd_width_sweep(X, Y, WIDTHS, 3, INITS, ALPHA, rel, DROP, torch.Generator().manual_seed(seed)).speeds


def step_check(X: torch.Tensor, Y: torch.Tensor, seeds: list[int]) -> None:
    """4.: is the success classification stable when ``rel_step`` halves?"""
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


def alpha_study(X: torch.Tensor, Y: torch.Tensor) -> None:
    """5.: the success fraction at width 32 against the initialization scale."""
    print(f"\ninitialization scale: width 32, 32 inits, seed 0, rel_step {REL}")
    for alpha in (1e-2, 1e-3, 1e-4, 1e-6):
        t, r = timed(lambda: gd.gd_width_sweep(X, Y, [32], 3, 32, alpha, REL, DROP, torch.Generator().manual_seed(0)))
        print(f"  alpha {alpha:.0e}: success fraction {float((r.speeds > R1 + MARGIN).double().mean()):.3f} "
              f"({r.steps} steps, {t:.1f} s)")


def main() -> None:
    setup(__doc__)
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0-0", help="seed range for the step check, e.g. 0-9")
    ap.add_argument("--inits", type=int, default=4, help="initializations per width in the Euler comparison")
    ap.add_argument("--skip-loop", action="store_true", help="skip the slow one-init-at-a-time reference")
    ap.add_argument("--alphas", action="store_true", help="also run the initialization-scale study")
    a = ap.parse_known_args()[0]
    lo, hi = (int(x) for x in a.seeds.split("-"))
    X, G = problems.example1_data()
    ascent_comparison(X, G)
    Y = G.clone()                                   # targets (-1)^j, so G = -Y
    if not a.skip_loop:
        euler_comparison(X, Y, 0, a.inits)
    step_check(X, Y, list(range(lo, hi + 1)))
    if a.alphas:
        alpha_study(X, Y)


if __name__ == "__main__":
    main()

"""Benchmark for the escape-speed chapter: batched projected ascent over restarts versus
the same ascent run one restart at a time (same problem, same iterates), and the
padded width sweep versus one batch per width.

Run: .venv/bin/python benchmarks/bench_escape-speed.py
"""
import math
import time

import torch

from stagewise.escape_speed import speed as esc

torch.set_num_threads(1)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    X, G = esc.example1_data()
    steps, R = 300, 32
    W0 = esc.init_sphere(2, [16, 16], 1, R, torch.Generator().manual_seed(0))
    tb, rb = timed(lambda: esc.projected_ascent(W0, X, G, steps, 0.1, 1e-4).speeds)
    tl, rl = timed(lambda: esc.projected_ascent_loop(W0, X, G, steps, 0.1, 1e-4))
    print(f"Example 1, depth 3, width 16, {R} restarts x {steps} steps")
    print(f"  batched: {tb:.2f} s   one restart at a time: {tl:.2f} s   speed-up x{tl / tb:.1f}")
    print(f"  same result: max |difference of best speeds| = {float((rb - rl).abs().max()):.1e}")

    widths, Rw = [1, 2, 4, 8, 16, 32], 16
    gen = torch.Generator().manual_seed(1)
    inits = [esc.init_sphere(2, [w, w], 1, Rw, gen) for w in widths]
    def per_width():
        return [esc.projected_ascent(W, X, G, steps, 0.1, 1e-4).speeds for W in inits]
    def padded():
        P = [torch.cat(ws) for ws in zip(*[esc.pad_hidden(W, max(widths)) for W in inits])]
        return esc.projected_ascent(P, X, G, steps, 0.1, 1e-4).speeds
    tw, sw = timed(per_width)
    tp, sp = timed(padded)
    print(f"width sweep {widths}, {Rw} restarts each: one batch per width {tw:.2f} s, "
          f"one padded batch {tp:.2f} s, speed-up x{tw / tp:.1f}, "
          f"max |difference| = {float((torch.cat(sw) - sp).abs().max()):.1e}")
    ok = float(sp.max())
    print(f"best speed found {ok:.6f} (rank-two optimum 1/2, rank-one bound {math.sqrt(2) - 1:.6f})")


if __name__ == "__main__":
    main()

"""A restyle against the run it replaces: `stagewise figure` (draw one figure again from its sidecar) against
`stagewise run` of the whole chapter (what redrawing a figure for a talk cost before sidecars), in the same run.

    .venv/bin/python benchmarks/bench_figure.py [CHAPTER] [--style talk-16x9-dark] [--repeat 3]

The chapter is run once at its default parameters into a temporary folder (timed: the reference), then each of
its figures is restyled --repeat times (timed: the median per figure, command start-up included). Prints both
and their ratio.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGEWISE = str(Path(sys.executable).with_name("stagewise"))


def timed(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([STAGEWISE, *args], check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapter", nargs="?", default="linear-riccati")
    parser.add_argument("--style", default="talk-16x9-dark")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        rerun = timed("run", args.chapter, "--quiet", "--out", str(run))
        listed = subprocess.run([STAGEWISE, "figure", str(run), "--list"], check=True, capture_output=True,
                                text=True).stdout.split("\n")
        figures = [line.split()[0] for line in listed if line.strip() and "cannot be restyled" not in line]
        if not figures:
            sys.exit(f"{args.chapter}: no figure with a sidecar to restyle")
        per_figure = {}
        for fig in figures:
            per_figure[fig] = statistics.median(
                timed("figure", str(run), fig, "--style", args.style, "--out", str(Path(tmp) / "out"))
                for _ in range(args.repeat))
    slowest = max(per_figure.values())
    print(f"{args.chapter}: rerun of the chapter {rerun:.1f} s; restyle of one figure ({args.style}, "
          f"{len(per_figure)} figures, median of {args.repeat}): {statistics.median(per_figure.values()):.2f} s "
          f"(slowest {slowest:.2f} s)")
    print(f"ratio rerun / restyle: {rerun / statistics.median(per_figure.values()):.0f}x "
          f"(against the slowest figure: {rerun / slowest:.0f}x)")


if __name__ == "__main__":
    main()

"""Cold and no-op book build times.

Cold: remove _build and book/executed, execute every chapter (as `make book` does on a
fresh clone) and build the HTML. No-op: the same command again with nothing changed.
    .venv/bin/python benchmarks/bench_book.py [--html-only]
--html-only keeps the executed chapters and times only the cold Sphinx build.
"""
import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGEWISE = str(Path(sys.executable).with_name("stagewise"))


def timed(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([STAGEWISE, "book", *args], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html-only", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    if not args.html_only:
        shutil.rmtree(ROOT / "book" / "executed", ignore_errors=True)
    cold = timed()
    noop = timed()
    label = "cold HTML build (chapters already executed)" if args.html_only else "cold build (execute all + HTML)"
    print(f"{label:45s}: {cold:7.1f} s")
    print(f"{'no-op build (nothing changed)':45s}: {noop:7.1f} s  ({cold / noop:.0f}x faster)")


if __name__ == "__main__":
    main()

"""Cold and no-op book build times, and --jobs 1 against --jobs N in the same run.

A no-op build (no chapter stale, no page input changed since the last complete HTML build) rebuilds nothing: it
hashes the pages' inputs (stagewise.core.book.site_record.site_inputs) against the stamp of the last build.

Cold: remove _build and book/executed, execute every chapter (as `make book` does on a fresh clone) and
build the HTML. The cold build runs twice, with --jobs 1 (one chapter at a time) and --jobs N (default:
one per core), and the ratio is printed. No-op: the same command again with nothing changed.
    .venv/bin/python benchmarks/bench_book.py [--jobs N] [--html-only]
--html-only keeps the executed chapters and times only the cold Sphinx build.
Note: this deletes book/executed and _build (stagewise's own outputs) and rebuilds them.
"""
import argparse
import os
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


def cold(jobs: int, html_only: bool) -> float:
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    if not html_only:
        shutil.rmtree(ROOT / "book" / "executed", ignore_errors=True)
    return timed("--jobs", str(jobs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html-only", action="store_true")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    if args.html_only:
        print(f"{'cold HTML build (chapters already executed)':45s}: {cold(1, True):7.1f} s")
        noop = min(timed() for _ in range(3))
        print(f"{'no-op build (nothing changed), best of 3':45s}: {noop:7.2f} s  (target: under 2 s)")
        return
    one = cold(1, False)
    many = cold(args.jobs, False)
    noop = min(timed() for _ in range(3))
    print(f"{'cold build, --jobs 1':45s}: {one:7.1f} s")
    print(f"{f'cold build, --jobs {args.jobs}':45s}: {many:7.1f} s  ({one / many:.2f}x faster than --jobs 1)")
    print(f"{'no-op build (nothing changed), best of 3':45s}: {noop:7.2f} s  ({many / noop:.0f}x faster than cold; "
          "target: under 2 s)")


if __name__ == "__main__":
    main()

"""`make test`: the whole test suite as two pytest processes at once, so that both cores stay busy.

Lane *book*: the tests marked ``book``, ``nbmake`` or ``power`` (the whole book built once, strictly, with every
chapter executed; the browser and PDF tests of its pages; every chapter as a notebook under nbmake; the CI bug of
every mutation matrix). Lane *rest*: everything else (unit and command-line tests, which mostly use one core, and
the atlas's CI subset). Measured on the 2-core machine, the two lanes end within a few minutes of each other. The two lanes share no files (every other test writes under its own temporary folder), so they run side
by side; run alone, the unit tests would leave one core idle for most of the suite.

The rest lane's output is shown live, the book lane's when it ends (with a header each); the exit status is 0 only
when both lanes pass. Extra arguments go to both pytest commands (``tools/test_lanes.py -x``).
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time

LANES = {"book": "book or nbmake or power", "rest": "not book and not nbmake and not power"}


def _pytest(marker: str, extra: list[str]) -> list[str]:
    # the slowest tests of each lane at the end of its output: where the suite's time goes, run after run
    return [sys.executable, "-m", "pytest", "-m", marker, "--durations=15", *extra]


def main(extra: list[str]) -> int:
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", prefix="book-lane-") as log:
        book = subprocess.Popen(_pytest(LANES["book"], extra), stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            print(f"== lane rest: pytest -m '{LANES['rest']}' (the book lane runs beside it; its output follows)",
                  flush=True)
            rest = subprocess.run(_pytest(LANES["rest"], extra)).returncode
            rest_minutes = (time.monotonic() - started) / 60
            book_code = book.wait()
        except KeyboardInterrupt:                  # the terminal's Ctrl-C reached both lanes too
            book.wait()
            raise
        log.seek(0)
        print(f"\n== lane book: pytest -m '{LANES['book']}'", flush=True)
        sys.stdout.write(log.read())
    total = (time.monotonic() - started) / 60
    print(f"\n== lanes: rest exit {rest} ({rest_minutes:.1f} min), book exit {book_code}; {total:.1f} min in all",
          flush=True)
    return 0 if rest == 0 and book_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

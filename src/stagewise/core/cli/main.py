"""The ``stagewise`` command: list chapters, show parameters, run a chapter, build the book."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from stagewise import __version__
from stagewise.core.run.registry import CHAPTERS_DIR, PROJECT_ROOT, UnknownChapterError, all_chapters, get_chapter
from stagewise.core.run.parameters import ParameterError, load_parameter_file
from stagewise.core.cli import presets
from stagewise.core.cli import sweeps as cli_sweep
from stagewise.core.cli.sweeps import UsageError
from stagewise.core.run.results_schema import ResultsSchemaError
from stagewise.core.run.rundir import OutputRefused

EXIT_BAD_INPUT, EXIT_RUN_FAILED, EXIT_CHECKS_FAILED, EXIT_INTERRUPTED = 2, 1, 3, 130
PARAM_FLAGS = ("-p", "--param")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), not the usage block."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _split_params(argv: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Take ``-p NAME VALUE`` out of argv before argparse sees it.

    argparse reads a value such as ``-inf`` or ``-1e-3`` as an option and a missing
    value as a multi-line usage error; here the two words after ``-p`` are taken
    verbatim, and a missing one is a one-line error.
    """
    rest, params, i = [], [], 0
    while i < len(argv):
        word = argv[i]
        if word in PARAM_FLAGS:
            given = argv[i + 1:i + 3]
            if len(given) < 2 or any(g.startswith("--") for g in given):
                given = [g for g in given[:1] if not g.startswith("--")]
                what = f"-p {given[0]} needs a VALUE" if given else "-p needs a NAME and a VALUE"
                raise UsageError(f"{what} (for example: -p seed 3)")
            params.append((argv[i + 1], argv[i + 2]))
            i += 3
            continue
        if word.startswith("--param="):
            raise UsageError("write --param NAME VALUE (two words), not --param=...")
        rest.append(word)
        i += 1
    return rest, params


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="stagewise", description="Run the chapters of 'Learning in Stages' with your own parameters.")
    parser.add_argument("--version", action="version", version=f"stagewise {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="list the chapters", description="List the chapters (name and title).")
    p = sub.add_parser("params", help="show a chapter's parameters",
                       description="Show each parameter: type, default, allowed values and meaning.")
    p.add_argument("chapter")
    r = sub.add_parser(
        "run", help="execute a chapter with new parameters",
        description="Execute CHAPTER with papermill. The run folder receives the executed notebook, "
                    "figures/<chapter>-<id>.{pdf,svg,png} and results.json. Exit status: 0 ok, "
                    "1 the notebook failed (partial run kept as <folder>.failed-<time>), 2 bad input, "
                    "3 a numerical check failed (with --strict).")
    r.add_argument("chapter")
    r.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="set a parameter (repeatable); lists as [1,2] or 1,2; negative values as -p x -1")
    r.add_argument("-f", "--param-file", metavar="YAML", help="parameters from a YAML file (-p wins)")
    r.add_argument("--out", type=Path, metavar="DIR",
                   help="run folder (default: a new runs/<chapter>/<time>). It must be new, empty or an earlier "
                        "run of the same chapter holding only its own files; anything else is refused. A failed "
                        "run never replaces it")
    r.add_argument("--strict", action="store_true", help="exit 3 when a numerical check fails")
    r.add_argument("--quiet", action="store_true", help="no progress bar over cells")
    r.add_argument("--dry-run", action="store_true",
                   help="validate the parameters and the run folder, print them as JSON, run nothing")
    b = sub.add_parser(
        "book", help="execute stale chapters and build the HTML book",
        description="Execute every chapter whose inputs changed (its source, the code it runs, the style sheets, "
                    "the requirements) into "
                    "book/executed/<chapter>, then build _build/html with warnings as errors.")
    b.add_argument("--force", nargs="?", const=FORCE_ALL, action="append", default=[], metavar="CHAPTER",
                   help="execute CHAPTER again even if it is up to date (repeatable); alone: every chapter")
    b.add_argument("--dry-run", action="store_true", help="only say which chapters would be executed")
    b.add_argument("--no-html", action="store_true", help="execute chapters but skip the HTML build")
    b.add_argument("--strict", action="store_true", help="exit 3 when any chapter has a failed check")
    b.add_argument("--clean", action="store_true", help="remove _build and book/executed first")
    b.add_argument("--jobs", "-j", type=int, default=0, metavar="N",
                   help="chapters executed at once, each in its own process (default: one per core)")
    b.add_argument("--only", action="append", default=[], metavar="CHAPTER",
                   help="execute only this chapter (repeatable); the others are left as they are")
    d = sub.add_parser(
        "pdf", help="print the built book into one PDF",
        description="Print every page of _build/html, in reading order, with the system Chromium into one "
                    "PDF (math, figures, theorem boxes, checks tables, bibliography). Needs a built book "
                    "(stagewise book) and Debian's chromium package; no network.")
    d.add_argument("--out", type=Path, default=None, metavar="PDF",
                   help="where to write it (default: _build/pdf/learning-in-stages.pdf)")
    g = sub.add_parser(
        "figure", help="draw a run's figure again in another style (talks, posters, dark), without the run",
        description="Draw figure FIG_ID of RUN_DIR again from its data sidecar (figures/<stem>.npz and .json) in "
                    "a style preset, in seconds: nothing is recomputed. RUN_DIR is a run folder (stagewise run), a "
                    "sweep or atlas point, or book/executed/<chapter>. The files are <stem>.<style>.<fmt> in --out, "
                    "each with the run's provenance and the style in its metadata. Example: stagewise figure "
                    "book/executed/linear-riccati spectrum --style talk-16x9-dark")
    g.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    g.add_argument("figure_id", nargs="?", metavar="FIG_ID", help="the figure (see --list)")
    g.add_argument("--list", action="store_true", help="list the run's figures with their captions")
    g.add_argument("--style", default="book", metavar="STYLE",
                   help="a preset (book, book-dark, paper, talk-16x9, talk-16x9-dark, talk-4x3, poster), a path to a "
                        ".mplstyle file, or several joined by commas, later ones winning (default: book)")
    g.add_argument("--formats", default=None, metavar="FMTS", help="comma-separated, from pdf,svg,png (default: all)")
    g.add_argument("--dpi", default=None, metavar="SCALE",
                   help="resolution as a multiple of the preset's: 2x gives a 3840 x 2160 talk-16x9 PNG")
    g.add_argument("--out", type=Path, default=None, metavar="DIR", help="where to write (default: here)")
    cli_sweep.add_parsers(sub)
    c = sub.add_parser(
        "clean", help="remove leftovers of killed or failed runs",
        description="Remove the staging folders (.<name>.partial-<pid>) that killed runs leave behind "
                    "(--partial) and the <name>.failed-<time> folders of failed runs (--failed), below each "
                    "DIR (default: runs and book/executed). Folders of live runs are skipped; nothing that "
                    "stagewise did not make is touched.")
    c.add_argument("dirs", nargs="*", type=Path, metavar="DIR")
    c.add_argument("--partial", action="store_true", help="remove killed runs' staging folders")
    c.add_argument("--failed", action="store_true", help="remove failed runs' folders")
    c.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    return parser


def _list() -> int:
    for chapter in all_chapters():
        print(f"{chapter.name:24s} {chapter.title}")
    return 0


def _params(name: str) -> int:
    chapter = get_chapter(name)
    print(f"{chapter.name}: {chapter.title}")
    print(f"  {'name':20s} {'type':12s} {'default':>12s}  {'allowed':26s} meaning")
    for p in chapter.parameters.values():
        print(f"  {p.name:20s} {p.type:12s} {str(p.default):>12s}  {p.describe_domain():26s} {p.help}")
    print("\n".join(presets.describe(chapter)) or "  (no presets)")
    return 0


def _run(args: argparse.Namespace) -> int:
    from stagewise.core.run.runner import RunFailed, default_run_folder, execute, prepare, preflight

    overrides = load_parameter_file(args.param_file) if args.param_file else {}
    overrides.update(dict(args.param))
    overrides, preset = presets.expand(get_chapter(args.chapter), overrides)
    chapter, parameters = prepare(args.chapter, overrides)
    folder = args.out or default_run_folder(chapter.name)
    expected = (presets.announce(chapter, preset, _cpu_seconds(chapter, parameters)[0]) if preset
                else _expected_time(chapter, parameters))
    if args.dry_run:
        from stagewise.core.run.rundir import absolute, check_target
        replaces = check_target(absolute(folder), chapter.name)
        print(json.dumps({"chapter": chapter.name, "preset": preset, "parameters": parameters, "out": str(folder),
                          "replaces_earlier_run": replaces, "expected_time": expected}, indent=2))
        return 0
    replaces = preflight(chapter, folder)
    print(f"stagewise: running {chapter.name} into {folder}"
          + (" (replacing the earlier run there once this one is complete)" if replaces else ""), file=sys.stderr)
    if expected:
        print(f"stagewise: {expected}", file=sys.stderr)
    try:
        outcome = execute(chapter, parameters, folder, progress=not args.quiet and sys.stderr.isatty())
    except RunFailed as err:
        if isinstance(err.__cause__, KeyboardInterrupt):
            print(f"stagewise: interrupted; partial run kept in {err.folder} (marked FAILED)", file=sys.stderr)
            return EXIT_INTERRUPTED
        print(f"stagewise: run failed: {err}; partial run kept in {err.folder}", file=sys.stderr)
        return EXIT_RUN_FAILED
    print(outcome.folder)
    from stagewise.core.cli.report import report_run
    return report_run(outcome, args.strict)


#: The expected time is announced when it is this many times the default's (and above a minute).
SLOW_FACTOR = 2.0


def _expected_time(chapter, parameters: dict) -> str | None:
    """'expected time about N min (default parameters: M s)' when the chapter's cost model puts these
    parameters well above the default's; None otherwise or without a cost model.

    The model gives the ratio to the default; the seconds are anchored to the default run's measured wall
    time (``expected_seconds`` in the front matter, which the book build also uses to order chapters), so
    that a model calibrated on a busier or slower machine does not shift the absolute figure."""
    seconds, default = _cpu_seconds(chapter, parameters)
    if seconds is None or seconds < max(60.0, SLOW_FACTOR * default):
        return None
    shown = f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"
    return (f"expected time about {shown} on a 2-core CPU ({seconds / default:.0f}x the default parameters' "
            f"{default:.0f} s); progress bars show the long loops")


def _cpu_seconds(chapter, parameters: dict) -> tuple[float | None, float | None]:
    """(expected, default) seconds on the 2-core reference CPU: the cost model's ratio to the default, anchored to
    the default run's measured time (``expected_seconds`` in the front matter); (None, None) without a model."""
    from stagewise.core.run.parameters import resolve
    seconds = chapter.expected_seconds(parameters)
    if seconds is None:
        return None, None
    default = chapter.expected_seconds(resolve(chapter.parameters, {}, chapter.name))
    measured = getattr(chapter, "front_matter", {}).get("expected_seconds")
    return (seconds * float(measured) / default, float(measured)) if measured else (seconds, default)


FORCE_ALL = "\0all"  # --force without a chapter


def _book(args: argparse.Namespace) -> int:
    from stagewise.core.book import build as book
    if args.jobs < 0:
        raise UsageError(f"--jobs must be at least 1 (0: one per core), got {args.jobs}")
    only = [get_chapter(name) for name in args.only] or None
    forced = [get_chapter(name).name for name in args.force if name != FORCE_ALL]
    args.force = True if FORCE_ALL in args.force else forced
    if args.dry_run:
        for item in book.plan(only, force=args.force):
            print(f"{item.chapter.name:24s} {'execute: ' + item.reason if item.reason else 'up to date'}")
        return 0
    with book.BuildLock() as lock:
        if lock.took_over_from:
            print(f"stagewise: took over the book build lock from pid {lock.took_over_from}, which has ended",
                  file=sys.stderr)
        return _book_locked(args, book, only)


def _book_locked(args: argparse.Namespace, book, only) -> int:
    from stagewise.core.run.runner import RunFailed, execute, prepare

    if args.clean:
        book.clean()
    for line in book.report_leftovers():
        print(f"stagewise: {line}", file=sys.stderr)
    plans = book.plan(only, force=args.force)
    for item in plans:
        print(f"{item.chapter.name:24s} {'execute: ' + item.reason if item.reason else 'up to date'}")
    stale = [item for item in plans if item.reason is not None]
    jobs = args.jobs or book.default_jobs()
    if jobs > 1 and len(stale) > 1:
        def say(line: str) -> None:
            print(line, flush=True)
        bad = [e for e in book.execute_parallel(plans, jobs, say) if e.code != 0]
        if bad:
            print(f"stagewise: {len(bad)} chapter(s) failed: {', '.join(e.chapter for e in bad)}", file=sys.stderr)
            return EXIT_INTERRUPTED if any(e.code == EXIT_INTERRUPTED for e in bad) else EXIT_RUN_FAILED
    for item in stale if jobs == 1 or len(stale) <= 1 else []:
        started = time.time()
        chapter, parameters = prepare(item.chapter.name, {})
        print(f"{chapter.name:24s} running", flush=True)
        try:
            execute(chapter, parameters, item.folder)
        except RunFailed as err:
            print(f"stagewise: {chapter.name} failed: {err}; partial run kept in {err.folder}", file=sys.stderr)
            return EXIT_INTERRUPTED if isinstance(err.__cause__, KeyboardInterrupt) else EXIT_RUN_FAILED
        print(f"{chapter.name:24s} done in {time.time() - started:.0f} s", flush=True)
    failed = {p.chapter.name: book.failed_checks(p.chapter) for p in plans if p.folder.is_dir()}
    failed = {k: v for k, v in failed.items() if v}
    for name, checks in failed.items():
        print(f"stagewise: {name}: failed check(s): {', '.join(checks)}", file=sys.stderr)
    if not args.no_html:
        print(book.update_html(force=bool(stale) or bool(args.force)))
    return EXIT_CHECKS_FAILED if failed and args.strict else 0


def _clean(args: argparse.Namespace) -> int:
    from stagewise.core.book import build as book
    from stagewise.core.run import leftovers
    if not (args.partial or args.failed):
        raise UsageError("say what to remove: --partial (killed runs' staging folders) and/or --failed")
    roots = args.dirs or [Path("runs"), book.executed_dir()]
    for root in args.dirs:
        if not root.is_dir():
            raise UsageError(f"{root} is not a folder")
    removed = skipped = 0
    for path in leftovers.find_leftovers(roots, partial=args.partial, failed=args.failed):
        outcome = "would remove" if args.dry_run else None
        if outcome is None:
            outcome = "removed" if leftovers.remove_leftover(path) else "skipped (its run is still going)"
        removed += outcome == "removed"
        skipped += outcome.startswith("skipped")
        print(f"{outcome}: {path}")
    print(f"stagewise: {removed} removed, {skipped} skipped", file=sys.stderr)
    return 0


def _pdf(args) -> int:
    from stagewise.core.book import browser
    from stagewise.core.book import pdf as pdf_book
    try:
        print(f"stagewise: {pdf_book.print_book(PROJECT_ROOT, args.out)}")
    except (browser.BrowserMissing, FileNotFoundError) as err:
        raise UsageError(str(err)) from None
    return 0


def _figure(args) -> int:
    from stagewise.core.figures import restyle
    from stagewise.core.figures import sidecar
    from stagewise.core.figures import styles
    try:
        if args.list:
            rows = restyle.list_figures(args.run_dir)
            if not rows:
                print(f"{args.run_dir}: no figures")
            for row in rows:
                what = row.caption if row.restylable else f"(cannot be restyled: {row.problem})"
                print(f"{row.figure_id:24s} {' '.join(what.split())[:120]}")
            return 0
        if not args.figure_id:
            raise UsageError("figure: give FIG_ID (or --list to see the run's figures)")
        started = time.perf_counter()
        paths = restyle.restyle(args.run_dir, args.figure_id, args.style, args.formats, args.out, args.dpi)
    except (restyle.FigureNotFound, sidecar.SidecarError, styles.StyleError, FileExistsError) as err:
        raise UsageError(str(err)) from None
    for path in paths:
        print(path)
    print(f"({len(paths)} files in {time.perf_counter() - started:.1f} s)", file=sys.stderr)
    return 0


def _terminate(signum, frame):
    """SIGTERM and SIGINT: asyncio (under papermill) replaces only Python's default SIGINT handler, and its
    cancellation was once absorbed, so that a run finished as if Ctrl-C had never been pressed (seen in CI)."""
    raise KeyboardInterrupt


from stagewise.core.sweep.power import CatalogueError  # noqa: E402 - a bad catalogue is bad input (exit 2)


def main(argv: list[str] | None = None) -> int:
    if argv is None and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)  # the command itself, not a library call
    if argv is None and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _terminate)
    try:
        argv, params = _split_params(list(sys.argv[1:] if argv is None else argv))
        args = _parser().parse_args(argv)
        if args.command in ("list", "params", "run", "book", "pdf", "sweep", "atlas", "power", "mutants", "paper-scale") and not CHAPTERS_DIR.is_dir():
            raise UsageError(f"the book's sources are not next to this installation ({CHAPTERS_DIR} is missing): "
                             "install from a clone with `make setup` or `pip install -e .`")
        if hasattr(args, "param"):
            args.param = args.param + params
        elif params:
            raise UsageError("-p is an option of 'stagewise run'")
        if args.command == "list":
            return _list()
        if args.command == "params":
            return _params(args.chapter)
        if args.command == "run":
            return _run(args)
        if args.command == "clean":
            return _clean(args)
        if args.command == "pdf":
            return _pdf(args)
        if args.command == "figure":
            return _figure(args)
        if args.command in cli_sweep.COMMANDS:
            return cli_sweep.COMMANDS[args.command](args)
        return _book(args)
    except (ParameterError, UnknownChapterError, OutputRefused, UsageError, ResultsSchemaError, CatalogueError) as err:
        print(f"stagewise: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("stagewise: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:                      # `stagewise ... | head`: the reader stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())

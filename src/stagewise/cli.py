"""The ``stagewise`` command: list chapters, show parameters, run a chapter, build the book."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .chapters import UnknownChapterError, all_chapters, get_chapter
from .parameters import ParameterError, load_parameter_file

EXIT_BAD_INPUT, EXIT_RUN_FAILED, EXIT_CHECKS_FAILED = 2, 1, 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stagewise", description="Run the chapters of 'Learning in Stages' with your own parameters.")
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
                   help="set a parameter (repeatable); lists as [1,2] or 1,2")
    r.add_argument("-f", "--param-file", metavar="YAML", help="parameters from a YAML file (-p wins)")
    r.add_argument("--out", type=Path, metavar="DIR",
                   help="run folder (default: a new runs/<chapter>/<time>); a failed run never replaces it")
    r.add_argument("--strict", action="store_true", help="exit 3 when a numerical check fails")
    r.add_argument("--quiet", action="store_true", help="no progress bar over cells")
    b = sub.add_parser(
        "book", help="execute stale chapters and build the HTML book",
        description="Execute every chapter whose code changed (chapter, src/, requirements) into "
                    "book/executed/<chapter>, then build _build/html with warnings as errors.")
    b.add_argument("--force", action="store_true", help="execute every chapter again")
    b.add_argument("--dry-run", action="store_true", help="only say which chapters would be executed")
    b.add_argument("--no-html", action="store_true", help="execute chapters but skip the HTML build")
    b.add_argument("--strict", action="store_true", help="exit 3 when any chapter has a failed check")
    b.add_argument("--clean", action="store_true", help="remove _build and book/executed first")
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
    return 0


def _run(args: argparse.Namespace) -> int:
    from .runner import RunFailed, default_run_folder, execute, prepare

    overrides = load_parameter_file(args.param_file) if args.param_file else {}
    overrides.update(dict(args.param))
    chapter, parameters = prepare(args.chapter, overrides)
    folder = args.out or default_run_folder(chapter.name)
    print(f"stagewise: running {chapter.name} into {folder}", file=sys.stderr)
    try:
        outcome = execute(chapter, parameters, folder, progress=not args.quiet and sys.stderr.isatty())
    except RunFailed as err:
        print(f"stagewise: run failed: {err}; partial run kept in {err.folder}", file=sys.stderr)
        return EXIT_RUN_FAILED
    failed = outcome.failed_checks
    print(outcome.folder)
    if failed:
        print(f"stagewise: {len(failed)} check(s) failed: {', '.join(failed)}", file=sys.stderr)
        return EXIT_CHECKS_FAILED if args.strict else 0
    return 0


def _book(args: argparse.Namespace) -> int:
    from . import book
    from .runner import RunFailed, execute, prepare

    if args.clean:
        book.clean()
    plans = book.plan(force=args.force)
    for item in plans:
        print(f"{item.chapter.name:24s} {'execute: ' + item.reason if item.reason else 'up to date'}")
    if args.dry_run:
        return 0
    for item in plans:
        if item.reason is None:
            continue
        started = time.time()
        chapter, parameters = prepare(item.chapter.name, {})
        try:
            execute(chapter, parameters, item.folder)
        except RunFailed as err:
            print(f"stagewise: {chapter.name} failed: {err}; partial run kept in {err.folder}", file=sys.stderr)
            return EXIT_RUN_FAILED
        print(f"{chapter.name:24s} executed in {time.time() - started:.0f} s")
    failed = {p.chapter.name: book.failed_checks(p.chapter) for p in plans}
    failed = {k: v for k, v in failed.items() if v}
    for name, checks in failed.items():
        print(f"stagewise: {name}: failed check(s): {', '.join(checks)}", file=sys.stderr)
    if not args.no_html:
        print(f"html built in {book.render_html():.0f} s: {book.BUILD_DIR / 'html' / 'index.html'}")
    return EXIT_CHECKS_FAILED if failed and args.strict else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        if args.command == "params":
            return _params(args.chapter)
        if args.command == "run":
            return _run(args)
        return _book(args)
    except (ParameterError, UnknownChapterError) as err:
        print(f"stagewise: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("stagewise: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

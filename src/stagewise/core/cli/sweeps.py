"""The ``sweep`` and ``collect`` commands of the command line (see :mod:`.sweep`, :mod:`.collect`)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from stagewise.core.run.registry import get_chapter


class UsageError(ValueError):
    """A command line that argparse (or the -p pre-pass) cannot read: one line, exit 2."""


def add_parsers(sub) -> None:
    w = sub.add_parser(
        "sweep", help="run a chapter over a grid of parameters on Dask",
        description="Run CHAPTER at every point of a grid (a YAML file: NAME: [values] axes of a product, "
                    "optional 'zip:' groups that vary together, 'seeds: N' shorthand). Every point is validated "
                    "before anything runs. Points run as ordinary runs into DIR/points/<id> on an embedded "
                    "LocalCluster (one process per core) or on --scheduler; DIR/sweep.json lists them. "
                    "Rerunning skips points already complete with the current code. At the end the runs are "
                    "collected into DIR/sweep.csv. Exit status: 0 all points complete, 1 some failed, 2 bad "
                    "input, 130 interrupted.")
    w.add_argument("chapter")
    w.add_argument("--grid", required=True, metavar="YAML", help="the grid file")
    w.add_argument("--out", type=Path, metavar="DIR", help="sweep folder (default: runs/<chapter>-sweep-<grid name>)")
    _dask_options(w)
    w.add_argument("--dry-run", action="store_true", help="validate the grid and list its points; run nothing")
    _plot_options(w)
    a = sub.add_parser(
        "atlas", help="rerun chapters over their parameter atlas (tests/atlas/<chapter>.yaml) and judge every run",
        description="Run every parameter set of each chapter's atlas (tests/atlas/<chapter>.yaml, a sweep grid of "
                    "non-default parameters over the allowed ranges) with 'stagewise sweep' (LocalCluster on every "
                    "core, or --scheduler; points complete with the current code are skipped), then judge each run: "
                    "it must exit 0 and every check must pass or be 'not run' / 'not reproduced at this budget' "
                    "with a reason. Writes DIR/atlas.json. Exit status: 0 every point holds, 1 some point falls "
                    "short (listed), 2 bad input, 130 interrupted.")
    a.add_argument("chapters", nargs="*", metavar="CHAPTER", help="chapters (default: every chapter with an atlas)")
    a.add_argument("--ci", action="store_true", help="only the points each atlas file lists under 'ci:' and the exercise marked ci (fast)")
    a.add_argument("--exercises", action="store_true",
                   help="only the exercises (with --ci, the one marked ci per chapter), not the other points")
    a.add_argument("--out", type=Path, metavar="DIR", help="atlas folder (default: runs/atlas, or runs/atlas-ci)")
    _dask_options(a)
    m = sub.add_parser(
        "power", help="run each chapter's catalogue of realistic bugs and write the matrix bug x check",
        description="Run CHAPTER unmodified and once per bug of its catalogue (stagewise.<chapter>.bugs: a "
                    "function of the experiment or measurement code replaced by a plausible slip) at default "
                    "parameters, each an ordinary run on Dask (LocalCluster on every core, or --scheduler; "
                    "resumable: runs complete with the current code are skipped). A theorem row kills a bug when "
                    "it passes unmodified and fails under the bug; a crash is no kill. Writes the matrix to "
                    "book/power/<chapter>.json (the book's appendix 'What the checks can catch' is made from it). "
                    "--ci: only the one bug each catalogue marks for CI, at the chapter's CI atlas point (the first "
                    "'ci:' point of tests/atlas/<chapter>.yaml, whose unmodified run the nbmake lane judges in CI), "
                    "no baseline, nothing stored. Exit status: "
                    "0 every bug killed, 1 some bug survived or crashed, 2 bad input, 130 interrupted.")
    m.add_argument("chapters", nargs="*", metavar="CHAPTER", help="chapters (default: all)")
    m.add_argument("--ci", action="store_true", help="only each catalogue's CI bug, at the CI atlas point, matrix not stored (fast)")
    m.add_argument("--restamp", action="store_true",
                   help="run nothing: mark a stored matrix current again after a change of the chapter's prose "
                        "only (refused unless the matrix was current at HEAD and, since HEAD, only the chapter's "
                        "Markdown changed, with its code cells and front matter identical)")
    m.add_argument("--out", type=Path, metavar="DIR", help="run folder (default: runs/power, or runs/power-ci)")
    _dask_options(m)
    u = sub.add_parser(
        "mutants", help="measure a sample of a mutation tool's mutants against each chapter's tests and checks",
        description="Draw a seeded random sample of the mutants that cosmic-ray's operators (arithmetic and "
                    "comparison operators, signs, booleans, numbers, loops) make of each chapter's science modules "
                    "(src/stagewise/<chapter>/, without bugs, figures, parameters, reference). Each mutant is tried "
                    "against the chapter's unit tests that import its module; those they miss run through the "
                    "chapter at default parameters with the unmodified chapter beside them, on Dask (LocalCluster "
                    "on every core, or --scheduler). Killed: a unit test or a passing row fails, or a published "
                    "finding changes; crashed: the run stops (shown apart, counted as detected); equivalent: every "
                    "result and figure array is identical to the unmodified run's. Resumable: outcomes measured on "
                    "the same code are kept. Writes book/mutants/<chapter>.json (shown on the verification page). "
                    "Exit status: 0 done (survivors are listed, not an error), 2 bad input, 130 interrupted.")
    u.add_argument("chapters", nargs="*", metavar="CHAPTER", help="chapters (default: all)")
    u.add_argument("--sample", type=int, default=8, metavar="N",
                   help="mutants per chapter (default: 8, so that make power stays within about two hours on two cores)")
    u.add_argument("--seed", type=int, default=0, help="seed of the sample (default: 0)")
    u.add_argument("--out", type=Path, metavar="DIR", help="run folder (default: runs/mutants)")
    _dask_options(u)
    s = sub.add_parser(
        "paper-scale", help="run and store the runs at the paper's scale listed in book/paper-scale.yaml",
        description="Run each stored run of book/paper-scale.yaml (a chapter at a paper preset or a long budget) "
                    "that is missing or stale, on Dask (LocalCluster on every core, or --scheduler; resumable: a "
                    "complete run folder of the current code is stored, not run again), into "
                    "runs/paper-scale/<chapter>/points/<id>, and keep its results and figure data in "
                    "book/paper-scale/<id>/, where the book shows them (a run with a failed check is not stored). "
                    "Exit status: 0 every listed run stored and current, 1 some run failed or was not stored, "
                    "2 bad input, 130 interrupted.")
    s.add_argument("ids", nargs="*", metavar="ID", help="stored runs (default: all)")
    s.add_argument("--list", action="store_true", help="list the stored runs and their state; run nothing")
    _dask_options(s)
    k = sub.add_parser(
        "collect", help="collect a folder of runs into one table",
        description="Collect every run under DIR (each folder holding a results.json) into DIR/sweep.csv "
                    "(and sweep.parquet with pyarrow): one row per run with its parameters, values and checks.")
    k.add_argument("dir", type=Path, metavar="DIR")
    _plot_options(k)


def _dask_options(p: argparse.ArgumentParser) -> None:
    """Where the runs go: an existing Dask scheduler, or an embedded LocalCluster of N workers."""
    p.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--workers", type=int, default=0, metavar="N",
                   help="worker processes of the embedded LocalCluster (default: one per core)")


def _plot_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plot", metavar="VALUE", help="also draw this named value ...")
    p.add_argument("--against", metavar="PARAM", help="... against this parameter, seeds aggregated "
                   "(DIR/sweep-<VALUE>-vs-<PARAM>.{pdf,svg,png})")


def _collect_and_plot(directory: Path, args: argparse.Namespace) -> None:
    from stagewise.core.sweep import collect
    rows, table = collect.collect(directory)
    print(f"stagewise: {len(rows)} runs collected into {table}")
    if args.plot:
        paths = collect.plot(rows, args.plot, args.against, directory, stem=f"sweep-{args.plot}-vs-{args.against}")
        print(f"stagewise: figure {paths[0].with_suffix('')}.{{pdf,svg,png}}")


def _check_plot_options(args: argparse.Namespace) -> None:
    if bool(args.plot) != bool(args.against):
        raise UsageError("--plot VALUE and --against PARAM go together")


def sweep_command(args: argparse.Namespace) -> int:
    from stagewise.core.sweep import grid as grids
    from stagewise.core.sweep import engine as sweep
    _check_plot_options(args)
    if args.workers < 0:
        raise UsageError(f"--workers must be at least 1 (0: one per core), got {args.workers}")
    grid, points = grids.load(args.chapter, args.grid)      # every point validated: exit 2 before anything runs
    if args.dry_run:
        print(json.dumps([{"id": p["id"], "overrides": p["overrides"]} for p in points], indent=1, default=str))
        return 0
    directory = args.out or Path("runs") / f"{args.chapter}-sweep-{Path(args.grid).stem}"
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--out {directory} is a file, not a sweep folder")
    if directory.is_dir() and any(directory.iterdir()) and not (directory / sweep.MANIFEST).is_file():
        raise UsageError(f"--out {directory} is not empty and holds no {sweep.MANIFEST}: refusing to write into it")
    results = sweep.sweep(args.chapter, grid, points, directory, args.scheduler, args.workers)
    failed = [r for r in results if r.status == "failed"]
    if any(r.status != "failed" for r in results):
        _collect_and_plot(directory, args)
    if failed:
        print(f"stagewise: {len(failed)} of {len(results)} points failed: {', '.join(r.id for r in failed)} "
              f"(kept as failed runs under {directory / 'points'})", file=sys.stderr)
        return 1
    return 0


def atlas_command(args: argparse.Namespace) -> int:
    import time

    from stagewise.core.sweep import atlas
    if args.workers < 0:
        raise UsageError(f"--workers must be at least 1 (0: one per core), got {args.workers}")
    chapters = args.chapters or atlas.chapters_with_atlas()
    for name in chapters:
        get_chapter(name)                                   # an unknown chapter: one line, exit 2
    directory = args.out or Path("runs") / ("atlas-ci" if args.ci else "atlas")
    started = time.time()
    verdicts = atlas.run(chapters, directory, args.ci, args.scheduler, args.workers, points=not args.exercises)
    seconds = time.time() - started
    lines = atlas.summary(verdicts)
    bad = [v for v in verdicts if v.problems]
    from stagewise.core.run.rundir import write_text_atomic
    directory.mkdir(parents=True, exist_ok=True)
    write_text_atomic(directory / "atlas.json", json.dumps(
        {"chapters": chapters, "ci": args.ci, "exercises_only": args.exercises, "wall_seconds": round(seconds, 1),
         "points": [vars(v) for v in verdicts]}, indent=2, default=str))
    print("\n".join(lines))
    print(f"stagewise: atlas of {len(chapters)} chapter(s), {len(verdicts)} parameter sets in {seconds:.0f} s: "
          f"{len(verdicts) - len(bad)} hold, {len(bad)} fall short ({directory / 'atlas.json'})")
    return 1 if bad else 0


def paper_scale_command(args: argparse.Namespace) -> int:
    from stagewise.core.sweep import paper_scale
    if args.workers < 0:
        raise UsageError(f"--workers must be at least 1 (0: one per core), got {args.workers}")
    try:
        runs = paper_scale.load()
        if args.list:
            for r in runs:
                print(f"{r.id:32s} {r.chapter:22s} {paper_scale.state(r):8s} {r.title}")
            return 0
        outcome = paper_scale.run(args.ids or None, args.scheduler, args.workers)
    except paper_scale.PaperScaleError as err:
        raise UsageError(str(err)) from None
    for run_id, what in outcome.items():
        print(f"stagewise: {run_id}: {what}")
    return 0 if all(w.startswith(("current", "stored", "ran and stored")) for w in outcome.values()) else 1


def power_command(args: argparse.Namespace) -> int:
    import time

    from stagewise.core.sweep import power
    from stagewise.core.run.registry import all_chapters
    if args.workers < 0:
        raise UsageError(f"--workers must be at least 1 (0: one per core), got {args.workers}")
    chapters = args.chapters or [c.name for c in all_chapters()]
    for name in chapters:
        get_chapter(name)                                   # an unknown chapter: one line, exit 2
    if args.restamp:
        for name in chapters:
            print(f"stagewise: {restamp(name)}")
        return 0
    directory = args.out or Path("runs") / ("power-ci" if args.ci else "power")
    started = time.time()
    found = power.run(chapters, directory, args.ci, args.scheduler, args.workers)
    seconds = time.time() - started
    short = 0
    for matrix in found:
        print("\n".join(power.summary(matrix)))
        short += matrix["total"] - matrix["killed"]
        if not args.ci:
            print(f"stagewise: matrix stored in {power.store(matrix)}")
    killed, total = sum(m["killed"] for m in found), sum(m["total"] for m in found)
    print(f"stagewise: power of {len(chapters)} chapter(s): {killed} of {total} bugs killed in {seconds:.0f} s")
    return 1 if short else 0


def mutants_command(args: argparse.Namespace) -> int:
    from stagewise.core.run.registry import all_chapters
    from stagewise.core.sweep import mutant_run, mutants
    if args.workers < 0:
        raise UsageError(f"--workers must be at least 1 (0: one per core), got {args.workers}")
    if not 1 <= args.sample <= 10_000:
        raise UsageError(f"--sample must be between 1 and 10000 mutants per chapter, got {args.sample}")
    if args.seed < 0:
        raise UsageError(f"--seed must be at least 0, got {args.seed}")
    chapters = args.chapters or [c.name for c in all_chapters()]
    for name in chapters:
        get_chapter(name)                                   # an unknown chapter: one line, exit 2
    try:
        import cosmic_ray  # noqa: F401
    except ImportError:
        raise UsageError("cosmic-ray is not installed: run `make setup` (it installs tools/mutants/requirements.txt)"
                         ) from None
    for found in mutant_run.run(chapters, args.out or Path("runs") / "mutants", args.sample, args.seed,
                                args.scheduler, args.workers):
        print("\n".join(mutants.summary(found)))
        print(f"stagewise: stored in {mutants.store(found)}")
    return 0


def _code_of(markdown: str) -> tuple:
    """What of a chapter's source can change what it computes: its front matter and its code cells (with tags)."""
    import jupytext
    notebook = jupytext.reads(markdown, fmt="md:myst")
    cells = tuple((c.source, tuple(c.metadata.get("tags", []))) for c in notebook.cells if c.cell_type == "code")
    return json.dumps(notebook.metadata.get("stagewise", {}), sort_keys=True, default=str), cells


def restamp(name: str) -> str:
    """Mark chapter ``name``'s stored matrix current after a prose-only change (see ``--restamp``); a one-line
    account. Refused (UsageError) unless the matrix's fingerprint is that of the files at HEAD and the only file of
    the fingerprint that differs from HEAD is the chapter's Markdown, whose front matter and code cells are
    identical: the prose, the theorem boxes' text and the captions change no check."""
    import subprocess
    import tempfile

    from stagewise.core.sweep import power
    from stagewise.core.run.provenance import chapter_code_fingerprint
    from stagewise.core.run.registry import PROJECT_ROOT
    chapter = get_chapter(name)
    path = power.stored_path(name)
    try:
        stored = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        raise UsageError(f"{name}: no stored matrix to restamp ({path}); run stagewise power {name}") from None
    current = chapter_code_fingerprint(name, chapter.source)
    if stored.get("fingerprint") == current:
        return f"{name}: the stored matrix is current; nothing to restamp"
    source = chapter.source.relative_to(PROJECT_ROOT).as_posix()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", "HEAD", "src", source, "requirements.txt", "requirements.lock",
                                  "pyproject.toml"], cwd=PROJECT_ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        at_head = chapter_code_fingerprint(name, Path(tmp) / source, root=Path(tmp))
        if stored.get("fingerprint") != at_head:
            raise UsageError(f"{name}: the stored matrix is not that of HEAD's code; run stagewise power {name}")
        head_text = (Path(tmp) / source).read_text()
        (Path(tmp) / source).write_text(chapter.source.read_text())            # HEAD's code, today's chapter
        if chapter_code_fingerprint(name, Path(tmp) / source, root=Path(tmp)) != current:
            raise UsageError(f"{name}: code beside the chapter's Markdown changed since HEAD (its package, core, "
                             f"numerics or requirements); run stagewise power {name}")
        if _code_of(head_text) != _code_of(chapter.source.read_text()):
            raise UsageError(f"{name}: a code cell or the front matter changed since HEAD; run stagewise power {name}")
    stored.setdefault("restamped", []).append({"from": stored["fingerprint"], "to": current,
                                               "why": "prose-only change of the chapter (code cells and front "
                                                      "matter identical to HEAD's)"})
    stored["fingerprint"] = current
    power.store(stored)
    return f"{name}: matrix restamped current (prose-only change since HEAD; code cells and front matter identical)"


def collect_command(args: argparse.Namespace) -> int:
    _check_plot_options(args)
    if not args.dir.is_dir():
        raise UsageError(f"{args.dir} is not a folder")
    try:
        _collect_and_plot(args.dir, args)
    except (FileNotFoundError, KeyError) as err:
        raise UsageError(str(err).strip("'\"")) from None
    return 0




#: The commands of this module, by name (the command line's dispatch).
COMMANDS = {"sweep": sweep_command, "atlas": atlas_command, "collect": collect_command, "power": power_command,
            "mutants": mutants_command, "paper-scale": paper_scale_command}

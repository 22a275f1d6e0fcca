"""Running a sample of mutants (:mod:`.mutants`): first the chapter's unit tests that can see the mutated module,
then, for the mutants they miss, the chapter at its default parameters on the Dask sweep machinery (``stagewise
mutants``)."""
from __future__ import annotations

import ast
import concurrent.futures
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from stagewise.core.run.registry import PROJECT_ROOT, get_chapter
from stagewise.core.sweep.mutants import (BASELINE, EQUIVALENT, MISSED, TOOL, UNIT, Mutant, environment, judge,
                                          mutated_source, result, sample)

#: A unit stage that runs longer than this (a mutant that never ends a loop) kills the mutant.
UNIT_TIMEOUT_S = 600.0


def _imports(path: Path, package: str) -> set[str]:
    """The modules of ``stagewise.<package>`` that the file imports (absolute or relative)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = f"stagewise.{package}" + (f".{base}" if base else "")
            if base == f"stagewise.{package}":
                found |= {f"{base}.{a.name}" for a in node.names}
            elif base.startswith(f"stagewise.{package}."):
                found.add(".".join(base.split(".")[:3]))
        elif isinstance(node, ast.Import):
            found |= {".".join(a.name.split(".")[:3]) for a in node.names if a.name.startswith(f"stagewise.{package}.")}
    return found


def unit_tests_for(chapter: str, module: str) -> list[Path]:
    """The chapter's test files whose imports reach ``module`` (through the chapter's own modules), those that
    import it directly first."""
    package = chapter.replace("-", "_")
    source = PROJECT_ROOT / "src" / "stagewise" / package
    graph = {f"stagewise.{package}.{p.stem}": _imports(p, package) for p in source.glob("*.py")}

    def reaches(names: set[str], seen: set[str]) -> bool:
        for name in names - seen:
            seen.add(name)
            if name == module or reaches(graph.get(name, set()), seen):
                return True
        return False
    tests = sorted((PROJECT_ROOT / "tests" / package).glob("test_*.py"))
    direct = [t for t in tests if module in _imports(t, package)]
    return direct + [t for t in tests if t not in direct and reaches(_imports(t, package), set())]


def unit_stage(chapter: str, mutant: Mutant, source: str | None, folder: Path, timeout: float) -> dict[str, Any]:
    """Run the unit tests that can see the mutant's module, with the mutant installed; the outcome."""
    started = time.time()
    if source is None:
        return {"outcome": EQUIVALENT, "seconds": 0.0, "detail": "cosmic-ray made no change at this site"}
    tests = unit_tests_for(chapter, mutant.module)
    if not tests:
        return {"outcome": MISSED[1], "seconds": 0.0, "detail": "no unit test imports the module"}
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               **environment(mutant, source, folder, timeout + 60))
    argv = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *map(str, tests)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=PROJECT_ROOT, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"outcome": UNIT, "seconds": time.time() - started, "detail": f"the unit tests ran past {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.strip()] or \
        [line for line in done.stderr.splitlines() if line.strip()] or [""]
    tail = lines[-1]                      # pytest's summary line ("1 failed, 3 passed in 4.7s")
    # pytest: 0 all passed, 5 none collected; anything else (1 failures, 2 errors at collection) is a kill
    outcome = MISSED[0] if done.returncode in (0, 5) else UNIT
    return {"outcome": outcome, "seconds": time.time() - started, "detail": str(tail)[:300]}


def _unit_record(folder: Path, mutant: Mutant, fingerprint: str) -> dict[str, Any] | None:
    """A unit-stage outcome measured before on the same code (the stage resumes)."""
    try:
        record = json.loads((folder / "unit" / f"{mutant.id}.json").read_text())
    except (OSError, ValueError):
        return None
    return record if record.get("fingerprint") == fingerprint else None


def run(chapters: list[str], out: Path, size: int, seed: int = 0, scheduler: str | None = None, workers: int = 0,
        say: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Measure each chapter's sample: the unit stage for all of them (``workers`` at a time), then the mutants the
    unit tests missed, with the unmodified chapter, on one Dask cluster. Resumable: outcomes measured on the same
    code are kept. Returns one stored-form result per chapter."""
    from stagewise.core.run.provenance import chapter_code_fingerprint
    from stagewise.core.run.rundir import write_text_atomic
    from stagewise.core.sweep import engine
    workers = workers or len(os.sched_getaffinity(0))
    out = out.resolve()           # the hook's folder goes on PYTHONPATH: the chapter's kernel runs elsewhere
    started = time.time()
    plans = {}
    for chapter in chapters:
        chosen, population = sample(chapter, size, seed)
        fingerprint = chapter_code_fingerprint(chapter, get_chapter(chapter).source)
        plans[chapter] = (chosen, population, fingerprint, {m.id: mutated_source(m) for m in chosen})
        say(f"stagewise: {chapter}: {len(chosen)} of {population} mutants sampled (seed {seed})")
    unit: dict[tuple[str, str], dict[str, Any]] = {}
    todo = []
    for chapter, (chosen, _, fingerprint, sources) in plans.items():
        for m in chosen:
            record = _unit_record(out / chapter, m, fingerprint)
            if record is None:
                todo.append((chapter, m))
            else:
                unit[(chapter, m.id)] = record
    say(f"stagewise: unit stage: {len(todo)} mutants to test, {len(unit)} measured before")

    def unit_one(item):
        chapter, m = item
        record = unit_stage(chapter, m, plans[chapter][3][m.id], out / chapter, UNIT_TIMEOUT_S)
        record["fingerprint"] = plans[chapter][2]
        (out / chapter / "unit").mkdir(parents=True, exist_ok=True)
        write_text_atomic(out / chapter / "unit" / f"{m.id}.json", json.dumps(record))
        return item, record
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for n, ((chapter, m), record) in enumerate(pool.map(unit_one, todo), 1):
            unit[(chapter, m.id)] = record
            say(f"  [unit {n}/{len(todo)}] {chapter} {m.id} ({m.operator.split('/')[-1]}, line {m.line}): "
                f"{record['outcome']} ({record['seconds']:.0f} s)")
    parts = []
    from stagewise.core.run.runner import prepare
    for chapter, (chosen, _, _, sources) in plans.items():
        _, parameters = prepare(chapter, {})
        limit = 4 * float(get_chapter(chapter).expected_seconds(parameters) or 120.0) + 300.0
        missed = [m for m in chosen if unit[(chapter, m.id)]["outcome"] in MISSED]
        points = [{"id": BASELINE, "overrides": {}, "parameters": parameters}]
        points += [{"id": m.id, "overrides": {}, "parameters": parameters,
                    "environment": environment(m, sources[m.id], out / chapter, limit)} for m in missed]
        parts.append((chapter, {"mutants": TOOL, "seed": seed, "size": size}, points, out / chapter / "chapter"))
    ran = engine.sweep_many(parts, scheduler, workers, say)
    found = []
    for (chapter, (chosen, population, fingerprint, _)), results in zip(plans.items(), ran):
        messages = {r.id: r.message for r in results}
        chapter_dir = out / chapter / "chapter" / "points"
        base = engine.complete_results(chapter_dir / BASELINE)
        if base is None:
            raise RuntimeError(f"{chapter}: the unmodified run did not complete; see {chapter_dir / BASELINE}")
        rows = []
        for m in chosen:
            first = unit[(chapter, m.id)]
            row = {"id": m.id, **asdict(m), "unit": first}
            if first["outcome"] in MISSED:
                row.update(judge(base, chapter_dir / BASELINE, engine.complete_results(chapter_dir / m.id),
                                 chapter_dir / m.id, messages.get(m.id, "")))
            else:
                row.update(outcome=first["outcome"], detail=first["detail"])
            rows.append(row)
        found.append(result(chapter, rows, population, seed, fingerprint, time.time() - started))
    return found



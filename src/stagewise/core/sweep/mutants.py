"""A mutation tool's broad measure of what a chapter's tests and checks catch: a sample of the mutants that
cosmic-ray's operators make of the chapter's science modules, each tried against the chapter's fast unit tests and,
when they miss it, through the chapter at its default parameters on the Dask sweep machinery.

The hand-written catalogue (:mod:`.power`) holds realistic bugs; the mutants are the complement nobody chose:
every arithmetic operator, comparison, sign, boolean, constant, loop and ``break`` of the science code is a
candidate (:data:`OPERATORS`), and a seeded random sample of them is measured. A mutant is

- **killed by the unit tests** when the chapter's tests that import its module (directly or through other modules
  of the chapter) fail or time out;
- otherwise run through the chapter: **killed by the chapter** when a row that passes unmodified fails, or a
  published finding changes (what ``--strict`` rejects); **crashed** when the run stops with an error or times
  out (a reader sees it fail: detected, shown apart);
- **equivalent** when the chapter's results (values, rows, claims, hypotheses) and every figure's data are
  identical to the unmodified run's, bit for bit: at the default parameters it changes nothing a reader can see;
- **survived** otherwise: an output changed and nothing said so.

The score is (killed + crashed) / (sampled - equivalent). Each mutant runs in its own processes: a
``sitecustomize`` on ``PYTHONPATH`` (:func:`write_hook`) swaps the mutated source in when the module is imported,
so no file of the project is ever changed and mutants run side by side. The result is stored in
``book/mutants/<chapter>.json`` with the chapter's code fingerprint (stale when the code changes) and shown on the
chapter's verification page next to the catalogue's matrix.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stagewise.core.run.registry import PROJECT_ROOT
from stagewise.core.sweep.stored import ChapterResults

MUTANTS_DIR = PROJECT_ROOT / "book" / "mutants"
MUTANTS_DIR_ENV = "STAGEWISE_MUTANTS_DIR"
MUTANT_ENV = "STAGEWISE_MUTANT"
TOOL = "cosmic-ray"
#: The modules of a chapter that are not its science: the package file, the bug catalogue, the drawing of figures
#: (restyled from data the run records), the validation of parameters and the plain reference implementations.
NOT_SCIENCE = ("__init__", "bugs", "figures", "parameters", "reference")
_ARITHMETIC = ("Add", "Sub", "Mul", "Div", "Pow")
_COMPARISON = ("Eq", "NotEq", "Lt", "LtE", "Gt", "GtE")
#: cosmic-ray's operators used: arithmetic and comparison operators replaced by one another (bitwise, shift, modulo
#: and identity replacements of float code only raise a TypeError at once), signs, ``not``, booleans, ``and``/``or``,
#: numbers, ``break``/``continue`` and loops that run zero times.
OPERATORS = tuple(
    [f"core/ReplaceBinaryOperator_{a}_{b}" for a in _ARITHMETIC for b in _ARITHMETIC if a != b]
    + [f"core/ReplaceComparisonOperator_{a}_{b}" for a in _COMPARISON for b in _COMPARISON if a != b]
    + ["core/ReplaceUnaryOperator_USub_UAdd", "core/ReplaceUnaryOperator_Delete_USub",
       "core/ReplaceUnaryOperator_Delete_Not", "core/AddNot", "core/ReplaceTrueWithFalse",
       "core/ReplaceFalseWithTrue", "core/ReplaceAndWithOr", "core/ReplaceOrWithAnd", "core/NumberReplacer",
       "core/ReplaceBreakWithContinue", "core/ReplaceContinueWithBreak", "core/ZeroIterationForLoop"])
UNIT, CHAPTER_ROWS, CRASHED, EQUIVALENT, SURVIVED = (
    "killed by the unit tests", "killed by the chapter", "crashed", "equivalent", "survived")
DETECTED = (UNIT, CHAPTER_ROWS, CRASHED)
TIMED_OUT = "stagewise: the mutant ran out of time"
BASELINE = "baseline"
#: Values that measure the machine's speed, not the science (the transformer's milliseconds per step): they differ
#: between any two runs, so they are left out of the bit-for-bit comparison.
CLOCK = re.compile(r"(_ms_per_step|_seconds)$")
#: What the unit stage leaves to the chapter: the tests ran and passed, or no test imports the module.
MISSED = ("missed", "no unit test")


@dataclass(frozen=True)
class Mutant:
    """One mutation: cosmic-ray's ``operator`` applied at its ``occurrence``-th site of ``module``."""
    module: str          # stagewise.<chapter>.<module>
    path: str            # the module's file, relative to the project
    operator: str
    occurrence: int
    line: int
    definition: str      # the function or class it sits in

    @property
    def id(self) -> str:
        key = f"{self.module}:{self.operator}:{self.occurrence}"
        return f"{self.module.rsplit('.', 1)[-1]}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def science_modules(chapter: str) -> list[Path]:
    package = PROJECT_ROOT / "src" / "stagewise" / chapter.replace("-", "_")
    return sorted(p for p in package.glob("*.py") if p.stem not in NOT_SCIENCE)


def all_mutants(chapter: str) -> list[Mutant]:
    """Every mutant of the chapter's science modules that :data:`OPERATORS` make (cosmic-ray's enumeration)."""
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes, get_ast_from_path
    from cosmic_ray.ast.ast_query import ASTQuery
    found = []
    for path in science_modules(chapter):
        tree = get_ast_from_path(path)
        module = "stagewise." + ".".join(path.relative_to(PROJECT_ROOT / "src" / "stagewise").with_suffix("").parts)
        for name in OPERATORS:
            operator = cosmic_ray.plugins.get_operator(name)()
            sites = ((node, start) for node in ast_nodes(tree) for start, _ in operator.mutation_positions(node))
            for occurrence, (node, start) in enumerate(sites):
                found.append(Mutant(module, str(path.relative_to(PROJECT_ROOT)), name, occurrence, start[0],
                                    ASTQuery(node).get_definition_name() or ""))
    return found


def sample(chapter: str, size: int, seed: int = 0) -> tuple[list[Mutant], int]:
    """A seeded random sample of ``size`` mutants (all of them when fewer) and the number there are."""
    every = all_mutants(chapter)
    chosen = random.Random(f"{chapter}:{seed}").sample(every, min(size, len(every)))
    return sorted(chosen, key=lambda m: (m.path, m.line, m.operator)), len(every)


def mutated_source(mutant: Mutant) -> str | None:
    """The module's source with the mutation applied (None when the site no longer exists)."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code
    source = (PROJECT_ROOT / mutant.path).read_text()
    return mutate_code(source, cosmic_ray.plugins.get_operator(mutant.operator)(), mutant.occurrence)


HOOK = '''"""Written by stagewise.core.sweep.mutants: swap one module's source for its mutant (STAGEWISE_MUTANT)."""
import json, os
_spec = os.environ.get("STAGEWISE_MUTANT")
if _spec:
    import importlib.abc, importlib.machinery, importlib.util, sys, threading
    with open(_spec, encoding="utf-8") as _f:
        _m = json.load(_f)

    class _Loader(importlib.machinery.SourceFileLoader):
        def get_code(self, fullname):
            return compile(_m["source"], self.path, "exec", dont_inherit=True)

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != _m["module"]:
                return None
            return importlib.util.spec_from_file_location(name, _m["file"], loader=_Loader(name, _m["file"]))

    sys.meta_path.insert(0, _Finder())

    def _out_of_time():
        print("%s after %s s" % (_m["timeout_message"], _m["timeout"]), file=sys.stderr, flush=True)
        os._exit(124)
    if _m.get("timeout"):
        _timer = threading.Timer(float(_m["timeout"]), _out_of_time)
        _timer.daemon = True
        _timer.start()
'''


def write_hook(folder: Path) -> Path:
    """The folder to put first on ``PYTHONPATH``: it holds the ``sitecustomize`` that installs a mutant."""
    hook = folder / "hook"
    hook.mkdir(parents=True, exist_ok=True)
    if not (hook / "sitecustomize.py").is_file() or (hook / "sitecustomize.py").read_text() != HOOK:
        (hook / "sitecustomize.py").write_text(HOOK)
    return hook


def environment(mutant: Mutant, source: str, folder: Path, timeout: float) -> dict[str, str]:
    """The environment that runs a process (and its subprocesses: the chapter's kernel) with the mutant."""
    spec = folder / "specs" / f"{mutant.id}.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(json.dumps({"module": mutant.module, "file": str(PROJECT_ROOT / mutant.path), "source": source,
                                "timeout": round(timeout), "timeout_message": TIMED_OUT}))
    path = os.pathsep.join(p for p in (str(write_hook(folder)), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, MUTANT_ENV: str(spec)}


# -- the chapter at its defaults ---------------------------------------------------------------------------

def outputs(results: dict[str, Any], folder: Path) -> tuple[str, dict[str, Any]]:
    """What a reader sees of a run, to compare bit for bit: the results' values, rows, claims and hypotheses
    (canonical JSON) and every figure's data arrays (bytes, dtype and shape)."""
    import numpy as np
    seen = {key: results.get(key) for key in ("values", "checks", "claims", "hypotheses")}
    seen["values"] = {k: v for k, v in (seen["values"] or {}).items() if not CLOCK.search(k)}
    arrays = {}
    for data in sorted((folder / "figures").glob("*.npz")):
        with np.load(data, allow_pickle=False) as npz:
            arrays.update({f"{data.stem}/{k}": (str(npz[k].dtype), npz[k].shape, npz[k].tobytes()) for k in npz.files})
    return json.dumps(seen, sort_keys=True, default=str), arrays


def public(message: str) -> str:
    """A run's error line without this machine's paths (it is shown on the book's pages)."""
    message = re.sub(r";? *partial run kept in \S+", "", message)
    return re.sub(r"(?:/[\w.+-]+){2,}/?", "<path>", message).strip()


def judge(base: dict[str, Any], base_folder: Path, results: dict[str, Any] | None, folder: Path,
          message: str) -> dict[str, Any]:
    """The outcome of a mutant's run of the chapter against the unmodified run."""
    from stagewise.core.checks.rows import rows_of
    from stagewise.core.run import findings
    if results is None:
        timed_out = message.startswith(TIMED_OUT)
        return {"outcome": CRASHED, "detail": public(message) or "the run did not complete", "timed_out": timed_out}
    passed = {r["name"] for r in rows_of(base) if r.get("passed") is True}
    failed = [r["name"] for r in rows_of(results) if r.get("passed") is False and r["name"] in passed]
    # a claim whose verdict moved from the unmodified run's: at the defaults, a published finding changed
    unmodified = {c["name"]: findings.verdict(c) for c in base.get("claims", [])}
    flipped = [c["name"] for c in results.get("claims", []) if findings.verdict(c) != unmodified.get(c["name"])]
    if failed or flipped:
        return {"outcome": CHAPTER_ROWS, "failed_rows": failed, "changed_findings": flipped,
                "detail": "; ".join(failed[:3] + [f"finding {n}" for n in flipped[:2]])}
    same = outputs(results, folder) == outputs(base, base_folder)
    return {"outcome": EQUIVALENT if same else SURVIVED,
            "detail": "every output identical to the unmodified run" if same else "outputs changed, no row failed"}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion k/n (95% for z = 1.96)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def result(chapter: str, rows: list[dict[str, Any]], population: int, seed: int, fingerprint: str,
           seconds: float) -> dict[str, Any]:
    """The stored form: every sampled mutant with its outcome, the counts and the score with its interval."""
    from importlib.metadata import version
    from stagewise.core.run.provenance import git_state
    counts = {k: sum(r["outcome"] == k for r in rows) for k in (*DETECTED, EQUIVALENT, SURVIVED)}
    detected = sum(counts[k] for k in DETECTED)
    judged = detected + counts[SURVIVED]
    return {"chapter": chapter, "tool": f"{TOOL} {version('cosmic-ray')}", "operators": list(OPERATORS),
            "modules": [str(p.relative_to(PROJECT_ROOT)) for p in science_modules(chapter)],
            "seed": seed, "population": population, "sampled": len(rows), "fingerprint": fingerprint,
            **git_state(), "run_seconds": round(seconds, 1), "counts": counts,
            "score": {"detected": detected, "non_equivalent": judged,
                      "fraction": detected / judged if judged else None, "interval": wilson(detected, judged)},
            "mutants": rows}


#: book/mutants/<chapter>.json (``STAGEWISE_MUTANTS_DIR`` points tests elsewhere).
STORED = ChapterResults(MUTANTS_DIR, MUTANTS_DIR_ENV)
stored_path, store, stored = STORED.path, STORED.write, STORED.read


def summary(found: dict[str, Any]) -> list[str]:
    s, c = found["score"], found["counts"]
    low, high = s["interval"]
    head = (f"{found['chapter']}: {s['detected']} of {s['non_equivalent']} non-equivalent mutants detected "
            + (f"({s['fraction']:.0%}, 95% interval {low:.0%} to {high:.0%})" if s["fraction"] is not None else "")
            + f"; {found['sampled']} sampled of {found['population']}: " + ", ".join(f"{v} {k}" for k, v in c.items()))
    lines = [head]
    for r in found["mutants"]:
        if r["outcome"] == SURVIVED:
            lines.append(f"  SURVIVED {r['id']}: {r['operator'].split('/')[-1]} at {r['path']}:{r['line']} "
                         f"({r['definition'] or 'module level'})")
    return lines

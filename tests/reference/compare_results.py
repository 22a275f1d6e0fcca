#!/usr/bin/env python3
"""Compare chapters' results.json against the references stored in this folder.

The references (``<chapter>.json``: parameters, values and checks at default parameters,
CPU, one torch thread) were taken before the package was reorganised into ``core/``,
``numerics/`` and one subpackage per chapter. A pure move must reproduce them exactly:

    python tests/reference/compare_results.py                 # book/executed/<chapter>/results.json
    python tests/reference/compare_results.py runs/a runs/b   # any run folders
    python tests/reference/compare_results.py --report        # list every value that moved, and by how much

Wall-clock timings (keys containing ``ms_per_step`` or ``seconds``) are skipped. Exit 0 when
every compared chapter matches exactly (values, check values, tolerances and
verdicts); 1 otherwise. With ``--report`` it always lists the differences (relative change for
numbers) and exits 0, for the closing note of a change that is allowed to move values.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Wall-clock measurements differ on every run; they are reported but never compared.
TIMINGS = ("ms_per_step", "seconds", "wall_time")
ROOT = HERE.parents[1]


def _flatten(value, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out or {prefix: []}
    return {prefix: value}


def _moved(a, b) -> str:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if a == b:
            return ""
        scale = max(abs(a), abs(b))
        rel = abs(a - b) / scale if scale and math.isfinite(scale) else float("inf")
        return f"{a!r} -> {b!r} (relative change {rel:.2e})"
    return "" if a == b else f"{a!r} -> {b!r}"


def compare(reference: dict, results: dict) -> list[str]:
    """Lines describing every difference in parameters, values and checks."""
    lines = []
    ref_checks = {c["name"]: c for c in reference["checks"]}
    new_checks = {c["name"]: {k: c.get(k) for k in ("name", "value", "tolerance", "passed")}
                  for c in results["checks"] + results.get("claims", [])}
    for section, old, new in (("parameters", reference["parameters"], results["parameters"]),
                              ("values", reference["values"], results["values"]),
                              ("checks", ref_checks, new_checks)):
        a, b = _flatten(old), _flatten(new)
        for key in sorted(set(a) | set(b)):
            if any(t in key for t in TIMINGS):
                continue
            if key not in b:
                lines.append(f"{section}: {key} missing (was {a[key]!r})")
            elif key not in a:
                lines.append(f"{section}: {key} new ({b[key]!r})")
            elif (change := _moved(a[key], b[key])):
                lines.append(f"{section}: {key}: {change}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, help="run folders (default: book/executed/<chapter>)")
    parser.add_argument("--report", action="store_true", help="list differences and exit 0")
    args = parser.parse_args(argv)
    runs = args.runs or sorted(p.parent for p in (ROOT / "book" / "executed").glob("*/results.json"))
    if not runs:
        print("compare_results: no results.json to compare (build the book first)", file=sys.stderr)
        return 1
    differ = 0
    for run in runs:
        results = json.loads((run / "results.json").read_text())
        ref_path = HERE / f"{results['chapter']}.json"
        if not ref_path.exists():
            print(f"{results['chapter']}: no reference stored")
            differ += 1
            continue
        lines = compare(json.loads(ref_path.read_text()), results)
        verdict = "identical to the reference" if not lines else f"{len(lines)} difference(s)"
        print(f"{results['chapter']}: {verdict}")
        for line in lines:
            print(f"  {line}")
        differ += bool(lines)
    return 0 if args.report or not differ else 1


if __name__ == "__main__":
    sys.exit(main())

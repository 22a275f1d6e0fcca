"""What ``stagewise run`` says at its end: failures by kind, rows without a verdict, and the summary line."""
from __future__ import annotations

import sys

#: ``--strict`` and a failed theorem, integrity or powerless row (the same status as stagewise.core.cli.main's).
EXIT_CHECKS_FAILED = 3


def report_checks(found: dict[str, list[str]], strict: bool) -> int:
    """Theorem failures, sanity failures (a bug of the code, not of a theorem) and rows without a verdict,
    each on its own line; exit 3 with --strict when anything failed (never for 'not run')."""
    if found["theorem"]:
        print(f"stagewise: {len(found['theorem'])} theorem check(s) FAILED: {', '.join(found['theorem'])}",
              file=sys.stderr)
    if found["sanity"]:
        print(f"stagewise: {len(found['sanity'])} sanity row(s) failed (consistency of the code, not a theorem): "
              f"{', '.join(found['sanity'])}", file=sys.stderr)
    if found["not_run"]:
        print(f"stagewise: {len(found['not_run'])} row(s) without a verdict: {'; '.join(found['not_run'])}",
              file=sys.stderr)
    if found["powerless"]:
        print(f"stagewise: {len(found['powerless'])} row(s) whose control is not rejected (the row cannot tell "
              f"the theory from the control): {'; '.join(found['powerless'])}", file=sys.stderr)
    return EXIT_CHECKS_FAILED if strict and (found["theorem"] or found["sanity"] or found["powerless"]) else 0


def report_run(outcome, strict: bool) -> int:
    """Report a finished run (its failures, then one summary line); the exit status."""
    from stagewise.core.run.pages import run_summary
    code = report_checks(outcome.failures, strict)
    findings = outcome.results.get("findings") or {}
    for f in findings.get("changed", []):
        where = ("a published finding changed" if findings.get("at_defaults")
                 else "differs from the published finding (these are not the default parameters: not a failure)")
        print(f"stagewise: {where}: {f['name']}: published {f['published']!r}, this run {f['measured']!r}",
              file=sys.stderr)
    if strict and findings.get("at_defaults") and findings.get("changed"):
        code = EXIT_CHECKS_FAILED
    print("\n".join("stagewise: " + line for line in run_summary(outcome.results)), file=sys.stderr)
    return code

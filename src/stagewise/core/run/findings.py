"""Published findings: the claims' verdicts at a chapter's default parameters, as a contract.

Each chapter states in ``book/published/<chapter>.yaml`` (claim name -> ``reproduced``, ``not reproduced at this
budget`` or ``contradicted``) the verdict its default run gives each claim of the paper's experiments, and its
story page says the same (the file sits beside the chapter's stored mutation matrix, outside its code, so that
publishing a verdict does not make the chapter stale; the book's strict build compares it with the executed run
afresh). :func:`compare` sets a run's claims against them: at the default parameters a differing
verdict (or a claim one side lacks) is a changed finding, which fails ``stagewise run --strict`` and the book's
strict build; at other parameters it is only reported.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from stagewise.core.checks.rows import PASS
from stagewise.core.run.registry import PROJECT_ROOT

PUBLISHED_DIR = PROJECT_ROOT / "book" / "published"


def published_path(chapter: str) -> Path:
    return PUBLISHED_DIR / f"{chapter}.yaml"


def published(chapter: str) -> dict[str, str]:
    """The chapter's published verdicts (empty when it publishes none)."""
    import yaml
    path = published_path(chapter)
    return dict(yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def verdict(claim: dict[str, Any]) -> str:
    return "reproduced" if claim.get("status") == PASS else str(claim.get("status"))


def compare(spec, parameters: dict[str, Any], claims: list[dict[str, Any]]) -> dict[str, Any]:
    """``at_defaults`` (only there do the published verdicts bind; the device aside), ``published``, ``changed``
    (each claim whose verdict differs from the published one, or that one side lacks)."""
    from stagewise.core.run.parameters import resolve
    stated = published(spec.name)
    defaults = resolve(spec.parameters, {}, spec.name)
    at_defaults = all(parameters.get(k) == v for k, v in defaults.items() if k != "device")
    measured = {c["name"]: verdict(c) for c in claims}
    changed = [{"name": n, "published": stated.get(n, "none"), "measured": measured.get(n, "none")}
               for n in sorted(set(stated) | set(measured)) if stated.get(n) != measured.get(n)]
    return {"at_defaults": at_defaults, "published": stated, "changed": changed}

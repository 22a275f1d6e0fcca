"""Published findings: the claims' verdicts at a chapter's default parameters, as a contract.

Each chapter states in its front matter (``published:``, claim name -> ``reproduced``, ``not reproduced at this
budget`` or ``contradicted``) the verdict its default run gives each claim of the paper's experiments, and its
story page says the same. :func:`compare` sets a run's claims against them: at the default parameters a differing
verdict (or a claim one side lacks) is a changed finding, which fails ``stagewise run --strict`` and the book's
strict build; at other parameters it is only reported.
"""
from __future__ import annotations

from typing import Any

from stagewise.core.checks.rows import PASS


def verdict(claim: dict[str, Any]) -> str:
    return "reproduced" if claim.get("status") == PASS else str(claim.get("status"))


def compare(spec, parameters: dict[str, Any], claims: list[dict[str, Any]]) -> dict[str, Any]:
    """``at_defaults`` (only there do the published verdicts bind; the device aside), ``published``, ``changed``
    (each claim whose verdict differs from the published one, or that one side lacks)."""
    from stagewise.core.run.parameters import resolve
    published = dict(spec.front_matter.get("published") or {})
    defaults = resolve(spec.parameters, {}, spec.name)
    at_defaults = all(parameters.get(k) == v for k, v in defaults.items() if k != "device")
    measured = {c["name"]: verdict(c) for c in claims}
    changed = [{"name": n, "published": published.get(n, "none"), "measured": measured.get(n, "none")}
               for n in sorted(set(published) | set(measured)) if published.get(n) != measured.get(n)]
    return {"at_defaults": at_defaults, "published": published, "changed": changed}

"""A chapter's two pages from its one execution: the story and the verification page.

A chapter is one notebook, executed once. Its cells tagged ``verification`` (the checks, their tolerances and
derivations, the controls, the hypotheses, the notation of code names) make the *verification page*; every other
cell makes the *story page*. :func:`split` cuts the executed notebook in two, so both pages show the same
execution, and adds to the verification page what the run recorded in ``results.json``: every row grouped by the
statement it tests (target ``verify-<label>``, linked from that statement's verdict line on the story page, and
linking back to the statement), the experiment-integrity rows, the empirical claims, the hypotheses with their
measured quantities. :func:`write` stores the two pages in the run folder (``story.ipynb``,
``verification.ipynb``) beside the executed notebook; the book renders them.

The verdict lines the story shows (``{glue:md}`verdict-<label>``` at the end of a statement box, and
``verdict-summary`` in its "Does the theory hold here?" box) are glued by ``run.finish()`` from
:func:`verdict_line` and :func:`summary`. Glued values cross the cut: each page gets a hidden cell with the glue
outputs of the cells that went to the other page.

May import: nothing of the package but :mod:`stagewise.core.checks` (this module belongs to the run room).
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from stagewise.core.checks.rows import CONTRADICTED, EMPIRICAL, FAIL, PASS, RELATIONS, SANITY, fmt

TAG = "verification"
STORY_NAME, VERIFICATION_NAME = "story.ipynb", "verification.ipynb"
INTEGRITY = "Experiment integrity"
_SPECIAL = re.compile(r"([\\`*_\[\]<>|#$~])")


def target(chapter: str) -> str:
    """The label of a chapter's verification page (its top)."""
    return f"verify-{chapter}"


def statement_target(label: str) -> str:
    """The label of the rows of one statement on the verification page."""
    return f"verify-{label}"


def escape(text: Any) -> str:
    """Row text (names, details, reasons) as literal Markdown: no emphasis, math, links or tables made of it."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def is_verification(cell: dict[str, Any]) -> bool:
    return TAG in (cell.get("metadata", {}).get("tags") or [])


# -- verdicts ---------------------------------------------------------------------------------------------

def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    out = {"pass": 0, "fail": 0, "not run": 0, "reproduced": 0, "not reproduced": 0, "contradicted": 0}
    for r in rows:
        status = r.get("status")
        if r.get("kind") == EMPIRICAL:
            out["reproduced" if status == PASS else "fail" if status == FAIL
                else "contradicted" if status == CONTRADICTED else "not reproduced"] += 1
        else:
            out[{PASS: "pass", FAIL: "fail"}.get(status, "not run")] += 1
    return out


def _plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def verdict_text(rows: list[dict[str, Any]]) -> str:
    """"4 rows pass", "3 rows pass, 1 FAILS, 1 not run", "2 claims reproduced, 1 not reproduced at this budget"."""
    n = _counts(rows)
    parts = []
    if n["pass"]:
        parts.append(_plural(n["pass"], "row passes", "rows pass"))
    if n["fail"]:
        parts.append(f"{n['fail']} FAIL" + ("S" if n["fail"] == 1 else ""))
    if n["not run"]:
        parts.append(f"{n['not run']} not run (a hypothesis is not met)")
    if n["reproduced"]:
        parts.append(_plural(n["reproduced"], "claim reproduced", "claims reproduced"))
    if n["not reproduced"]:
        parts.append(f"{n['not reproduced']} not reproduced at this budget")
    if n["contradicted"]:
        parts.append(f"{n['contradicted']} contradicted")
    return ", ".join(parts) or "no rows"


def link(chapter: str, anchor: str = "") -> str:
    """The verification page of ``chapter`` (at ``anchor``) from its story page, as a plain relative URL: the
    story's glued verdicts are CommonMark, where no Sphinx role is parsed (the browser test follows every link)."""
    return f"../verification/{chapter}.html" + (f"#{anchor}" if anchor else "")


def _a(text: str, href: str) -> str:
    """A raw HTML link (CommonMark passes it through; a Markdown link to a built page would be checked by Sphinx
    as a source file and warned about)."""
    return f'<a href="{href}">{text}</a>'


def verdict_line(label: str, rows: list[dict[str, Any]], chapter: str = "") -> str:
    """The last line of a statement box on the story page: the verdict of its rows, linked to them."""
    mine = [r for r in rows if r.get("statement") == label and r.get("kind") != SANITY]
    if not mine:
        return "*Not checked in this run.*"
    return f"**Checked:** {verdict_text(mine)} ({_a('the rows', link(chapter, statement_target(label)))})."


def summary(chapter: str, rows: list[dict[str, Any]]) -> str:
    """The counts of the story's box "Does the theory hold here?", linked to the verification page."""
    theorem = [r for r in rows if r.get("kind") not in (SANITY, EMPIRICAL)]
    claims = [r for r in rows if r.get("kind") == EMPIRICAL]
    sanity = [r for r in rows if r.get("kind") == SANITY]
    t, c, s = _counts(theorem), _counts(claims), _counts(sanity)
    powered = sum(1 for r in theorem if (r.get("control") or {}).get("failed") is True)
    lines = [] if not theorem else [f"**Theorem rows:** {t['pass']} of {len(theorem)} pass"
             + (f", **{t['fail']} fail**" if t["fail"] else "")
             + (f", {t['not run']} not run (a hypothesis is not met at these parameters)" if t["not run"] else "")
             + f"; {powered} of {len(theorem)} have a control, computed in this run, that their criterion rejects."]
    if claims:
        lines.append(f"**Claims from the paper's experiments:** {c['reproduced']} of {len(claims)} reproduced"
                     + (f", {c['not reproduced']} not reproduced at this budget" if c["not reproduced"] else "")
                     + (f", **{c['contradicted']} contradicted** (measured on the opposite side of the claim)"
                        if c["contradicted"] else "") + ".")
        missing = [r["name"] for r in claims if r.get("status") != PASS]
        if missing:
            lines.append("Not reproduced here: " + "; ".join(escape(m) for m in missing) + ".")
    if sanity:
        lines.append(f"**Experiment integrity:** {s['pass']} of {len(sanity)} rows pass"
                     + (f", **{s['fail']} fail**" if s["fail"] else "") + ".")
    lines.append(f"Every row, its tolerance and its control: {_a('the verification page', link(chapter))}.")
    return "\n\n".join(lines)


def run_summary(results: dict[str, Any]) -> list[str]:
    """How a run went, for the end of ``stagewise run``: for each row without a verdict, the hypothesis in words
    with its measured value and what it needs (which the user's parameters can change); last, one summary line
    (theorem rows passed/failed/not run, experiment integrity, claims reproduced or not)."""
    rows = list(results.get("checks", [])) + list(results.get("claims", []))
    theorem = _counts([r for r in rows if r.get("kind") not in (SANITY, EMPIRICAL)])
    sanity = _counts([r for r in rows if r.get("kind") == SANITY])
    claims = _counts([r for r in rows if r.get("kind") == EMPIRICAL])
    line = (f"summary: theorem rows {theorem['pass']} passed, {theorem['fail']} failed, {theorem['not run']} not run; "
            f"experiment integrity {sanity['pass']} passed, {sanity['fail']} failed; claims {claims['reproduced']} "
            f"reproduced, {claims['not reproduced']} not reproduced at this budget"
            + (f", {claims['contradicted']} contradicted" if claims["contradicted"] else ""))
    powerless = [r for r in rows if r.get("passed") is True and (r.get("control") or {}).get("failed") is False
                 and (r.get("control") or {}).get("what") != "none"]
    if powerless:
        line += f"; {len(powerless)} passing row(s) whose control is not rejected"
    out = []
    for r in rows:
        if r.get("passed") is None:
            out.append(f"  no verdict: {r['name']}: {r.get('reason', '')}"
                       + (" (change the parameters to meet it: `stagewise params "
                          f"{results.get('chapter', 'CHAPTER')}`)" if "hypothesis not met" in str(r.get("reason"))
                          else ""))
    return out + [line]


# -- the verification page's generated sections -------------------------------------------------------

def _row_item(r: dict[str, Any]) -> str:
    status = r.get("status", "")
    shown = ("reproduced" if r.get("kind") == EMPIRICAL and status == PASS
             else {PASS: "pass", FAIL: "**FAIL**"}.get(status, status))
    value = "—" if r.get("value") is None else fmt(r.get("value"))
    relation = r.get("relation")
    tolerance = (RELATIONS[relation].format(fmt(r.get("tolerance"))) if relation in RELATIONS
                 else fmt(r.get("tolerance")))
    text = f"- **{escape(r['name'])}**: {shown}. Measured {escape(value)}, tolerance {escape(tolerance)}."
    control = r.get("control")
    if control:
        if control.get("what") == "none":
            text += f" Control: none ({escape(control.get('why', ''))})."
        else:
            judged = "rejected" if control.get("failed") else "**not rejected**"
            text += f" Control, {escape(control.get('what', ''))}: {escape(fmt(control.get('value')))} ({judged})."
    if r.get("detail"):
        text += f" *{escape(r['detail'])}*"
    if r.get("reason"):
        text += f" Why no verdict: {escape(r['reason'])}."
    return text


_BOX = re.compile(r"^(Theorem|Lemma|Proposition|Corollary|Definition|Assumption|Conjecture|Algorithm|Remark|"
                  r"Observation|Example|Property|Axiom|Criterion|Proof)\b")


def _group_heading(label: str, titles: dict[str, str]) -> str:
    return escape(titles.get(label, label))


def statement_ref(label: str, titles: dict[str, str]) -> str:
    """A link to the statement: ``{prf:ref}`` for a box, ``{ref}`` for a section target."""
    return f"{{prf:ref}}`{label}`" if _BOX.match(titles.get(label, "")) else f"{{ref}}`{label}`"


def row_sections(chapter: str, results: dict[str, Any], titles: dict[str, str]) -> list[str]:
    """Markdown of every row of ``results``, grouped by statement, then the integrity rows, then the hypotheses."""
    rows = list(results.get("checks", [])) + list(results.get("claims", []))
    lines = ["## Every row, by the statement it tests", "",
             "Each row compares a measured quantity with what the theory predicts, with its tolerance and its "
             "*control*: the same measurement on a plausible wrong hypothesis or broken run, computed in this run and "
             "judged by the row's own criterion, which must reject it. *Claims* are what a paper reports from its "
             "experiments (not theorems): reproduced, or not reproduced at this budget. Experiment-integrity rows "
             "check the experiment itself (data, initialization, solver) and are not counted as evidence.", ""]
    order: list[str] = []
    for r in rows:
        label = r.get("statement")
        if r.get("kind") != SANITY and label and label not in order:
            order.append(label)
    for label in order:
        mine = [r for r in rows if r.get("statement") == label and r.get("kind") != SANITY]
        lines += [f"({statement_target(label)})=", f"### {_group_heading(label, titles)}", "",
                  f"Statement: {statement_ref(label, titles)} on the chapter's page. Verdict: {verdict_text(mine)}.", ""]
        lines += [_row_item(r) for r in mine] + [""]
    unlabelled = [r for r in rows if r.get("kind") != SANITY and not r.get("statement")]
    if unlabelled:
        lines += ["### Rows that name no statement", ""] + [_row_item(r) for r in unlabelled] + [""]
    sanity = [r for r in rows if r.get("kind") == SANITY]
    if sanity:
        lines += [f"({target(chapter)}-integrity)=", f"### {INTEGRITY}", "",
                  "Rows that check the experiment, not a statement of the paper: an identity of the code, the data "
                  "or initialization as specified, a solver resolved. A failure here is a bug of the run. "
                  f"Verdict: {verdict_text(sanity)}.", ""]
        lines += [_row_item(r) for r in sanity] + [""]
    hypotheses = results.get("hypotheses") or []
    if hypotheses:
        lines += [f"({target(chapter)}-hypotheses)=", "### Hypotheses tested by the run", "",
                  "A row whose hypothesis fails at the user's parameters is 'not run' (not a failure), with the "
                  "measured quantity below.", ""]
        for h in hypotheses:
            holds = "holds" if h.get("holds") else "**does not hold**"
            need = f" (requires {escape(h['requirement'])})" if h.get("requirement") else ""
            lines.append(f"- **{escape(h.get('name', ''))}** {holds}: {escape(h.get('measured', ''))}{need}.")
        lines.append("")
    return lines


def head_lines(chapter: str, title: str, results: dict[str, Any]) -> list[str]:
    rows = list(results.get("checks", [])) + list(results.get("claims", []))
    return [f"({target(chapter)})=", f"# {title}: verification", "",
            f"This page certifies the execution shown in the chapter {{doc}}`/chapters/{chapter}`: the same run, "
            "never recomputed. It holds every check with its tolerance and control, the derivations of the "
            "tolerances, the hypotheses the run tested and the claims of the paper's experiments.", "",
            summary(chapter, rows).replace(
                f"Every row, its tolerance and its control: {_a('the verification page', link(chapter))}.", ""),
            ""]


# -- the cut ---------------------------------------------------------------------------------------------

def _glue_outputs(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [copy.deepcopy(o) for c in cells if c.get("cell_type") == "code" for o in c.get("outputs", [])
            if isinstance(o.get("metadata"), dict) and "scrapbook" in o["metadata"]]


def _glue_cell(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "id": "glued-values",
            "metadata": {"tags": ["remove-cell"]}, "outputs": outputs,
            "source": "# values glued on the other page of this chapter (the same execution)"}


def _markdown(text: str, cell_id: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def split(notebook: dict[str, Any], results: dict[str, Any], chapter: str, title: str,
          titles: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The story page and the verification page of one executed notebook (neither is executed again)."""
    cells = notebook.get("cells", [])
    story_cells = [copy.deepcopy(c) for c in cells if not is_verification(c)]
    check_cells = [copy.deepcopy(c) for c in cells if is_verification(c)]
    story_cells.append(_glue_cell(_glue_outputs(check_cells)))
    head = _markdown("\n".join(head_lines(chapter, title, results)), "verification-head")
    rows = _markdown("\n".join(row_sections(chapter, results, titles or {})), "verification-rows")
    derivations = [_markdown("## How each row is measured, and why its tolerance", "verification-derivations")]
    verification_cells = [head, rows] + (derivations + check_cells if check_cells else [])
    verification_cells.append(_glue_cell(_glue_outputs(story_cells[:-1])))
    story = {**{k: copy.deepcopy(v) for k, v in notebook.items() if k != "cells"}, "cells": story_cells}
    verification = {**{k: copy.deepcopy(v) for k, v in notebook.items() if k != "cells"}, "cells": verification_cells}
    return story, verification


def write(folder: Path, chapter: str, title: str, titles: dict[str, str] | None = None) -> tuple[Path, Path]:
    """Split ``folder/<chapter>.ipynb`` with ``folder/results.json`` into ``story.ipynb`` and ``verification.ipynb``
    in the same folder (atomic writes); returns their paths."""
    from stagewise.core.run.rundir import write_text_atomic
    notebook = json.loads((folder / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    story, verification = split(notebook, results, chapter, title, titles)
    paths = folder / STORY_NAME, folder / VERIFICATION_NAME
    for path, page in zip(paths, (story, verification)):
        write_text_atomic(path, json.dumps(page, indent=1, ensure_ascii=False) + "\n")
    return paths

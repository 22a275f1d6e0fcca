"""The stored runs at the paper's scale on a chapter's two pages (:mod:`stagewise.core.sweep.paper_scale`).

The story page gets a section "At the paper's scale" before its summary: for each stored run of the chapter, one
folded box whose title gives its verdicts (and says when it is stale, run on older code than the chapter's of today)
and which holds what it ran and what still differs from the paper, on which machine and in how long, its figures
(drawn now from the stored data sidecars by the chapter's own render functions) and the rows whose verdict or value
differs from the page's run.
The verification page gets every row of each stored run, with its tolerance and control.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from stagewise.core.checks.rows import EMPIRICAL, fmt
from stagewise.core.run import pages
from stagewise.core.sweep import paper_scale

HEADING = "## At the paper's scale"


def _command(run: paper_scale.StoredRun) -> str:
    shown = " ".join(f"-p {k} {json.dumps(v) if not isinstance(v, str) else v}" for k, v in run.parameters.items())
    return f"stagewise run {run.chapter} {shown}"


def _provenance(run: paper_scale.StoredRun, results: dict[str, Any]) -> str:
    p = results.get("provenance", {})
    seconds = p.get("wall_seconds")
    took = ("an unrecorded time" if not isinstance(seconds, (int, float))
            else f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s")
    return (f"Stored in `book/paper-scale/{run.id}/` from commit `{str(p.get('commit', '?'))[:10]}`"
            + (" with uncommitted changes" if p.get("dirty") else "") + f"; it took {took} on "
            f"{pages.escape(p.get('device', 'an unrecorded device'))}.")


def _state_line(run: paper_scale.StoredRun) -> str:
    if paper_scale.state(run) == "current":
        return "It ran on the chapter's current code."
    return ("**Stale:** it ran on older code or other parameters than `book/paper-scale.yaml` lists; `make paper-scale` "
            "runs it again.")


def summary(results: dict[str, Any]) -> str:
    """The run's verdicts in one line (``pages.run_summary``'s last), without a category that has no row (the
    transformer has no theorem rows)."""
    line = pages.run_summary(results)[-1].removeprefix("summary: ")
    return ("; ".join(part for part in line.split("; ")
                      if not re.fullmatch(r"(theorem rows|experiment integrity) 0 passed, 0 failed(, 0 not run)?", part))
            or line)


def _verdict(row: dict[str, Any] | None) -> str:
    if row is None:
        return "—"
    status = row.get("status", "")
    if row.get("kind") == EMPIRICAL and status == "pass":
        status = "reproduced"
    value = "" if row.get("value") is None else f" ({fmt(row['value'])})"
    return pages.escape(f"{status}{value}")


def changed_rows(default: dict[str, Any], stored: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The rows whose verdict differs between the page's run and the stored run, then the claims (every claim is
    shown: a claim is what a longer budget can change), as (name, page's run, stored run)."""
    rows = lambda r: {x["name"]: x for x in list(r.get("checks", [])) + list(r.get("claims", []))}  # noqa: E731
    mine, theirs = rows(default), rows(stored)
    names = [n for n in theirs if n not in mine or mine[n].get("status") != theirs[n].get("status")]
    names += [n for n, x in theirs.items() if x.get("kind") == EMPIRICAL and n not in names]
    return [(pages.escape(n), _verdict(mine.get(n)), _verdict(theirs.get(n))) for n in names]


def _figures(run: paper_scale.StoredRun, executed: Path, page_dir: Path) -> list[str]:
    """The run's chosen figures, drawn from its stored sidecars beside the executed chapters (``_paper-scale/<id>/``,
    outside the chapter's run folder; only when missing or older than the sidecar), as MyST figures."""
    from stagewise.core.figures import restyle
    out = executed.parent / "_paper-scale" / run.id
    lines = []
    for figure_id in run.figures:
        stem = f"{run.chapter}-{figure_id}"
        sidecar = run.folder / "figures" / f"{stem}.json"
        png = out / f"{stem}.book.png"
        if not sidecar.is_file():
            continue
        if not png.is_file() or png.stat().st_mtime < sidecar.stat().st_mtime:
            restyle.restyle(run.folder, figure_id, "book", "png,svg", out, dpi="2x")
        caption = json.loads(sidecar.read_text()).get("sidecar", {}).get("caption", figure_id)
        path = os.path.relpath(png, page_dir).replace(os.sep, "/")
        lines += [f":::{{figure}} {path}", f":name: paper-scale-{run.id}-{figure_id}", "",
                  f"At the paper's scale ({pages.escape(run.title)}): {pages.escape(caption)}", ":::", ""]
    return lines


def seed_groups(runs: list[tuple[paper_scale.StoredRun, dict[str, Any] | None]]) -> list[list[tuple]]:
    """The stored runs of a chapter that differ only in their seed, as groups of at least two stored runs (in the
    order of ``book/paper-scale.yaml``): the same experiment at several seeds."""
    groups: dict[str, list[tuple]] = {}
    for run, results in runs:
        if results is not None:
            key = json.dumps({k: v for k, v in run.parameters.items() if k != "seed"}, sort_keys=True)
            groups.setdefault(key, []).append((run, results))
    return [g for g in groups.values() if len(g) >= 2]


def _seed(run: paper_scale.StoredRun, results: dict[str, Any]) -> Any:
    return results.get("parameters", {}).get("seed", run.parameters.get("seed", 0))


def seed_table(group: list[tuple]) -> tuple[str, list[str]]:
    """For a group of :func:`seed_groups`: one sentence (how many claims are reproduced at every seed, at some, at
    none) and a table of every claim's verdict at each seed."""
    seeds = [_seed(run, results) for run, results in group]
    claims = [{c["name"]: c for c in results.get("claims", []) if c.get("kind") == EMPIRICAL} for _, results in group]
    names = list(dict.fromkeys(n for c in claims for n in c))
    held = [sum(c.get(n, {}).get("status") == "pass" for c in claims) for n in names]
    every, some = sum(h == len(group) for h in held), sum(0 < h < len(group) for h in held)
    sentence = (f"across seeds {', '.join(map(str, seeds))}: of {len(names)} claims, {every} reproduced at every seed, "
                f"{some} at some seeds only, {len(names) - every - some} at none")
    table = ["| claim | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|---|" + "---|" * len(seeds)]
    table += [f"| {pages.escape(n)} | " + " | ".join(_verdict(c.get(n)) for c in claims) + " |" for n in names]
    return sentence, table


def quoted(run: paper_scale.StoredRun, results: dict[str, Any]) -> str:
    """The run's own sentences that ``book/paper-scale.yaml`` lists for it (``sentences``: text values the run
    computed), joined; a value the run did not record is said to be missing, not left out."""
    values = results.get("values", {})
    return " ".join(str(values[k]) if isinstance(values.get(k), str) else f"({k}: not recorded by this run.)"
                    for k in run.sentences)


def _seed_section(group: list[tuple], executed: Path, page_dir: Path) -> list[str]:
    """The lines of a seed group after its first run: the sentence, and folded the table and the other seeds'
    figures and provenance."""
    sentence, table = seed_table(group)
    lines = [f"::::{{dropdown}} {pages.escape(group[0][0].title)}, several seeds: {pages.escape(sentence)}", "",
             *table, ""]
    for run, results in group[1:]:
        lines += [f"**{pages.escape(run.title)}** (`{_command(run)}`): "
                  + pages.escape(summary(results)) + ". "
                  + _provenance(run, results) + " " + _state_line(run), ""]
        lines += _figures(run, executed, page_dir)
        lines += [pages.escape(quoted(run, results)), ""] if run.sentences else []
    return lines + ["::::", ""]


def story_lines(chapter: str, default: dict[str, Any], executed: Path, page_dir: Path) -> list[str]:
    """The section "At the paper's scale" of the chapter's story page (empty without a stored run). A run whose
    parameters differ from an earlier stored run's only in the seed is shown with that run, as one more seed."""
    runs = [(r, paper_scale.results_of(r.folder)) for r in paper_scale.for_chapter(chapter)]
    if not runs:
        return []
    groups = seed_groups(runs)
    later = {run.id for g in groups for run, _ in g[1:]}
    lines = [f"(paper-scale-{chapter})=", HEADING, ""]
    for run, results in runs:
        if run.id in later:
            continue
        if results is None:
            lines += [f"**{pages.escape(run.title)}**: not stored yet (`make paper-scale` runs it).", ""]
            continue
        stale = "" if paper_scale.state(run) == "current" else " (stale: it ran on older code; make paper-scale runs it again)"
        table = changed_rows(default, results)
        lines += [f"::::{{dropdown}} {pages.escape(run.title)}: {pages.escape(summary(results))}{stale}",
                  "", f"`{_command(run)}`. {pages.escape(run.differs)}", "",
                  _provenance(run, results) + " " + _state_line(run), ""]
        lines += _figures(run, executed, page_dir)
        lines += [pages.escape(quoted(run, results)), ""] if run.sentences else []
        if table:
            lines += ["| row | this page's run | at the paper's scale |", "|---|---|---|"]
            lines += [f"| {a} | {b} | {c} |" for a, b, c in table] + [""]
        lines += [("In parentheses, the number each verdict judges (for a trend, the lower end of its interval). "
                   if table else "") + f"Every row with its tolerance and control: {{ref}}`the verification "
                  f"page <paper-scale-rows-{run.id}>`.", "::::", ""]
        for group in groups:
            if group[0][0].id == run.id:
                lines += _seed_section(group, executed, page_dir)
    return lines


def verification_lines(chapter: str) -> list[str]:
    """Every row of each stored run of the chapter, for its verification page."""
    runs = [(r, paper_scale.results_of(r.folder)) for r in paper_scale.for_chapter(chapter)]
    lines = []
    for run, results in runs:
        if results is None:
            continue
        rows = list(results.get("checks", [])) + list(results.get("claims", []))
        lines += [f"(paper-scale-rows-{run.id})=", f"## At the paper's scale: {pages.escape(run.title)}", "",
                  f"`{_command(run)}`. " + _provenance(run, results) + " " + _state_line(run), "",
                  f"Verdict: {pages.verdict_text(rows)}.", ""]
        lines += [pages._row_item(r) for r in rows] + [""]
    return lines


def insert_story(story: dict[str, Any], lines: list[str]) -> None:
    """Put ``lines`` into the story notebook before its "## Summary" heading (or at its end)."""
    if not lines:
        return
    text = "\n".join(lines) + "\n"
    for cell in story["cells"]:
        if cell.get("cell_type") != "markdown":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        at = source.find("## Summary")
        if at == 0 or (at > 0 and source[at - 1] == "\n"):
            cell["source"] = source[:at] + text + "\n" + source[at:]
            return
    story["cells"].append({"cell_type": "markdown", "id": "paper-scale", "metadata": {}, "source": text})

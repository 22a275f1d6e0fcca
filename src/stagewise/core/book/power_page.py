"""The book's appendix "What the checks can catch", made from the stored mutation matrices (:mod:`.power`).

``stagewise book`` writes the page into the executed folder before Sphinx runs, from ``book/power/<chapter>.json``
(written by ``make power``). For each chapter: whether the matrix was measured on the chapter's current code
(the fingerprint of its source, its subpackage, core/ and numerics/) or is **stale**, the catalogue (each bug, its kind, what
it is and why it is plausible, the function it replaces, and which theorem rows kill it), the matrix bug x theorem
row, and the share of bugs killed. A chapter without a stored matrix says so.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from stagewise.core.book import typeset
from stagewise.core.sweep import mutants, power
from stagewise.core.run.provenance import chapter_code_fingerprint
from stagewise.core.run.registry import PROJECT_ROOT, all_chapters

PAGE_NAME = "what-the-checks-can-catch"
CELL = {power.KILLED: "K", power.SURVIVED: ".", "not run": "n", "not reproduced at this budget": "n", "fail": "f",
        "absent": "-"}


def _cell(text: str) -> str:
    """A cell as HTML: escaped, `code` spans kept as code, the formulas of the rest typeset (:mod:`.typeset`)."""
    import html
    flat = " ".join(str(text).replace("``", "`").split())     # docstrings write ``code`` (reST)
    return "".join(f"<code>{html.escape(part)}</code>" if i % 2 else typeset.html(part)
                   for i, part in enumerate(flat.split("`")))


def _first_paragraph(doc: str) -> str:
    return " ".join(doc.strip().split("\n\n")[0].split())


def _table(header: list[str], rows: list[list[str]], css: str = "stagewise-power") -> list[str]:
    """An HTML table that fits the page's column (fixed layout, long names break anywhere; book.css)."""
    head = "".join(f"<th>{_cell(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(x)}</td>" for x in row) + "</tr>" for row in rows)
    return [f"<table class='{css}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"]


def chapter_section(chapter, stored: dict[str, Any] | None, heading: str | None = None) -> list[str]:
    """The chapter's matrix as Markdown lines under ``heading`` (default: the chapter's title), target
    ``power-<chapter>``: a section of the chapter's verification page."""
    lines = [f"(power-{chapter.name})=",
             f"## {heading or chapter.title}", ""]
    if stored is None:
        return lines + [":::{warning}", f"No matrix is stored for this chapter: run `make power` "
                        f"(`stagewise power {chapter.name}`).", ":::", ""]
    fresh = stored.get("fingerprint") == chapter_code_fingerprint(chapter.name, chapter.source)
    commit = str(stored.get("commit", "unknown"))[:10]
    if fresh:
        lines += [f"Measured on the chapter's current code (commit `{commit}`"
                  + (", with uncommitted changes" if stored.get("dirty") else "")
                  + f"; its runs took {stored.get('run_seconds', stored.get('wall_seconds', 0)):.0f} s of one core, on Dask).", ""]
    else:
        lines += [":::{warning}", f"**Stale.** This matrix was measured on older code (commit `{commit}`); the "
                  "chapter or the package has changed since, so it may not describe what the checks catch now. "
                  f"`make power` (or `stagewise power {chapter.name}`) measures it again.", ":::", ""]
    bugs = stored["bugs"]
    killed, total = stored["killed"], stored["total"]
    by_integrity = sum(1 for b in bugs if b["outcome"] == power.KILLED and not b["killed_by"])
    lines += [f"**{killed} of {total} bugs killed** by a theorem row, an experiment-integrity row or a changed "
              f"published finding ({100 * killed / max(total, 1):.0f}%"
              + (f"; {by_integrity} without a theorem row" if by_integrity else "") + ").", ""]
    theorem = [c for c in stored["checks"] if c.get("kind", "theorem") == "theorem"]
    number = {c["name"]: i + 1 for i, c in enumerate(theorem)}
    rows = []
    for i, b in enumerate(bugs, 1):
        if b["outcome"] == power.KILLED and not b["killed_by"]:
            label = {"integrity": "caught by an experiment-integrity row:", "finding": "changes a published finding:"}
            outcome = "; ".join(f"{label[k]} {', '.join(names)}" for k, names in power.other_killers(b))
        elif b["outcome"] == power.KILLED:
            outcome = "killed by " + ", ".join(f"T{number[n]}" if n in number else n for n in b["killed_by"])
        elif b["outcome"] == power.CRASHED:
            outcome = f"CRASHED ({b.get('message', '')}): no kill"
        else:
            outcome = "SURVIVED" + (f" (sanity rows failed: {len(b['sanity_failed'])})" if b["sanity_failed"] else "")
        rows.append([f"B{i}", f"`{b['name']}`", b["category"], _first_paragraph(b["doc"]),
                     f"`{b['target'].split(':')[-1]}`", outcome])
    lines += _table(["", "bug", "kind", "what it is, and why it is plausible", "replaces", "outcome"], rows) + [""]
    used = [c for c in theorem if any(b["cells"].get(c["name"]) == power.KILLED for b in bugs)]
    if used:
        lines += ["The matrix (K: the row kills the bug, i.e. passes unmodified and fails with it; `.`: the row "
                  "passes; n: no verdict, a hypothesis is broken; f: failed unmodified too; -: not computed; "
                  "blank: the run crashed), over the theorem rows that kill at least one bug:", ""]
        header = ["bug"] + [f"T{number[c['name']]}" for c in used]
        matrix_rows = [[f"B{i}"] + [CELL.get(b["cells"].get(c["name"], ""), "") if b["outcome"] != power.CRASHED
                                    else "" for c in used] for i, b in enumerate(bugs, 1)]
        lines += _table(header, matrix_rows, "stagewise-power stagewise-matrix") + [""]
    lines += ["Theorem rows:", ""]
    lines += [f"- T{number[c['name']]}: {c['name']}" + ("" if c in used else " (kills none of these bugs)")
              for c in theorem]
    return lines + [""]


def stored_matrix(chapter: str) -> dict[str, Any] | None:
    return power.stored(chapter)


def page() -> str:
    """The appendix: what a mutation matrix is, and each chapter's share of bugs killed, linked to the matrix on
    the chapter's verification page (:func:`chapter_section`)."""
    chapters = [c for c in all_chapters() if c.source.parent == PROJECT_ROOT / "book" / "chapters"]
    stored = {c.name: stored_matrix(c.name) for c in chapters}
    killed = sum(s["killed"] for s in stored.values() if s)
    total = sum(s["total"] for s in stored.values() if s)
    lines = [f"({PAGE_NAME})=", "# What the checks can catch", "",
             "A check is evidence only if it could have failed. Each chapter's verification page pairs every "
             "theorem row with a *control*: the same measurement run on a plausible wrong hypothesis or broken run, "
             "computed in the run. The mutation matrix asks the converse question of the whole chapter: if its "
             "experiment code had a realistic bug, would a theorem row fail? Each chapter has a catalogue of such "
             "bugs (`src/stagewise/<chapter>/bugs.py`: a wrong constant or exponent, a sign error, an off-by-one "
             "step, the wrong initialization scale, fewer steps than stated, training on a subset, a solver "
             "tolerance 1000x looser, the initial weights in place of the final ones, two arguments swapped, a wrong "
             "measure). `make power` (`stagewise power`) runs the chapter at its default parameters once unmodified "
             "and once per bug, on the Dask sweep machinery, and stores the matrix bug x check in "
             "`book/power/<chapter>.json`; each chapter's verification page shows its matrix. A theorem row *kills* "
             "a bug when it passes unmodified and fails with the bug; so does an experiment-integrity row (a check "
             "of the data, the initialization or the model that the bug changed), listed apart; a crash is no kill.", "",
             f"**Over the book: {killed} of {total} bugs killed.**" if total else "", ""]
    lines += ["Beside each catalogue, a mutation tool measures what nobody chose: a random sample of the mutants "
              "that cosmic-ray's operators make of the chapter's science code (`make mutants`), each tried against "
              "the unit tests and then through the chapter; the last column gives the share detected among those "
              "that change an output.", ""]
    rows = []
    for c in chapters:
        s, m = stored[c.name], mutants.stored(c.name)
        sample = "no sample stored" if m is None or m["score"]["fraction"] is None else (
            f"{m['score']['detected']} of {m['score']['non_equivalent']} ({{ref}}`sample <mutants-{c.name}>`)")
        if s is None:
            rows.append(f"| {c.title} | no matrix stored | — | — | {sample} |")
            continue
        fresh = s.get("fingerprint") == chapter_code_fingerprint(c.name, c.source)
        rows.append(f"| {c.title} | {s['killed']} of {s['total']} | {'current' if fresh else '**stale**'} "
                    f"| {{ref}}`the matrix <power-{c.name}>` | {sample} |")
    lines += ["| chapter | bugs killed | measured on | | mutants detected |", "|---|---|---|---|---|"] + rows + [""]
    return "\n".join(lines) + "\n"


def write(folder: Path) -> Path:
    """Write the appendix page into ``folder`` (the executed folder of the book); returns its path."""
    from stagewise.core.run.rundir import write_text_atomic
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{PAGE_NAME}.md"
    write_text_atomic(path, page())
    return path

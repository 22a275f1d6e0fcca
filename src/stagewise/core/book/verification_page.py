"""The book's two pages of a chapter: the story (``chapters/<chapter>``) and its verification page
(``verification/<chapter>``), cut from the one executed notebook by :func:`stagewise.core.run.pages.split`.

The book adds to the verification page what lives outside a run: the chapter's mutation matrix (from
``book/power/<chapter>.json``, marked stale when the code changed since it was measured; target
``power-<chapter>``) and the mutation tool's sample (``book/mutants/<chapter>.json``, target
``mutants-<chapter>``), its parameter atlas with the exercises of the story page and the outcome each answer
states (``tests/atlas/<chapter>.yaml``, checked by ``stagewise atlas``), and the rows of its stored runs at the
paper's scale (:mod:`stagewise.core.book.paper_scale_page`, which also adds their section to the story page).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stagewise.core.run import pages
from stagewise.core.run.registry import Chapter


def atlas_lines(chapter: Chapter) -> list[str]:
    """The chapter's atlas and exercises as a section of its verification page."""
    from stagewise.core.run.parameters import ParameterError
    from stagewise.core.sweep import atlas
    lines = [f"({pages.target(chapter.name)}-atlas)=", "## At other parameters: the atlas and the exercises", ""]
    try:
        _, points = atlas.load(chapter.name)
        ci = {p["id"] for p in atlas.load(chapter.name, ci=True)[1]}
        exercises = atlas.exercises(chapter.name)
    except ParameterError as err:
        return lines + [f"No valid atlas: {pages.escape(err)}", ""]
    lines += [f"The chapter is rerun at {len(points)} other parameter sets (`tests/atlas/{chapter.name}.yaml`, "
              "`make atlas`). Each run must end with every theorem and integrity row passing, or without a verdict "
              "for a stated reason (a hypothesis the parameters break, a claim not reproduced at that budget). "
              "The sets marked CI run on every push.", ""]
    for i, p in enumerate(points):
        shown = ", ".join(f"`{k}` = {pages.escape(json.dumps(v, default=str))}" for k, v in p["overrides"].items())
        lines.append(f"{i}. {shown}" + (" (CI)" if p["id"] in ci else ""))
    lines.append("")
    if exercises:
        lines += ["The exercises of the chapter that rerun it are atlas points too, each with the outcome its "
                  "answer states:", ""]
        for ex in exercises:
            shown = ", ".join(f"`{k}` = {pages.escape(json.dumps(v, default=str))}" for k, v in ex["overrides"].items())
            outcomes = []
            for e in ex["expect"]:
                if "row" in e:
                    outcomes.append(f"row “{pages.escape(e['row'])}”: {e['status']}")
                else:
                    bounds = [f"> {e['above']:g}" if "above" in e else "", f"< {e['below']:g}" if "below" in e else ""]
                    outcomes.append(f"`{e['value']}` " + " and ".join(b for b in bounds if b))
            lines.append(f"- **{pages.escape(ex['title'])}** ({shown}" + ("; CI" if ex["ci"] else "") + "): "
                         + "; ".join(outcomes) + ".")
        lines.append("")
    return lines


def matrix_lines(chapter: Chapter) -> list[str]:
    from stagewise.core.book import mutants_page, power_page
    from stagewise.core.sweep import mutants
    return power_page.chapter_section(chapter, power_page.stored_matrix(chapter.name),
                                      heading="What the checks can catch: the mutation matrix") + \
        mutants_page.chapter_section(chapter, mutants.stored(chapter.name))


def chapter_pages(chapter: Chapter, executed: Path, titles: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The story and verification notebooks of the executed chapter in ``executed`` (its run folder)."""
    notebook = json.loads((executed / f"{chapter.name}.ipynb").read_text(encoding="utf-8"))
    results = json.loads((executed / "results.json").read_text(encoding="utf-8"))
    story, verification = pages.split(notebook, results, chapter.name, chapter.title, titles)
    from stagewise.core.book import paper_scale_page
    from stagewise.core.run.registry import PROJECT_ROOT
    paper_scale_page.insert_story(story, paper_scale_page.story_lines(chapter.name, results, executed,
                                                                      PROJECT_ROOT / "chapters"))
    from stagewise.core.book import interactive
    interactive.insert(story, chapter, executed)
    extra = matrix_lines(chapter) + [""] + atlas_lines(chapter) + [""] + paper_scale_page.verification_lines(chapter.name)
    glue = verification["cells"].pop()
    verification["cells"].append({"cell_type": "markdown", "id": "verification-book", "metadata": {},
                                  "source": "\n".join(extra)})
    verification["cells"].append(glue)
    return story, verification

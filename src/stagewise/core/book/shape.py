"""The shape of a story page as a reader sees it, measured in the browser at a laptop's window (1366 x 768).

:func:`measure` reports, for one built page: its height in screens (light theme, code collapsed), the screen of
its first statement box and of its first figure, the goals box, the summary, the exercises (and whether each has
an answer), the visible code cells and their lengths, the share of its height that is machinery (the verdict
box and lines, the collapsed cells, prose about tolerances, controls and seeds) and the process words found (the
book speaks of the papers and of itself, never of its making: :data:`PROCESS_WORDS`). The browser test holds
every story page to :data:`LIMITS`.

``python -m stagewise.core.book.shape CHAPTER RUN_FOLDER`` builds one chapter's two pages alone (a small Jupyter
Book in ``/tmp/shape-<chapter>``, cross-references to other chapters left unresolved), measures them and writes
screenshots beside them: what an author runs while writing a chapter.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

SCREEN = {"width": 1366, "height": 768}
#: What a story page must meet (issue of the two-page chapters): screens, where its first box is, what it holds.
LIMITS = {"screens": 15.0, "first_statement_screen": 2.0, "visible_code_cells": 3, "exercises": 3,
          "code_lines": 15, "machinery_share": 0.10}
#: Words of the book's making, not of its science: none may appear on any page (case-insensitive, whole words).
PROCESS_WORDS = ("research note", "research notes", "earlier version", "this revision", "until this revision",
                 "previous version", "an earlier draft", "issue #", "was added for", "we fixed", "used to be", "deviations from the", "TODO", "FIXME", "XXX", "the referee", "referee's")
_PROCESS = re.compile(r"\b(" + "|".join(re.escape(w) for w in PROCESS_WORDS) + r")\b", re.IGNORECASE)
#: Prose that certifies the run rather than explaining the science (counted into the machinery share).
_MACHINERY_WORDS = r"\b(tolerance|tolerances|control|controls|seeds?|rows?|atlas|verdict|hypothesis test|criterion)\b"


def process_words(text: str) -> list[str]:
    """The process words in ``text`` (each once, in order of appearance)."""
    found: list[str] = []
    for m in _PROCESS.finditer(text):
        word = m.group(1).lower()
        if word not in found:
            found.append(word)
    return found


@dataclass
class Shape:
    path: str
    screens: float = 0.0
    first_statement_screen: float | None = None
    first_figure_screen: float | None = None
    goals: bool = False
    summary: bool = False
    further_reading: bool = False
    exercises: int = 0
    exercises_with_answers: int = 0
    verdict_box: bool = False
    visible_code_cells: int = 0
    code_lines: list[int] = field(default_factory=list)
    machinery_share: float = 0.0
    process_words: list[str] = field(default_factory=list)

    def problems(self, limits: dict[str, float] = LIMITS) -> list[str]:
        """What keeps the page from being a story page (empty: none)."""
        out = []
        if self.screens > limits["screens"]:
            out.append(f"{self.screens:.1f} screens (at most {limits['screens']:g})")
        if self.first_statement_screen is None or self.first_statement_screen > limits["first_statement_screen"]:
            out.append(f"first statement box at screen {self.first_statement_screen} "
                       f"(within {limits['first_statement_screen']:g})")
        if self.first_figure_screen is None or self.first_figure_screen > limits["first_statement_screen"]:
            out.append(f"first figure at screen {self.first_figure_screen} (the signature figure opens the page)")
        for name in ("goals", "summary", "further_reading", "verdict_box"):
            if not getattr(self, name):
                out.append(f"no {name.replace('_', ' ')}")
        if self.exercises < limits["exercises"] or self.exercises_with_answers < self.exercises:
            out.append(f"{self.exercises} exercises, {self.exercises_with_answers} with an answer "
                       f"(at least {limits['exercises']:g}, each answered)")
        short = [n for n in self.code_lines if n <= limits["code_lines"]]
        if len(short) < limits["visible_code_cells"]:
            out.append(f"{len(short)} visible code cells of at most {limits['code_lines']:g} lines "
                       f"(at least {limits['visible_code_cells']:g}; lengths {self.code_lines})")
        if self.machinery_share > limits["machinery_share"]:
            out.append(f"machinery {self.machinery_share:.0%} of the height (at most {limits['machinery_share']:.0%})")
        if self.process_words:
            out.append(f"process words: {self.process_words}")
        return out


_FACTS = """(machineryWords) => {
  const main = document.querySelector('main') || document.body;
  const top = main.getBoundingClientRect().top + window.scrollY;
  const H = window.innerHeight;
  const height = Math.max(document.documentElement.scrollHeight, document.body.scrollHeight);
  const y = e => e.getBoundingClientRect().top + window.scrollY;
  const visible = e => e.offsetParent !== null && e.getBoundingClientRect().height > 0;
  const first = sel => { const e = [...main.querySelectorAll(sel)].find(visible); return e ? y(e) / H : null; };
  const headings = [...main.querySelectorAll('h2')]
      .map(h => h.innerText.replace(/[#¶]/g, '').replace(/^[\\d.\\s]+/, '').trim().toLowerCase());  // '1.9 Summary'
  const exercises = [...main.querySelectorAll('.admonition.exercise')];
  const cells = [...main.querySelectorAll('div.cell')].filter(c => {
      const input = c.querySelector('.cell_input');
      return input && visible(input) && !c.closest('.tag_verification');
  });
  const lines = cells.map(c => c.querySelector('.cell_input pre').innerText.replace(/\\n+$/, '').split('\\n').length);
  const re = new RegExp(machineryWords, 'i');
  let machinery = 0;
  const counted = new Set();
  const add = e => { if (!counted.has(e) && visible(e)) { counted.add(e); machinery += e.getBoundingClientRect().height; } };
  main.querySelectorAll('.admonition.verdict, table.stagewise-checks').forEach(add);
  main.querySelectorAll('div.cell').forEach(c => {
      if (c.classList.contains('tag_hide-input') || c.classList.contains('tag_hide-cell')
          || c.classList.contains('tag_parameters')) add(c);
  });
  main.querySelectorAll('p, li').forEach(p => {
      if (p.closest('.admonition.verdict') || p.closest('.admonition.exercise') || p.closest('div.cell')) return;
      const words = p.innerText.split(/\\s+/).length;
      const hits = (p.innerText.match(new RegExp(machineryWords, 'gi')) || []).length;
      if (/^Checked:/.test(p.innerText.trim()) || (hits >= 2 && hits / words > 0.04)) add(p);
  });
  return {height, H, statement: first('div.proof, div.theorem, div.lemma, div.proposition, div.corollary, ' +
                                        'div.definition, div.algorithm, div.conjecture, div.assumption'),
          figure: first('figure img, div.cell_output img'),
          goals: !!main.querySelector('.admonition.goals'), verdict: !!main.querySelector('.admonition.verdict'),
          summary: headings.some(h => h.startsWith('summary')),
          further: headings.some(h => h.startsWith('further reading')),
          exercises: exercises.length,
          answered: exercises.filter(e => e.querySelector('details, .dropdown')).length,
          cells: cells.length, lines, machinery, text: main.innerText};
}"""


def measure(browser, url: str, path: str, screenshot: Path | None = None) -> Shape:
    """The shape of the page at ``url`` (light theme, code collapsed, 1366 x 768)."""
    from stagewise.core.book.browser import _open
    context = browser.new_context(viewport=SCREEN, color_scheme="light")
    page = context.new_page()
    _open(page, url)
    page.evaluate("() => { document.documentElement.dataset.theme = 'light'; "
                  "document.querySelectorAll('details').forEach(d => d.open = false); }")
    facts = page.evaluate(_FACTS, _MACHINERY_WORDS)
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot), full_page=True)
    context.close()
    H = facts["H"]
    return Shape(path=path, screens=round(facts["height"] / H, 2),
                 first_statement_screen=None if facts["statement"] is None else round(facts["statement"], 2),
                 first_figure_screen=None if facts["figure"] is None else round(facts["figure"], 2),
                 goals=facts["goals"], summary=facts["summary"], further_reading=facts["further"],
                 exercises=facts["exercises"], exercises_with_answers=facts["answered"],
                 verdict_box=facts["verdict"], visible_code_cells=facts["cells"], code_lines=facts["lines"],
                 machinery_share=round(facts["machinery"] / max(facts["height"], 1), 3),
                 process_words=process_words(facts["text"]))


def page_text_words(browser, url: str) -> list[str]:
    """The process words of any page (the verification pages, the landing page, the back matter)."""
    from stagewise.core.book.browser import _open
    context = browser.new_context(viewport=SCREEN)
    page = context.new_page()
    _open(page, url)
    text = page.evaluate("() => (document.querySelector('main') || document.body).innerText")
    context.close()
    return process_words(text)


# -- one chapter alone, for its author ------------------------------------------------------------------

def build_alone(chapter: str, run_folder: Path, out: Path) -> tuple[Path, str]:
    """A small Jupyter Book of the chapter's two pages cut from ``run_folder``, built into ``out``; returns the
    HTML folder and the build's warnings about these pages."""
    from stagewise.core.book import verification_page
    from stagewise.core.run import session
    from stagewise.core.run.registry import PROJECT_ROOT, get_chapter
    import yaml
    spec = get_chapter(chapter)
    if out.exists():
        shutil.rmtree(out)
    (out / "chapters").mkdir(parents=True)
    (out / "verification").mkdir()
    shutil.copytree(PROJECT_ROOT / "book", out / "book", ignore=shutil.ignore_patterns("executed", "chapters"))
    story, verification = verification_page.chapter_pages(spec, run_folder, session.statement_labels(chapter) or {})
    (out / "chapters" / f"{chapter}.ipynb").write_text(json.dumps(story))
    (out / "verification" / f"{chapter}.ipynb").write_text(json.dumps(verification))
    config = yaml.safe_load((PROJECT_ROOT / "_config.yml").read_text())
    (out / "_config.yml").write_text(yaml.safe_dump(config))
    (out / "_toc.yml").write_text(yaml.safe_dump({
        "format": "jb-book", "root": f"chapters/{chapter}",
        "parts": [{"caption": "Verification", "chapters": [{"file": f"verification/{chapter}"}]},
                  {"caption": "Back matter", "chapters": [{"file": "book/bibliography"}]}]}))
    done = subprocess.run([str(Path(sys.executable).with_name("jupyter-book")), "build", str(out), "--builder",
                           "html", "--all", "-n", "--keep-going"], cwd=out, capture_output=True, text=True)
    warnings = "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                         if ("WARNING" in line or "ERROR" in line) and chapter in line)
    return out / "_build" / "html", warnings


def main(argv: list[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m stagewise.core.book.shape",
                                     description="Build one chapter's story and verification pages alone from a "
                                                 "run folder, and measure the story page as a reader sees it.")
    parser.add_argument("chapter")
    parser.add_argument("run_folder", type=Path, help="a run folder of the chapter (stagewise run CHAPTER --out ...)")
    parser.add_argument("--out", type=Path, default=None, help="where to build (default /tmp/shape-CHAPTER)")
    args = parser.parse_args(argv)
    from stagewise.core.book.browser import chromium, serve
    out = args.out or Path(f"/tmp/shape-{args.chapter}")
    html, warnings = build_alone(args.chapter, args.run_folder.resolve(), out)
    with chromium() as browser, serve(html) as base:
        shape = measure(browser, base + f"chapters/{args.chapter}.html", f"chapters/{args.chapter}.html",
                        out / "story.png")
        verification_words = page_text_words(browser, base + f"verification/{args.chapter}.html")
    print(json.dumps(asdict(shape), indent=1))
    problems = shape.problems()
    if verification_words:
        problems.append(f"process words on the verification page: {verification_words}")
    print("warnings of these pages (references to other chapters are expected to fail here):")
    print(warnings or "  none")
    print("problems:" if problems else "the story page meets every limit")
    for p in problems:
        print("  -", p)
    print(f"screenshot: {out / 'story.png'}; pages: {html}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""The whole book: every chapter executed once through the run command (strict), the HTML
build with warnings as errors, no-op rebuilds, and re-execution when the code a chapter runs changes."""
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, STAGEWISE
from stagewise.core.book import build as book
from stagewise.core.book import site_record
from stagewise.core.run.registry import all_chapters
from stagewise.core.run.results_schema import validate

pytestmark = pytest.mark.book


def _plan_lines(stdout: str) -> dict[str, str]:
    """The per-chapter plan lines that `stagewise book` prints first."""
    names = {c.name for c in all_chapters()}
    return {line.split()[0]: line.split(None, 1)[1] for line in stdout.splitlines()
            if line.split() and line.split()[0] in names
            and (line.split(None, 1)[1].startswith("execute:") or line.split(None, 1)[1] == "up to date")}


def _book(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STAGEWISE, "book", *args], capture_output=True, text=True, cwd=ROOT, timeout=3600)


def test_toc_lists_every_chapter():
    toc = (ROOT / "_toc.yml").read_text()
    for chapter in all_chapters():
        assert f"file: chapters/{chapter.name}\n" in toc, chapter.name          # its clean address


def test_every_chapter_ran_strictly_and_meets_the_results_contract(built_book):
    for chapter in all_chapters():
        folder = book.EXECUTED_DIR / chapter.name
        results = json.loads((folder / "results.json").read_text())
        validate(results, where=f"{chapter.name}/results.json")            # the published JSON Schema
        assert results["status"] == "complete" and results["chapter"] == chapter.name
        assert results["checks"] and all(c["passed"] for c in results["checks"]), chapter.name
        for claim in results.get("claims", []):   # reproduced, or not at this budget with the measured reason
            assert claim["passed"] is True or (claim["passed"] is None and claim["reason"].strip()), claim
        if any("control" in c for c in results["checks"]):  # a chapter with controls has one for every theorem check
            weak = [c["name"] for c in results["checks"]        # theorem rows; an empirical claim may show none
                    if c.get("kind") != "sanity" and not (c.get("control") or {}).get("failed")]
            assert not weak, f"{chapter.name}: theorem checks without a failing control: {weak}"
        assert {"commit", "dirty", "versions", "device", "seed", "code_fingerprint"} <= set(results["provenance"])
        stems = {}
        for path in (folder / "figures").iterdir():
            if path.is_dir():                     # figures/dark: the dark theme's renderings, checked below
                continue
            stems.setdefault(path.stem, set()).add(path.suffix)
        assert all((folder / "figures" / "dark" / f"{stem}.png").is_file() for stem in stems), chapter.name
        assert stems and all({".pdf", ".svg", ".png"} <= s for s in stems.values()), chapter.name
        assert all(stem.startswith(chapter.name + "-") for stem in stems)
        assert (folder / f"{chapter.name}.ipynb").exists()
        assert (folder / "story.ipynb").exists() and (folder / "verification.ipynb").exists()   # its two pages


def test_html_pages_render_the_executed_notebooks(built_book):
    html = ROOT / "_build" / "html"
    assert (html / "index.html").exists()
    for chapter in all_chapters():
        page = html / "chapters" / f"{chapter.name}.html"
        text = page.read_text()
        assert "stagewise-checks" not in text, chapter.name      # the checks are on the verification page
        assert "Checked:" in text and f"verification/{chapter.name}.html#verify-" in text, chapter.name
        assert "Every row, by the statement it tests" in (html / "verification" / f"{chapter.name}.html").read_text()
        old = (html / "book" / "executed" / chapter.name / f"{chapter.name}.html").read_text()
        assert f'url=../../../chapters/{chapter.name}.html"' in old and "location.hash" in old   # the old address
        assert "Figure" in text and "Theorem" in text or "Algorithm" in text or "Proposition" in text
        assert "it/s]" not in text, chapter.name                 # progress bars are hidden


def test_noop_build_executes_nothing_and_rebuilds_nothing(built_book):
    """Nothing changed: no chapter runs and the HTML is not rebuilt (benchmarks/bench_book.py times it)."""
    assert _book("--strict").returncode == 0          # the stamp of a complete build (the fixture's may predate it)
    mtimes = {c.name: (book.EXECUTED_DIR / c.name / f"{c.name}.ipynb").stat().st_mtime for c in all_chapters()}
    index = (book.BUILD_DIR / "html" / "index.html").stat().st_mtime_ns
    out = _book("--strict")
    assert out.returncode == 0, out.stderr[-2000:]
    assert set(_plan_lines(out.stdout).values()) == {"up to date"} and len(_plan_lines(out.stdout)) == len(mtimes)
    assert {c: (book.EXECUTED_DIR / c / f"{c}.ipynb").stat().st_mtime for c in mtimes} == mtimes
    assert "html up to date" in out.stdout and (book.BUILD_DIR / "html" / "index.html").stat().st_mtime_ns == index


def test_a_change_in_the_code_a_chapter_runs_makes_it_stale(built_book, tmp_path):
    """The book's own code re-executes nothing; a chapter's subpackage, that chapter; the kernel or the style
    sheets, every chapter."""
    copy = tmp_path / "project"
    for part in ("src", "book/chapters"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("requirements.txt", "requirements.lock", "pyproject.toml"):
        shutil.copy(ROOT / name, copy / name)
    chapters = [(c, copy / "book" / "chapters" / c.source.name) for c in all_chapters()]
    assert all(book.staleness(type(c)(c.name, src), root=copy) is None for c, src in chapters)
    with open(copy / "src" / "stagewise" / "core" / "book" / "pdf.py", "a") as handle:
        handle.write("\n# the book's own code: no chapter runs it\n")
    assert all(book.staleness(type(c)(c.name, src), root=copy) is None for c, src in chapters)
    with open(copy / "src" / "stagewise" / "linear_riccati" / "__init__.py", "a") as handle:
        handle.write("\n# one chapter's code\n")
    assert [c.name for c, src in chapters if book.staleness(type(c)(c.name, src), root=copy)] == ["linear-riccati"]
    with open(copy / "src" / "stagewise" / "core" / "figures" / "styles" / "book.mplstyle", "a") as handle:
        handle.write("\n# the book's style sheet\n")
    assert all(book.staleness(type(c)(c.name, src), root=copy) for c, src in chapters)
    with open(copy / "src" / "stagewise" / "numerics" / "flows.py", "a") as handle:
        handle.write("\n# a comment is a change too\n")
    assert all(book.staleness(type(c)(c.name, src), root=copy) == "code changed (chapter, the code it runs, or "
               "requirements)" for c, src in chapters)


def test_dry_run_reports_the_plan(built_book):
    out = _book("--dry-run")
    plan = _plan_lines(out.stdout)
    assert out.returncode == 0 and set(plan.values()) == {"up to date"} and len(plan) == len(all_chapters())


def _served_checksums_match(html: Path, name: str) -> bool:
    """Every page links the served static file NAME with Sphinx's checksum of it (browsers cache by it)."""
    expected = site_record._crc(html / "_static" / name)
    links = [m for page in html.rglob("*.html") for m in re.findall(rf"_static/{re.escape(name)}\?v=([0-9a-f]{{8}})",
                                                                     page.read_text(encoding="utf-8"))]
    return bool(links) and set(links) == {expected}


def test_an_edited_stylesheet_reaches_the_pages(built_book):
    """An edited book.css reaches the served pages with its new checksum, copied in place of a whole Sphinx build
    (which skips static files when no page is out of date); the unit tests of site_record hold the controls."""
    css = ROOT / "book" / "_static" / "book.css"
    html = book.BUILD_DIR / "html"
    original = css.read_text()
    marker = f"/* freshness probe {time.time_ns()} */\n"
    assert _book("--strict").returncode == 0          # the record of a complete build (the fixture's may predate it)
    assert _served_checksums_match(html, "book.css")
    try:
        css.write_text(original + marker)
        out = _book("--strict")
        assert out.returncode == 0, out.stderr[-2000:]
        assert "html updated: only static files changed (book/_static/book.css)" in out.stdout, out.stdout[-2000:]
        assert marker in (html / "_static" / "book.css").read_text()
        assert _served_checksums_match(html, "book.css")
    finally:
        css.write_text(original)
    out = _book("--strict")
    assert out.returncode == 0 and "only static files changed" in out.stdout
    assert (html / "_static" / "book.css").read_text() == original and _served_checksums_match(html, "book.css")


MACHINE_PATH = __import__("re").compile(r"(?:/[\w.+-]+){2,}\.py:\d+|site-packages|/\.venv/")


def _outputs(notebook: dict) -> str:
    texts = []
    for cell in notebook["cells"]:
        for out in cell.get("outputs", []):
            texts.append("".join(out.get("text", "")) if isinstance(out.get("text"), (str, list)) else "")
            texts.append("".join(out.get("data", {}).get("text/plain", "")))
            texts.append("\n".join(out.get("traceback", [])))
    return "\n".join(texts)


def test_the_path_pattern_sees_a_warning():  # control of the next test: a warnings-module line is caught
    line = "/work/main/.venv/lib/python3.11/site-packages/tqdm/auto.py:21: TqdmWarning: IProgress not found."
    assert MACHINE_PATH.search(line) and not MACHINE_PATH.search("stage 3 at t = 1.25 (loss 0.01)")


def test_no_executed_notebook_prints_a_path_of_the_machine(built_book):
    """Warnings (tqdm's IProgress, a requires_grad scalar, tight_layout) printed the build machine's paths into
    the notebooks readers download; their causes are fixed, so no output names a path of this machine."""
    for chapter in all_chapters():
        notebook = json.loads((book.EXECUTED_DIR / chapter.name / f"{chapter.name}.ipynb").read_text())
        text = _outputs(notebook) + json.dumps(notebook["metadata"])
        found = MACHINE_PATH.findall(text) + ([str(ROOT)] if str(ROOT) in text else [])
        assert not found, f"{chapter.name}: {found[:3]}"

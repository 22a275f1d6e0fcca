"""The mutation matrix (stagewise.core.sweep.power) and its appendix page (stagewise.core.book.power_page).

On the smoke-test chapter, whose catalogue has a bug its checks kill, one they cannot see and one that crashes the
run: the matrix must say killed / survived / crashed for them (control: the baseline passes every row). Then every
chapter's catalogue is checked (size, kinds, docstrings) and, in the ``power`` lane, each chapter's CI bug is run
through the chapter at default parameters and must be killed by a theorem row.
"""
import json
import os
import subprocess

import pytest

from conftest import FIXTURE_CHAPTERS, ROOT, STAGEWISE
from stagewise.core.checks import catalogue
from stagewise.core.sweep import power
from stagewise.core.book import power_page
from stagewise.core.run.registry import CHAPTER_ORDER, get_chapter


def _power(*args, tmp_path, timeout=900):
    env = dict(os.environ, STAGEWISE_EXTRA_CHAPTERS=str(FIXTURE_CHAPTERS),
               STAGEWISE_POWER_DIR=str(tmp_path / "stored"))
    return subprocess.run([STAGEWISE, "power", *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)


def test_the_matrix_says_killed_survived_and_crashed(tmp_path):
    out = _power("smoke-test", "--workers", "2", "--out", str(tmp_path / "p"), tmp_path=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr          # a survivor and a crash: not every bug killed
    stored = json.loads((tmp_path / "stored" / "smoke-test.json").read_text())
    outcome = {b["name"]: b for b in stored["bugs"]}
    assert outcome["slope-off"]["outcome"] == "killed"
    assert outcome["slope-off"]["killed_by"] == ["log-log slope of x^2 is 2"]
    assert outcome["slope-rounded"]["outcome"] == "survived"
    assert outcome["slope-raises"]["outcome"] == "crashed" and "swapped" in outcome["slope-raises"]["message"]
    assert all(c["baseline"] == "pass" for c in stored["checks"])   # control: unmodified, every row passes
    assert stored["killed"] == 1 and stored["total"] == 3
    assert "SURVIVED slope-rounded" in out.stdout and "CRASHED  slope-raises" in out.stdout
    again = _power("smoke-test", "--workers", "1", "--out", str(tmp_path / "p"), tmp_path=tmp_path)
    assert "3 up to date, 1 to run" in again.stdout      # resumable like a sweep: only the crashed run again


def test_a_bug_that_changes_a_published_finding_is_killed(tmp_path, monkeypatch):
    """A bug under which every theorem and integrity row passes but a claim's verdict differs from its published
    one (the run fails --strict with the claim's name) is killed, and the matrix names the finding; control: the
    same run without the changed finding survives."""
    claim = {"name": "ratio band", "kind": "empirical", "status": "pass", "value": 2.3}
    rows = {"checks": [{"name": "row", "kind": "theorem", "status": "pass", "passed": True}], "claims": [claim]}

    def write(point, findings):
        folder = tmp_path / "points" / point
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps({"status": "complete", **rows, "findings": findings}))
    write("baseline", {"changed": []})
    write("bug-flips", {"changed": [{"name": "ratio band", "published": "reproduced",
                                     "measured": "not reproduced at this budget"}]})
    write("bug-quiet", {"changed": []})
    def bug():
        """A bug."""
    bugs = [catalogue.Bug(name=n, target="m:f", replacement=bug, category="wrong measure") for n in ("flips", "quiet")]
    found = power.matrix("conservation-laws", bugs, tmp_path, False, 1.0)
    flips, quiet = found["bugs"]
    assert flips["outcome"] == power.KILLED and flips["findings_changed"] == ["ratio band"] and not flips["killed_by"]
    assert quiet["outcome"] == power.SURVIVED and quiet["findings_changed"] == []
    assert "by a changed published finding: ratio band" in "\n".join(power.summary(found))


def test_the_matrix_section_and_the_appendix_show_a_stale_matrix_as_stale(tmp_path, monkeypatch, fixture_chapters):
    monkeypatch.setenv(power.POWER_DIR_ENV, str(tmp_path))
    chapter = get_chapter("conservation-laws")
    from stagewise.core.run.provenance import chapter_code_fingerprint
    stored = {"chapter": chapter.name, "fingerprint": chapter_code_fingerprint(chapter.name, chapter.source),
              "commit": "abc",
              "checks": [{"name": "row", "kind": "theorem", "baseline": "pass"}], "killed": 1, "total": 1,
              "bugs": [{"name": "b", "category": "sign error", "target": "m:f", "doc": "A sign error. Plausible.",
                        "outcome": "killed", "killed_by": ["row"], "sanity_failed": [], "cells": {"row": "killed"}}]}
    (tmp_path / "conservation-laws.json").write_text(json.dumps(stored))
    fresh = "\n".join(power_page.chapter_section(chapter, power_page.stored_matrix(chapter.name)))
    assert "1 of 1 bugs killed" in fresh and "<td>B1</td><td>K</td>" in fresh
    assert fresh.startswith("(power-conservation-laws)=") and "Stale" not in fresh and "current code" in fresh
    appendix = power_page.page()
    assert "| Conservation laws | 1 of 1 | current | {ref}`the matrix <power-conservation-laws>` |" in appendix
    assert "| Incremental learning" in appendix or "no matrix stored" in appendix     # the others say so
    stored["fingerprint"] = "older"
    (tmp_path / "conservation-laws.json").write_text(json.dumps(stored))
    stale = "\n".join(power_page.chapter_section(chapter, power_page.stored_matrix(chapter.name)))
    assert "**Stale.**" in stale
    assert "| Conservation laws | 1 of 1 | **stale** |" in power_page.page()
    assert "No matrix is stored" in "\n".join(power_page.chapter_section(get_chapter("escape-speed"), None))


@pytest.mark.parametrize("chapter", CHAPTER_ORDER)
def test_each_catalogue_has_realistic_bugs(chapter):
    bugs = power.catalogue(chapter)
    assert len(bugs) >= catalogue.MIN_BUGS
    assert len({b.category for b in bugs}) >= 6, "at least six kinds of slip"
    assert sum(b.ci for b in bugs) == 1
    assert all(len(b.doc) >= 80 for b in bugs), "each docstring says what the bug is and why it is plausible"


@pytest.mark.power
def test_each_chapters_ci_bug_is_killed_by_a_theorem_row(tmp_path):
    """CI runs one bug per chapter through the chapter at its CI atlas point (a small set; 2 workers, one cluster
    for all chapters)."""
    out = _power(*CHAPTER_ORDER, "--ci", "--out", str(tmp_path / "ci"), tmp_path=tmp_path, timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.count("bugs killed by a theorem or integrity check") == len(CHAPTER_ORDER)


@pytest.mark.parametrize("chapter", CHAPTER_ORDER)
def test_no_chapter_imports_another_chapters_package(chapter):
    """What makes a matrix's fingerprint per chapter sound: a chapter runs only its own subpackage, core/ and
    numerics/ (control: the scan sees the chapter's own package)."""
    import re
    own = catalogue.package_of(chapter)
    others = {catalogue.package_of(c) for c in CHAPTER_ORDER} - {own}
    sources = [get_chapter(chapter).source] + sorted((ROOT / "src" / own.replace(".", "/")).rglob("*.py"))
    named = {m for path in sources for m in re.findall(r"stagewise\.[a-z_]+", path.read_text())}
    assert own in named
    assert not named & others, named & others


def test_the_modules_left_out_of_a_chapters_fingerprint_never_run_in_its_kernel():
    """A chapter's kernel imports stagewise, its session and its subpackage: none of the modules that
    chapter_code_fingerprint leaves out (control: the kernel's own modules are seen)."""
    import subprocess
    import sys
    from stagewise.core.run.provenance import outside_the_kernel
    code = ("import sys, importlib, stagewise; from stagewise.core.run import session; "
            + "; ".join(f"importlib.import_module('{catalogue.package_of(c)}')" for c in CHAPTER_ORDER)
            + "; print(' '.join(m for m in sys.modules if m.startswith('stagewise.core.')))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                cwd=ROOT).stdout.split())
    assert "stagewise.core.run.session" in loaded and "stagewise.core.checks.rows" in loaded
    assert not [m for m in loaded if outside_the_kernel(m.removeprefix("stagewise.core."))]


def _imported(source: str, package: str) -> set[str]:
    """Every module ``source`` imports, dotted and absolute (``from . import x`` inside ``package`` resolved)."""
    import ast
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package if node.level else node.module or ""
            base = f"{base}.{node.module}" if node.level and node.module else base
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return found


def test_nothing_that_computes_a_result_imports_the_drawing_code():
    """What makes leaving the drawing code out of the fingerprint sound: of a chapter's modules and the kernel's,
    only the session (which saves the figures) and the drawing modules themselves import it; the chapter's code cells
    call it to draw. Control: the scan sees the session's import and the code cells'."""
    from stagewise.core.run.provenance import DRAWING_IN_CORE, chapter_code_cells, drawing_files, outside_the_kernel
    package = ROOT / "src" / "stagewise"
    core = package / "core"
    for chapter in CHAPTER_ORDER:
        own = catalogue.package_of(chapter)
        names = {f"stagewise.core.{m}" for m in DRAWING_IN_CORE} | {f"{own}.figures"}
        drawing = set(drawing_files(chapter))
        scanned = [f for f in sorted((package / own.split(".")[1]).rglob("*.py"))
                   + sorted((package / "numerics").rglob("*.py")) + sorted(core.rglob("*.py"))
                   if f not in drawing and not (f.is_relative_to(core) and outside_the_kernel(
                       ".".join(f.relative_to(core).with_suffix("").parts)))]
        importers = {str(f.relative_to(package)) for f in scanned
                     if _imported(f.read_text(), ".".join(("stagewise", *f.relative_to(package).parent.parts)))
                     & names}
        assert importers == {"core/run/session.py"}, (chapter, importers)
        cells = chapter_code_cells(get_chapter(chapter).source).replace("\n\x00\n", "\n")
        assert _imported(cells, own) & names, chapter                     # control: the code cells draw


def test_a_restamp_sees_code_and_front_matter_but_not_prose():
    """`stagewise power --restamp` marks a matrix current after a prose-only change: what it compares is the
    chapter's front matter and code cells (the control: a changed code cell, a changed front matter)."""
    from stagewise.core.cli.sweeps import _code_of
    source = (ROOT / "book" / "chapters" / "linear-riccati.md").read_text()
    title = next(line for line in source.splitlines() if line.startswith("# "))   # the chapter's title: prose
    prose = source.replace(title, title + " (renamed in the prose)", 1)
    code = source.replace("run.value(", "run.value (", 1)
    front = source.replace("expected_seconds:", "expected_seconds: 1 #", 1)
    assert prose != source and _code_of(prose) == _code_of(source)
    assert _code_of(code) != _code_of(source) and _code_of(front) != _code_of(source)


def test_a_restamp_refuses_a_matrix_that_code_changes_made_stale(tmp_path, monkeypatch):
    from stagewise.core.sweep import power
    from stagewise.core.cli.sweeps import UsageError, restamp
    stored = json.loads(power.stored_path("linear-riccati").read_text())
    stored["fingerprint"] = "0" * 64                   # a matrix of some other code
    monkeypatch.setenv(power.POWER_DIR_ENV, str(tmp_path))
    power.store(stored)
    with pytest.raises(UsageError, match="not that of HEAD's code"):
        restamp("linear-riccati")


@pytest.mark.parametrize("chapter", CHAPTER_ORDER)
def test_ci_runs_the_ci_bug_at_the_point_the_atlas_judges_unmodified(chapter):
    """`power --ci` runs the CI bug at the chapter's first CI atlas point (whose unmodified run the nbmake lane
    judges as that atlas point in the same suite), with the bug in the run's environment; the full matrix runs at the defaults."""
    from stagewise.core.sweep import atlas
    bug = next(b for b in power.catalogue(chapter) if b.ci)
    point = atlas.load(chapter, ci=True)[1][0]
    (ci,) = power.points(chapter, [bug], False, power.ci_overrides(chapter))
    assert ci["parameters"] == point["parameters"] and ci["environment"] == {catalogue.BUG_ENV: f"{chapter}:{bug.name}"}
    full = power.points(chapter, [bug], True)
    assert [p["id"] for p in full] == [power.BASELINE, f"bug-{bug.name}"] and not full[0]["overrides"]
    assert full[0]["parameters"] != point["parameters"]

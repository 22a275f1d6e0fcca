"""Freshness and provenance: the fingerprint covers the lock and is taken before execution, the dirty flag
counts untracked sources, every installed distribution is recorded, and `book --force CHAPTER`."""
import shutil
import subprocess

from conftest import ROOT, stagewise
from stagewise.core.book import build as book
from stagewise.core.run import provenance
from stagewise.core.run.registry import get_chapter


def _project(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("requirements.txt", "requirements.lock", "pyproject.toml"):
        shutil.copy(ROOT / name, copy / name)
    return copy


def test_the_fingerprint_covers_the_lock(tmp_path):
    copy = _project(tmp_path)
    source = get_chapter("conservation-laws").source
    before = provenance.code_fingerprint(source, root=copy)
    with open(copy / "requirements.lock", "a") as handle:
        handle.write("six==1.16.0\n")
    assert provenance.code_fingerprint(source, root=copy) != before


def test_redrawing_a_figure_leaves_stored_results_current_but_re_executes_the_chapter(tmp_path):
    """The drawing code (a chapter's figures.py, core's styles and export) is outside the fingerprint of what a run
    records, so a redrawn figure stales no stored matrix, sample or paper-scale run; the book still re-executes the
    chapter. Control: an edit to the science of the same chapter changes both."""
    copy = _project(tmp_path)
    chapter = get_chapter("transformer-rank")
    local = type(chapter)(chapter.name, chapter.source)

    def both():
        return (provenance.chapter_code_fingerprint(chapter.name, chapter.source, root=copy),
                book.book_inputs(local, root=copy))

    before = both()
    drawing = [p.relative_to(copy) for p in provenance.drawing_files(chapter.name, root=copy)]
    assert {str(p) for p in drawing} >= {"src/stagewise/transformer_rank/figures.py",
                                         "src/stagewise/core/figures/styles.py"}, drawing
    for path in drawing:
        with open(copy / path, "a") as handle:
            handle.write("\n# a redrawn figure\n")
        results, inputs = both()
        assert results == before[0] and inputs != before[1], path
        before = (results, inputs)
    with open(copy / "src" / "stagewise" / "transformer_rank" / "budget.py", "a") as handle:
        handle.write("\n# the science\n")
    results, inputs = both()
    assert results != before[0] and inputs != before[1]


def test_every_installed_distribution_is_recorded():
    found = provenance.versions()
    assert list(found)[0] == "python"
    for name in ("torch", "numba", "scikit-learn", "mlxtend", "jupyter-book", "stagewise"):
        assert any(k.lower() == name for k in found), name


def test_untracked_sources_make_the_tree_dirty(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("x = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "c"], check=True)
    monkeypatch.setattr(provenance, "PROJECT_ROOT", repo)
    assert provenance.git_state()["dirty"] is False
    (repo / "notes.txt").write_text("untracked outside src/ and book/ does not count\n")
    assert provenance.git_state()["dirty"] is False
    (repo / "src" / "b.py").write_text("y = 2\n")
    assert provenance.git_state()["dirty"] is True


def test_force_one_chapter(fixture_chapters):
    plans = {p.chapter.name: p.reason for p in book.plan(force=["smoke-test"])}
    assert plans["smoke-test"] == "forced" and plans["smoke-twin"] != "forced"
    assert all(p.reason == "forced" for p in book.plan(force=True))
    out = stagewise("book", "--dry-run", "--force", "smoke-test", "--only", "smoke-test", "--only", "smoke-twin")
    assert out.returncode == 0 and "smoke-test               execute: forced" in out.stdout, out.stdout
    assert "smoke-twin               execute: forced" not in out.stdout
    bad = stagewise("book", "--dry-run", "--force", "no-such-chapter")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1

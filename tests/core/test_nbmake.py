"""The nbmake source lane: every chapter's notebook as a reader runs it (jupytext, papermill --prepare-only with the
lane's parameters, pytest --nbmake on both cores), and controls that the lane itself catches a failure: an
exception in a cell, a kernel that dies outside any Python exception, a failed check."""
import json
from pathlib import Path

import pytest

from conftest import FIXTURE_CHAPTERS
from stagewise.core.book import lanes
from stagewise.core.run.registry import all_chapters

pytestmark = pytest.mark.nbmake
SMOKE = FIXTURE_CHAPTERS / "smoke-test.md"
DIES = Path(__file__).resolve().parents[1] / "nbmake" / "failing-outside-a-cell.md"


def test_every_chapter_runs_as_a_notebook_and_its_atlas_ci_point_holds():
    """Each chapter's notebook at its atlas's CI point passes its checks, and the run holds as the atlas judges
    that point (every row passes or has no verdict with its reason): CI runs that point once, here."""
    from stagewise.core.sweep import atlas
    parameters = lanes.lane_parameters()
    assert set(parameters) == {c.name for c in all_chapters()}
    notebooks = lanes.prepare(parameters, {c.name: c.source for c in all_chapters()})
    done = lanes.run(notebooks)
    assert done.returncode == 0, done.stdout[-4000:]
    for notebook in notebooks:                             # the injected parameters reached the run
        chapter = notebook.stem
        results = json.loads((notebook.parent / "results.json").read_text())
        point = lanes.atlas_point(chapter)
        assert all(results["parameters"][k] == v for k, v in point["overrides"].items()), chapter
        verdict = atlas.judge(chapter, point, notebook.parent, "done", "")
        assert not verdict.problems and verdict.checks, (chapter, verdict.problems)


def test_the_lane_fails_on_an_error_in_a_cell_a_dead_kernel_and_a_failed_check(fixture_chapters, tmp_path):
    notebooks = lanes.prepare({"passes": {"steps": 5}, "raises": {"fail_at_step": 2},
                               "check-fails": {"break_check": True}, "kernel-dies": {}},
                              {"passes": SMOKE, "raises": SMOKE, "check-fails": SMOKE, "kernel-dies": DIES}, tmp_path)
    done = lanes.run(notebooks, cwd=tmp_path)
    assert done.returncode == 1, done.stdout[-3000:]
    summary = done.stdout[done.stdout.rfind("short test summary"):]
    for name in ("raises", "check-fails", "kernel-dies"):
        assert f"FAILED {name}/{name}.ipynb" in summary, (name, summary)
    assert "FAILED passes/" not in summary and "1 passed" in summary

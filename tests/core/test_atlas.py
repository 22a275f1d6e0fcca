"""The parameter atlas (stagewise.core.sweep.atlas): every chapter's atlas file, the judge, and the CI subset."""
import json
import os

import pytest

from conftest import ROOT, stagewise
from stagewise.core.book import lanes
from stagewise.core.sweep import atlas
from stagewise.core.run.parameters import ParameterError, resolve
from stagewise.core.run.registry import CHAPTER_ORDER, get_chapter


@pytest.mark.parametrize("chapter", CHAPTER_ORDER)
def test_every_chapter_has_an_atlas_of_valid_non_default_sets(chapter):
    grid, points = atlas.load(chapter)                    # validated like runs; >= 8 sets; ci indices valid
    defaults = resolve(get_chapter(chapter).parameters, {}, chapter)
    assert len(points) >= atlas.MIN_SETS
    for p in points:
        assert p["parameters"] != defaults, f"{chapter}: an atlas point equal to the defaults: {p['overrides']}"
    varied = {name for p in points for name, v in p["parameters"].items() if v != defaults[name]}
    assert len(varied - {"seed"}) >= 3, f"{chapter}: the atlas varies only {sorted(varied)}"
    ci_sets = atlas.load(chapter, ci=True)[1] + atlas.exercises(chapter, ci=True)
    assert len(ci_sets) >= atlas.MIN_CI_SETS                # CI runs at least two sets per chapter
    lane = lanes.lane_parameters()[chapter]                 # the nbmake lane runs the CI point (judged there)
    assert lane == atlas.load(chapter, ci=True)[1][0]["overrides"]


def test_ci_needs_two_sets_with_or_without_an_exercise(tmp_path, monkeypatch):
    """The exercise marked ci counts as one of the two CI sets; without one, ci must list two points."""
    text = (ROOT / "tests" / "atlas" / "conservation-laws.yaml").read_text()
    monkeypatch.setenv(atlas.ATLAS_DIR_ENV, str(tmp_path))
    (tmp_path / "conservation-laws.yaml").write_text(text)
    assert len(atlas.load("conservation-laws", ci=True)[1]) == 1
    (tmp_path / "conservation-laws.yaml").write_text(text.replace("    ci: true\n", "", 1))
    with pytest.raises(ParameterError, match="at least 2 distinct point indices"):
        atlas.load("conservation-laws", ci=True)


SMOKE_ATLAS = """steps: 6
zip:
  - {eta: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], break_check: [false, false, false, false, false, false, false, true],
     broken: [none, none, none, none, none, hypothesis, none, none]}
ci: [0, 5]
"""


def test_the_atlas_judges_every_run_and_names_what_falls_short(fixture_chapters, tmp_path, monkeypatch):
    """Eight smoke-test sets: one breaks a hypothesis (its row 'not run' with the reason: holds), one fails a
    check (falls short, named); the CI subset (points 0 and 5) holds."""
    (tmp_path / "atlas").mkdir()
    (tmp_path / "atlas" / "smoke-test.yaml").write_text(SMOKE_ATLAS)
    monkeypatch.setenv(atlas.ATLAS_DIR_ENV, str(tmp_path / "atlas"))
    full = stagewise("atlas", "smoke-test", "--out", str(tmp_path / "a"), "--workers", "2", timeout=900)
    assert full.returncode == 1, full.stdout[-3000:] + full.stderr[-2000:]
    assert "7 hold, 1 fall short" in full.stdout
    assert "theorem check FAILED: decay matches (1 - eta)^steps" in full.stdout
    assert "not run: decay matches (1 - eta)^steps: hypothesis not met: step size below 1" in full.stdout
    report = json.loads((tmp_path / "a" / "atlas.json").read_text())
    assert len(report["points"]) == 8 and sum(bool(p["problems"]) for p in report["points"]) == 1
    ci = stagewise("atlas", "smoke-test", "--ci", "--out", str(tmp_path / "a"), timeout=900)   # resumed: judged only
    assert ci.returncode == 0 and "2 hold, 0 fall short" in ci.stdout, ci.stdout[-3000:]
    assert "2 points, 2 up to date, 0 to run" in ci.stdout
    (tmp_path / "atlas" / "smoke-test.yaml").write_text(SMOKE_ATLAS.replace("ci: [0, 5]", "ci: [0, 8]"))
    bad = stagewise("atlas", "smoke-test", "--ci", "--out", str(tmp_path / "d"))
    assert bad.returncode == 2 and "ci must list at least 2 distinct point indices in [0, 7]" in bad.stderr


def test_a_row_without_a_verdict_needs_a_reason(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    rows = [{"name": "a", "passed": True}, {"name": "b", "passed": None, "reason": ""},
            {"name": "c", "passed": False, "kind": "sanity", "value": 1, "tolerance": 0}]
    (folder / "results.json").write_text(json.dumps({"status": "complete", "checks": rows}))
    verdict = atlas.judge("x", {"id": "p", "overrides": {}}, folder, "complete", "")
    assert verdict.problems == ["b: no verdict and no reason", "sanity row FAILED: c = 1 (tolerance 0)"]
    crashed = atlas.judge("x", {"id": "p", "overrides": {}}, folder, "failed", "exit 1: DegenerateStageError")
    assert crashed.problems == ["the run failed: exit 1: DegenerateStageError"]


@pytest.mark.atlas
def test_the_ci_exercise_of_every_chapter_holds(tmp_path):
    """`stagewise atlas --ci --exercises`: the exercise marked ci of every chapter shows its answer, on both cores.
    The CI point, the other of the two CI sets, runs once in the nbmake lane and is judged there
    (tests/core/test_nbmake.py); `make atlas-ci` runs both, `make atlas` everything."""
    env_out = tmp_path / "atlas-ci"
    out = stagewise("atlas", "--ci", "--exercises", "--out", str(env_out), extra_chapters=False, timeout=3000)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    report = json.loads((env_out / "atlas.json").read_text())
    assert report["exercises_only"] and sorted(p["chapter"] for p in report["points"]) == sorted(CHAPTER_ORDER)
    assert {p["id"] for p in report["points"]} == {e["id"] for c in CHAPTER_ORDER for e in atlas.exercises(c, ci=True)}


SMOKE_EXERCISES = SMOKE_ATLAS + """exercises:
  - id: ex-break-the-hypothesis
    title: "Break the hypothesis"
    parameters: {broken: hypothesis, steps: 6}
    expect:
      - {row: "decay matches (1 - eta)^steps", status: "not run"}
    ci: true
  - id: ex-wrong-answer
    title: "An answer the run contradicts"
    parameters: {eta: 0.3, steps: 6}
    expect:
      - {row: "decay matches (1 - eta)^steps", status: "fail"}
"""


def test_exercises_are_validated_before_anything_runs(fixture_chapters, tmp_path, monkeypatch):
    (tmp_path / "smoke-test.yaml").write_text(SMOKE_EXERCISES)
    monkeypatch.setenv(atlas.ATLAS_DIR_ENV, str(tmp_path))
    found = atlas.exercises("smoke-test")
    assert [e["id"] for e in found] == ["ex-break-the-hypothesis", "ex-wrong-answer"]
    assert [e["id"] for e in atlas.exercises("smoke-test", ci=True)] == ["ex-break-the-hypothesis"]
    assert found[0]["parameters"]["broken"] == "hypothesis" and found[0]["ci"] and not found[1]["ci"]
    for bad, message in (("status: \"not run\"}", "status: \"passes\"}"), "status one of"), \
                        (("broken: hypothesis, steps: 6", "broken: hypothesis, steps: -6"), "exercise 0: "), \
                        (("    ci: true\n", ""), "exactly one exercise must be marked ci"):
        (tmp_path / "smoke-test.yaml").write_text(SMOKE_EXERCISES.replace(*bad, 1))
        with pytest.raises(ParameterError, match=message):
            atlas.exercises("smoke-test")


def test_an_exercise_holds_only_if_the_run_shows_its_answer():
    results = {"values": {"drift": 0.5}, "checks": [{"name": "r", "status": "not run", "passed": None, "kind": "theorem"}],
               "claims": [{"name": "c", "status": "pass", "passed": True, "kind": "empirical"}]}
    assert atlas.expectation_problems(results, [{"row": "r", "status": "not run"}, {"row": "c", "status": "reproduced"},
                                                {"value": "drift", "above": 0.4, "below": 0.6}]) == []
    problems = atlas.expectation_problems(results, [{"row": "r", "status": "pass"}, {"row": "x", "status": "pass"},
                                                    {"value": "drift", "above": 0.5}, {"value": "gone", "below": 1}])
    assert problems == ["exercise expects 'r' 'pass', the run gives 'not run'",
                        "exercise expects row 'x', which the run does not have",
                        "exercise expects drift > 0.5, the run gives 0.5",
                        "exercise expects a number 'gone', the run gives None"]


def test_the_atlas_runs_the_ci_exercise_and_judges_its_answer(fixture_chapters, tmp_path, monkeypatch):
    """`--ci` runs the CI points and the exercise marked ci (its answer holds); the full atlas runs every exercise
    and names the one whose answer the run contradicts."""
    (tmp_path / "atlas").mkdir()
    (tmp_path / "atlas" / "smoke-test.yaml").write_text(SMOKE_EXERCISES)
    monkeypatch.setenv(atlas.ATLAS_DIR_ENV, str(tmp_path / "atlas"))
    ci = stagewise("atlas", "smoke-test", "--ci", "--out", str(tmp_path / "a"), "--workers", "2", timeout=900)
    assert ci.returncode == 0 and "3 hold, 0 fall short" in ci.stdout, ci.stdout[-3000:] + ci.stderr[-2000:]
    assert "ex-break-the-hypothesis" in ci.stdout
    only = stagewise("atlas", "smoke-test", "--ci", "--exercises", "--out", str(tmp_path / "a"), timeout=900)
    assert only.returncode == 0 and "1 parameter sets" in only.stdout and "1 hold, 0 fall short" in only.stdout, \
        only.stdout[-3000:]                                           # the exercise alone (resumed: judged only)
    (tmp_path / "atlas" / "smoke-test.yaml").write_text(SMOKE_EXERCISES.replace("steps: 6\nzip", "steps: 6\nzip", 1)
                                                        .replace("ci: [0, 5]", "ci: [0, 1]"))
    ex = atlas.exercises("smoke-test")[1]
    folder = tmp_path / "one"
    run = stagewise("run", "smoke-test", "-p", "eta", "0.3", "-p", "steps", "6", "--out", str(folder))
    assert run.returncode == 0, run.stderr
    verdict = atlas.judge("smoke-test", ex, folder, "complete", "")
    assert verdict.problems == ["exercise expects 'decay matches (1 - eta)^steps' 'fail', the run gives 'pass'"]

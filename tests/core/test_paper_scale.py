"""Stored runs at the paper's scale (stagewise.core.sweep.paper_scale, book/paper-scale.yaml, make paper-scale) and
their place on the chapter's pages (stagewise.core.book.paper_scale_page).

The stored runs themselves: each listed run is stored, complete, every check passing, with the fingerprint of the
code that made it, and that fingerprint is today's (a stale stored run fails here: `make paper-scale`). The
mechanism: a run with a failed check is never stored and never replaces a stored one; a stored run at other
parameters or on other code is stale; the story page gets its section before the summary and the verification page
its rows."""
import json
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from stagewise.core.book import paper_scale_page
from stagewise.core.sweep import paper_scale

RUNS = paper_scale.load()
STORED = {r.id: r.folder for r in RUNS}            # the real stored folders (tests below move STORED_DIR)


def test_the_file_lists_runs_of_known_chapters_with_valid_parameters():
    assert RUNS, "book/paper-scale.yaml lists no run"
    for run in RUNS:
        assert run.differs and run.title and run.figures, run.id


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id)
def test_each_stored_run_is_complete_passing_and_current(run):
    results = paper_scale.results_of(run.folder)
    assert results is not None, f"{run.id}: not stored (make paper-scale)"
    assert results["chapter"] == run.chapter and not paper_scale.failed_rows(results), paper_scale.failed_rows(results)
    provenance = results["provenance"]
    assert re.fullmatch(r"[0-9a-f]{64}", provenance.get("chapter_fingerprint", "")), f"{run.id}: no fingerprint"
    assert provenance.get("wall_seconds", 0) > 0 and provenance.get("device")
    assert paper_scale.state(run) == "current", (f"{run.id} is stale: the code its chapter runs changed since it was "
                                                 "stored; `make paper-scale` runs it again")
    for figure_id in run.figures:
        stem = f"{run.chapter}-{figure_id}"
        assert (run.folder / "figures" / f"{stem}.json").is_file() and (run.folder / "figures" / f"{stem}.npz").is_file()


def test_stored_runs_stay_small():
    """What the repository keeps per stored run (results and figure data, no image)."""
    for run in RUNS:
        size = sum(p.stat().st_size for p in run.folder.rglob("*") if p.is_file())
        assert size < 2_000_000, f"{run.id}: {size} bytes"
        assert not list(run.folder.rglob("*.png")) and not list(run.folder.rglob("*.ipynb"))


def _fake(tmp_path, monkeypatch, passed=True):
    """A stored-runs file and folder in tmp_path, with one run folder made from the stored transformer run."""
    source = next(r for r in RUNS if r.chapter == "transformer-rank")
    monkeypatch.setattr(paper_scale, "STORED_DIR", tmp_path / "stored")
    folder = tmp_path / "run"
    shutil.copytree(STORED[source.id], folder)
    results = json.loads((folder / "results.json").read_text())
    if not passed:
        results["checks"][0].update(passed=False, status="fail")
    (folder / "results.json").write_text(json.dumps(results))
    return paper_scale.StoredRun("fake", source.chapter, "A fake", dict(source.parameters), "Differs.",
                                 list(source.figures)), folder


def test_a_run_with_a_failed_check_is_not_stored_and_replaces_nothing(tmp_path, monkeypatch):
    run, good = _fake(tmp_path, monkeypatch)
    paper_scale.store(run, good)
    before = (run.folder / "results.json").read_text()
    _, bad = _fake(tmp_path / "b", monkeypatch, passed=False)
    monkeypatch.setattr(paper_scale, "STORED_DIR", tmp_path / "stored")
    with pytest.raises(paper_scale.PaperScaleError, match="not stored"):
        paper_scale.store(run, bad)
    assert (run.folder / "results.json").read_text() == before
    assert not list((tmp_path / "stored").glob(".*")), "no leftover of the refused store"


def test_other_parameters_or_other_code_make_a_stored_run_stale(tmp_path, monkeypatch):
    run, good = _fake(tmp_path, monkeypatch)
    paper_scale.store(run, good)
    assert paper_scale.state(run) == "current"
    other = paper_scale.StoredRun(run.id, run.chapter, run.title, {**run.parameters, "vit_steps": 1234}, run.differs)
    assert paper_scale.state(other) == "stale"
    results = json.loads((run.folder / "results.json").read_text())
    results["provenance"]["chapter_fingerprint"] = "0" * 64
    (run.folder / "results.json").write_text(json.dumps(results))
    assert paper_scale.state(run) == "stale"
    assert "Stale" in paper_scale_page._state_line(run)


def test_the_story_section_goes_before_the_summary_and_the_rows_to_the_verification_page(tmp_path, monkeypatch):
    run, good = _fake(tmp_path, monkeypatch)
    paper_scale.store(run, good)
    monkeypatch.setattr(paper_scale, "for_chapter", lambda chapter: [run])
    default = json.loads((ROOT / "book" / "executed" / run.chapter / "results.json").read_text()) \
        if (ROOT / "book" / "executed" / run.chapter / "results.json").is_file() else {"checks": [], "claims": []}
    lines = paper_scale_page.story_lines(run.chapter, default, tmp_path / "executed" / run.chapter,
                                         tmp_path / "chapters")
    text = "\n".join(lines)
    assert paper_scale_page.HEADING in text and "It ran on the chapter's current code." in text and "::::{dropdown}" in text
    for figure_id in run.figures:
        assert f":name: paper-scale-fake-{figure_id}" in text
        assert (tmp_path / "executed" / "_paper-scale" / "fake" / f"{run.chapter}-{figure_id}.book.png").is_file()
    assert not (tmp_path / "executed" / run.chapter).exists(), "nothing written into the chapter's run folder"
    assert "| row | this page's run | at the paper's scale |" in text
    story = {"cells": [{"cell_type": "markdown", "source": "Intro.\n\n## Summary\n\n- one"}]}
    paper_scale_page.insert_story(story, lines)
    source = story["cells"][0]["source"]
    assert source.index(paper_scale_page.HEADING) < source.index("## Summary") and source.startswith("Intro.")
    rows = "\n".join(paper_scale_page.verification_lines(run.chapter))
    assert "(paper-scale-rows-fake)=" in rows and rows.count("\n- **") >= len(json.loads(
        (run.folder / "results.json").read_text())["checks"])


def test_the_command_refuses_an_unknown_run_in_one_line():
    done = subprocess.run([sys.executable, "-m", "stagewise", "paper-scale", "no-such-run"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "no-such-run" in done.stderr
    listed = subprocess.run([sys.executable, "-m", "stagewise", "paper-scale", "--list"], capture_output=True,
                            text=True, cwd=ROOT, timeout=120)
    assert listed.returncode == 0 and all(r.id in listed.stdout for r in RUNS)


def test_runs_that_differ_only_in_the_seed_are_one_claim_by_seed_table():
    """Stored runs at the same parameters but the seed form one group; its sentence counts the claims reproduced at
    every seed, at some and at none, and its table gives each claim's verdict per seed. A run at other parameters
    is no member (the control)."""
    def stored(i, parameters, statuses):
        run = paper_scale.StoredRun(id=f"r{i}", chapter="transformer-rank", title=f"Run {i}", parameters=parameters,
                                    differs="", figures=[])
        claims = [{"name": name, "kind": "empirical", "status": st, "value": 0.5} for name, st in statuses.items()]
        return run, {"parameters": parameters, "claims": claims}
    base = {"vit_steps": 3000}
    runs = [stored(0, base, {"a": "pass", "b": "pass", "c": "not reproduced at this budget"}),
            stored(1, {**base, "seed": 1}, {"a": "pass", "b": "not reproduced at this budget",
                                            "c": "not reproduced at this budget"}),
            stored(2, {"vit_steps": 300, "seed": 2}, {"a": "not reproduced at this budget", "b": "pass", "c": "pass"}),
            (paper_scale.StoredRun(id="r3", chapter="transformer-rank", title="Run 3", parameters={**base, "seed": 3},
                                   differs="", figures=[]), None)]
    groups = paper_scale_page.seed_groups(runs)
    assert [[run.id for run, _ in g] for g in groups] == [["r0", "r1"]]
    sentence, table = paper_scale_page.seed_table(groups[0])
    assert sentence == "across seeds 0, 1: of 3 claims, 1 reproduced at every seed, 1 at some seeds only, 1 at none"
    assert table[0] == "| claim | seed 0 | seed 1 |" and len(table) == 2 + 3
    assert table[3].startswith("| b | reproduced (0.5) | not reproduced at this budget (0.5) |")
    line = paper_scale_page.summary(runs[0][1])
    assert line == "claims 2 reproduced, 1 not reproduced at this budget", line
    with_theorem = {"checks": [{"name": "t", "kind": "theorem", "status": "pass", "passed": True}], "claims": []}
    assert paper_scale_page.summary(with_theorem).startswith("theorem rows 1 passed, 0 failed, 0 not run")


def test_a_box_quotes_the_sentences_its_run_computed():
    """The sentences ``book/paper-scale.yaml`` lists for a run are the run's own text values (how its verdicts move
    with the budget), quoted as recorded; a value the run did not record is said to be missing (the control), and
    the transformer's long runs quote their budget sentence."""
    run = paper_scale.StoredRun(id="r", chapter="transformer-rank", title="R", parameters={}, differs="",
                                sentences=["budget_sentence", "absent"])
    line = paper_scale_page.quoted(run, {"values": {"budget_sentence": "Reproduced, by claim: a at 3000 steps."}})
    assert line == "Reproduced, by claim: a at 3000 steps. (absent: not recorded by this run.)"
    long_runs = [r for r in RUNS if r.chapter == "transformer-rank"]
    assert long_runs and all("budget_sentence" in r.sentences for r in long_runs)
    for r in long_runs:
        assert paper_scale_page.quoted(r, paper_scale.results_of(r.folder)).startswith("Reproduced, by claim:")

"""The mutation tool's sample (stagewise mutants): cosmic-ray's mutants of a chapter's science modules, swapped in
at import in a subprocess and its children, judged against the unmodified run; the stored samples are consistent."""
import os
import subprocess
import sys

import numpy as np
import pytest

from stagewise.core.run.registry import CHAPTER_ORDER
from stagewise.core.sweep import mutant_run, mutants


def test_the_sample_is_seeded_and_each_mutant_changes_its_module():
    first, population = mutants.sample("linear-riccati", 8, seed=0)
    again, _ = mutants.sample("linear-riccati", 8, seed=0)
    other, _ = mutants.sample("linear-riccati", 8, seed=1)
    assert [m.id for m in first] == [m.id for m in again] and [m.id for m in first] != [m.id for m in other]
    assert population > 1000 and len(first) == 8
    for m in first:
        assert m.operator in mutants.OPERATORS and m.path.split("/")[-1][:-3] not in mutants.NOT_SCIENCE
        source = mutants.mutated_source(m)
        original = (mutants.PROJECT_ROOT / m.path).read_text()
        assert source and source != original
        compile(source, m.path, "exec")


def _package(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("def f():\n    return 2 + 3\n")
    mutant = mutants.Mutant("pkg.mod", str(tmp_path / "pkg" / "mod.py"), "core/ReplaceBinaryOperator_Add_Sub", 0, 2,
                            "f")
    return mutant, "def f():\n    return 2 - 3\n"


CHILD = ("import subprocess, sys, pkg.mod; print(pkg.mod.f()); "
         "subprocess.run([sys.executable, '-c', 'import pkg.mod; print(pkg.mod.f())'])")


def test_the_hook_swaps_the_module_in_a_process_and_its_children(tmp_path):
    mutant, source = _package(tmp_path)
    env = mutants.environment(mutant, source, tmp_path / "work", timeout=60)
    env["PYTHONPATH"] += f":{tmp_path}"
    mutated = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=tmp_path,
                             env={**os.environ, **env})
    assert mutated.stdout.split() == ["-1", "-1"], mutated.stderr
    plain = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=tmp_path)  # control
    assert plain.stdout.split() == ["5", "5"]
    assert (tmp_path / "pkg" / "mod.py").read_text() == "def f():\n    return 2 + 3\n"     # no file changed


def test_a_mutant_that_runs_too_long_ends_with_the_timeout_message(tmp_path):
    mutant, source = _package(tmp_path)
    env = mutants.environment(mutant, source, tmp_path / "work", timeout=1)
    done = subprocess.run([sys.executable, "-c", "import time; time.sleep(30)"], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=25)
    assert done.returncode == 124 and done.stderr.startswith(mutants.TIMED_OUT)


def _run(folder, value=1.0, passed=True, array=(1.0, 2.0)):
    (folder / "figures").mkdir(parents=True)
    np.savez(folder / "figures" / "fig.npz", y=np.array(array))
    return {"status": "complete", "parameters": {}, "values": {"v": value}, "claims": [], "hypotheses": [],
            "checks": [{"name": "row", "value": value, "tolerance": 1, "passed": passed}]}


@pytest.mark.parametrize("change, outcome", [({}, mutants.EQUIVALENT),                       # nothing a reader sees
                                              ({"array": (1.0, 2.5)}, mutants.SURVIVED),    # a figure array only
                                              ({"value": 1.1}, mutants.SURVIVED),
                                              ({"passed": False}, mutants.CHAPTER_ROWS)])
def test_a_mutants_run_is_judged_against_the_unmodified_run(tmp_path, change, outcome):
    base = _run(tmp_path / "base")
    found = mutants.judge(base, tmp_path / "base", _run(tmp_path / "m", **change), tmp_path / "m",
                          "")
    assert found["outcome"] == outcome


def test_a_run_that_stops_is_a_crash_and_a_timeout_says_so(tmp_path):
    base = _run(tmp_path / "base")
    crash = mutants.judge(base, tmp_path / "base", None, tmp_path / "m", "ZeroDivisionError")
    late = mutants.judge(base, tmp_path / "base", None, tmp_path / "m", mutants.TIMED_OUT + " 9 s")
    assert crash["outcome"] == late["outcome"] == mutants.CRASHED and late["timed_out"] and not crash["timed_out"]
    kept = mutants.judge(base, tmp_path / "base", None, tmp_path / "m",
                         "stagewise: run failed: ValueError: x; partial run kept in /tmp/a/b.failed-1 (3 s)")
    assert kept["detail"] == "stagewise: run failed: ValueError: x (3 s)" and "/tmp" not in kept["detail"]


def test_the_unit_tests_of_a_module_are_those_whose_imports_reach_it():
    tests = [t.name for t in mutant_run.unit_tests_for("linear-riccati", "stagewise.linear_riccati.riccati")]
    assert tests[0] in {"test_linear_riccati_closed_form.py", "test_linear_gradient_flow.py", "test_linear_jump_process.py"}
    assert "test_linear_riccati_closed_form.py" in tests
    assert mutant_run.unit_tests_for("linear-riccati", "stagewise.linear_riccati.no_such_module") == []   # control


def test_the_wilson_interval():
    low, high = mutants.wilson(17, 20)
    assert low < 0.85 < high and mutants.wilson(0, 0) == (0.0, 1.0)
    assert mutants.wilson(20, 20)[1] == 1.0 and mutants.wilson(20, 20)[0] > 0.8


def test_every_stored_sample_counts_its_own_mutants():
    stored = {c: mutants.stored(c) for c in CHAPTER_ORDER}
    assert all(stored.values()), [c for c, s in stored.items() if not s]
    for chapter, found in stored.items():
        rows = found["mutants"]
        assert len(rows) == found["sampled"] == sum(found["counts"].values()), chapter
        detected = sum(r["outcome"] in mutants.DETECTED for r in rows)
        assert found["score"]["detected"] == detected
        assert found["score"]["non_equivalent"] == detected + sum(r["outcome"] == mutants.SURVIVED for r in rows)
        assert all(r["unit"]["outcome"] in (mutants.UNIT, mutants.EQUIVALENT, *mutants.MISSED) for r in rows), chapter


def _stored(fingerprint):
    rows = [{"id": "m-1", "operator": "core/ReplaceBinaryOperator_Mul_Div", "path": "src/stagewise/x/a.py",
             "line": 3, "definition": "f", "outcome": mutants.UNIT, "detail": "1 failed", "unit": {}},
            {"id": "m-2", "operator": "core/ZeroIterationForLoop", "path": "src/stagewise/x/a.py", "line": 9,
             "definition": "", "outcome": mutants.SURVIVED, "detail": "outputs changed, no row failed", "unit": {}}]
    return mutants.result("conservation-laws", rows, 99, 0, fingerprint, 1.0)


def test_the_verification_section_gives_the_score_its_interval_and_every_mutant():
    from stagewise.core.book import mutants_page
    from stagewise.core.run.provenance import chapter_code_fingerprint
    from stagewise.core.run.registry import get_chapter
    chapter = get_chapter("conservation-laws")
    text = "\n".join(mutants_page.chapter_section(chapter, _stored(chapter_code_fingerprint(chapter.name,
                                                                                             chapter.source))))
    assert "**1 of 2 non-equivalent mutants detected (50%; 95% Wilson interval" in text
    assert "`*` → `/`" in text and "a loop runs zero times" in text and "**SURVIVED**" in text
    assert "- M2: a loop runs zero times at `a.py:9`: **SURVIVED** (outputs changed, no row failed)." in text
    assert "Stale" not in text
    stale = "\n".join(mutants_page.chapter_section(chapter, _stored("older code")))         # control
    assert "**Stale.**" in stale
    assert "No sample is stored" in "\n".join(mutants_page.chapter_section(chapter, None))


def test_the_machines_speed_is_not_an_output(tmp_path):
    base = _run(tmp_path / "base")
    base["values"]["vit_ms_per_step"] = 41.0
    other = _run(tmp_path / "m")
    other["values"]["vit_ms_per_step"] = 57.0
    assert mutants.judge(base, tmp_path / "base", other, tmp_path / "m", "")["outcome"] == \
        mutants.EQUIVALENT
    other["values"]["vit_loss"] = 1.0                                                       # control: a result
    assert mutants.judge(base, tmp_path / "base", other, tmp_path / "m", "")["outcome"] == \
        mutants.SURVIVED


def test_a_claim_whose_verdict_moves_kills_the_mutant(tmp_path):
    base = _run(tmp_path / "base")
    base["claims"] = [{"name": "grows", "status": "pass", "passed": None}]
    moved = _run(tmp_path / "m")
    moved["claims"] = [{"name": "grows", "status": "not reproduced at this budget", "passed": None}]
    found = mutants.judge(base, tmp_path / "base", moved, tmp_path / "m", "")
    assert found["outcome"] == mutants.CHAPTER_ROWS and found["changed_findings"] == ["grows"]
    same = _run(tmp_path / "s")
    same["claims"] = base["claims"]                                                     # control: same verdict
    assert mutants.judge(base, tmp_path / "base", same, tmp_path / "s", "")["outcome"] == mutants.EQUIVALENT

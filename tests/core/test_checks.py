"""Checks and their controls (stagewise.core.checks): a control is judged by the check's own criterion."""
import json
from pathlib import Path

import pytest
import torch

from stagewise.core.session import Run


def _run() -> Run:
    return Run("smoke-test", {"seed": 0}, torch.device("cpu"), Path("."))


def test_a_control_is_judged_by_the_same_criterion():
    run = _run()
    run.check_below("error", 1e-9, 1e-6, control=("wrong exponent", 0.3))
    assert run.checks[-1].passed
    run.check_between("slope", 2.01, 1.9, 2.1, control=("slope of the untrained net", 2.05))
    assert run.checks[-1].passed
    run.check_true("monotone", True, control=("shuffled order", False))
    assert run.checks[-1].passed
    run.check_below("identity", 0.0, 1e-12, kind="sanity")
    rows = [c.as_dict() for c in run.checks]
    assert rows[0]["control"] == {"what": "wrong exponent", "value": 0.3, "failed": True}
    assert rows[1]["control"]["failed"] is False          # a control the check does not reject is shown as such
    assert rows[2]["control"]["failed"] is True
    assert rows[3]["kind"] == "sanity" and "control" not in rows[3]
    json.dumps(rows)


def test_a_check_without_a_criterion_needs_an_explicit_control_verdict():
    run = _run()
    with pytest.raises(TypeError, match="control=\\(what, value, passed\\)"):
        run.check("custom", 1.0, 2.0, True, control=("wrong", 3.0))
    run.check("custom", 1.0, 2.0, True, control=("wrong", 3.0, False))
    assert run.checks[-1].passed
    assert run.checks[-1].control.failed is True


def test_the_table_separates_sanity_rows_and_has_a_markdown_form():
    run = _run()
    run.check_below("error", 1e-9, 1e-6, control=("wrong exponent", 0.3))
    run.check_below("identity", 0.0, 1e-12, kind="sanity")
    table = run.checks_table()
    html = table._repr_html_()
    assert "stagewise-checks" in html and "would catch" in html and "wrong exponent: 0.3 (rejected)" in html
    assert html.index("Sanity rows") < html.index("identity")
    markdown = table._repr_markdown_()
    assert markdown.startswith("| check |") and "Sanity rows" in markdown and "<" not in markdown


def test_rows_without_a_verdict_say_why_and_are_not_failures(fixture_chapters):
    from stagewise.core import checks
    run = _run()
    assert not run.hypothesis("Assumption 1", False, "g = 3e-9", "|g| > 1e-6")
    run.not_run("stage 5 is learned", run.unmet("Assumption 1"))
    run.empirical("rank grows", 0.02, 0.1, reproduced=False, reason="growth 0.02 ± 0.05 across seeds")
    run.empirical("rank is low", 0.2, 0.5, reproduced=True, control=("one step", 0.9, False))
    run.check_below("identity", 1.0, 1e-12, kind="sanity")
    rows = [c.as_dict() for c in run.checks]
    assert [r["status"] for r in rows] == ["not run", "not reproduced at this budget", "pass", "fail"]
    assert rows[0]["passed"] is None and "g = 3e-9" in rows[0]["reason"] and "|g| > 1e-6" in rows[0]["reason"]
    found = checks.failures(rows)
    assert found["theorem"] == [] and found["sanity"] == ["identity"] and len(found["not_run"]) == 2
    assert checks.failed(rows) == ["identity"]
    results = run.results()
    assert [c["name"] for c in results["claims"]] == ["rank grows", "rank is low"]
    assert "rank grows" not in [c["name"] for c in results["checks"]]   # a claim is not a check of the run
    html = run.checks_table()._repr_html_()
    assert "stagewise-not" in html and ">reproduced<" in html and html.index("Empirical claims") < html.index("rank grows")
    with pytest.raises(ValueError, match="must say why"):
        checks.Check("x", None, None, None)
    with pytest.raises(KeyError):
        run.unmet("never recorded")

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

"""Checks and their controls (stagewise.core.checks.rows): a control is an experiment computed in the run and judged by
the row's own criterion; the forms that show nothing are refused."""
import json
from pathlib import Path

import pytest
import torch

from stagewise.core.checks import rows as checks
from stagewise.core.run.session import Run


def _run() -> Run:
    return Run("smoke-test", {"seed": 0}, torch.device("cpu"), Path("."))


def gd_error(eta, steps, exponent):
    """GD on x^2/2 against (1 - eta)^exponent: the smoke chapter's measurement, here with a wrong exponent."""
    x = 1.0
    for _ in range(steps):
        x -= eta * x
    return abs(x - (1 - eta) ** exponent)


def loglog(power):
    from stagewise.numerics.fits import loglog_slope
    return loglog_slope([1.0, 2.0, 4.0], [x ** power for x in (1.0, 2.0, 4.0)])


def order_ok(order):
    return list(order) == sorted(order, reverse=True)


def test_a_control_is_an_experiment_judged_by_the_same_criterion():
    run = _run()
    run.check_below("error", gd_error(0.1, 20, 20), 1e-12, statement="prop-smoke-decay",
                    control=run.control("one step short", gd_error, 0.1, 19, 20))
    run.check_between("slope", 2.01, 1.9, 2.1, statement="prop-smoke-decay",
                      control=run.control("a slightly wrong power", loglog, 2.05))
    run.check_true("ordered", order_ok([3.0, 2.5, 1.0]), statement="prop-smoke-decay",
                   control=run.control("an unsorted run", order_ok, [2.5, 3.5, 1.0]))
    run.check_above("effect", 0.4, 0.1, statement="prop-smoke-decay", control=run.no_control("no wrong hypothesis"))
    run.check_below("identity", 0.0, 1e-12, kind="sanity")
    rows = [c.as_dict() for c in run.checks]
    assert rows[0]["control"]["failed"] is True and rows[0]["control"]["via"].endswith("gd_error")
    assert rows[1]["control"]["failed"] is False          # a control the row does not reject is shown as such
    assert rows[2]["control"]["failed"] is True
    assert rows[3]["control"] == {"what": "none", "value": None, "failed": None, "why": "no wrong hypothesis"}
    assert [r["relation"] for r in rows] == ["<=", "in", "true", ">=", "<="]
    assert rows[4]["kind"] == "sanity" and "control" not in rows[4]
    assert [c.powered for c in run.checks] == [True, False, True, False, False]
    json.dumps(rows)


@pytest.mark.parametrize("make, message", [
    (lambda run: run.control("untrained", lambda: 1.0), "lambda"),
    (lambda run: run.control("taken as 1/2", float, 0.5), "float"),
    (lambda run: run.control("reversed", reversed, [1, 2]), "reversed"),
    (lambda run: run.control("", gd_error, 0.1, 20, 19), "description"),
    (lambda run: run.control("a number", 0.5), "must be a function"),
])
def test_what_cannot_be_an_experiment_is_refused(make, message):
    with pytest.raises(checks.ControlError, match=message):
        make(_run())


def passed_through(x, scale=1.0):
    return x * scale


def test_a_control_that_shows_nothing_is_refused():
    run = _run()
    e = gd_error(0.1, 20, 19.5)
    run.check_below("first", e, 1.0, statement="prop-smoke-decay", control=run.control("x", gd_error, 0.2, 20, 19))
    with pytest.raises(checks.ControlError, match="is the value of check 'first'"):       # borrowed
        run.check_below("second", 0.5, 1.0, statement="prop-smoke-decay",
                        control=run.control("borrowed", passed_through, e))
    with pytest.raises(checks.ControlError, match="own value"):
        run.check_below("third", e, 1.0, statement="prop-smoke-decay", control=run.control("same", passed_through, e))
    # two different experiments that give the same number (a coincidence, a count) are no borrowing
    run.check_below("coincides", 0.25, 1.0, statement="prop-smoke-decay", control=run.control("same value by another "
                    "experiment", gd_error, 0.1, 20, 19.5))
    assert run.checks[-1].control.value == e and run.checks[-1].control.failed is False
    with pytest.raises(checks.ControlError, match="reorders"):
        run.check("order", [3.5, 2.5, 1.5], None, order_ok, relation="true", statement="prop-smoke-decay",
                  control=run.control("largest last", sorted_list, [3.5, 2.5, 1.5]))
    run.check("order of a broken run", [3, 2, 1], None, order_ok, relation="true", statement="prop-smoke-decay",
              control=run.control("a run that learns in another order", learned_order, 2))   # same set, measured
    assert run.checks[-1].control.failed is True
    with pytest.raises(checks.ControlError, match="run.control"):                         # a tuple
        run.check_below("fourth", 0.5, 1.0, statement="prop-smoke-decay", control=("untrained", 1.0))
    with pytest.raises(checks.ControlError, match="needs control"):
        run.check_below("fifth", 0.5, 1.0, statement="prop-smoke-decay")
    with pytest.raises(checks.ControlError, match="criterion"):                           # a computed verdict
        run.check("sixth", 0.5, 1.0, True, relation="<=", statement="prop-smoke-decay",
                  control=run.control("x", gd_error, 0.3, 20, 19))
    with pytest.raises(TypeError, match="statement"):
        run.check_below("seventh", 0.5, 1.0, control=run.no_control("none"))
    assert [c.name for c in run.checks] == ["first", "coincides", "order of a broken run"]


def learned_order(first):
    return [first, 3, 1]


def sorted_list(values):
    return sorted(values)


def test_a_row_names_a_statement_of_its_chapter(fixture_chapters):
    run = _run()
    run.check_below("decay", 1e-13, 1e-12, statement="prop-smoke-decay", control=run.no_control("none here"))
    assert run.checks[-1].statement_title.startswith("Proposition: Gradient descent")
    with pytest.raises(ValueError, match="no label of chapter smoke-test"):
        run.check_below("decay", 1e-13, 1e-12, statement="thm-missing", control=run.no_control("none"))
    html = run.checks_table()._repr_html_()
    assert "href='#prop-smoke-decay'" in html and "≤ 1e-12" in html and "control: none (none here)" in html


def test_the_table_separates_sanity_rows_and_has_a_markdown_form():
    run = _run()
    run.check_below("error", 1e-9, 1e-6, statement="prop-smoke-decay", control=run.control("wrong exponent", gd_error, 0.1, 20, 19))
    run.check_below("identity", 0.0, 1e-12, kind="sanity")
    table = run.checks_table()
    html = table._repr_html_()
    assert "stagewise-checks" in html and "would catch" in html and "wrong exponent: " in html and "(rejected)" in html
    assert "1 theorem rows with a verdict: 1 with a computed control" in html
    assert html.index("Sanity rows") < html.index("identity")
    markdown = table._repr_markdown_()
    assert "| check | statement |" in markdown and "Sanity rows" in markdown and "<" not in markdown.replace("≤", "")


def test_rows_without_a_verdict_say_why_and_are_not_failures(fixture_chapters):
    run = _run()
    assert not run.hypothesis("Assumption 1", False, "g = 3e-9", "|g| > 1e-6")
    run.not_run("stage 5 is learned", run.unmet("Assumption 1"))
    run.empirical("rank grows", 0.02, 0.1, False, relation=">=", statement="prop-smoke-decay",
                  reason="growth 0.02 ± 0.05 across seeds")
    run.empirical("rank is low", 0.2, 0.5, checks.below(0.5), relation="<=", statement="prop-smoke-decay",
                  control=run.control("one step", gd_error, 0.5, 1, 3))
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


def test_the_browser_audit_reads_the_result_column():
    """The page audit (stagewise.core.book.browser) finds failed rows by the result column's position."""
    from stagewise.core.book import browser
    assert checks.HEADER[checks.RESULT_COLUMN] == "result" and checks.HEADER[checks.STATEMENT_COLUMN] == "statement"
    assert f"r.cells[{checks.RESULT_COLUMN}].innerText" in browser._PAGE_FACTS


def test_a_published_finding_binds_at_the_defaults_and_a_contradicted_claim_says_so(tmp_path, monkeypatch,
                                                                                      fixture_chapters):
    """Published findings are a contract: at the default parameters a claim whose verdict differs from the one in
    book/published/<chapter>.yaml (or that has none) is reported as changed; at other parameters it only differs.
    A claim measured on the opposite side is 'contradicted', not merely 'not reproduced'."""
    from stagewise.core.run import findings
    from stagewise.core.run.parameters import resolve
    from stagewise.core.run.registry import get_chapter
    monkeypatch.setattr(findings, "PUBLISHED_DIR", tmp_path)
    (tmp_path / "smoke-test.yaml").write_text("rank grows: reproduced\nrank is low: reproduced\n")
    spec = get_chapter("smoke-test")
    run = Run("smoke-test", resolve(spec.parameters, {}, spec.name), torch.device("cpu"), tmp_path)
    run.empirical("rank grows", -0.3, 0.0, checks.above(0.0), relation=">=", statement="prop-smoke-decay",
                  reason="slope -0.3 (interval [-0.4, -0.2])", contradicted=checks.below(-0.1))
    run.empirical("rank is low", 0.2, 0.5, checks.below(0.5), relation="<=", statement="prop-smoke-decay",
                  control=run.control("one step", gd_error, 0.5, 1, 3))
    results = run.results()
    assert [c["status"] for c in results["claims"]] == ["contradicted", "pass"]
    found = run.findings(results)
    assert found["at_defaults"] and found["changed"] == [{"name": "rank grows", "published": "reproduced",
                                                          "measured": "contradicted"}]
    other = Run("smoke-test", {**run.parameters, "eta": 0.2}, torch.device("cpu"), tmp_path)
    assert not other.findings(results)["at_defaults"]
    (tmp_path / "smoke-test.yaml").write_text("rank grows: contradicted\nrank is low: reproduced\n")
    assert run.findings(results)["changed"] == []                     # a deliberate change: the file says so
    (tmp_path / "smoke-test.yaml").unlink()
    assert [f["name"] for f in run.findings(results)["changed"]] == ["rank grows", "rank is low"]   # none stated
    from stagewise.core.run import pages
    assert "1 contradicted" in pages.verdict_text(results["claims"])
    with pytest.raises(ValueError, match="only an empirical claim"):
        checks.Check("x", 1, 1, True, kind=checks.EMPIRICAL, contradicted=True)

"""Tests of stagewise.transformer_rank.claims_table: one empirical row per claim of the chapter's observations
(obs-transformer-rank-low, -growth, -scale), each with its control (a network trained on shuffled labels or
characters), reproduced only when the statistic passes and the control's does not."""
import math

import pytest

from stagewise.core.checks import rows as checks
from stagewise.core.checks.rows import Check, Control
from stagewise.transformer_rank.claims_table import FailsOnControl, claim_rows, claim_verdict
from stagewise.transformer_rank.summaries import summarize_gpt, summarize_vit
from transformer_problem import tiny_gpt_control, tiny_runs


@pytest.fixture(scope="module")
def rows():
    vit, gpt = tiny_runs()
    return claim_rows(summarize_vit(vit), summarize_gpt(gpt), vit, gpt, summarize_gpt(tiny_gpt_control()))


def test_claim_rows_and_their_controls(rows):
    """One row per claim, each naming its observation; every control is a computed experiment on the run that
    cannot learn the task, different from the row's own value."""
    assert [r.key for r in rows] == ["v_low", "v_scale_kq", "v_scale_vo", "v_grow_adam_kq", "v_grow_adam_vo",
                                     "v_grow_sgd_kq", "v_grow_sgd_vo", "v_gpt_vo", "v_gpt_kq"]
    assert {r.statement for r in rows} == {"obs-transformer-rank-low", "obs-transformer-rank-scale",
                                           "obs-transformer-rank-growth"}
    for r in rows:
        control = r.control_experiment(*r.control_args)
        assert isinstance(control, float) and control != r.value and r.reason
        assert "shuffled" in r.control_what or "random order" in r.control_what


def test_a_claim_is_reproduced_only_when_its_control_fails():
    """FailsOnControl: the statistic passes and the control's does not; applied to the control's own value it is
    the row's criterion, so the table shows whether the control passes the claim's test."""
    base = checks.below(0.5)
    assert FailsOnControl(base, 0.9)(0.2) is True               # passes, control rejected: reproduced
    assert FailsOnControl(base, 0.3)(0.2) is False              # the control passes too: not reproduced
    assert FailsOnControl(base, 0.9)(0.7) is False              # the statistic fails
    assert FailsOnControl(base, 0.3)(0.3) is True and FailsOnControl(base, 0.9)(0.9) is False   # the control itself
    assert FailsOnControl(base, math.nan)(math.nan) is False


def test_claims_table_verdict_is_the_rows_verdict():
    row = Check("r", 0.2, 0.5, None, "", "empirical", Control("c", 0.3, False), reason="control passes")
    assert claim_verdict(row).startswith("not reproduced at this budget (0.2 against 0.5; control 0.3")
    row = Check("r", 0.2, 0.5, True, "", "empirical", Control("c", 0.9, True))
    assert claim_verdict(row).startswith("reproduced")

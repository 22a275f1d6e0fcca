"""Tests of stagewise.transformer_rank.claims_table: one empirical row per claim of Assumption
asm-transformer-rank-claims, with its computed control, and the claims table's verdict read from the row."""
import pytest
import torch

from stagewise.core.checks.rows import Check
from stagewise.transformer_rank.claims_table import claim_rows, claim_verdict
from stagewise.transformer_rank.summaries import summarize_gpt, summarize_vit
from transformer_problem import tiny_runs


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def test_claims_table_verdict_is_the_rows_verdict(runs):
    """One verdict per claim: the claims table's words are read from the row of the checks table; every control
    is a computed experiment judged by the row's own criterion."""
    vit, gpt = runs
    rows = claim_rows(summarize_vit(vit), summarize_gpt(gpt), vit, gpt, torch.Generator().manual_seed(0))
    assert [r.key for r in rows] == ["v_low", "v_scale_kq", "v_scale_vo", "v_grow_adam_kq", "v_grow_adam_vo",
                                     "v_grow_sgd_kq", "v_grow_sgd_vo", "v_gpt_vo", "v_gpt_kq"]
    for r in rows:
        ok = r.reproduced(r.value)
        control = r.control_experiment(*r.control_args)
        assert isinstance(control, float) and control != r.value and r.reason
        row = Check(r.name, r.value, r.tolerance, True if ok else None, r.detail, "empirical",
                    reason="" if ok else r.reason)
        assert claim_verdict(row).startswith("reproduced" if ok else "not reproduced at this budget")

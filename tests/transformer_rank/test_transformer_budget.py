"""Tests of stagewise.transformer_rank.budget: the growth claims of observation obs-transformer-rank-growth decided
at shorter budgets, from the same initial weights, against the shuffled-label copies."""
import torch

from stagewise.transformer_rank import budget
from stagewise.transformer_rank.rank_growth import Trend
from transformer_problem import tiny_runs


def test_budget_sweep_restarts_from_the_recorded_weights():
    vit, _ = tiny_runs()
    points = budget.against_budget(vit, torch.Generator().manual_seed(5), torch.device("cpu"), fractions=(0.5, 2.0))
    assert [p.steps for p in points] == [8, 8, 16] and [p.own for p in points] == [True, False, False]
    assert set(points[0].trends) == set(budget.KEYS) == set(points[1].shuffled)


def test_the_rule_and_the_sentences():
    up, flat = Trend(1.0, 0.1, 1.0, 2.0, 10), Trend(0.0, 0.1, 1.0, 1.0, 10)
    p1 = budget.BudgetPoint(10, {k: up for k in budget.KEYS}, {k: flat for k in budget.KEYS})
    p2 = budget.BudgetPoint(20, {k: up for k in budget.KEYS}, {k: up for k in budget.KEYS}, own=True)
    assert p1.reproduced("adam_kq") and not p2.reproduced("adam_kq")        # the control rises too
    names = {k: k for k in budget.KEYS}
    assert "adam_kq at 10 steps" in budget.describe([p1, p2], names)
    assert "changes with the budget" in budget.moving([p1, p2], names)
    assert "none of the four" in budget.default_verdict([p1, p2], names)
    p1.own, p2.own = True, False
    assert "all four" in budget.default_verdict([p1, p2], names)

"""The chapter's bug catalogue (stagewise.transformer_rank.bugs): well formed, and the measurement bug
``reference-from-the-end`` calls the original ``checkpoint_spectra`` with the last checkpoint as the reference."""
import functools
import importlib

import torch

from stagewise.core.checks.catalogue import CATEGORIES, MIN_BUGS
from stagewise.transformer_rank import bugs
from stagewise.transformer_rank.spectra import checkpoint_spectra
from transformer_problem import tiny_runs


def test_catalogue_is_well_formed():
    names = [b.name for b in bugs.BUGS]
    assert len(names) == len(set(names)) >= MIN_BUGS
    assert sum(b.ci for b in bugs.BUGS) == 1
    assert all(b.category in CATEGORIES for b in bugs.BUGS)
    for b in bugs.BUGS:
        module, _, attr = b.target.partition(":")
        assert hasattr(importlib.import_module(module), attr), b.target
        assert len(b.doc) >= 40, b.name


def test_reference_from_the_end_measures_the_change_from_the_final_weights():
    b = {x.name: x for x in bugs.BUGS}["reference-from-the-end"]
    module, _, attr = b.target.partition(":")
    bound = functools.partial(b.replacement, original=getattr(importlib.import_module(module), attr))
    vit, _ = tiny_runs()
    args = (vit.result, vit.cfg.heads, vit.cfg.head_dim)
    right, wrong = checkpoint_spectra(*args), bound(*args)
    assert torch.equal(wrong.delta_kq, checkpoint_spectra(*args, reference=-1).delta_kq)
    assert torch.equal(wrong.delta_kq[-1], torch.zeros_like(wrong.delta_kq[-1]))      # no change at the end
    assert not torch.equal(wrong.delta_kq, right.delta_kq)
    assert torch.equal(wrong.init_kq, right.init_kq) and torch.equal(wrong.full_vo, right.full_vo)

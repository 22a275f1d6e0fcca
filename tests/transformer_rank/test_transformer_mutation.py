"""Mutation test of the transformer-rank chapter: an initialization that ignores the scale
(every replica at the default scale) must fail the strict run (through its sanity row: claim (c) is empirical,
so its rows say 'not reproduced at this budget', which is no failure), at reduced sizes (about a minute on a busy 2-core machine)."""
import json
import os
import subprocess
from pathlib import Path

from conftest import ROOT, STAGEWISE

MUTANTS = Path(__file__).with_name("mutants.py")
REDUCED = ["-p", "vit_steps", "30", "-p", "gpt_steps", "16", "-p", "checkpoints", "4", "-p", "init_scales", "[0.1]"]


def test_ignoring_the_initialization_scale_fails_the_strict_run(tmp_path):
    env = dict(os.environ, STAGEWISE_MUTATION=f"stagewise.transformer_rank.experiments:init_params={MUTANTS}:scales_ignored")
    out = subprocess.run([STAGEWISE, "run", "transformer-rank", "--strict", "--quiet", *REDUCED,
                          "--out", str(tmp_path / "r")], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert out.returncode == 3, out.stderr
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    checks = {c["name"]: c for c in results["checks"] + results["claims"]}
    row = checks["initial attention weights: scaled replica vs scale x default (relative)"]
    assert row["kind"] == "sanity" and row["passed"] is False          # the set-up row catches the mutant
    for name in ("srank(Delta KQ): smallest minus largest scale", "srank(Delta VO): smallest minus largest scale"):
        # identical replicas: no gap (exactly, the same arithmetic), so the empirical claim is not reproduced
        assert checks[name]["status"] == "not reproduced at this budget" and checks[name]["value"] == 0.0, name

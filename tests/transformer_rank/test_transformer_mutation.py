"""Mutation test of the transformer-rank chapter: an initialization that ignores the scale
(every replica at the default scale) must fail the strict run, at reduced sizes (about a minute on a busy 2-core machine)."""
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
    checks = {c["name"]: c for c in json.loads((tmp_path / "r" / "results.json").read_text())["checks"]}
    for name in ("srank(Delta KQ): smallest minus largest scale", "srank(Delta VO): smallest minus largest scale"):
        assert not checks[name]["passed"] and checks[name]["value"] == 0.0, name   # identical replicas: no gap

"""Checks that can fail: a broken key function makes the chapter fail in ``--strict`` mode
(``STAGEWISE_MUTATION``, :mod:`stagewise.core.mutation`), on reduced parameters."""
import json
import os
import subprocess

from conftest import ROOT, STAGEWISE

MUTANTS = ROOT / "tests" / "conservation_laws" / "mutants.py"
REDUCED = ["-p", "horizon", "2.0", "-p", "n_seeds", "1", "-p", "n_samples", "6", "-p", "input_dim", "6",
           "-p", "width", "4", "-p", "depth", "3", "-p", "ode_rtol", "1e-8", "-p", "etas", "[0.04, 0.02, 0.01]"]


def test_a_flipped_one_step_law_fails_the_strict_run(tmp_path):
    """Proposition ``prf:thm-conservation-laws-one-step`` with the sign of eta^2 Q(grad) flipped:
    the one-step rows of every homogeneous family fail and the strict run exits 3."""
    env = dict(os.environ, STAGEWISE_MUTATION=(f"stagewise.conservation_laws.experiments:one_step_change="
                                               f"{MUTANTS}:flipped_one_step_law"))
    out = subprocess.run([STAGEWISE, "run", "conservation-laws", "--strict", "--quiet", *REDUCED,
                          "--out", str(tmp_path / "r")], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 3, out.stderr
    checks = {c["name"]: c for c in json.loads((tmp_path / "r" / "results.json").read_text())["checks"]}
    failed = {name for name, c in checks.items() if not c["passed"]}
    assert {f"one GD step changes the {n} invariant by eta^2 Q(grad)"
            for n in ["diagonal", "linear", "relu", "deep_relu"]} <= failed
    assert checks["gradient flow preserves the relu invariant"]["passed"]       # the flow is untouched

"""Broken key functions inside the chapter's kernel make `stagewise run linear-riccati --strict` fail its checks
(exit 3), at reduced parameters: a wrong rate in the Riccati closed form (Theorem C.12) and a flipped sign in
Corollary 3.1."""
import json
import os
import subprocess

import pytest

from conftest import ROOT, STAGEWISE

MUTANTS = ROOT / "tests" / "linear_riccati" / "mutants.py"
REDUCED = ["-p", "n_gamma", "3", "-p", "n_seeds", "1", "-p", "width", "20", "-p", "noise_steps", "4000",
           "-p", "sde_paths", "20", "-p", "mc_paths", "400", "-p", "relu_seeds", "1", "-p", "relu_steps", "2000",
           "-p", "jump_powers", "[2, 4, 8]", "-p", "gammas_white", "[1.0, 0.01]"]
CASES = {
    "riccati-rate": ("stagewise.linear_riccati.whitened_experiments:sigma_beta", "slow_sigma_beta",
                     ["Thm C.12: stable closed form vs DOP853 ODE",
                      ("GD vs closed form, smallest step: max error / (eta sigma_max sqrt(sigma_max^2 + gamma^2) "
                       "(1 + ln+ 1/gamma))")]),
    "corollary-sign": ("stagewise.linear_riccati.sweep:corollary_spectrum", "flipped_sign_corollary",
                       ["Cor 3.1: max |sigma(W1) - formula| / (||D||_F / (2 sqrt(2 gamma))) at step eta"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_formula_fails_the_strict_run(tmp_path, case):
    target, mutant, must_fail = CASES[case]
    env = dict(os.environ, STAGEWISE_MUTATION=f"{target}={MUTANTS}:{mutant}")
    out = subprocess.run([STAGEWISE, "run", "linear-riccati", "--strict", "--quiet", *REDUCED,
                          "--out", str(tmp_path / "r")], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 3, out.stderr[-2000:]
    checks = {c["name"]: c["passed"] for c in json.loads((tmp_path / "r" / "results.json").read_text())["checks"]}
    for name in must_fail:
        assert not checks[name], name

"""A wrong stage-time formula (eq. 10 with a factor 1/2) inside the chapter's kernel makes
`stagewise run diagonal-incremental --strict` fail its checks (exit 3), at reduced parameters."""
from conftest import ROOT, mutated_strict_run

MUTANTS = ROOT / "tests" / "diagonal_incremental" / "mutants.py"
REDUCED = ["-p", "alphas_flow", "[1e-8, 1e-16, 1e-32]", "-p", "alphas_gd", "[0.1, 0.001]",
           "-p", "full_alpha", "0.001"]


def test_halved_stage_times_fail_the_strict_run(tmp_path):
    checks = mutated_strict_run("diagonal-incremental", "stagewise.diagonal_incremental.algorithm:time_until_active="
                                f"{MUTANTS}:halved_time_until_active", REDUCED, tmp_path)
    assert not checks["transition times at smallest alpha (rel.)"]
    assert not checks["extrapolated transition times (rel.)"]

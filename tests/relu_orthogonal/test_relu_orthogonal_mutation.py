"""Algorithm 1 without its step-size correction (line 2's rate log(1 + eta r)/eta replaced by r) inside the
chapter's kernel makes `stagewise run relu-orthogonal --strict` fail its checks (exit 3), at reduced parameters."""
from conftest import ROOT, mutated_strict_run

MUTANTS = ROOT / "tests" / "relu_orthogonal" / "mutants.py"
REDUCED = ["-p", "fig1_log_inv_lambda", "100", "-p", "norm_log2n_max", "10", "-p", "norm_gd_log2n_max", "5",
           "-p", "norm_seeds", "4", "-p", "mc_trials", "500", "-p", "cover_seeds", "4",
           "-p", "width_gd_widths", "[16, 256]"]


def test_uncorrected_rates_fail_the_strict_run(tmp_path):
    checks = mutated_strict_run("relu-orthogonal", "stagewise.relu_orthogonal.algorithm:neuron_rates="
                                f"{MUTANTS}:gradient_flow_rates", REDUCED, tmp_path)
    assert not checks["sweep: extrapolated jump times vs GD-corrected Alg. 1 (error / allowance)"]

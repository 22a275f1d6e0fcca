"""A wrong closed form for deep linear networks (the one-layer law |G X^T|_F instead of sigma_max(G X^T)) inside
the chapter's kernel makes `stagewise run escape-speed --strict` fail its checks (exit 3), at reduced parameters."""
from conftest import ROOT, mutated_strict_run

MUTANTS = ROOT / "tests" / "escape_speed" / "mutants.py"
REDUCED = ["-p", "ex1_widths", "[1, 4, 16]", "-p", "ex1_restarts", "8", "-p", "pga_steps", "400",
           "-p", "depth_steps", "200", "-p", "depths", "[2, 3, 4]", "-p", "depth_restarts", "8",
           "-p", "alphas", "[0.04, 0.02]", "-p", "ex1_gd_inits", "4", "-p", "gd_inits", "4",
           "-p", "mnist_n", "100", "-p", "mnist_width", "12", "-p", "mnist_steps", "200"]


def test_wrong_linear_closed_form_fails_the_strict_run(tmp_path):
    checks = mutated_strict_run("escape-speed", "stagewise.escape_speed.closed_forms:linear_speed="
                                f"{MUTANTS}:frobenius_linear_speed", REDUCED, tmp_path)
    assert not checks["deep linear nets: solver vs σ_max(G Xᵀ) (relative)"]

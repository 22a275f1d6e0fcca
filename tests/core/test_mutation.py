"""The mutation hook (stagewise.core.checks.mutation): a broken package function inside a chapter's kernel
makes the chapter fail in --strict mode; without the variable nothing changes."""
import json
import os
import subprocess

from conftest import FIXTURE_CHAPTERS, ROOT, STAGEWISE

MUTANTS = ROOT / "tests" / "fixtures" / "mutants" / "smoke.py"


def test_a_mutated_fit_fails_the_strict_run(tmp_path):
    env = dict(os.environ, STAGEWISE_EXTRA_CHAPTERS=str(FIXTURE_CHAPTERS),
               STAGEWISE_MUTATION=f"stagewise.numerics.fits:loglog_slope={MUTANTS}:wrong_slope")
    out = subprocess.run([STAGEWISE, "run", "smoke-test", "--strict", "--out", str(tmp_path / "r")],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 3, out.stderr
    checks = {c["name"]: c["passed"] for c in json.loads((tmp_path / "r" / "results.json").read_text())["checks"]}
    assert checks == {"decay matches (1 - eta)^steps": True, "log-log slope of x^2 is 2": False,
                      "trace has one entry per step": True}


def test_apply_from_env_passes_the_original(tmp_path, monkeypatch):
    from stagewise.core.checks import mutation
    from stagewise.numerics import fits
    original = fits.loglog_slope
    monkeypatch.setenv(mutation.MUTATION_ENV, f"stagewise.numerics.fits:loglog_slope={MUTANTS}:wrong_slope")
    try:
        assert mutation.apply_from_env() == ["stagewise.numerics.fits.loglog_slope"]
        assert abs(fits.loglog_slope([1, 2, 4], [1, 4, 16]) - 2.02) < 1e-12
    finally:
        fits.loglog_slope = original
    monkeypatch.delenv(mutation.MUTATION_ENV)
    assert mutation.apply_from_env() == []

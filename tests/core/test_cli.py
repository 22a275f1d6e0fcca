"""The run command as a user and a script rely on it (uses the tiny smoke-test chapter)."""
import json

import pytest

import subprocess

from conftest import FIXTURE_CHAPTERS, ROOT, STAGEWISE, stagewise
from stagewise.core.run.registry import CHAPTER_ORDER, all_chapters


def test_list_shows_every_chapter_in_book_order():
    out = stagewise("list", extra_chapters=False)
    assert out.returncode == 0
    names = [line.split()[0] for line in out.stdout.splitlines()]
    assert names == [n for n in CHAPTER_ORDER if n in names] and "conservation-laws" in names
    assert set(names) == {c.name for c in all_chapters()}


def test_params_shows_type_default_range_and_meaning():
    out = stagewise("params", "smoke-test")
    assert out.returncode == 0
    line = next(l for l in out.stdout.splitlines() if l.strip().startswith("eta "))
    assert "float" in line and "0.1" in line and "(0, 1]" in line and "step size" in line


def test_help_everywhere():
    for args in (["--help"], ["run", "--help"], ["params", "--help"], ["book", "--help"], ["list", "--help"],
                 ["clean", "--help"], ["sweep", "--help"], ["atlas", "--help"], ["power", "--help"],
                 ["mutants", "--help"], ["paper-scale", "--help"], ["collect", "--help"]):
        out = stagewise(*args)
        assert out.returncode == 0 and "usage" in out.stdout


@pytest.mark.parametrize("args,fragment", [
    (["mutants", "no-such-chapter"], "unknown chapter"),
    (["mutants", "--sample", "0"], "--sample must be between 1 and 10000"),
    (["mutants", "--seed", "-1"], "--seed must be at least 0"),
    (["run", "smoke-test", "-p", "etaa", "0.1"], "did you mean 'eta'"),
    (["run", "smoke-test", "-p", "eta", "fast"], "expected float"),
    (["run", "smoke-test", "-p", "eta", "nan"], "finite"),
    (["run", "smoke-test", "-p", "eta", "inf"], "finite"),
    (["run", "smoke-test", "-p", "eta", "-0.5"], "out of range"),
    (["run", "smoke-test", "-p", "steps", "0"], "out of range"),
    (["run", "smoke-test", "-p", "device", "tpu"], "allowed: {auto, cpu, cuda}"),
    (["run", "smoke-tset"], "did you mean 'smoke-test'"),
    (["params", "no-such-chapter"], "unknown chapter"),
    (["run", "smoke-test", "-f", "/nonexistent/params.yaml"], "cannot read parameter file"),
    (["run", "conservation-laws", "-p", "n_samples", "20", "-p", "input_dim", "10"], "n_samples"),
])
def test_bad_input_is_one_line_exit_2_before_compute(args, fragment, tmp_path):
    out = stagewise(*args, "--out", str(tmp_path / "run")) if args[0] == "run" else stagewise(*args)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and "Traceback" not in out.stderr
    assert len([l for l in out.stderr.splitlines() if l.strip()]) == 1
    assert not (tmp_path / "run").exists()


def test_parameter_file_and_overrides(tmp_path):
    params = tmp_path / "p.yaml"
    params.write_text("steps: 7\neta: 0.5\n")
    out = stagewise("run", "smoke-test", "-f", str(params), "-p", "eta", "0.25", "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["parameters"]["steps"] == 7 and results["parameters"]["eta"] == 0.25
    assert abs(results["values"]["final_x"] - 0.75**7) < 1e-15
    notebook = json.loads((tmp_path / "r" / "smoke-test.ipynb").read_text())
    injected = [c for c in notebook["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1  # only the overrides are injected, not the whole parameter set
    assert "steps = 7" in "".join(injected[0]["source"]) and "seed" not in "".join(injected[0]["source"])


def test_run_folder_contract_and_no_overwrite(tmp_path):
    first = stagewise("run", "smoke-test", cwd=tmp_path)
    second = stagewise("run", "smoke-test", cwd=tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    folders = {first.stdout.strip(), second.stdout.strip()}
    assert len(folders) == 2
    for folder in folders:
        run = tmp_path / folder if not folder.startswith("/") else __import__("pathlib").Path(folder)
        results = json.loads((run / "results.json").read_text())
        assert results["status"] == "complete" and results["chapter"] == "smoke-test"
        assert {"commit", "dirty", "versions", "device", "seed", "wall_seconds"} <= set(results["provenance"])
        assert results["checks"][0]["passed"] is True
        notebook = json.loads((run / "smoke-test.ipynb").read_text())
        assert not [c for c in notebook["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
        assert {p.suffix for p in (run / "figures").glob("smoke-test-trace.*")} == {".pdf", ".svg", ".png", ".json", ".npz"}


def test_failed_run_keeps_partial_notebook_and_leaves_good_run_untouched(tmp_path):
    good = tmp_path / "run"
    assert stagewise("run", "smoke-test", "--out", str(good)).returncode == 0
    before = (good / "results.json").read_text()
    out = stagewise("run", "smoke-test", "-p", "fail_at_step", "3", "--out", str(good))
    assert out.returncode == 1
    assert "planned failure at step 3" in out.stderr and "Traceback" not in out.stderr
    assert (good / "results.json").read_text() == before
    failed = list(tmp_path.glob("run.failed-*"))
    assert len(failed) == 1 and (failed[0] / "FAILED").exists()
    notebook = json.loads((failed[0] / "smoke-test.ipynb").read_text())
    assert any("planned failure" in json.dumps(c.get("outputs", [])) for c in notebook["cells"])
    assert not (failed[0] / "results.json").exists()


def test_strict_mode_exits_3_on_a_failed_check(tmp_path):
    loose = stagewise("run", "smoke-test", "-p", "break_check", "true", "--out", str(tmp_path / "a"))
    strict = stagewise("run", "smoke-test", "-p", "break_check", "true", "--strict", "--out", str(tmp_path / "b"))
    assert loose.returncode == 0 and strict.returncode == 3
    assert "1 theorem check(s) FAILED: decay matches" in strict.stderr and "sanity" not in strict.stderr
    results = json.loads((tmp_path / "b" / "results.json").read_text())
    assert results["checks"][0]["passed"] is False and results["checks"][0]["status"] == "fail"


def test_a_sanity_failure_is_reported_apart_and_a_broken_hypothesis_is_not_a_failure(tmp_path):
    sanity = stagewise("run", "smoke-test", "-p", "broken", "sanity", "--strict", "--out", str(tmp_path / "s"))
    assert sanity.returncode == 3 and "theorem check" not in sanity.stderr
    assert "1 sanity row(s) failed (consistency of the code, not a theorem): trace has one entry" in sanity.stderr
    unmet = stagewise("run", "smoke-test", "-p", "broken", "hypothesis", "--strict", "--out", str(tmp_path / "h"))
    assert unmet.returncode == 0, unmet.stderr
    assert "without a verdict: decay matches (1 - eta)^steps (not run: hypothesis not met: step size below 1" \
        in unmet.stderr
    last = unmet.stderr.strip().splitlines()
    assert last[-1].startswith("stagewise: summary: theorem rows 1 passed, 0 failed, 1 not run;"), last[-3:]
    assert "no verdict: decay matches (1 - eta)^steps: hypothesis not met: step size below 1 (eta = 0.1; needs " \
           "eta < 1) (change the parameters to meet it" in last[-2], last[-3:]
    powerless = stagewise("run", "smoke-test", "-p", "broken", "control", "--strict", "--out", str(tmp_path / "c"))
    assert powerless.returncode == 3 and "theorem check" not in powerless.stderr, powerless.stderr
    assert "1 row(s) whose control is not rejected (the row cannot tell the theory from the control): decay " \
           "matches (1 - eta)^steps (control: an exponent 1e-13 short = " in powerless.stderr
    assert stagewise("run", "smoke-test", "-p", "broken", "control", "--out", str(tmp_path / "c2")).returncode == 0
    assert sanity.stderr.strip().splitlines()[-1].startswith("stagewise: summary:") and \
        "experiment integrity 0 passed, 1 failed" in sanity.stderr
    results = json.loads((tmp_path / "h" / "results.json").read_text())
    row = results["checks"][0]
    assert row["passed"] is None and row["status"] == "not run" and "eta = 0.1" in row["reason"]
    assert results["hypotheses"][0] == {"name": "step size below 1", "holds": False, "measured": "eta = 0.1",
                                        "requirement": "eta < 1"}


def test_notebook_revalidates_injected_parameters(fixture_chapters):
    import stagewise as sw
    namespace = dict(eta=2.0, steps=5, fail_at_step=-1, break_check=False, broken="none", pause_s=0.0, device="cpu", seed=0)
    with pytest.raises(sw.ParameterError, match="parameter eta"):
        sw.start("smoke-test", namespace)


def test_an_install_without_the_book_sources_says_so(monkeypatch, capsys, tmp_path):
    """A non-editable install has no book/chapters beside it: a clear one-line error, not an empty list."""
    from stagewise.core.cli import main as cli
    monkeypatch.setattr(cli, "CHAPTERS_DIR", tmp_path / "missing" / "book" / "chapters")
    assert cli.main(["list"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "book's sources are not next to this installation" in err


def test_version_and_python_m(capsys):
    import subprocess
    import sys
    from stagewise import __version__
    out = subprocess.run([sys.executable, "-m", "stagewise", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"stagewise {__version__}"


def test_a_run_in_a_terminal_draws_the_chapters_progress_bars_there(tmp_path):
    """`stagewise run` in a terminal: the chapter's run.progress bar (inside the kernel) reaches the terminal;
    control: the same run with stderr to a pipe shows no bar (and the notebook gets no IProgress warning)."""
    import fcntl
    import os
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))   # a terminal has a size
    env = dict(os.environ, STAGEWISE_EXTRA_CHAPTERS=str(FIXTURE_CHAPTERS))
    proc = subprocess.Popen([STAGEWISE, "run", "smoke-test", "-p", "steps", "13", "--out", str(tmp_path / "t")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:          # the terminal's other side closed: the run has ended
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=300) == 0
    os.close(master)
    assert b"/13 [" in seen, seen[-2000:]
    piped = stagewise("run", "smoke-test", "-p", "steps", "13", "--out", str(tmp_path / "p"))
    assert piped.returncode == 0 and "/13 [" not in piped.stderr
    notebook = (tmp_path / "p" / "smoke-test.ipynb").read_text()
    assert "IProgress" not in notebook and "/13 [" in notebook      # the bar went to the kernel's stderr


def test_the_expected_time_is_announced_only_well_above_the_default():
    """The run command's warning before a long run: from the chapter's cost model, relative to its default."""
    from stagewise.core.cli import main as cli

    class Model:                      # a chapter whose cost model is 2 s per step, 40 steps by default
        name = "model"
        parameters = {}

        def expected_seconds(self, values):
            return 2.0 * values.get("steps", 40)
    import stagewise.core.run.parameters as params
    original = params.resolve
    params.resolve = lambda declared, overrides, name: {"steps": 40}
    try:
        assert cli._expected_time(Model(), {"steps": 50}) is None              # 100 s: not twice the default
        Model.front_matter = {"expected_seconds": 40}                          # measured: half the model's figure
        assert "about 7 min" in cli._expected_time(Model(), {"steps": 400}) and "(10x the default parameters' 40 s)" \
            in cli._expected_time(Model(), {"steps": 400})
        del Model.front_matter
        assert cli._expected_time(Model(), {"steps": 25}) is None
        line = cli._expected_time(Model(), {"steps": 400})
        assert line.startswith("expected time about 13 min") and "(10x the default parameters' 80 s)" in line
    finally:
        params.resolve = original


def test_every_chapter_has_a_cost_model_and_a_measured_default():
    """The model gives the ratio to the default (each chapter's tests check that it grows with the parameters
    that drive the cost); the seconds shown are anchored to the measured default in the front matter."""
    from stagewise.core.cli import main as cli
    from stagewise.core.run.parameters import resolve
    for chapter in all_chapters():
        defaults = resolve(chapter.parameters, {}, chapter.name)
        seconds = chapter.expected_seconds(defaults)
        assert seconds is not None and seconds > 0, f"{chapter.name}: no cost model (front matter 'cost:')"
        assert chapter.front_matter["expected_seconds"] > 0
        assert cli._expected_time(chapter, defaults) is None       # the default run is never announced as slow


def test_the_paper_preset_of_each_chapter_that_has_one(capsys):
    """`-p preset paper` (front matter `presets:`) runs the preset's parameters, another -p wins over them, the dry
    run says the expected time on the CPU and on a GPU, `params` lists the presets; a chapter's own `preset`
    parameter passes through (transformer-rank's model sizes); an unknown preset is one line, exit 2."""
    from stagewise.core.cli import main as cli
    from stagewise.core.cli import presets
    from stagewise.core.run.registry import get_chapter
    with_paper = {c.name for c in all_chapters() if "paper" in presets.declared(c)}
    assert with_paper >= {"diagonal-incremental", "transformer-rank", "relu-orthogonal", "linear-riccati",
                          "escape-speed"}
    assert cli.main(["run", "relu-orthogonal", "-p", "preset", "paper", "-p", "norm_gd_log2n_max", "10",
                     "--dry-run"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["preset"] == "paper" and "preset" not in shown["parameters"]
    assert shown["parameters"]["norm_gd_log2n_max"] == 10 and shown["parameters"]["norm_gd_max_steps"] == 1000000
    assert "on a 2-core CPU; on a GPU: " in shown["expected_time"]
    assert cli.main(["run", "transformer-rank", "-p", "preset", "tiny", "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"]["preset"] == "tiny"
    assert cli.main(["run", "escape-speed", "-p", "preset", "huge", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown preset 'huge'" in err and "allowed: paper" in err
    assert cli.main(["params", "diagonal-incremental"]) == 0
    assert "preset paper: scale=paper" in capsys.readouterr().out
    assert presets.expand(get_chapter("conservation-laws"), {"seed": 1}) == ({"seed": 1}, None)   # no preset asked

"""The GPU lane (tools/gpu/paper-scale.sh, tools/gpu/lane.yaml): ready to run in one call on a lent CUDA device.

Here, without a GPU: every run of the lane file names a chapter and parameters that chapter accepts (checked as the
run command checks them, before any compute, so that no device time is lost on a typo); the script refuses bad input
in one line; and its CPU smoke test runs the same code path (the shell wrapper, the lane runner, ``stagewise run``
with ``-p device cpu``) through a real chapter at tiny sizes, and records the run in ``lane.json``.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from stagewise.core.run.parameters import ParameterError
from stagewise.core.run.runner import prepare

LANE = ROOT / "tools" / "gpu"
sys.path.insert(0, str(LANE))
import paper_scale  # noqa: E402


def _runs():
    lane = paper_scale.load()
    return [r for phase in lane["phases"] for r in phase["runs"]]


@pytest.mark.parametrize("run", _runs(), ids=lambda r: r["id"])
def test_each_lane_run_is_valid_input(run):
    for which in ("parameters", "smoke"):
        prepare(run["chapter"], dict(run[which]))     # raises ParameterError on bad input
    assert "device" not in run["parameters"], "the lane sets the device itself"


def test_a_lane_run_with_a_bad_parameter_is_refused():
    """Control: the same check refuses what the chapter refuses."""
    with pytest.raises(ParameterError):
        prepare("transformer-rank", {"preset": "huge"})


def _lane(*args, timeout=900):
    env = dict(os.environ, PYTHON=sys.executable)
    return subprocess.run([str(LANE / "paper-scale.sh"), *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=timeout)


def test_the_lane_refuses_bad_input_in_one_line(tmp_path):
    (tmp_path / "mine.txt").write_text("a user's file")
    for args, word in ([str(tmp_path), "--smoke"], "new or empty"), ([str(tmp_path / "o"), "--only", "nope"], "--only"):
        out = _lane(*args)
        assert out.returncode == 2 and word in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert (tmp_path / "mine.txt").read_text() == "a user's file"


def test_the_cpu_smoke_test_runs_a_chapter_through_the_lane(tmp_path):
    out = _lane(str(tmp_path / "lane"), "--smoke", "--only", "conservation-laws", "--archive")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    record = json.loads((tmp_path / "lane" / "lane.json").read_text())
    (run,) = record["runs"]
    assert run["rc"] == 0 and run["results"] and not run["failed"]
    assert run["device"].startswith("cpu") and "-p device cpu" in run["command"]
    assert sum(n for key, n in run["rows"].items() if key.startswith("theorem")) > 0
    results = json.loads((tmp_path / "lane" / "conservation-laws" / "results.json").read_text())
    assert results["parameters"]["width"] == 3                       # the smoke parameters, not the defaults
    import tarfile
    with tarfile.open(tmp_path / "lane" / "runs.tar.gz") as tar:
        assert "conservation-laws/results.json" in tar.getnames()


def test_the_step_timing_runs_on_the_cpu(tmp_path):
    """tools/gpu/step_timing.py, the lane's CPU-against-GPU timing, through its smoke path (tiny sizes, CPU only)."""
    out = subprocess.run([sys.executable, str(LANE / "step_timing.py"), str(tmp_path / "t.json"), "--smoke",
                          "--cpu-threads", "1"], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads((tmp_path / "t.json").read_text())
    assert found["smoke"] and len(found["steps"]) == 2
    assert all(row["cpu"]["seconds_per_step"] > 0 for row in found["steps"].values())


def test_only_the_smoke_test_runs_a_smoke_only_phase():
    lane = paper_scale.load()
    real = [r["id"] for phase in lane["phases"] if not phase.get("smoke_only") for r in phase["runs"]]
    assert "conservation-laws" not in real and all(r.endswith("-paper") for r in real)

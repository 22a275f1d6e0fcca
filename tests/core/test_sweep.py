"""`stagewise sweep` and `stagewise collect` on the tiny smoke-test chapter: grid expansion, validation of
every point before anything runs, a sweep on a 2-worker LocalCluster that resumes (skips what is done,
reruns a deleted point), a failing point kept and reported, the table against the individual results.json
files, the JSON Schema of results.json, and a sweep on a scheduler and worker started as processes."""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURE_CHAPTERS, ROOT, as_typed_in_a_terminal, stagewise
from stagewise.core.sweep import grid as grids
from stagewise.core.run.parameters import ParameterError
from stagewise.core.run.results_schema import ResultsSchemaError, validate


def _grid(tmp_path: Path, text: str) -> str:
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    return str(path)


def test_grid_expansion_product_zip_and_seeds():
    points = grids.expand({"eta": [0.1, 0.2], "steps": 5, "zip": [{"a": [1, 2, 3], "b": [4, 5, 6]}], "seeds": 2})
    assert len(points) == 2 * 3 * 2
    assert points[0] == {"eta": 0.1, "steps": 5, "a": 1, "b": 4, "seed": 0}
    assert {(p["a"], p["b"]) for p in points} == {(1, 4), (2, 5), (3, 6)}
    assert [p["seed"] for p in grids.expand({"seeds": [3, 7]})] == [3, 7]
    with pytest.raises(ParameterError, match="equal lengths"):
        grids.expand({"zip": [{"a": [1, 2], "b": [1]}]})
    with pytest.raises(ParameterError, match="more than once"):
        grids.expand({"seed": [1, 2], "seeds": 2})
    with pytest.raises(ParameterError, match="seeds must be"):
        grids.expand({"seeds": 0})


def test_a_bad_point_refuses_the_sweep_before_anything_runs(fixture_chapters, tmp_path):
    grid = _grid(tmp_path, "eta: [0.1, 5.0]\nseeds: 2\n")          # eta = 5.0 is out of (0, 1]
    out = stagewise("sweep", "smoke-test", "--grid", grid, "--out", str(tmp_path / "s"))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "grid point" in out.stderr and "eta" in out.stderr and "out of range" in out.stderr
    assert not (tmp_path / "s").exists()
    unknown = stagewise("sweep", "smoke-test", "--grid", _grid(tmp_path, "etaa: [0.1]\n"), "--dry-run")
    assert unknown.returncode == 2 and "etaa" in unknown.stderr


def _rows(directory: Path) -> list[dict]:
    with open(directory / "sweep.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_sweep_runs_resumes_and_collects(fixture_chapters, tmp_path):
    """8 points on 2 worker processes; a second run skips all; a deleted point is rerun alone; a failing
    point is kept as a failed run and reported (exit 1) while the others complete."""
    grid = _grid(tmp_path, "eta: [0.1, 0.2]\nsteps: [10, 20]\nfail_at_step: [-1]\nseeds: 2\n")
    folder = tmp_path / "sweep"
    first = stagewise("sweep", "smoke-test", "--grid", grid, "--out", str(folder), "--workers", "2",
                      "--plot", "final_x", "--against", "eta")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "8 to run" in first.stdout and "[8 done, 0 failed, 0 running, 0 queued]" in first.stdout
    assert "Dask scheduler tcp://" in first.stdout
    assert re.search(r"\[\d done, 0 failed, 2 running, \d queued\]", first.stdout), first.stdout  # both workers busy
    running = [int(n) for n in re.findall(r"(\d+) running, \d+ queued", first.stdout)]
    assert max(running) == 2, running  # never more than the workers execute (the scheduler assigns 2 per worker)
    manifest = json.loads((folder / "sweep.json").read_text())
    assert len(manifest["points"]) == 8 and {p["status"] for p in manifest["points"]} == {"complete"}
    assert {".pdf", ".svg", ".png"} <= {p.suffix for p in folder.glob("sweep-final_x-vs-eta.*")}
    rows = _rows(folder)
    assert len(rows) == 8
    for row in rows:                                      # the table is the results.json files
        results = json.loads((folder / row["run"] / "results.json").read_text())
        assert float(row["value.final_x"]) == results["values"]["final_x"]
        assert float(row["param.eta"]) == results["parameters"]["eta"] and int(row["seed"]) == results["provenance"]["seed"]
        assert row["passed.decay matches (1 - eta)^steps"] == "True"
        assert results["values"]["final_x"] == pytest.approx((1 - results["parameters"]["eta"]) ** results["parameters"]["steps"])
    again = stagewise("sweep", "smoke-test", "--grid", grid, "--out", str(folder), "--workers", "2")
    assert again.returncode == 0 and "8 up to date, 0 to run" in again.stdout
    victim = sorted((folder / "points").iterdir())[0]
    shutil.rmtree(victim)
    resumed = stagewise("sweep", "smoke-test", "--grid", grid, "--out", str(folder), "--workers", "2")
    assert resumed.returncode == 0 and "7 up to date, 1 to run" in resumed.stdout and victim.name in resumed.stdout
    failing = _grid(tmp_path, "eta: [0.1]\nsteps: [10]\nfail_at_step: [-1, 3]\n")
    bad = stagewise("sweep", "smoke-test", "--grid", failing, "--out", str(tmp_path / "bad"), "--workers", "2")
    assert bad.returncode == 1 and "1 of 2 points failed" in bad.stderr
    statuses = {p["status"] for p in json.loads((tmp_path / "bad" / "sweep.json").read_text())["points"]}
    assert statuses == {"complete", "failed"}
    assert list((tmp_path / "bad" / "points").glob("*.failed-*")) and len(_rows(tmp_path / "bad")) == 1


def test_collect_rebuilds_the_table_and_refuses_a_foreign_results_file(fixture_chapters, tmp_path):
    for seed in (0, 1):
        assert stagewise("run", "smoke-test", "-p", "seed", str(seed), "--quiet",
                         "--out", str(tmp_path / "runs" / f"s{seed}")).returncode == 0
    out = stagewise("collect", str(tmp_path / "runs"))
    assert out.returncode == 0 and len(_rows(tmp_path / "runs")) == 2
    (tmp_path / "runs" / "odd").mkdir()
    (tmp_path / "runs" / "odd" / "results.json").write_text('{"chapter": "x"}')
    refused = stagewise("collect", str(tmp_path / "runs"))
    assert refused.returncode == 2 and "does not follow results schema 1" in refused.stderr
    missing = stagewise("collect", str(tmp_path / "runs" / "s0"), "--plot", "nope", "--against", "eta")
    assert missing.returncode == 2 and "no value named 'nope'" in missing.stderr


def test_results_follow_the_published_schema(fixture_chapters, tmp_path):
    assert stagewise("run", "smoke-test", "--quiet", "--out", str(tmp_path / "r")).returncode == 0
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    validate(results)
    assert results["schema_version"] == 1
    broken = dict(results, checks=[{"name": "x", "value": 1}])       # control: a check without its verdict
    with pytest.raises(ResultsSchemaError, match="checks/0"):
        validate(broken)


def test_sweep_on_a_scheduler_started_as_processes(fixture_chapters, tmp_path):
    """The --scheduler path: `dask scheduler` and `dask worker` processes on localhost, as on a cluster."""
    dask = str(Path(sys.executable).with_name("dask"))
    env = dict(os.environ, STAGEWISE_EXTRA_CHAPTERS=str(FIXTURE_CHAPTERS))
    info = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--scheduler-file", str(info)], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    worker = None
    try:
        deadline = time.time() + 60
        while not info.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        worker = subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--nworkers", "1",
                                   "--no-dashboard"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        grid = _grid(tmp_path, "eta: [0.1, 0.3]\nsteps: 5\n")
        out = stagewise("sweep", "smoke-test", "--grid", grid, "--out", str(tmp_path / "s"), "--scheduler", address)
        assert out.returncode == 0, out.stderr[-2000:]
        assert f"Dask scheduler {address}" in out.stdout and len(_rows(tmp_path / "s")) == 2
        assert "no dashboard (the scheduler runs without one)" in out.stdout and ":8787" not in out.stdout
    finally:
        for process in (worker, scheduler):
            if process is not None:
                process.terminate()
                process.wait(timeout=30)


def test_ctrl_c_stops_the_sweep_and_keeps_finished_points(fixture_chapters, tmp_path):
    """Ctrl-C in a terminal (SIGINT to the whole process group) once two quick points are done and two slow
    ones run: exit 130, the finished points intact, the running ones kept as interrupted partial runs, the
    queued ones never started, sweep.json saying so, and no process of the sweep left behind."""
    grid = _grid(tmp_path, "steps: 5\nzip:\n  - {pause_s: [0, 0, 30, 30, 30, 30], eta: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}\n")
    folder = tmp_path / "sweep"
    env = dict(os.environ, STAGEWISE_EXTRA_CHAPTERS=str(FIXTURE_CHAPTERS))
    sweep = subprocess.Popen([str(Path(sys.executable).with_name("stagewise")), "sweep", "smoke-test", "--grid", grid,
                              "--out", str(folder), "--workers", "2"], cwd=ROOT, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                             preexec_fn=as_typed_in_a_terminal)
    seen = []
    try:
        for line in sweep.stdout:                            # live lines: interrupt at the right moment
            seen.append(line)
            if "[2 done, 0 failed, 2 running, 2 queued]" in line:
                break
        else:
            raise AssertionError("the sweep ended before two points ran:\n" + "".join(seen) + sweep.stderr.read())
        deadline = time.monotonic() + 60                     # both slow runs have their staging folders
        while len(list((folder / "points").glob(".*.partial-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        os.killpg(sweep.pid, signal.SIGINT)
        try:
            rest, stderr = sweep.communicate(timeout=120)
        except subprocess.TimeoutExpired:                    # say where it hung: the lines so far, the folders
            os.killpg(sweep.pid, signal.SIGKILL)
            rest, stderr = sweep.communicate()
            raise AssertionError("the sweep did not stop within 120 s of Ctrl-C; staging folders: "
                                 f"{sorted(p.name for p in (folder / 'points').iterdir())}\n"
                                 + "".join(seen) + rest + stderr[-3000:]) from None
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    assert sweep.returncode == 130, "".join(seen) + rest + stderr
    assert "stagewise: interrupted" in stderr and "Traceback" not in stderr, stderr[-3000:]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:                        # nothing of the sweep keeps running
        try:
            os.killpg(sweep.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("processes of the interrupted sweep are still running")
    points = {p["id"]: p for p in json.loads((folder / "sweep.json").read_text())["points"]}
    assert sorted(p["status"] for p in points.values()) == ["complete"] * 2 + ["interrupted"] * 4
    for pid, point in points.items():
        results = folder / "points" / pid / "results.json"
        kept = list((folder / "points").glob(f"{pid}.failed-*"))
        if point["status"] == "complete":
            assert json.loads(results.read_text())["status"] == "complete" and point["parameters"]["pause_s"] == 0
        elif kept:                                            # was running: a partial run, marked
            assert len(kept) == 1 and "interrupted" in (kept[0] / "FAILED").read_text()
        else:                                                 # was queued: never started
            assert not results.exists()
    assert len(list((folder / "points").glob("*.failed-*"))) == 2


def test_the_embedded_cluster_prints_its_real_dashboard_and_it_answers(fixture_chapters):
    """bokeh is pinned, so the LocalCluster's dashboard works out of the box; the printed address is the
    one the scheduler serves (a random port, not the template's 8787), and it answers HTTP."""
    import urllib.request

    from stagewise.core.sweep import engine as sweep
    with sweep.client_for(None, 1) as client:
        link = sweep.dashboard_link(client)
        assert link and link.endswith("/status") and ":8787/" not in link
        with urllib.request.urlopen(link, timeout=30) as page:
            assert page.status == 200 and b"bokeh" in page.read().lower()


def test_several_sweeps_share_one_cluster_longest_first(fixture_chapters, tmp_path, monkeypatch):
    """`sweep_many` (the atlas and the mutation matrix over several chapters): the points of every part run on one
    cluster (both workers busy across the parts), each part keeps its own folder and sweep.json, equal ids in two
    parts do not collide, and the points start in the order of the chapter's cost model, longest first."""
    from stagewise.core.sweep import engine
    grid, points = grids.load("smoke-test", _grid(tmp_path, "eta: [0.1]\nsteps: [5, 40]\n"))
    started = []
    monkeypatch.setattr(engine, "_expected", lambda chapter, p: float(p["parameters"]["steps"]))
    parts = [("smoke-test", grid, points, tmp_path / "a"), ("smoke-test", grid, points[:1], tmp_path / "b")]
    ran = engine.sweep_many(parts, workers=1, say=started.append)
    assert [sorted(r.status for r in results) for results in ran] == [["complete"] * 2, ["complete"]]
    for folder, count in ((tmp_path / "a", 2), (tmp_path / "b", 1)):
        manifest = json.loads((folder / "sweep.json").read_text())
        assert [p["status"] for p in manifest["points"]] == ["complete"] * count
        assert len(list((folder / "points").glob("*/results.json"))) == count
    order = [line.split("] ")[1].split()[1] for line in started if " ok (" in line]
    steps = {p["id"]: p["parameters"]["steps"] for p in points}
    assert [steps[i] for i in order] == [40, 5, 5], started   # one worker: the submission order shows
    again = engine.sweep_many(parts, workers=1, say=started.append)
    assert {r.status for results in again for r in results} == {"skipped"}

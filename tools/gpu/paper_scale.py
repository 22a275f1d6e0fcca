"""The GPU lane: every run of ``tools/gpu/lane.yaml`` through ``stagewise run`` on one CUDA device, in one call.

Usage (``tools/gpu/paper-scale.sh`` sets up the environment first)::

    python tools/gpu/paper_scale.py OUT [--smoke] [--only ID ...] [--budget SECONDS]

Each phase's runs start together (one GPU; the machine's cores split between them through
``STAGEWISE_TORCH_THREADS``) and each is an ordinary ``python -m stagewise run CHAPTER -p ... -p device DEVICE
--out OUT/<id> --strict``: the same command a reader types, so the run folders are complete (executed notebook,
figures with their data sidecars, ``results.json`` with provenance naming the device). A run stops at its own
timeout or at the lane's budget, whichever comes first; a run that fails or is stopped never stops the others.
``OUT/lane.json`` records, per run: the parameters, the device asked for and the one the run recorded, the exit
status, the wall time, and the counts of its rows by verdict with the names of the failed ones. With ``--archive``
the run folders' machine-readable parts (``results.json``, figure data and sidecars, logs) are packed into
``OUT/runs.tar.gz`` (with the executed notebook of a run that failed, for its traceback), small enough to bring
back from a lent machine.

``--smoke`` is the CPU smoke test of the same code path: each run's ``smoke`` parameters, ``-p device cpu``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LANE = HERE / "lane.yaml"
#: What comes back from a lent machine: the machine-readable part of each run folder.
ARCHIVED_SUFFIXES = (".json", ".npz", ".log")
#: The longest the step timing may take (it runs first, alone on the machine).
STEP_TIMING_SECONDS = 150.0


class LaneError(ValueError):
    """A lane file or a command line the lane cannot run (one-line message)."""


def load(path: Path = LANE) -> dict:
    lane = yaml.safe_load(path.read_text())
    ids = [r["id"] for phase in lane["phases"] for r in phase["runs"]]
    if len(set(ids)) != len(ids):
        raise LaneError(f"{path}: run ids repeat: {ids}")
    for phase in lane["phases"]:
        for run in phase["runs"]:
            missing = {"id", "chapter", "timeout", "parameters", "smoke"} - set(run)
            if missing:
                raise LaneError(f"{path}: run {run.get('id')!r} lacks {', '.join(sorted(missing))}")
    return lane


def command(run: dict, out: Path, smoke: bool, default_device: str) -> list[str]:
    device = "cpu" if smoke else run.get("device", default_device)
    parameters = run["smoke"] if smoke else run["parameters"]
    line = [sys.executable, "-m", "stagewise", "run", run["chapter"], "--out", str(out / run["id"]), "--strict"]
    for name, value in {**parameters, "device": device}.items():
        line += ["-p", name, json.dumps(value) if isinstance(value, list) else str(value)]
    return line


def summary(folder: Path) -> dict:
    """Counts of a run's rows by verdict, the failed rows' names and the device its provenance names."""
    try:
        results = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError):
        return {"results": False}
    rows = list(results.get("checks", [])) + list(results.get("claims", []))
    counts: dict[str, int] = {}
    for row in rows:
        key = f"{row.get('kind', 'theorem')} {row.get('status', 'pass')}"
        counts[key] = counts.get(key, 0) + 1
    provenance = results.get("provenance", {})
    return {"results": True, "rows": counts, "failed": [r["name"] for r in rows if r.get("status") == "fail"],
            "device": provenance.get("device"), "recorded_wall_seconds": provenance.get("wall_seconds")}


def stop(process: subprocess.Popen, grace: float = 30.0) -> None:
    """Stop a run and its kernel as Ctrl-C would (SIGTERM to its process group: ``stagewise run`` keeps the partial
    run, marked failed, and never touches an earlier good one), then SIGKILL what is left after ``grace``."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def execute(run: dict, out: Path, smoke: bool, device: str, deadline: float, threads: int) -> dict:
    line = command(run, out, smoke, device)
    timeout = max(1.0, min(float(run["timeout"]), deadline - time.time()))
    env = dict(os.environ, STAGEWISE_TORCH_THREADS=str(threads), PYTHONUNBUFFERED="1")
    started = time.time()
    log = out / f"{run['id']}.log"
    with open(log, "w") as handle:
        process = subprocess.Popen(line, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            rc = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = "timeout"
            stop(process)
    wall = round(time.time() - started, 1)
    found = {"id": run["id"], "chapter": run["chapter"], "command": " ".join(line[1:]), "rc": rc,
             "torch_threads": threads, "wall_seconds": wall, "timeout_seconds": round(timeout, 1), **summary(out / run["id"])}
    print(f"[lane] {run['id']}: rc {rc} in {wall} s; {found.get('rows', 'no results.json')}", flush=True)
    return found


def archive(out: Path) -> Path:
    target = out / "runs.tar.gz"
    with tarfile.open(target, "w:gz") as tar:
        for path in sorted(out.rglob("*")):
            failed = any(".failed-" in part for part in path.relative_to(out).parts)
            if path.is_file() and path != target and (path.suffix in ARCHIVED_SUFFIXES
                                                      or (failed and path.suffix == ".ipynb")):
                tar.add(path, arcname=str(path.relative_to(out)))
    return target


def machine(device: str) -> dict:
    found = {"cpu_count": os.cpu_count()}
    try:
        import torch
        found["torch"] = torch.__version__
        if device == "cuda" and torch.cuda.is_available():
            found["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return found


def step_timing(out: Path, smoke: bool, deadline: float) -> dict:
    """CPU against GPU on the same paper-sized step (tools/gpu/step_timing.py), before the runs share the machine;
    at most ``STEP_TIMING_SECONDS``."""
    target = out / "step-timing.json"
    line = [sys.executable, str(HERE / "step_timing.py"), str(target)] + (["--smoke"] if smoke else [])
    print("[lane] step timing: CPU against GPU", flush=True)
    started = time.time()
    try:
        with (out / "step-timing.log").open("w") as log:
            rc = subprocess.run(line, stdout=log, stderr=subprocess.STDOUT,
                                timeout=max(1.0, min(STEP_TIMING_SECONDS, deadline - time.time()))).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    found = json.loads(target.read_text()) if target.exists() else {}
    return {"rc": rc, "wall_seconds": round(time.time() - started, 1), **found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="a new or empty folder for the run folders, logs and lane.json")
    parser.add_argument("--smoke", action="store_true", help="the CPU smoke test: smoke parameters, -p device cpu")
    parser.add_argument("--only", nargs="+", metavar="ID", help="only these run ids of the lane file")
    parser.add_argument("--budget", type=float, help="the lane's wall-time budget in seconds (default: the file's)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="the device of the runs "
                        "that name none (default cuda)")
    parser.add_argument("--archive", action="store_true", help="pack results, figure data and logs into "
                        "OUT/runs.tar.gz")
    parser.add_argument("--lane", type=Path, default=LANE, help="the lane file (default tools/gpu/lane.yaml)")
    args = parser.parse_args(argv)
    try:
        lane = load(args.lane)
        known = {r["id"] for phase in lane["phases"] for r in phase["runs"]}
        unknown = set(args.only or ()) - known
        if unknown:
            raise LaneError(f"--only: no run {', '.join(sorted(unknown))} in {args.lane} (runs: {', '.join(sorted(known))})")
        if args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
            raise LaneError(f"{args.out}: must be a new or empty folder (the lane never replaces what it did not write)")
        if args.budget is not None and not args.budget > 0:
            raise LaneError(f"--budget: must be a positive number of seconds, got {args.budget}")
    except LaneError as err:
        print(f"paper-scale: {err}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if args.smoke else args.device
    started = time.time()
    deadline = started + (args.budget or float(lane["budget_seconds"]))
    found = []
    timing = step_timing(args.out, args.smoke, deadline) if lane.get("step_timing") and not args.only else None
    for phase in lane["phases"]:
        if phase.get("smoke_only") and not args.smoke:
            continue
        runs = [r for r in phase["runs"] if not args.only or r["id"] in args.only]
        if not runs:
            continue
        if time.time() >= deadline:
            found += [{"id": r["id"], "chapter": r["chapter"], "rc": "not started", "results": False} for r in runs]
            continue
        threads = max(1, (os.cpu_count() or 1) // len(runs))
        print(f"[lane] {phase['name']}: {len(runs)} run(s), {threads} torch thread(s) each", flush=True)
        with ThreadPoolExecutor(max_workers=len(runs)) as pool:
            found += list(pool.map(lambda r: execute(r, args.out, args.smoke, device, deadline, threads), runs))
    record = {"lane": str(args.lane.relative_to(ROOT) if args.lane.is_relative_to(ROOT) else args.lane),
              "smoke": args.smoke, "machine": machine(device), "wall_seconds": round(time.time() - started, 1),
              "step_timing": timing, "runs": found}
    (args.out / "lane.json").write_text(json.dumps(record, indent=1) + "\n")
    if args.archive:
        archive(args.out)
    bad = [r["id"] for r in found if r["rc"] != 0]
    print(f"[lane] {len(found) - len(bad)} of {len(found)} runs complete with every check passing"
          + (f"; not: {', '.join(bad)}" if bad else ""), flush=True)
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())

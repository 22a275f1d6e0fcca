"""``stagewise sweep``: every point of a grid run as its own ``stagewise run``, on a Dask cluster.

With no address the sweep starts an embedded ``LocalCluster`` (one single-threaded worker process per
core); ``--scheduler tcp://HOST:PORT`` uses an existing cluster (dask-jobqueue on SLURM, one worker per
GPU, ...), whose workers need this project installed. Each point runs the ordinary run command in a
subprocess of its worker, into ``<sweep>/points/<id>``, so it gets every guarantee of a run folder
(staging, manifest, no overwrite on failure). ``sweep.json`` records the grid, the points and their
status. A point whose folder already holds a complete ``results.json`` with the current code fingerprint
is skipped, so rerunning the same command resumes a sweep. A failed point is kept as a failed run and
reported; the others go on. At the end :mod:`.collect` writes ``sweep.csv`` (and the figure).
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from stagewise.core.run.provenance import code_fingerprint
from stagewise.core.run.registry import get_chapter
from stagewise.core.run.rundir import write_text_atomic

MANIFEST = "sweep.json"


@dataclass
class PointResult:
    id: str
    status: str          # "complete", "failed", "skipped"
    seconds: float
    message: str


#: On a worker: the ``stagewise run`` processes of the points it is running (``_stop_points`` ends them).
_CHILDREN: dict[str, subprocess.Popen] = {}


def run_point(chapter: str, parameters: dict[str, Any], folder: str,
              environment: dict[str, str] | None = None) -> tuple[int, float, str]:
    """On a worker: ``stagewise run CHAPTER -p ... --out FOLDER`` in a subprocess (one torch thread), with
    ``environment`` added (a bug of the mutation matrix, see :mod:`.power`); returns ``(exit status, seconds,
    last line of stderr)``."""
    argv = [sys.executable, "-m", "stagewise", "run", chapter, "--quiet", "--out", folder]
    for name, value in parameters.items():
        argv += ["-p", name, json.dumps(value) if not isinstance(value, str) else value]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **(environment or {}))
    started = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    _CHILDREN[folder] = proc
    try:
        _, stderr = proc.communicate()
    finally:
        _CHILDREN.pop(folder, None)
    lines = [line for line in stderr.splitlines() if line.strip()]
    return proc.returncode, time.time() - started, lines[-1] if lines else ""


def _stop_points(dask_worker=None) -> int:
    """On a worker: SIGTERM to its running points (each keeps its partial run, marked interrupted)."""
    for proc in list(_CHILDREN.values()):
        proc.terminate()
    return len(_CHILDREN)


def complete_results(folder: Path) -> dict[str, Any] | None:
    """The results of the run in ``folder`` when it completed, else None."""
    try:
        results = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError):
        return None
    return results if results.get("status") == "complete" else None


def is_current(folder: Path, fingerprint: str) -> bool:
    """A complete run of the current code is already there."""
    results = complete_results(folder)
    return results is not None and results.get("provenance", {}).get("code_fingerprint") == fingerprint


def _write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    write_text_atomic(directory / MANIFEST, json.dumps(manifest, indent=2, default=str))


def _say(line: str) -> None:
    print(line, flush=True)  # live even when the output goes to a pipe or a log file


@contextlib.contextmanager
def client_for(scheduler: str | None, workers: int):
    """A Dask client: on ``scheduler``, or on a new LocalCluster of ``workers`` single-threaded processes,
    closed (workers and scheduler) on the way out."""
    from dask.distributed import Client, LocalCluster
    if scheduler:
        with Client(scheduler, timeout="30s") as client:
            yield client
        return
    import logging
    import signal
    import threading
    # Ctrl-C in a terminal reaches the whole process group. The worker processes inherit SIGINT ignored
    # (asyncio then installs no handler of its own), so that they do not die with tracebacks: this process
    # alone handles Ctrl-C, stopping the points (SIGTERM) and closing the cluster.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR)
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)
    with cluster, Client(cluster) as client:  # Client.close alone leaves a cluster it was given running
        yield client


def dashboard_link(client) -> str | None:
    """The scheduler's real dashboard address, or None when it has none (``dask scheduler --no-dashboard``,
    or bokeh missing). ``Client.dashboard_link`` is a template filled with the default port 8787, whatever the
    scheduler runs; the scheduler's ``services`` name its HTTP server even without a dashboard (it serves
    /health there), so the page itself is asked for."""
    import urllib.request
    from urllib.parse import urlparse
    try:
        port = client.scheduler_info().get("services", {}).get("dashboard")
        if not port:
            return None
        link = f"http://{urlparse(client.scheduler.address).hostname or '127.0.0.1'}:{port}/status"
        with urllib.request.urlopen(link, timeout=5) as page:
            return link if page.status == 200 else None
    except Exception:  # noqa: BLE001 - no answer (404 without a dashboard, a firewall): no dashboard to show
        return None


@dataclass
class Job:
    """One chapter's part of a sweep: its folder, its ``sweep.json`` (``manifest``; ``status`` indexes its points
    by id), the points still to run and the results so far."""
    chapter: str
    directory: Path
    manifest: dict[str, Any]
    todo: list[dict[str, Any]] = field(default_factory=list)
    results: list[PointResult] = field(default_factory=list)
    status: dict[str, dict[str, Any]] = field(init=False)

    def __post_init__(self):
        self.status = {p["id"]: p for p in self.manifest["points"]}


def sweep(chapter: str, grid: dict[str, Any], points: list[dict[str, Any]], directory: Path,
          scheduler: str | None = None, workers: int = 0, say: Callable[[str], None] | None = None) -> list[PointResult]:
    """Run the points (validated by :func:`grid.load`) that are not yet complete, on Dask; one result per point."""
    return sweep_many([(chapter, grid, points, directory)], scheduler, workers, say)[0]


def sweep_many(parts: list[tuple[str, dict[str, Any], list[dict[str, Any]], Path]], scheduler: str | None = None,
               workers: int = 0, say: Callable[[str], None] | None = None) -> list[list[PointResult]]:
    """Several chapters' sweeps ``(chapter, grid, points, directory)`` on one cluster, so that the points of all
    of them share the workers (no core idles while one chapter finishes its last point), the longest expected
    point first (the chapter's cost model); one list of results per part, in the order of ``parts``."""
    say = say or _say
    jobs = []
    for chapter, grid, points, directory in parts:
        fingerprint = code_fingerprint(get_chapter(chapter).source)
        (directory / "points").mkdir(parents=True, exist_ok=True)
        manifest = {"chapter": chapter, "grid": grid, "fingerprint": fingerprint,
                    "points": [{"id": p["id"], "parameters": p["parameters"], "status": "pending"} for p in points]}
        job = Job(chapter, directory, manifest)
        for p in points:
            if is_current(directory / "points" / p["id"], fingerprint):
                job.status[p["id"]]["status"] = "complete"
                job.results.append(PointResult(p["id"], "skipped", 0.0, "up to date"))
            else:
                job.todo.append(p)
        _write_manifest(directory, manifest)
        say(f"stagewise: sweep of {chapter}: {len(points)} points, {len(points) - len(job.todo)} up to date, "
            f"{len(job.todo)} to run")
        jobs.append(job)
    todo = sorted(((job, p) for job in jobs for p in job.todo), key=lambda jp: -_expected(jp[0].chapter, jp[1]))
    if todo:
        workers = workers or len(os.sched_getaffinity(0))
        with client_for(scheduler, min(workers, len(todo))) as client:
            link = dashboard_link(client)
            say(f"stagewise: Dask scheduler {client.scheduler.address}; "
                + (f"dashboard {link}" if link else "no dashboard (the scheduler runs without one)"))
            _run_all(client, todo, say)
    return [job.results for job in jobs]


def _expected(chapter: str, point: dict[str, Any]) -> float:
    """The point's expected seconds from the chapter's cost model (0 without one): the order of submission."""
    try:
        return float(get_chapter(chapter).expected_seconds(point["parameters"]) or 0.0)
    except Exception:  # noqa: BLE001 - a cost model that cannot price a point only loses it its place in the queue
        return 0.0


def _executing(dask_worker) -> list[str]:
    """On a worker: the keys it is executing now (``Client.processing`` also counts tasks merely
    assigned to it, two per single-threaded worker)."""
    return [str(task.key) for task in dask_worker.state.executing]


def _running_keys(client) -> set[str]:
    """Keys some worker is executing now."""
    try:
        return {key for keys in client.run(_executing).values() for key in keys}
    except Exception:  # a worker that does not answer this once: its points read "queued" until the next poll
        return set()


def _run_all(client, todo: list[tuple[Job, dict[str, Any]]], say, poll: float = 0.5) -> None:
    """Submit every point (in the order of ``todo``, each with a falling priority: Dask starts them in that
    order), then poll: a progress line ``[done, failed, running, queued]`` whenever a point starts or ends, and
    each chapter's ``sweep.json`` rewritten with each point's status (queued, running, complete, failed;
    interrupted on Ctrl-C). Results go to each point's :class:`Job`."""
    jobs = list({id(job): job for job, _ in todo}.values())
    part = {id(job): i for i, job in enumerate(jobs)}            # unique keys, even for one chapter in two folders
    futures = {}
    for rank, (job, p) in enumerate(todo):
        future = client.submit(run_point, job.chapter, p["overrides"], str(job.directory / "points" / p["id"]),
                               p.get("environment"), key=f"point-{part[id(job)]}-{job.chapter}-{p['id']}",
                               pure=False, priority=len(todo) - rank)
        futures[future] = (job, p["id"])
        job.status[p["id"]]["status"] = "queued"
    for job in jobs:
        _write_manifest(job.directory, job.manifest)
    several = len(jobs) > 1
    pending, done, failed, shown, finished_results = dict(futures), 0, 0, None, []
    started, next_query = set(), 0.0
    try:
        while pending:
            finished = [f for f in pending if f.done()]
            for future in finished:
                job, pid = pending.pop(future)
                try:
                    code, seconds, message = future.result()
                except Exception as err:  # the task itself failed (a worker lost twice: KilledWorker, ...)
                    code, seconds, message = -1, 0.0, f"{type(err).__name__}: {err}".splitlines()[0]
                ok = code == 0
                done, failed = done + ok, failed + (not ok)
                job.status[pid].update(status="complete" if ok else "failed", message="" if ok else message)
                result = PointResult(pid, "complete" if ok else "failed", seconds, message)
                job.results.append(result)
                finished_results.append((job, result))
            if finished or time.monotonic() >= next_query:  # ask the workers at most every 2 s
                started, next_query = _running_keys(client), time.monotonic() + 2.0
            for future, (job, pid) in pending.items():
                job.status[pid]["status"] = "running" if future.key in started else "queued"
            running = sum(job.status[pid]["status"] == "running" for job, pid in pending.values())
            counts = (done, failed, running, len(pending) - running)
            if finished or counts != shown:
                for job in jobs:
                    _write_manifest(job.directory, job.manifest)
                line = f"  [{done} done, {failed} failed, {running} running, {len(pending) - running} queued]"
                for job, r in finished_results[len(finished_results) - len(finished):]:
                    name = f"{job.chapter} {r.id}" if several else r.id
                    say(f"{line} {name} {'ok' if r.status == 'complete' else 'FAILED: ' + r.message} "
                        f"({r.seconds:.0f} s)")
                if not finished:
                    say(line)
                shown = counts
            if pending:
                time.sleep(poll)
    except KeyboardInterrupt:
        _interrupt(client, pending)
        for job in jobs:
            _write_manifest(job.directory, job.manifest)
        raise


def _interrupt(client, pending: dict, grace: float = 60.0) -> None:
    """Ctrl-C: cancel the queued points, stop the running ones (SIGTERM to their run processes, which keep
    their partial runs marked interrupted) and wait up to ``grace`` seconds for them to end, so that no run
    goes on after the sweep has returned, on this machine or on a cluster."""
    from dask.distributed import wait
    queued = [f for f, (job, pid) in pending.items() if job.status[pid]["status"] != "running"]
    client.cancel(queued)
    try:
        client.run(_stop_points)
        wait([f for f in pending if f not in queued], timeout=grace)
    except (Exception, KeyboardInterrupt):  # a worker gone, a run slow to stop, a second Ctrl-C: go on
        pass
    for job, pid in pending.values():
        job.status[pid]["status"] = "interrupted"

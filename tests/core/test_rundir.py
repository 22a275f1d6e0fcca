"""Fault injection: no run, crash, concurrent run or full disk loses or alters a user's files.

Faults strike at named points of a real run (``stagewise.faults``, through the
``STAGEWISE_FAULT`` variable): SIGKILL before papermill, inside the notebook and at each
step of the final swap, Ctrl-C, SIGTERM, a full disk. Waiting is done on processes and
their states, never with fixed sleeps. The tiny smoke-test chapter keeps each run short.
"""
import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import FIXTURE_CHAPTERS, ROOT, STAGEWISE, as_typed_in_a_terminal
from stagewise.core.book import build as book
from stagewise.core.run import locks
from stagewise.core.run import rundir

CHAPTER = "smoke-test"


def _env(**extra: str) -> dict:
    env = dict(os.environ, STAGEWISE_EXTRA_CHAPTERS=str(FIXTURE_CHAPTERS))
    env.pop("STAGEWISE_FAULT", None)
    env.update(extra)
    return env


def sw(*args: str, fault: str | None = None, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    env = env or _env()
    if fault:
        env = dict(env, STAGEWISE_FAULT=fault)
    return subprocess.run([STAGEWISE, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
                          preexec_fn=as_typed_in_a_terminal, **kwargs)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (hidden ones too) with its SHA-256."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    """One complete run, copied by each test that needs an earlier good result."""
    folder = tmp_path_factory.mktemp("good") / "run"
    out = sw("run", CHAPTER, "--out", str(folder))
    assert out.returncode == 0, out.stderr
    return folder


@pytest.fixture
def earlier(good_run, tmp_path) -> tuple[Path, dict]:
    import shutil
    folder = tmp_path / "run"
    shutil.copytree(good_run, folder)
    return folder, snapshot(folder)


def _leftovers(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.name.startswith(".") and ".partial-" in p.name)


# -- what --out may be --------------------------------------------------------------------

def test_out_refuses_a_user_folder_and_leaves_it_alone(tmp_path):
    thesis = tmp_path / "mythesis"
    thesis.mkdir()
    (thesis / "chapter1.tex").write_text("\\section{Mine}\n")
    before = snapshot(thesis)
    out = sw("run", CHAPTER, "--out", str(thesis))
    assert out.returncode == 2
    assert "not a stagewise run" in one_line(out.stderr) and "chapter1.tex" in out.stderr
    assert snapshot(thesis) == before and sorted(os.listdir(tmp_path)) == ["mythesis"]


def test_out_refuses_a_file_and_a_symlink(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "link").symlink_to(target)
    for name, fragment in (("notes.txt", "is an existing file"), ("link", "is a symbolic link")):
        out = sw("run", CHAPTER, "--out", str(tmp_path / name))
        assert out.returncode == 2 and fragment in one_line(out.stderr)
    assert (tmp_path / "notes.txt").read_text() == "mine\n" and list(target.iterdir()) == []
    assert sorted(os.listdir(tmp_path)) == ["elsewhere", "link", "notes.txt"]  # no hidden .old-<pid> copies


def test_out_refuses_an_edited_run_and_a_run_of_another_chapter(earlier, tmp_path):
    folder, _ = earlier
    (folder / "notes.md").write_text("my notes on this run\n")
    out = sw("run", CHAPTER, "--out", str(folder))
    assert out.returncode == 2 and "notes.md" in one_line(out.stderr)
    (folder / "notes.md").unlink()
    with open(folder / f"{CHAPTER}.ipynb", "a") as handle:
        handle.write("\n")
    out = sw("run", CHAPTER, "--out", str(folder))
    assert out.returncode == 2 and "changed since the run wrote it" in one_line(out.stderr)
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text(json.dumps({"chapter": "linear-riccati"}))
    rundir.write_manifest(other, "linear-riccati")
    out = sw("run", CHAPTER, "--out", str(other))
    assert out.returncode == 2 and "holds a run of linear-riccati" in one_line(out.stderr)


def test_rerun_replaces_an_earlier_run_and_leaves_nothing_behind(earlier):
    folder, before = earlier
    out = sw("run", CHAPTER, "--out", str(folder), "-p", "eta", "0.2")
    assert out.returncode == 0, out.stderr
    assert json.loads((folder / "results.json").read_text())["parameters"]["eta"] == 0.2
    assert snapshot(folder) != before
    assert sorted(os.listdir(folder.parent)) == ["run"]  # no .previous, no lock, no staging


def test_an_empty_folder_is_used(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    assert sw("run", CHAPTER, "--out", str(folder)).returncode == 0
    assert (folder / "results.json").exists()


# -- SIGKILL at every stage --------------------------------------------------------------

@pytest.mark.parametrize("fault", ["before-papermill:kill", "notebook-start:kill-parent",
                                   "after-papermill:kill", "swap-start:kill"])
def test_sigkill_keeps_the_earlier_run_and_the_next_run_marks_the_leftover(earlier, fault):
    folder, before = earlier
    killed = sw("run", CHAPTER, "--out", str(folder), fault=fault)
    assert killed.returncode == -signal.SIGKILL
    assert snapshot(folder) == before
    leftovers = _leftovers(folder.parent)
    assert len(leftovers) == 1 and not (leftovers[0] / "FAILED").exists()

    again = sw("run", CHAPTER, "--out", str(folder))
    assert again.returncode == 0, again.stderr
    assert "marked it FAILED" in again.stderr and "took over the lock" in again.stderr
    assert "killed" in (leftovers[0] / "FAILED").read_text()
    assert json.loads((folder / "results.json").read_text())["status"] == "complete"


def test_sigkill_in_the_middle_of_the_swap_keeps_the_earlier_run_as_previous(earlier):
    folder, before = earlier
    killed = sw("run", CHAPTER, "--out", str(folder), fault="swap-middle:kill")
    assert killed.returncode == -signal.SIGKILL
    assert not folder.exists() and snapshot(rundir.previous_path(folder)) == before
    # the next run puts the earlier run back before anything else, so even a failing run keeps it
    failing = sw("run", CHAPTER, "--out", str(folder), "-p", "fail_at_step", "2")
    assert failing.returncode == 1 and "restored the earlier run" in failing.stderr
    assert snapshot(folder) == before and not rundir.previous_path(folder).exists()


def test_sigkill_after_the_swap_drops_the_replaced_run_at_the_next_run(earlier):
    folder, before = earlier
    killed = sw("run", CHAPTER, "--out", str(folder), "-p", "eta", "0.3", fault="swap-end:kill")
    assert killed.returncode == -signal.SIGKILL
    assert json.loads((folder / "results.json").read_text())["parameters"]["eta"] == 0.3  # the new run is complete
    assert snapshot(rundir.previous_path(folder)) == before
    again = sw("run", CHAPTER, "--out", str(folder))
    assert again.returncode == 0 and "removed" in again.stderr and not rundir.previous_path(folder).exists()


def test_clean_partial_removes_only_stagewise_leftovers(earlier, tmp_path):
    folder, before = earlier
    assert sw("run", CHAPTER, "--out", str(folder), fault="before-papermill:kill").returncode == -signal.SIGKILL
    lookalike = tmp_path / ".mine.partial-1"  # a user's folder with a similar name
    lookalike.mkdir()
    (lookalike / "data.csv").write_text("1,2\n")
    listed = sw("clean", "--partial", "--dry-run", str(tmp_path))
    assert listed.returncode == 0 and "would remove" in listed.stdout and "mine" not in listed.stdout
    assert len(_leftovers(tmp_path)) == 2
    removed = sw("clean", "--partial", str(tmp_path))
    assert removed.returncode == 0 and removed.stdout.count("removed:") == 1
    assert _leftovers(tmp_path) == [lookalike] and snapshot(folder) == before
    assert one_line(sw("clean", str(tmp_path)).stderr).startswith("stagewise: error: say what to remove")


# -- interruptions ------------------------------------------------------------------------

@pytest.mark.parametrize("fault,code", [("notebook-start:interrupt-parent", 130), ("notebook-start:term-parent", 130)])
def test_ctrl_c_and_sigterm_leave_a_marked_failed_run(earlier, fault, code):
    folder, before = earlier
    out = sw("run", CHAPTER, "--out", str(folder), fault=fault)
    inherited = f"(this process: SIGINT {signal.getsignal(signal.SIGINT)}, blocked {signal.pthread_sigmask(signal.SIG_BLOCK, [])})"
    assert out.returncode == code, out.stderr + inherited
    assert "interrupted; partial run kept in" in out.stderr and "Traceback" not in out.stderr
    assert snapshot(folder) == before
    failed = list(folder.parent.glob("run.failed-*"))
    assert len(failed) == 1 and "interrupted" in (failed[0] / "FAILED").read_text()
    assert _leftovers(folder.parent) == [] and not rundir.lock_path(folder).exists()


# -- concurrency --------------------------------------------------------------------------

def _wait_stopped(pid: int, timeout: float = 120) -> None:
    """Wait until ``pid`` has stopped itself (state T), polling its state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "T":
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not reach its stop point")


def test_a_second_run_into_the_same_folder_is_refused_naming_the_first(tmp_path):
    folder = tmp_path / "run"
    first = subprocess.Popen([STAGEWISE, "run", CHAPTER, "--out", str(folder)], cwd=ROOT, text=True,
                             env=_env(STAGEWISE_FAULT="before-papermill:stop"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_stopped(first.pid)
        second = sw("run", CHAPTER, "--out", str(folder))
        assert second.returncode == 2
        assert f"in use by another stagewise process (pid {first.pid})" in one_line(second.stderr)
    finally:
        os.kill(first.pid, signal.SIGCONT)
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert stdout.strip() == str(folder) and json.loads((folder / "results.json").read_text())["status"] == "complete"


def test_a_lock_held_in_process_is_respected_and_a_stale_one_taken_over(tmp_path):
    folder = tmp_path / "run"
    with locks.FolderLock(folder):
        out = sw("run", CHAPTER, "--out", str(folder))
        assert out.returncode == 2 and f"pid {os.getpid()}" in one_line(out.stderr)
    dead = subprocess.Popen(["true"])
    dead.wait()
    rundir.lock_path(folder).write_text(f"{dead.pid}\n")
    out = sw("run", CHAPTER, "--out", str(folder))
    assert out.returncode == 0 and f"took over the lock of {folder} from pid {dead.pid}" in out.stderr


# -- the file system says no ---------------------------------------------------------------

def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def _unavailable(reason: str) -> None:
    """Skip on a developer machine that cannot mount; in CI (root, mounts allowed) this must not happen."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


@pytest.fixture
def mounts():
    made = []
    yield made
    for path in reversed(made):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_read_only_output_directory_is_refused_before_compute(good_run, tmp_path, mounts):
    import shutil
    area = tmp_path / "ro"
    if _mount_tmpfs(area, "16m"):
        mounts.append(area)
        shutil.copytree(good_run, area / "run")
        assert subprocess.run(["mount", "-o", "remount,ro", str(area)], capture_output=True).returncode == 0
    elif os.geteuid() != 0:
        shutil.copytree(good_run, area / "run")
        area.chmod(0o555)
    else:
        _unavailable("root without permission to mount a tmpfs: cannot make a folder read-only")
    before = snapshot(area)
    for target in (area / "run", area / "new" / "run"):
        out = sw("run", CHAPTER, "--out", str(target))
        assert out.returncode == 2, out.stderr
        line = one_line(out.stderr)
        assert "Read-only file system" in line or "not writable" in line or "Permission denied" in line, line
    assert snapshot(area) == before


def test_a_full_disk_fails_clearly_and_presents_nothing_as_complete(earlier, tmp_path, mounts):
    folder, before = earlier
    # an injected ENOSPC where the notebook writes results.json, and where the runner writes the manifest
    for fault in ("write:results.json:enospc", "write:.stagewise-run.json:enospc"):
        out = sw("run", CHAPTER, "--out", str(folder), fault=fault)
        assert out.returncode == 1 and "No space left on device" in out.stderr and "Traceback" not in out.stderr
        assert snapshot(folder) == before
    for failed in folder.parent.glob("run.failed-*"):
        assert (failed / "FAILED").exists()
        results = failed / "results.json"
        assert not results.exists() or json.loads(results.read_text())["status"] == "failed"
    # a real full disk: a tiny tmpfs
    area = tmp_path / "tiny"
    if not _mount_tmpfs(area, "40k"):
        _unavailable("cannot mount a tiny tmpfs here (needs root)")
    mounts.append(area)
    out = sw("run", CHAPTER, "--out", str(area / "run"))
    assert out.returncode in (1, 2) and "No space left on device" in out.stderr and "Traceback" not in out.stderr
    assert not (area / "run").exists()
    for results in area.rglob("results.json"):
        assert json.loads(results.read_text()).get("status") != "complete", results


# -- the book build -----------------------------------------------------------------------

def test_a_killed_book_build_loses_nothing_and_the_next_build_marks_the_leftover(tmp_path):
    env = _env(STAGEWISE_EXECUTED_DIR=str(tmp_path / "executed"))
    args = ("book", "--only", CHAPTER, "--no-html")
    assert sw(*args, env=env).returncode == 0
    folder = tmp_path / "executed" / CHAPTER
    before = snapshot(folder)
    killed = sw(*args, "--force", env=env, fault="notebook-start:kill-parent")
    assert killed.returncode == -signal.SIGKILL and snapshot(folder) == before
    assert (tmp_path / "executed" / ".build.lock").exists()  # left by the killed build
    again = sw(*args, "--force", env=env)
    assert again.returncode == 0, again.stderr
    assert "took over the book build lock" in again.stderr and "marked it FAILED" in again.stderr
    assert json.loads((folder / "results.json").read_text())["status"] == "complete"


def test_a_second_book_build_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(book.EXECUTED_DIR_ENV, str(tmp_path / "executed"))
    with book.BuildLock():
        out = sw("book", "--only", CHAPTER, "--no-html", env=_env(STAGEWISE_EXECUTED_DIR=str(tmp_path / "executed")))
    assert out.returncode == 2 and f"pid {os.getpid()}" in one_line(out.stderr)


def test_a_parallel_book_build_runs_chapters_in_their_own_processes_and_survives_a_killed_one(tmp_path):
    env = _env(STAGEWISE_EXECUTED_DIR=str(tmp_path / "executed"))
    args = ("book", "--only", CHAPTER, "--only", "smoke-twin", "--no-html", "--jobs", "2")
    out = sw(*args, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(" running") == 2 and out.stdout.count(" done in ") == 2
    before = {name: snapshot(tmp_path / "executed" / name) for name in (CHAPTER, "smoke-twin")}
    killed = sw(*args, "--force", env=env, fault="notebook-start:kill-parent")  # kills each chapter's runner
    assert killed.returncode == 1 and killed.stdout.count("failed (exit -9)") == 2, killed.stdout + killed.stderr
    assert {name: snapshot(tmp_path / "executed" / name) for name in before} == before
    again = sw(*args, "--force", env=env)
    assert again.returncode == 0 and again.stderr.count("marked it FAILED") == 2, again.stdout + again.stderr

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_CHAPTERS = ROOT / "tests" / "fixtures" / "chapters"
STAGEWISE = str(Path(sys.executable).with_name("stagewise"))

# Tiny tensors: one thread avoids thread hand-off costs (15x on two busy cores).
torch.set_num_threads(1)



def as_typed_in_a_terminal() -> None:
    """``preexec_fn`` of a command a test interrupts: in the child before exec, SIGINT delivered and handled by
    default, as for a command typed in a terminal, whatever this test process inherited (a background job, such
    as ``make test &``, starts with SIGINT ignored, and an ignored signal stays ignored across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})

@pytest.fixture
def fixture_chapters(monkeypatch):
    """Make the tiny smoke-test chapter visible to the registry."""
    monkeypatch.setenv("STAGEWISE_EXTRA_CHAPTERS", str(FIXTURE_CHAPTERS))
    return FIXTURE_CHAPTERS


def stagewise(*args: str, cwd: Path | None = None, extra_chapters: bool = True, timeout: int = 600):
    env = dict(os.environ)
    if extra_chapters:
        env["STAGEWISE_EXTRA_CHAPTERS"] = str(FIXTURE_CHAPTERS)
    return subprocess.run([STAGEWISE, *args], capture_output=True, text=True, cwd=cwd or ROOT, env=env,
                          timeout=timeout)


@pytest.fixture(scope="session")
def built_book():
    """Executes every stale chapter (all of them on a fresh clone) and builds the HTML (once per session)."""
    out = subprocess.run([STAGEWISE, "book", "--strict"], capture_output=True, text=True, cwd=ROOT, timeout=3600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def mutated_strict_run(chapter: str, mutation: str, reduced: list[str], tmp_path: Path) -> dict[str, bool]:
    """Run CHAPTER --strict at reduced parameters with STAGEWISE_MUTATION=mutation (a deliberately broken
    function, see stagewise.core.checks.mutation); assert it fails its checks (exit 3); return {check: passed}."""
    env = dict(os.environ, STAGEWISE_MUTATION=mutation)
    out = subprocess.run([STAGEWISE, "run", chapter, "--strict", "--quiet", *reduced, "--out", str(tmp_path / "r")],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert out.returncode == 3, out.stderr[-2000:]
    return {c["name"]: c["passed"] for c in json.loads((tmp_path / "r" / "results.json").read_text())["checks"]}

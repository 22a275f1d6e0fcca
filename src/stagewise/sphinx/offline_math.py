"""Serve MathJax 3 from the build, so that formulas render with no network.

The files come from the pinned PyPI package ``sphinx-mathjax-offline`` (MathJax 3.2, CHTML output with
its woff fonts). Its own Sphinx hook is not used (its module name has a hyphen); we add its folder to
``html_static_path`` so that Sphinx copies ``mathjax/`` into ``_static/`` and point ``mathjax_path`` there.
"""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

DISTRIBUTION = "sphinx-mathjax-offline"
ENTRY = "mathjax/tex-mml-chtml.js"


def mathjax_root() -> Path:
    """The folder that holds ``mathjax/`` in the installed distribution; a clear error if it is missing."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise RuntimeError(f"{DISTRIBUTION} is not installed: the book serves MathJax from it "
                           "(run `make setup`)") from None
    root = Path(str(dist.locate_file("sphinx-mathjax-offline/static")))
    if not (root / ENTRY).is_file():
        raise RuntimeError(f"{DISTRIBUTION} has no {ENTRY} under {root}")
    return root


def _configure(app, config) -> None:
    config.html_static_path = [*config.html_static_path, str(mathjax_root())]
    config.mathjax_path = ENTRY


def setup(app):
    app.connect("config-inited", _configure, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Serve BokehJS from the build, so that the book's sliders (stagewise.core.book.interactive) work with no network.

The two files a slider needs (``bokeh-<version>.min.js`` and ``bokeh-widgets-<version>.min.js``) come from the
pinned ``bokeh`` package itself; they are copied into a folder next to the doctrees that Sphinx then copies into
``_static/bokeh/`` with the rest of the static files. No page loads Bokeh from a CDN.
"""
from __future__ import annotations

import shutil
from pathlib import Path


def bokeh_js_dir() -> Path:
    """The folder of the installed bokeh package that holds ``bokeh.min.js``; a clear error if it is missing."""
    import bokeh
    root = Path(bokeh.__file__).parent / "server" / "static" / "js"
    if not (root / "bokeh.min.js").is_file():
        raise RuntimeError(f"bokeh {bokeh.__version__} has no bokeh.min.js under {root} (run `make setup`)")
    return root


def _configure(app, config) -> None:
    from stagewise.core.book.interactive import scripts
    static = Path(app.doctreedir).parent / "stagewise-bokeh-static"
    target = static / "bokeh"
    target.mkdir(parents=True, exist_ok=True)
    for bundle, versioned in scripts().items():
        shutil.copyfile(bokeh_js_dir() / f"{bundle}.min.js", target / versioned)
    config.html_static_path = [*config.html_static_path, str(static)]


def setup(app):
    app.connect("config-inited", _configure, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

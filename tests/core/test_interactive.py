"""Figures the reader can move (stagewise.core.book.interactive, stagewise.sphinx.offline_bokeh): the slider is built
from the run's own data sidecar, BokehJS comes from the build, and a slider over the wrong number of curves is
refused. The browser test that moves a slider is in tests/core/test_pages.py."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from stagewise.core.book import interactive

SPEC = {"glue": "fig-jump", "x": "tau", "y": "closed", "slider": "powers", "slider_format": "g = 1e-{:g}",
        "fixed": ["tau", "jump"], "text": "Move it."}


def _run_folder(tmp_path: Path) -> Path:
    figures = tmp_path / "executed" / "ch" / "figures"
    figures.mkdir(parents=True)
    tau = np.linspace(0, 2, 900)
    closed = np.stack([np.stack([1 / (1 + np.exp(-p * (tau - c))) for c in (0.5, 1.0)], -1) for p in (2, 4, 8)])
    np.savez(figures / "ch-jump.npz", tau=tau, closed=closed, powers=np.array([2.0, 4.0, 8.0]),
             jump=np.stack([(tau > 0.5) * 1.0, (tau > 1.0) * 1.0], -1))
    (figures / "ch-jump.json").write_text("{}")
    return tmp_path / "executed" / "ch"


def test_the_slider_carries_every_curve_of_the_run_and_loads_bokeh_from_the_build(tmp_path):
    text = interactive.cell("ch", "jump", SPEC, _run_folder(tmp_path))
    assert text.startswith("::::{dropdown}") and "```{raw} html" in text and "Move it." in text
    for name in interactive.scripts().values():
        assert f'<script src="../_static/bokeh/{name}"></script>' in text
    assert "cdn.bokeh.org" not in text and "http" not in text.split("```{raw} html")[1].split("<div")[0]
    assert "stagewise-jump-slider" in text and "g = 1e-8" in text and "g = 1e-2" in text
    with np.load(_run_folder(tmp_path / "b") / "figures" / "ch-jump.npz") as arrays:
        x, y, labels = interactive.curves(SPEC, arrays)
    assert y.shape == (3, 900, 2) and labels == ["g = 1e-2", "g = 1e-4", "g = 1e-8"]


def test_a_slider_over_the_wrong_number_of_curves_is_refused_and_a_missing_sidecar_places_nothing(tmp_path):
    folder = _run_folder(tmp_path)
    with np.load(folder / "figures" / "ch-jump.npz") as arrays, pytest.raises(ValueError, match="3 curves"):
        interactive.curves({**SPEC, "slider": "tau"}, arrays)
    assert interactive.cell("ch", "other", SPEC, folder) is None
    story = {"cells": [{"cell_type": "markdown", "source": "```{glue:figure} fig-jump\n:name: x\n```"},
                       {"cell_type": "markdown", "source": "after"}]}
    chapter = SimpleNamespace(name="ch", front_matter={"sliders": {"jump": SPEC, "other": {**SPEC, "glue": "fig-x"}}})
    assert interactive.insert(story, chapter, folder) == ["jump"]
    assert story["cells"][1]["id"] == "slider-jump" and story["cells"][2]["source"] == "after"
    later = {"cells": [{"cell_type": "markdown", "source": "```{glue:figure} fig-jump\n```"},
                       {"cell_type": "markdown", "source": "## Later\ntext"}]}
    chapter.front_matter = {"sliders": {"jump": {**SPEC, "after": "## Later"}}}
    assert interactive.insert(later, chapter, folder) == ["jump"] and later["cells"][2]["id"] == "slider-jump"


def test_the_build_serves_the_bokeh_files_the_pages_name(tmp_path):
    from stagewise.sphinx import offline_bokeh
    app = SimpleNamespace(doctreedir=str(tmp_path / "doctrees"))
    config = SimpleNamespace(html_static_path=["book/_static"])
    offline_bokeh._configure(app, config)
    static = Path(config.html_static_path[-1])
    assert config.html_static_path[0] == "book/_static"
    for name in interactive.scripts().values():
        assert (static / "bokeh" / name).stat().st_size > 10_000


def test_moving_the_slider_in_chromium_changes_the_plot_and_an_unlinked_slider_does_not(tmp_path):
    """The mechanism in a real browser, on a page of its own: the keyboard moves the slider to its first value and
    the plot's pixels change; control: the same slider not linked to the curves moves and the plot stays."""
    from test_pages import _need_chromium
    from stagewise.core.book import browser
    from stagewise.sphinx import offline_bokeh
    _need_chromium()
    folder = _run_folder(tmp_path / "run")
    site = tmp_path / "site"
    (site / "chapters").mkdir(parents=True)
    offline_bokeh._configure(SimpleNamespace(doctreedir=str(tmp_path / "doctrees")), SimpleNamespace(html_static_path=[]))
    import shutil
    shutil.copytree(tmp_path / "stagewise-bokeh-static" / "bokeh", site / "_static" / "bokeh")
    tags = "".join(f'<script src="../_static/bokeh/{n}"></script>' for n in interactive.scripts().values())
    with np.load(folder / "figures" / "ch-jump.npz") as arrays:
        for page, linked in (("linked", True), ("unlinked", False)):
            fragment = interactive.plot_html("jump", SPEC, arrays, linked=linked)
            (site / "chapters" / f"{page}.html").write_text(
                f'<html><head><meta charset="utf-8">{tags}</head><body><main style="width:700px">'
                f'<div class="stagewise-slider" data-figure="jump">{fragment}</div></main></body></html>')
    with browser.serve(site) as base_url, browser.chromium() as chromium:
        moved = browser.move_slider(chromium, base_url + "chapters/linked.html", "jump")
        unlinked = browser.move_slider(chromium, base_url + "chapters/unlinked.html", "jump")
    assert moved == (2, 0, True), moved
    assert unlinked[:2] == (2, 0) and unlinked[2] is False, unlinked

"""Figures the reader can move: a slider over the values a run computed, drawn with Bokeh from the figure's data sidecar.

Where a parameter *is* the story (the loss staircase sharpening as alpha -> 0, the Riccati sigmoids becoming a jump
process as gamma -> 0), the chapter's front matter declares a slider for that figure::

    stagewise:
      sliders:
        jump:                      # the figure id (its sidecar: figures/<chapter>-jump.json and .npz)
          glue: fig-jump           # the static figure it follows on the story page (or ``after:`` a text of the
                                   #   cell to follow, e.g. a statement's label, where the figure opens the page)
          x: tau                   # the sidecar array of the abscissa
          y: closed                # the curves: one axis is the slider's, one the abscissa's, an optional last
          slider_axis: 0           #   one the series
          slider: powers           # the slider's values (an array of the sidecar) and how they are shown
          slider_format: "γ = 1e-{:g}"
          fixed: [tau, jump]       # optional: curves that do not move (dashed), as [x array, y array]
          x_label: ...
          y_label: ...
          y_log: false             # optional: log ordinate, values below y_floor drawn at y_floor
          text: one sentence above the slider

The build puts, after the static figure, a folded box with the slider and the plot (:func:`insert`). The page loads
BokehJS from the build (``stagewise.sphinx.offline_bokeh``), never from a CDN; the static figure stays for the PDF
(print hides the box) and for readers without JavaScript. Nothing is recomputed: the curves are the run's own.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

#: Where the build serves BokehJS (``stagewise.sphinx.offline_bokeh`` copies it there).
STATIC = "_static/bokeh"
#: Points per curve at most (the page carries every curve of every slider value).
MAX_POINTS = 400


#: The BokehJS bundles a slider needs (``<name>.min.js`` in the bokeh package).
BUNDLES = ("bokeh", "bokeh-widgets")


def scripts() -> dict[str, str]:
    """The BokehJS files a page with a slider loads, by bundle: ``<bundle>-<version>.min.js`` in ``_static/bokeh``
    (the version in the name, so that a browser never keeps an older one)."""
    import bokeh
    return {bundle: f"{bundle}-{bokeh.__version__}.min.js" for bundle in BUNDLES}


def specs(chapter) -> dict[str, dict[str, Any]]:
    """The chapter's sliders by figure id (front matter ``sliders:``)."""
    return dict(getattr(chapter, "front_matter", {}).get("sliders") or {})


def curves(spec: dict[str, Any], arrays) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(x, y as [slider value, x, series], slider labels) from the sidecar's ``arrays`` (an npz)."""
    y = np.moveaxis(np.asarray(arrays[spec["y"]], float), int(spec.get("slider_axis", 0)), 0)
    if y.ndim == 2:
        y = y[:, :, None]
    values = np.asarray(arrays[spec["slider"]]).ravel()
    if len(values) != y.shape[0]:
        raise ValueError(f"slider {spec['slider']!r} has {len(values)} values for {y.shape[0]} curves")
    fmt = spec.get("slider_format", "{:g}")
    return np.asarray(arrays[spec["x"]], float), _floored(y, spec), [fmt.format(v) for v in values]


def _floored(y: np.ndarray, spec: dict[str, Any]) -> np.ndarray:
    """On a log ordinate, values below ``y_floor`` drawn at it (a loss that reaches zero)."""
    return np.maximum(y, float(spec.get("y_floor", 1e-6))) if spec.get("y_log") else y


def plot_html(figure_id: str, spec: dict[str, Any], arrays, linked: bool = True) -> str:
    """The slider and the plot as an HTML fragment (a div and its script; BokehJS loaded by the page).
    ``linked=False`` leaves the slider unconnected to the curves (the browser test's control)."""
    from bokeh.embed import components
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, CustomJSTickFormatter, Slider
    from bokeh.plotting import figure

    from stagewise.core.figures import styles
    book = styles.resolve("book")
    x, y, labels = curves(spec, arrays)
    step = -(-len(x) // MAX_POINTS)                # a screen's width of points per curve is enough
    x, y, last = x[::step], y[:, ::step], len(labels) - 1
    source = ColumnDataSource({"x": x, **{f"y{k}": y[last, :, k] for k in range(y.shape[2])}},
                              name=f"stagewise-{figure_id}-source")
    plot = figure(height=320, sizing_mode="stretch_width", y_axis_type="log" if spec.get("y_log") else "linear",
                  x_axis_label=spec.get("x_label", ""), y_axis_label=spec.get("y_label", ""),
                  toolbar_location=None, name=f"stagewise-{figure_id}-plot")
    for k in range(y.shape[2]):
        plot.line("x", f"y{k}", source=source, line_width=2.2, color=book.palette[k % len(book.palette)])
    if spec.get("fixed"):
        fx, fy = (np.asarray(arrays[name], float) for name in spec["fixed"])
        fy = _floored(fy[:, None] if fy.ndim == 1 else fy, spec)
        dashed = {"line_dash": "dashed", "color": book.ink, "line_width": 1.4}
        for k in range(fy.shape[1]):
            if spec.get("fixed_step"):
                plot.step(fx, fy[:, k], mode="after", **dashed)
            else:
                plot.line(fx, fy[:, k], **dashed)
    slider = Slider(start=0, end=last, value=last, step=1, title=spec.get("slider_label", ""),
                    format=CustomJSTickFormatter(args={"labels": labels}, code="return labels[Math.round(tick)]"),
                    sizing_mode="stretch_width", name=f"stagewise-{figure_id}-slider")
    every = {f"y{k}": [y[i, :, k].astype(np.float32) for i in range(len(labels))] for k in range(y.shape[2])}
    if linked:
        slider.js_on_change("value", CustomJS(args={"source": source, "every": every}, code=(
            "const i = Math.round(cb_obj.value); const data = Object.assign({}, source.data);"
            "for (const key in every) data[key] = every[key][i]; source.data = data;")))
    script, div = components(column(slider, plot, sizing_mode="stretch_width"))
    return div + "\n" + script


def cell(chapter_name: str, figure_id: str, spec: dict[str, Any], executed: Path) -> str | None:
    """The story page's Markdown for one slider (None when the run has no sidecar for the figure). The page is
    built one folder below the site's root (``chapters/``), so BokehJS is one folder up."""
    stem = executed / "figures" / f"{chapter_name}-{figure_id}"
    if not (stem.with_suffix(".npz").is_file() and stem.with_suffix(".json").is_file()):
        return None
    with np.load(stem.with_suffix(".npz")) as arrays:
        fragment = plot_html(figure_id, spec, arrays)
    tags = "\n".join(f'<script src="../{STATIC}/{name}"></script>' for name in scripts().values())
    title = spec.get("title", "Move the parameter yourself")
    return "\n".join([f"::::{{dropdown}} {title}", ":class-container: stagewise-interactive", "",
                      str(spec.get("text", "")), "", "```{raw} html",
                      f'<div class="stagewise-slider" data-figure="{figure_id}">', tags, fragment, "</div>", "```",
                      "::::", ""])


def insert(story: dict[str, Any], chapter, executed: Path) -> list[str]:
    """After each static figure with a declared slider (or after the cell holding its ``after:`` text), a Markdown
    cell with the slider; the figure ids placed."""
    placed = []
    for figure_id, spec in specs(chapter).items():
        text = cell(chapter.name, figure_id, spec, executed)
        marker = spec.get("after") or f"{{glue:figure}} {spec.get('glue', 'fig-' + figure_id)}"
        at = next((i for i, c in enumerate(story["cells"]) if c.get("cell_type") == "markdown"
                   and marker in (c["source"] if isinstance(c["source"], str) else "".join(c["source"]))), None)
        if text is None or at is None:
            continue
        story["cells"].insert(at + 1, {"cell_type": "markdown", "id": f"slider-{figure_id}", "metadata": {},
                                       "source": text})
        placed.append(figure_id)
    return placed

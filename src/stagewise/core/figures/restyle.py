"""``stagewise figure``: draw a run's figure again, in another style, from its data sidecar. Never a recomputation:
this imports the chapter's render function (``<chapter>/figures.py``, torch-free) and Matplotlib, nothing else.

Where a run keeps its figures: ``<run>/figures/`` for ``stagewise run`` and every sweep or atlas point, and
``book/executed/<chapter>/figures/`` for the book's own chapters; a ``figures/`` folder may also be given itself.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stagewise.core.figures import sidecar
from stagewise.core.figures import styles
from stagewise.core.figures.export import FORMATS, save


class FigureNotFound(LookupError):
    """No such run folder or figure; the message is one line and says what there is."""


def figures_folder(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FigureNotFound(f"RUN_DIR: {run_dir} is not a folder (a run folder, a sweep point, "
                             "book/executed/<chapter>, or their figures/ folder)")
    for candidate in (run_dir / "figures", run_dir):
        if candidate.is_dir() and any(candidate.glob("*.json")) and candidate.name == "figures":
            return candidate
    raise FigureNotFound(f"RUN_DIR: {run_dir} holds no figures/ folder with figures (is it a run folder?)")


@dataclass
class Listed:
    figure_id: str
    stem: str
    caption: str
    restylable: bool
    problem: str = ""


def _chapter_of(folder: Path) -> str | None:
    results = folder.parent / "results.json"
    try:
        return json.loads(results.read_text()).get("chapter")
    except (OSError, json.JSONDecodeError, AttributeError):
        return None


def _figure_id(stem: str, chapter: str | None) -> str:
    return stem[len(chapter) + 1:] if chapter and stem.startswith(chapter + "-") else stem


def list_figures(run_dir: Path) -> list[Listed]:
    folder = figures_folder(run_dir)
    chapter = _chapter_of(folder)
    rows = []
    for stem in sidecar.stems(folder):
        try:
            data = sidecar.read(folder, stem)
            rows.append(Listed(_figure_id(stem, chapter), stem, data.caption, True))
        except sidecar.SidecarError as exc:
            rows.append(Listed(_figure_id(stem, chapter), stem, "", False, str(exc)))
    return rows


def _stem(folder: Path, figure_id: str) -> str:
    chapter = _chapter_of(folder)
    stems = sidecar.stems(folder)
    for candidate in (figure_id, f"{chapter}-{figure_id}" if chapter else None):
        if candidate in stems:
            return candidate
    known = ", ".join(_figure_id(s, chapter) for s in stems) or "none"
    raise FigureNotFound(f"FIG_ID: no figure {figure_id!r} in {folder} (figures: {known})")


def renderer(name: str):
    """The render function a sidecar names: ``stagewise.<module>:<function>`` only (a sidecar is data; it never
    makes this import code from elsewhere)."""
    module, _, function = name.partition(":")
    if not module.startswith("stagewise.") or not function.isidentifier():
        raise sidecar.SidecarError(f"the sidecar names the renderer {name!r}; only stagewise.<module>:<function>")
    try:
        return getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as exc:
        raise sidecar.SidecarError(f"the renderer {name!r} is not in this version of stagewise ({exc})") from None


def draw(figure: sidecar.FigureData, style: styles.Style):
    """The figure, drawn by its render function in ``style`` (the caller saves it inside ``style.context()``); on a
    dark style, every data colour lifted to a contrast of :data:`MIN_DATA_CONTRAST` (:func:`lift_dark_colours`)."""
    render = renderer(figure.renderer)
    with style.context():
        fig = style.finish(render(figure.data, style))
    return lift_dark_colours(fig) if style.dark else fig


#: The least contrast a data colour (line, marker, bar, point) may have with the background it is drawn on, on a
#: dark style: WCAG's ratio for graphics. A render function picks its colours for the light page (a sequential
#: map ending in a dark blue, say), which a dark background swallows.
MIN_DATA_CONTRAST = 3.0


def _data_colours(fig):
    """(artist, property, colour, background) for every data colour of the drawn figure: lines and their markers,
    points, collections and patches with their axes' background (not the axes' and legend's own frames); fills
    lighter than half opaque are shading, and fills of the background's colour are masks, not data."""
    import matplotlib as mpl
    from matplotlib import colors as mcolors
    for axes in fig.axes:
        background = axes.patch.get_facecolor()
        frames = {axes.patch} | ({axes.get_legend().legendPatch} if axes.get_legend() else set())
        for artist in axes.findobj(lambda a: a.get_visible() and a not in frames):
            if isinstance(artist, mpl.lines.Line2D) and artist.get_linestyle() not in ("None", "none", ""):
                yield artist, "color", mcolors.to_rgba(artist.get_color(), artist.get_alpha()), background
            if isinstance(artist, mpl.lines.Line2D) and artist.get_marker() not in (None, "None", "none", ""):
                for prop in ("markerfacecolor", "markeredgecolor"):
                    colour = mcolors.to_rgba(getattr(artist, f"get_{prop}")(), artist.get_alpha())
                    if colour[3] > 0:
                        yield artist, prop, colour, background
            elif isinstance(artist, (mpl.collections.Collection, mpl.patches.Patch)) and not isinstance(
                    artist, mpl.text.Text):
                for prop in ("facecolor", "edgecolor"):
                    colours = np.atleast_2d(mcolors.to_rgba_array(getattr(artist, f"get_{prop}")()))
                    for colour in colours:      # a fill of the background's own colour masks, it is no data
                        if colour[3] >= 0.5 and styles.contrast_ratio(colour[:3], background) > 1.05:
                            yield artist, prop, tuple(colour), background


def _lifted(colour, background) -> tuple:
    """``colour`` mixed with white, just enough for :data:`MIN_DATA_CONTRAST` against ``background``."""
    rgb, alpha = np.array(colour[:3]), colour[3]
    for t in np.linspace(0, 1, 41):
        mixed = rgb + t * (1 - rgb)
        if styles.contrast_ratio(mixed, background) >= MIN_DATA_CONTRAST:
            return (*mixed, alpha)
    return (1.0, 1.0, 1.0, alpha)


def lift_dark_colours(fig):
    """Lighten, in place, every data colour of ``fig`` whose contrast with its axes' background is under
    :data:`MIN_DATA_CONTRAST` (hue kept, mixed with white); returns ``fig``."""
    from matplotlib import colors as mcolors
    for artist, prop, colour, background in list(_data_colours(fig)):
        if styles.contrast_ratio(colour[:3], background) >= MIN_DATA_CONTRAST:
            continue
        new = _lifted(colour, background)
        if prop in ("facecolor", "edgecolor"):
            current = np.atleast_2d(mcolors.to_rgba_array(getattr(artist, f"get_{prop}")())).copy()
            current[np.all(np.isclose(current, colour), axis=1)] = new
            getattr(artist, f"set_{prop}")(current)
        else:
            getattr(artist, f"set_{prop}")(new)
    return fig


def dim_data_colours(fig) -> list[str]:
    """Each data colour of the drawn ``fig`` under :data:`MIN_DATA_CONTRAST` against its background, one line each."""
    return [f"{type(artist).__name__} {prop} {tuple(round(c, 3) for c in colour[:3])}: contrast "
            f"{styles.contrast_ratio(colour[:3], background):.2f}:1" for artist, prop, colour, background
            in _data_colours(fig) if styles.contrast_ratio(colour[:3], background) < MIN_DATA_CONTRAST]


def parse_formats(text: str | None) -> tuple[str, ...]:
    if not text:
        return FORMATS
    formats = tuple(f.strip().lower().lstrip(".") for f in text.split(",") if f.strip())
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise styles.StyleError(f"--formats: {', '.join(unknown) or 'nothing given'} not allowed; "
                                f"choose from {','.join(FORMATS)}")
    return formats


def parse_dpi(text: str | float | None) -> float:
    """``--dpi``: a multiplier of the preset's resolution, ``1x``, ``2x``, ``1.5``."""
    if text is None:
        return 1.0
    word = str(text).strip().lower().removesuffix("x")
    try:
        value = float(word)
    except ValueError:
        raise styles.StyleError(f"--dpi: a multiplier like 1x, 2x or 1.5 (got {text!r})") from None
    if not 0 < value <= 8:
        raise styles.StyleError(f"--dpi: a multiplier in (0, 8] (got {text!r})")
    return value


def restyle(run_dir: Path, figure_id: str, style: str = "book", formats: str | None = None,
            out: Path | None = None, dpi: str | float | None = None) -> list[Path]:
    """Draw FIG_ID of RUN_DIR in ``style`` into ``out`` as ``<stem>.<style>.<fmt>``; return the paths. Every
    input is checked before anything is drawn."""
    chosen = styles.resolve(style, parse_dpi(dpi))
    kinds = parse_formats(formats)
    folder = figures_folder(run_dir)
    stem = _stem(folder, figure_id)
    figure = sidecar.read(folder, stem)
    out = Path(out) if out is not None else Path.cwd()
    fig = draw(figure, chosen)
    tag = "+".join(Path(w.strip()).stem for w in style.split(","))
    tag = "".join(c if c.isalnum() or c in "-_+" else "-" for c in tag)
    provenance = {k: v for k, v in figure.meta.items() if k not in ("sidecar", "figure")}
    paths = save(fig, f"{stem}.{tag}", out, provenance, chosen, kinds, refuse_foreign=True)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return paths

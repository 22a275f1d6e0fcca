"""Figure styles: named presets built from Matplotlib style sheets, for the book, papers, talks and posters.

A preset is a list of style sheets (``src/stagewise/core/figures/styles/*.mplstyle``) applied in order, so presets compose:
``talk-16x9-dark`` is ``book`` + ``talk`` + ``size-16x9`` + ``dark``. A user adds their own sheet by path, alone or
after a preset (``--style talk-16x9,my-colours.mplstyle``). Sizes are physical: a preset that fixes the size
(``savefig.bbox: standard``) renders every figure at exactly ``figure.figsize`` inches and ``savefig.dpi`` dots per
inch, so ``talk-16x9`` gives a 1920 x 1080 PNG (3840 x 2160 at ``dpi_scale=2``); the others keep each figure's own
size (its render function names it) and a tight box.

A figure's render function draws with :meth:`Style.subplots` and the colours :attr:`Style.ink` and
:attr:`Style.muted` (never a literal black, which vanishes on a dark background); :meth:`Style.finish` recolours
any that slipped through. :func:`audit` measures what a reader sees: the smallest text in points at the final size
and the contrast of each text with the background behind it.

No torch, no computation: re-rendering a figure from its data sidecar imports only this and Matplotlib.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import matplotlib as mpl
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
from matplotlib import rc_params_from_file

SHEETS_DIR = Path(__file__).with_name("styles")

#: The named presets and the sheets each applies, in order (later sheets win).
PRESETS: dict[str, tuple[str, ...]] = {
    "book": ("book",),
    "book-dark": ("book", "dark"),
    "paper": ("book", "paper"),
    "talk-16x9": ("book", "talk", "size-16x9"),
    "talk-16x9-dark": ("book", "talk", "size-16x9", "dark"),
    "talk-4x3": ("book", "talk", "size-4x3"),
    "poster": ("book", "poster"),
}

#: What each preset is for (``stagewise figure --style`` lists it).
DESCRIPTIONS = {
    "book": "the book's own look: each figure's natural size, tight box, 10 pt text",
    "book-dark": "the book's look on the dark theme's background (text and axes recoloured)",
    "paper": "one column of a two-column paper: 3.4 in wide, 8 pt text, 300 dpi",
    "talk-16x9": "a full 16:9 slide: 13.33 x 7.5 in at 144 dpi = 1920 x 1080 px, text >= 14 pt",
    "talk-16x9-dark": "talk-16x9 on a dark background",
    "talk-4x3": "a full 4:3 slide: 10 x 7.5 in at 144 dpi = 1440 x 1080 px, text >= 14 pt",
    "poster": "a poster panel: 16 x 10 in at 300 dpi, text >= 20 pt",
}

#: The smallest text a preset allows, in points at the figure's final size (a talk seen from the back of a room).
MIN_TEXT_PT = {"talk": 14.0, "poster": 20.0}
#: WCAG's contrast ratio for normal text.
MIN_CONTRAST = 4.5
#: Where the book shows a figure: in the reading column of a page, 741 CSS px wide at a 1366 x 768 window, at its
#: natural size (``figure.dpi`` CSS px per inch, the notebook's PNG carrying twice that) up to the column's width, so a
#: wide figure is scaled down. Text under ``MIN_SCREEN_TEXT_PX`` CSS px there is too small to read:
#: :meth:`Style.finish` enlarges it, :func:`audit` reports it, and the page test measures it on the built pages.
SCREEN_COLUMN_PX = 741.0
MIN_SCREEN_TEXT_PX = 9.0


class StyleError(ValueError):
    """An unknown preset or an unreadable style sheet; the message is one line."""


def preset_list() -> str:
    return ", ".join(PRESETS)


def _sheet_path(word: str) -> Path:
    if word.endswith(".mplstyle") or "/" in word:
        path = Path(word).expanduser()
        if not path.is_file():
            raise StyleError(f"--style: no style sheet at {word} (a preset name or a path to a .mplstyle file; "
                             f"presets: {preset_list()})")
        return path
    return SHEETS_DIR / f"{word}.mplstyle"


def _read_sheet(path: Path) -> dict[str, Any]:
    try:
        return dict(rc_params_from_file(path, use_default_template=False, fail_on_error=True))
    except Exception as exc:  # noqa: BLE001 - Matplotlib raises several kinds for a bad sheet
        raise StyleError(f"--style: cannot read the style sheet {path}: {exc}".splitlines()[0]) from None


@dataclass(frozen=True)
class Style:
    """A resolved style: its name, the sheets it applied, the merged rcParams and the resolution multiplier."""

    name: str
    sheets: tuple[str, ...]
    rc: dict[str, Any] = field(repr=False)
    dpi_scale: float = 1.0

    # -- what a render function uses ------------------------------------------------------------
    @property
    def fixed_size(self) -> bool:
        """True when the preset fixes the figure's size (slides, posters): the render function's size is ignored."""
        return self.rc.get("savefig.bbox", "tight") in (None, "standard")  # Matplotlib reads "standard" as None

    @property
    def dark(self) -> bool:
        return relative_luminance(self.background) < 0.2

    @property
    def background(self) -> str:
        return mcolors.to_hex(self.rc.get("axes.facecolor", "white"))

    @property
    def ink(self) -> str:
        """The foreground colour (text, reference lines): black on light presets, light grey on dark ones."""
        return mcolors.to_hex(self.rc.get("text.color", "black"))

    @property
    def muted(self) -> str:
        """A secondary grey (guides, envelopes) readable on the background."""
        return "#9aa0a6" if self.dark else "#6b6b6b"

    @property
    def palette(self) -> list[str]:
        """The preset's colour cycle (Okabe-Ito, colour-blind safe), as hex strings."""
        cycle = self.rc.get("axes.prop_cycle")
        return [mcolors.to_hex(c) for c in cycle.by_key()["color"]] if cycle is not None else []

    def sequence(self, n: int, cmap: str = "viridis") -> list:
        """``n`` colours of an ordered quantity (a step size, a depth), from a perceptually uniform map cut so
        that its every colour stands out on the background (viridis's darkest purples vanish on dark ones)."""
        low, high = (0.3, 1.0) if self.dark else (0.0, 0.85)
        ramp = mpl.colormaps[cmap]
        return [ramp(low + (high - low) * i / max(n - 1, 1)) for i in range(n)]

    @property
    def dpi(self) -> float:
        return float(self.rc.get("savefig.dpi", 100)) * self.dpi_scale

    @property
    def min_text_pt(self) -> float | None:
        found = [pt for kind, pt in MIN_TEXT_PT.items() if kind in self.sheets]
        return max(found) if found else None

    @property
    def on_screen(self) -> bool:
        """The book's own presets, shown in a page's column at the figure's natural size (not a page or a slide)."""
        return self.sheets in (("book",), ("book", "dark"))

    def screen_floor_pt(self, width_in: float) -> float | None:
        """The smallest text, in points, that a figure ``width_in`` wide (saved with its tight box) can hold and
        still show ``MIN_SCREEN_TEXT_PX`` CSS px tall in the book's column; None for the presets not shown there."""
        if not self.on_screen:
            return None
        css_px_per_inch = min(float(self.rc["figure.dpi"]), SCREEN_COLUMN_PX / width_in)
        return MIN_SCREEN_TEXT_PX * 72.0 / css_px_per_inch

    def saved_width_in(self, fig: plt.Figure) -> float:
        """The width of ``fig`` as saved: its tight box and the padding around it."""
        fig.canvas.draw()
        pad = float(self.rc.get("savefig.pad_inches", 0.1))
        return fig.get_tightbbox(fig.canvas.get_renderer()).width + 2 * pad

    @contextlib.contextmanager
    def context(self) -> Iterator["Style"]:
        """Matplotlib's rcParams set to this style while a figure is drawn and saved."""
        with mpl.rc_context(self.rc):
            yield self

    def subplots(self, nrows: int = 1, ncols: int = 1, *, size: tuple[float, float] | None = None, **kwargs):
        """``plt.subplots`` at this style's size: the preset's own when it fixes one, else ``size`` (the
        figure's natural size in the book). Constrained layout, so that large talk fonts still fit."""
        figsize = tuple(self.rc["figure.figsize"]) if self.fixed_size or size is None else size
        kwargs.setdefault("layout", "constrained")
        with self.context():
            return plt.subplots(nrows, ncols, figsize=figsize, **kwargs)

    def finish(self, fig: plt.Figure) -> plt.Figure:
        """On the book's presets, enlarge any text that would show under ``MIN_SCREEN_TEXT_PX`` in the page's
        column (a wide figure is scaled down there); on dark presets, recolour what a render function drew in
        literal black (or white) to the ink (or the background), so that no line is invisible."""
        if self.on_screen:
            self._lift_small_text(fig)
        if not self.dark:
            return fig
        black, white = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
        ink, bg = mcolors.to_rgb(self.ink), mcolors.to_rgb(self.background)

        def swap(color):
            rgba = mcolors.to_rgba(color)
            rgb = rgba[:3]
            if max(abs(a - b) for a, b in zip(rgb, black)) < 0.05:
                return (*ink, rgba[3])
            if max(abs(a - b) for a, b in zip(rgb, white)) < 0.02:
                return (*bg, rgba[3])
            return rgba

        for artist in fig.findobj():
            for getter, setter in (("get_color", "set_color"), ("get_markerfacecolor", "set_markerfacecolor"),
                                   ("get_markeredgecolor", "set_markeredgecolor")):
                if isinstance(artist, mpl.lines.Line2D) or (getter == "get_color"
                                                            and isinstance(artist, mpl.text.Text)):
                    try:
                        getattr(artist, setter)(swap(getattr(artist, getter)()))
                    except (AttributeError, ValueError):
                        pass
            if isinstance(artist, mpl.collections.Collection):
                for getter, setter in (("get_facecolor", "set_facecolor"), ("get_edgecolor", "set_edgecolor")):
                    colors = getattr(artist, getter)()
                    if len(colors):
                        getattr(artist, setter)([swap(c) for c in colors])
            elif isinstance(artist, mpl.patches.Patch) and artist not in (fig.patch,):
                artist.set_edgecolor(swap(artist.get_edgecolor()))
                artist.set_facecolor(swap(artist.get_facecolor()))
        fig.patch.set_facecolor(self.background)
        return fig

    def _lift_small_text(self, fig: plt.Figure, rounds: int = 3) -> None:
        """Set every text under the screen floor to the floor; larger text makes the layout move and may widen the
        figure's box, so measure again (the floor settles within a round or two)."""
        with self.context():
            for _ in range(rounds):
                floor = self.screen_floor_pt(self.saved_width_in(fig))
                small = [t for t in _visible_texts(fig) if t.get_fontsize() < floor - 1e-6]
                if not small:
                    return
                for text in small:
                    text.set_fontsize(round(floor + 0.05, 1))

    def describe(self) -> dict[str, Any]:
        """What the provenance records about the style (also embedded in each exported file)."""
        return {"name": self.name, "sheets": list(self.sheets), "dpi": self.dpi,
                "size_in": list(self.rc["figure.figsize"]) if self.fixed_size else None}


def resolve(spec: str | Style = "book", dpi_scale: float = 1.0) -> Style:
    """A style from a preset name, a path to a ``.mplstyle`` file, or several joined by commas (later wins)."""
    if isinstance(spec, Style):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise StyleError(f"--style: give a preset name or a .mplstyle path (presets: {preset_list()})")
    if not (dpi_scale > 0 and dpi_scale <= 8):
        raise StyleError(f"--dpi: a multiplier in (0, 8], like 1x or 2x (got {dpi_scale})")
    sheets: list[str] = []
    for word in (w.strip() for w in spec.split(",")):
        if word in PRESETS:
            sheets += [s for s in PRESETS[word] if s not in sheets or s == "dark"]
        elif word.endswith(".mplstyle") or "/" in word:
            sheets.append(word)
        else:
            raise StyleError(f"--style: unknown style {word!r}; presets: {preset_list()} "
                             "(or a path to a .mplstyle file)")
    if sheets[0] != "book":
        sheets.insert(0, "book")
    rc: dict[str, Any] = {}
    for sheet in sheets:
        rc.update(_read_sheet(_sheet_path(sheet)))
    return Style(spec, tuple(sheets), rc, float(dpi_scale))


# -- what a reader sees ------------------------------------------------------------------------------
def relative_luminance(color) -> float:
    """WCAG 2 relative luminance of a colour."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in mcolors.to_rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a, b) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _visible_texts(fig: plt.Figure):
    for text in fig.findobj(mpl.text.Text):
        if text.get_visible() and text.get_text().strip() and text.get_alpha() != 0:
            yield text


def text_sizes(fig: plt.Figure) -> list[tuple[float, str]]:
    """Every visible text of the drawn figure as (size in points at the figure's final size, the text). Points
    are physical: the figure is saved at its own size (fixed-size presets) so a point on the page is a point."""
    fig.canvas.draw()
    return [(float(t.get_fontsize()), t.get_text()) for t in _visible_texts(fig)]


def _behind(text: mpl.text.Text, fig: plt.Figure):
    axes = text.axes
    if axes is not None and axes.patch.get_visible():
        return axes.patch.get_facecolor()
    return fig.patch.get_facecolor()


def audit(fig: plt.Figure, style: Style) -> list[str]:
    """What is wrong with a rendered figure for this style, one line each: text under the preset's minimum
    size, or on the book's presets too small to read in the page's column; on a dark preset, text whose contrast with what is behind it is under 4.5:1 (WCAG AA)."""
    problems = []
    fig.canvas.draw()
    floor = style.min_text_pt
    screen = style.screen_floor_pt(style.saved_width_in(fig)) if style.on_screen else None
    for text in _visible_texts(fig):
        label = text.get_text().strip()[:40]
        if floor is not None and text.get_fontsize() < floor - 1e-6:
            problems.append(f"text {label!r} is {text.get_fontsize():.1f} pt, under {floor:g} pt")
        if screen is not None and text.get_fontsize() < screen - 1e-6:
            problems.append(f"text {label!r} is {text.get_fontsize():.1f} pt, under {screen:.1f} pt: less than "
                            f"{MIN_SCREEN_TEXT_PX:g} px in the book's {SCREEN_COLUMN_PX:g}-px column")
        ratio = contrast_ratio(text.get_color(), _behind(text, fig)) if style.dark else MIN_CONTRAST
        if ratio < MIN_CONTRAST:
            problems.append(f"text {label!r} has contrast {ratio:.2f}:1 with its background, under {MIN_CONTRAST}:1")
    return problems

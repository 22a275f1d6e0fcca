"""The notebook side of a run: parameters, named values, checks, figures, results.json.

A chapter begins with ``run = stagewise.start("<chapter>", globals())`` right after its
``parameters`` cell and ends with ``run.finish()``.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterable

import matplotlib.pyplot as plt
import numpy as np
import torch

from stagewise.core.checks import rows as checks
from stagewise.core.run import device as devices
from stagewise.core.run import faults
from stagewise.core.checks import mutation
from stagewise.core.checks import catalogue
from stagewise.core.run.registry import get_chapter
from stagewise.core.figures.export import export, save, use_style
from stagewise.core.run.parameters import validate
from stagewise.core.run.provenance import chapter_code_fingerprint, code_fingerprint, git_state, versions
from stagewise.core.run.results_schema import SCHEMA_VERSION

from stagewise.core.run.rundir import PROGRESS_TTY_ENV, RUN_DIR_ENV  # noqa: E402 - re-exported
from stagewise.core.run.labels import statement_labels  # noqa: E402,F401 - re-exported


def _plain(value: Any) -> Any:
    """Plain Python (JSON- and glue-friendly) version of numbers and arrays."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.ndim else _plain(value.item())
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class Run:
    """Collects what a chapter measures and writes it where the run command expects it."""

    def __init__(self, chapter: str, parameters: dict[str, Any], device: torch.device, directory: Path):
        self.chapter = chapter
        self.parameters = parameters
        self.device = device
        self.dtype = devices.DEFAULT_DTYPE
        self.directory = directory
        self.values: dict[str, Any] = {}
        self.checks: list[Check] = []
        self.hypotheses: list[dict[str, Any]] = []
        self.figures: list[str] = []
        self.started = time.time()

    @property
    def seed(self) -> int:
        return int(self.parameters.get("seed", 0))

    @property
    def small_device(self) -> torch.device:
        """The device of a chapter's small studies (a few points, a few neurons): the CPU when the parameter
        ``device`` is ``auto``, else the run's device. On a GPU such a study is many tiny kernels whose launches
        cost more than their arithmetic (3 to 9 times slower on an H200 than on two CPU cores, measured in
        benchmarks/gpu-lane/h200-2026-11-27); ``-p device cuda`` still puts every study on the GPU."""
        return torch.device("cpu") if self.parameters.get("device", "auto") == "auto" else self.device

    # -- named random streams ---------------------------------------------------------
    def generator(self, stream: str) -> torch.Generator:
        """A CPU ``torch.Generator`` for the named stream (e.g. ``"data"``, ``"init"``).

        Seeded from the run's seed and the stream's name: each experiment draws from its
        own stream, so changing one never changes another's numbers. Draw on the CPU and
        move, so that a seed gives the same numbers on every device.
        """
        return torch.Generator().manual_seed(devices.stream_seed(self.seed, stream))

    def numpy_rng(self, stream: str) -> np.random.Generator:
        """A NumPy ``Generator`` for the named stream (see :meth:`generator`)."""
        return np.random.default_rng(devices.stream_seed(self.seed, stream))

    def stream_seed(self, stream: str) -> int:
        """The integer seed of the named stream, for code that takes a seed."""
        return devices.stream_seed(self.seed, stream)

    def provenance(self) -> dict[str, Any]:
        return {
            **git_state(), "versions": versions(), "device": self.describe_devices(),
            "seed": self.seed, "dtype": str(self.dtype), "torch_threads": torch.get_num_threads(),
            "code_fingerprint": code_fingerprint(get_chapter(self.chapter).source),
            "chapter_fingerprint": chapter_code_fingerprint(self.chapter, get_chapter(self.chapter).source),
        }

    def describe_devices(self) -> str:
        """The device in words; where the small studies ran elsewhere (see :attr:`small_device`), both."""
        main = devices.describe(self.device)
        if self.small_device == self.device:
            return main
        return f"{main}; small studies on {devices.describe(self.small_device)}"

    # -- named values ---------------------------------------------------------------
    # Recording methods return None: a cell that ends with one prints nothing under it in the book.
    def value(self, name: str, value: Any, glue: bool = True) -> None:
        """Record a named value in results.json and glue it for the prose ({glue:text})."""
        plain = _plain(value)
        self.values[name] = plain
        if glue:
            _glue(name, plain)

    # -- checks ---------------------------------------------------------------------
    # A theorem row names its statement (``statement="thm-..."``, the label of its box) and its control:
    # ``control=run.control(what, experiment, *args)``, the same measurement on a plausible wrong hypothesis or
    # broken run computed now and judged by the row's own criterion, or ``run.no_control(why)``.
    # ``kind="sanity"`` marks an identity or consistency row, shown apart, not evidence.
    def control(self, what: str, experiment, *args, **kwargs) -> checks.Control:
        """The control of a row: ``experiment(*args, **kwargs)`` evaluated now, a named function measuring a
        modified run or theory (an untrained network, half the steps, a wrong exponent on the same data).
        A literal, a lambda, a builtin or another row's value is refused (see :mod:`stagewise.core.checks.rows`)."""
        return checks.measure(what, experiment, args, kwargs, _plain)

    @staticmethod
    def no_control(why: str) -> checks.Control:
        """For a row with no meaningful control: says so ("control: none"); the row does not count as powered."""
        return checks.Control.none(why)

    def _record(self, name, value, tolerance, criterion, detail, control, kind, relation, statement) -> None:
        plain = _plain(value)
        if kind == checks.THEOREM and control is None:
            raise checks.ControlError(f"theorem check {name!r} needs control=run.control(...) or "
                                      "run.no_control(why)")
        if kind in (checks.THEOREM, checks.EMPIRICAL) and not statement:
            raise TypeError(f"check {name!r}: name the statement it tests (statement='<label>')")
        title = self._statement_title(statement, name) if statement else ""
        ok, made = checks.verdict(criterion, plain, control, name)
        ok = ok and not (isinstance(plain, str) and plain in ("nan", "inf", "-inf"))
        if made is not None:
            checks.refuse_control(made, name, plain, self.checks)
        self.checks.append(checks.Check(name, plain, _plain(tolerance), ok, detail, kind, made, "", relation,
                                        statement or "", title))

    def _statement_title(self, label: str, name: str) -> str:
        labels = statement_labels(self.chapter)
        if labels is None:          # a Run outside any registered chapter (unit tests): nothing to look up
            return label
        if label not in labels:
            raise ValueError(f"check {name!r}: statement {label!r} is no label of chapter {self.chapter} "
                             f"(labels: {', '.join(sorted(labels)) or 'none'})")
        return labels[label]

    def check(self, name: str, value: Any, tolerance: Any, criterion, detail: str = "", *, relation: str,
              control: Any = None, kind: str = checks.THEOREM, statement: str = "") -> None:
        """Record a check judged by ``criterion`` (a function of the value; a computed bool only for rows
        without a computed control); ``relation`` (``<=``, ``>=``, ``in``, ``==``, ``true``) says how the value
        must relate to ``tolerance`` in the table."""
        self._record(name, value, tolerance, criterion, detail, control, kind, relation, statement)

    def check_below(self, name: str, value: float, tolerance: float, detail: str = "", *,
                    control: Any = None, kind: str = checks.THEOREM, statement: str = "") -> None:
        """Pass when an error measure ``value`` is at most ``tolerance``."""
        self._record(name, float(value), tolerance, checks.below(tolerance), detail, control, kind, "<=", statement)

    def check_above(self, name: str, value: float, tolerance: float, detail: str = "", *,
                    control: Any = None, kind: str = checks.THEOREM, statement: str = "") -> None:
        """Pass when ``value`` is at least ``tolerance`` (an effect, a margin, a fraction)."""
        self._record(name, float(value), tolerance, checks.above(tolerance), detail, control, kind, ">=", statement)

    def check_between(self, name: str, value: float, low: float, high: float, detail: str = "", *,
                      control: Any = None, kind: str = checks.THEOREM, statement: str = "") -> None:
        self._record(name, float(value), [low, high], checks.between(low, high), detail, control, kind, "in",
                     statement)

    def check_true(self, name: str, condition: bool, detail: str = "", *,
                   control: Any = None, kind: str = checks.THEOREM, statement: str = "") -> None:
        self._record(name, bool(condition), None, checks.truthy, detail, control, kind, "true", statement)

    # -- hypotheses and rows without a verdict ------------------------------------------
    def hypothesis(self, name: str, holds: bool, measured: str, requirement: str = "") -> bool:
        """Record whether a hypothesis of a theorem holds for this run's parameters; return it.

        ``name`` is the hypothesis as the chapter labels it (e.g. ``"Assumption 4.3 (last clause)"``),
        ``measured`` the quantity that decides it, with its value, and ``requirement`` what it must be.
        A chapter tests the hypothesis before the checks that need it and records those as
        :meth:`not_run` when it fails, so that the user's parameters never give a false failure.
        """
        holds = bool(holds)
        self.hypotheses.append({"name": name, "holds": holds, "measured": _plain(measured),
                                "requirement": requirement})
        if not holds:
            print(f"stagewise: hypothesis not met: {name}: {measured}"
                  + (f" (needs {requirement})" if requirement else "") + "; the checks that need it are not run")
        return holds

    def not_run(self, name: str, reason: str, detail: str = "", *, kind: str = checks.THEOREM) -> None:
        """A check that this run cannot perform: ``reason`` names the hypothesis that fails and the
        measured quantity (it is shown in the table and in results.json). Not a failure."""
        self.checks.append(checks.Check(name, None, None, None, detail, kind, None, reason))

    def unmet(self, name: str) -> str:
        """The reason line for rows that need the recorded hypothesis ``name`` (which failed)."""
        for h in reversed(self.hypotheses):
            if h["name"] == name:
                need = f"; needs {h['requirement']}" if h["requirement"] else ""
                return f"hypothesis not met: {name} ({h['measured']}{need})"
        raise KeyError(f"no hypothesis named {name!r} was recorded")

    def empirical(self, name: str, value: Any, tolerance: Any, reproduced, detail: str = "", *,
                  relation: str, statement: str, control: Any = None, reason: str = "",
                  contradicted=None) -> None:
        """An empirical claim of the paper (not a theorem): 'reproduced' or, when this run's budget does not
        show it, 'not reproduced at this budget' (no verdict, never a failure); ``reason`` says what was
        measured. ``reproduced`` is a criterion (a function of the value, which also judges ``control``) or a
        computed bool (then no computed control). ``contradicted``, a criterion of the value (the interval on the
        opposite side of the claim), makes a claim that is not reproduced 'contradicted'.

        At the chapter's default parameters each claim's verdict is a published finding
        (``book/published/<chapter>.yaml``): :meth:`finish` compares, and a run that changes one fails ``--strict``."""
        plain = _plain(value)
        shown, made = checks.verdict(reproduced, plain, control, name, row="claim")
        if made is not None:
            checks.refuse_control(made, name, plain, self.checks)
        opposite = bool(not shown and callable(contradicted) and checks._safe(contradicted, plain))
        why = "" if shown else (reason or "the effect is not above its noise in this run")
        self.checks.append(checks.Check(name, plain, _plain(tolerance), True if shown else None, detail,
                                        checks.EMPIRICAL, made, why, relation, statement,
                                        self._statement_title(statement, name), opposite))

    def findings(self, results: dict[str, Any]) -> dict[str, Any]:
        """The claims' verdicts against the chapter's published ones (:func:`stagewise.core.run.findings.compare`)."""
        from stagewise.core.run import findings
        return findings.compare(get_chapter(self.chapter), self.parameters, results["claims"])

    def checks_table(self) -> checks.ChecksTable:
        """The table of checks, as shown in the chapter (HTML; Markdown for other outputs)."""
        return checks.ChecksTable(self.checks)

    # -- figures --------------------------------------------------------------------
    def figure(self, figure, data: Any, figure_id: str | None = None, *, caption: str = "",
               alt: str = "", claim: str | None = None, labels: dict[str, str] | None = None) -> None:
        """Draw a figure, export it under ``figures/<chapter>-<id>`` and glue it as ``fig-<id>``.

        ``run.figure(figures.<name>, data, "<id>", caption=..., claim=...)``: ``figure`` is the figure's render
        function (``figures.<name>``, a pure function ``render(data, style)``
        of the chapter's torch-free ``figures.py``) and ``data`` what it plots: the arrays go to
        ``<stem>.npz`` and the rest, with ``caption``, ``alt`` (the text a screen reader says), ``claim`` (the
        label of the statement the figure supports) and ``labels`` (axis names and units), to ``<stem>.json``
        beside the provenance. The book's figure is that function's drawing of that data, so
        ``stagewise figure RUN_DIR <id> --style talk-16x9`` draws the same figure for a slide without the run.
        The dark theme's rendering is written too (``figures/dark/<stem>.png``, for the book's dark mode). A ready Matplotlib figure is still
        accepted (no sidecar: it cannot be restyled). Returns nothing, so that a cell ending with it prints no
        path of the build machine.
        """
        from stagewise.core.figures import sidecar
        from stagewise.core.figures import styles
        if isinstance(figure, plt.Figure) and figure_id is None:     # run.figure(fig, "id"): no sidecar
            data, figure_id = None, data
        stem = f"{self.chapter}-{figure_id}"
        folder = self.directory / "figures"
        prov = {"chapter": self.chapter, "parameters": self.parameters, **self.provenance()}
        if isinstance(figure, plt.Figure):
            fig, record = figure, None
        else:
            if not callable(figure) or data is None:
                raise TypeError(f"figure {figure_id!r}: give a render function and its data (or a Matplotlib figure)")
            if claim is not None:
                self._statement_title(claim, f"figure {figure_id}")
            render = f"{figure.__module__}:{figure.__qualname__}"
            if "." in figure.__qualname__ or not figure.__module__.startswith("stagewise."):
                raise TypeError(f"figure {figure_id!r}: the render function must be a module-level function of "
                                f"the stagewise package (got {render})")
            folder.mkdir(parents=True, exist_ok=True)
            book = styles.resolve("book")
            record = sidecar.write(folder, stem, data, {"render": render, "caption": caption, "alt": alt,
                                                        "claim": claim, "labels": labels or {}, "style": book.name})
            shown = sidecar.read_data(folder, stem, record)       # drawn from the files, as a restyle will be
            with book.context():
                fig = book.finish(figure(shown, book))
            dark = styles.resolve("book-dark")
            with dark.context():
                night = dark.finish(figure(shown, dark))
            save(night, stem, folder / "dark", prov, dark, ("png",))
            plt.close(night)
        export(fig, stem, folder, prov, record)
        self.figures.append(stem)
        _glue(f"fig-{figure_id}", fig)
        plt.close(fig)

    def progress(self, iterable: Iterable, **kwargs):
        """A progress bar for long loops.

        Under ``stagewise run`` in a terminal the bar is drawn on that terminal (the runner names it in
        ``STAGEWISE_PROGRESS_TTY``), below the runner's bar over cells; otherwise it goes to the kernel's
        stderr, which the rendered book removes. Always tqdm's text bar: ``tqdm.auto`` in a kernel without
        ipywidgets printed an "IProgress not found" warning naming a path of the machine into the notebook.
        """
        from tqdm.std import tqdm
        terminal = _progress_terminal()
        if terminal is not None:
            kwargs = {"position": 1, "leave": False, "dynamic_ncols": True, **kwargs}
            return tqdm(iterable, file=terminal, mininterval=1.0, **kwargs)
        return tqdm(iterable, file=sys.stderr, mininterval=2.0, **kwargs)

    # -- the end --------------------------------------------------------------------
    def results(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "chapter": self.chapter, "status": "complete", "parameters": self.parameters,
            "values": self.values,
            "checks": [c.as_dict() for c in self.checks if c.kind != checks.EMPIRICAL],
            "claims": [c.as_dict() for c in self.checks if c.kind == checks.EMPIRICAL],
            "hypotheses": self.hypotheses,
            "figures": self.figures,
            "provenance": {**self.provenance(), "notebook_seconds": round(time.time() - self.started, 2)},
        }

    def finish(self):
        """Write results.json, glue the story page's verdict lines and return the checks table for display.

        Glued for the story page (:mod:`stagewise.core.run.pages`): ``verdict-<label>`` for every statement box of
        the chapter (the verdict of its rows, linked to them on the verification page; "not checked" when no row
        names it in this run) and ``verdict-summary``, the counts of the box "Does the theory hold here?"."""
        from IPython.display import Markdown
        from stagewise.core.run import pages
        from stagewise.core.run.rundir import write_text_atomic
        faults.point("notebook-finish")
        self.directory.mkdir(parents=True, exist_ok=True)
        results = self.results()
        results["findings"] = self.findings(results)
        write_text_atomic(self.directory / "results.json", json.dumps(results, indent=2, default=str))
        rows = checks.rows_of(results)
        for label in sorted((statement_labels(self.chapter) or {}).keys() | {r["statement"] for r in rows
                                                                            if r.get("statement")}):
            _glue(f"verdict-{label}", Markdown(pages.verdict_line(label, rows, self.chapter)))
        _glue("verdict-summary", Markdown(pages.summary(self.chapter, rows)))
        return self.checks_table()


_TERMINAL: list = []


def _progress_terminal():
    """The terminal named in ``STAGEWISE_PROGRESS_TTY``, opened once; None when unset or not writable."""
    path = os.environ.get(PROGRESS_TTY_ENV)
    if not path:
        return None
    if not _TERMINAL:
        try:
            _TERMINAL.append(open(path, "w", buffering=1))
        except OSError:
            _TERMINAL.append(None)
    return _TERMINAL[0]


def _glue(name: str, value: Any) -> None:
    try:
        from myst_nb import glue
    except ImportError:  # outside the book's environment gluing is simply skipped
        return
    glue(name, value, display=False)


def start(chapter: str, namespace: dict[str, Any]) -> Run:
    """Validate the notebook's parameters and set up device, seed, threads and style."""
    faults.point("notebook-start")
    mutation.apply_from_env()  # only in mutation tests (STAGEWISE_MUTATION)
    catalogue.apply_from_env(get_chapter)  # only in the mutation matrix (STAGEWISE_BUG, stagewise.core.sweep.power)
    spec = get_chapter(chapter)
    parameters = validate(spec.parameters, namespace)
    spec.check_parameters(parameters)
    devices.set_threads()
    device = devices.resolve_device(parameters.get("device", "auto"))
    devices.seed_everything(int(parameters.get("seed", 0)))
    use_style()
    return Run(chapter, parameters, device, Path(os.environ.get(RUN_DIR_ENV, ".")).resolve())

"""``stagewise collect DIR``: every run under a folder in one tidy table, and a summary figure.

One row per run (a folder holding ``results.json`` of the supported schema version): its folder, chapter,
status, seed and commit, then ``param.<name>`` for every parameter, ``value.<name>`` for every scalar value
(lists as JSON text) and ``check.<name>`` (measured) / ``passed.<name>`` for every check. Written as
``sweep.csv``, and ``sweep.parquet`` when pyarrow is installed. :func:`plot` draws one value against one
parameter with the seeds aggregated (mean and standard deviation, each run as a dot).
"""
from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from stagewise.core.run.results_schema import validate

SKIPPED_PARTS = (".partial-", ".failed-", ".previous")


def run_folders(directory: Path) -> list[Path]:
    """Folders below ``directory`` holding a results.json, without staging, failed or swapped-out runs."""
    found = []
    for path in sorted(directory.rglob("results.json")):
        folder = path.parent
        rel = folder.relative_to(directory).parts
        if any(part.startswith(".") or any(s in part for s in SKIPPED_PARTS) for part in rel):
            continue
        found.append(folder)
    return found


def _cell(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def row(folder: Path, directory: Path) -> dict[str, Any]:
    """The table row of one run (its results.json validated against the schema first)."""
    results = json.loads((folder / "results.json").read_text())
    validate(results, where=str(folder / "results.json"))
    prov = results["provenance"]
    out: dict[str, Any] = {"run": str(folder.relative_to(directory)), "chapter": results["chapter"],
                           "status": results["status"], "seed": prov.get("seed"), "commit": prov.get("commit"),
                           "device": prov.get("device")}
    out.update({f"param.{k}": _cell(v) for k, v in results["parameters"].items()})
    out.update({f"value.{k}": _cell(v) for k, v in results["values"].items()})
    for check in results["checks"] + results.get("claims", []):
        out[f"check.{check['name']}"] = _cell(check["value"])
        out[f"passed.{check['name']}"] = check["passed"]
    return out


def collect(directory: Path, out: Path | None = None) -> tuple[list[dict[str, Any]], Path]:
    """Rows of every run under ``directory``, written to ``out`` (default ``directory/sweep.csv``)."""
    rows = [row(folder, directory) for folder in run_folders(directory)]
    if not rows:
        raise FileNotFoundError(f"no run folder with a results.json under {directory}")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    out = out or directory / "sweep.csv"
    tmp = out.with_name(f".{out.name}.partial")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(out)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in columns} for r in rows]),
                       out.with_suffix(".parquet"))
    except ImportError:
        pass
    return rows, out


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def plot(rows: list[dict[str, Any]], value: str, against: str, directory: Path, stem: str = "sweep") -> list[Path]:
    """``value.<value>`` against ``param.<against>``, one line per setting of the other varying parameters,
    mean and standard deviation over seeds; exported as PDF/SVG/PNG with provenance and a data sidecar like a
    chapter figure (``stagewise figure DIR sweep --style talk-16x9`` restyles it)."""
    import matplotlib.pyplot as plt

    from stagewise.core.figures import sidecar
    from stagewise.core.figures import styles
    from stagewise.core.figures.export import export
    vkey, pkey = f"value.{value}", f"param.{against}"
    for key, what in ((vkey, "value"), (pkey, "parameter")):
        if not any(key in r for r in rows):
            raise KeyError(f"no {what} named {key.split('.', 1)[1]!r} in the collected runs")
    varying = [k for k in rows[0] if k.startswith("param.") and k not in (pkey, "param.seed")
               and len({str(r.get(k)) for r in rows}) > 1]
    lines: dict[tuple, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        lines[tuple(str(r.get(k)) for k in varying)][_number(r.get(pkey))].append(_number(r.get(vkey)))
    series = {}
    for i, (label, points) in enumerate(sorted(lines.items())):
        xs = np.array(sorted(points))
        runs = [(x, y) for x in xs for y in points[x]]
        series[f"line{i:03d}"] = {
            "label": ", ".join(f"{k[6:]}={v}" for k, v in zip(varying, label)) or value,
            "x": xs, "mean": np.array([np.nanmean(points[x]) for x in xs]),
            "sd": np.array([np.nanstd(points[x]) for x in xs]),
            "run_x": np.array([x for x, _ in runs], dtype=float), "run_y": np.array([y for _, y in runs], dtype=float)}
    positive = all(_number(r.get(pkey)) > 0 for r in rows)
    logx = bool(positive and max(_number(r.get(pkey)) for r in rows) / min(_number(r.get(pkey)) for r in rows) > 20)
    data = {"series": series, "xlabel": against, "ylabel": value, "logx": logx,
            "title": f"{rows[0]['chapter']}: {len(rows)} runs, mean ± sd over seeds"}
    provenance = {"chapter": rows[0]["chapter"], "runs": [r["run"] for r in rows],
                  "commits": sorted({str(r["commit"]) for r in rows}), "value": value, "against": against}
    book = styles.resolve("book")
    record = sidecar.write(directory, stem, data, {
        "render": f"{__name__}:render_sweep", "caption": data["title"], "claim": None, "style": book.name,
        "alt": f"{value} against {against} over the sweep's runs", "labels": {"x": against, "y": value}})
    with book.context():
        fig = render_sweep(sidecar.read_data(directory, stem, record), book)
    paths = export(fig, stem, directory, provenance, record)
    plt.close(fig)
    return paths


def render_sweep(data: dict[str, Any], style):
    """The sweep figure from its data: per line, the mean with a band of one standard deviation and the runs."""
    fig, ax = style.subplots(size=(5.5, 3.6))
    for line in data["series"].values():
        drawn, = ax.plot(line["x"], line["mean"], marker="o", label=line["label"])
        ax.fill_between(line["x"], line["mean"] - line["sd"], line["mean"] + line["sd"], color=drawn.get_color(),
                        alpha=0.2, linewidth=0)
        ax.plot(line["run_x"], line["run_y"], ".", color=drawn.get_color(), alpha=0.4)
    ax.set_xlabel(data["xlabel"])
    ax.set_ylabel(data["ylabel"])
    if data["logx"]:
        ax.set_xscale("log")
    ax.legend(fontsize="small")
    ax.set_title(data["title"], fontsize="medium")
    return fig

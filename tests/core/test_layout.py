"""The package's layout: the rooms of ``stagewise.core`` and the directions between them, no module over 400 lines,
no import cycle, and ``core`` never importing a chapter or ``numerics``.

Every import is read from the source (``ast``), at top level and inside functions alike: a lazy import is still a
dependency. Each rule is first shown to catch a planted violation (its control).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from stagewise.core import MAY_IMPORT

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "stagewise"
CORE = PACKAGE / "core"
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, source: str | None = None) -> set[str]:
    """Every ``stagewise...`` module ``path`` imports, absolute and relative, at any depth of the file."""
    tree = ast.parse(source if source is not None else path.read_text())
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "stagewise"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "stagewise":
                continue
            for a in node.names:                     # `from stagewise.core.run import session`: the module itself
                candidate = f"{base}.{a.name}"
                found.add(candidate if _is_module(candidate) else base)
    return found


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def room(module: str) -> str | None:
    """The room of core a module is in (``run`` for ``stagewise.core.run.session``); None outside core."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["stagewise", "core"] else None


def violations(path: Path, source: str | None = None) -> list[str]:
    """The imports of a module of core that break the rules: a room importing a room it may not, core importing a
    chapter subpackage or ``numerics``."""
    own = room(module_name(path))
    bad = []
    for target in sorted(imported(path, source)):
        parts = target.split(".")
        if parts[:2] != ["stagewise", "core"]:
            if len(parts) > 1 and parts[1] not in ("core", "__version__"):
                bad.append(f"{module_name(path)} imports {target}: core never imports a chapter or numerics")
            continue
        other = room(target)
        if other is None:                             # stagewise.core itself (MAY_IMPORT, the docstring)
            continue
        if own is None:
            bad.append(f"{module_name(path)} imports {target}: core's own __init__ imports no room")
        elif other != own and other not in MAY_IMPORT[own]:
            bad.append(f"{module_name(path)} ({own}) imports {target} ({other}): {own} may import "
                       f"{', '.join(sorted(MAY_IMPORT[own])) or 'no other room'}")
    return bad


def core_modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_core_is_rooms_only():
    """No module lies loose in core/: every one is in a room named in MAY_IMPORT, with a docstring that says what it
    owns and what it may import."""
    loose = [p.name for p in CORE.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"modules outside any room of core: {loose}"
    rooms = {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(MAY_IMPORT)
    for name in rooms:
        doc = ast.get_docstring(ast.parse((CORE / name / "__init__.py").read_text())) or ""
        assert "May import" in doc, name
        assert "Owns" in doc or name == "cli", name                  # cli's docstring lists its commands instead


def test_the_directions_between_rooms_hold():
    bad = [v for p in core_modules() for v in violations(p)]
    assert not bad, "\n".join(bad)


def test_the_direction_rule_catches_a_planted_import():
    """Control: the same rule flags a checks module that imports the registry (checks is the lowest room), a lazy
    sweep import in run, and core importing a chapter or numerics."""
    checks_module = CORE / "checks" / "rows.py"
    assert violations(checks_module, "from stagewise.core.run.registry import get_chapter\n")
    assert violations(CORE / "run" / "session.py", "def f():\n    from stagewise.core.sweep import power\n")
    assert violations(CORE / "run" / "runner.py", "from ..book import build\n")
    assert violations(CORE / "book" / "build.py", "import stagewise.linear_riccati.riccati\n")
    assert violations(CORE / "figures" / "export.py", "from stagewise.numerics.fits import loglog_slope\n")
    assert not violations(CORE / "book" / "build.py", "from stagewise.core.sweep import power\n")


def long_modules(paths) -> list[str]:
    return [f"{p.name if not p.is_relative_to(PACKAGE) else p.relative_to(PACKAGE)}: {n} lines" for p in paths
            if (n := len(p.read_text().splitlines())) > MAX_LINES]


def test_no_module_is_over_400_lines(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("x = 1\n" * (MAX_LINES + 1))
    assert long_modules([planted])                    # control
    assert not long_modules(sorted(PACKAGE.rglob("*.py"))), long_modules(sorted(PACKAGE.rglob("*.py")))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports. ``stagewise`` itself is no target: importing ``__version__``
    from the package root, which is initialised first, closes no cycle."""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        graph[name] = {t for t in imported(path) if t not in (name, "stagewise") and _is_module(t)}
    return graph


def test_no_import_cycle():
    graph = import_graph()
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]    # control
    assert not cycles(graph), cycles(graph)


@pytest.mark.parametrize("chapter", ["conservation_laws", "diagonal_incremental", "transformer_rank",
                                     "relu_orthogonal", "linear_riccati", "escape_speed"])
def test_a_chapter_imports_no_other_chapter(chapter):
    others = {"conservation_laws", "diagonal_incremental", "transformer_rank", "relu_orthogonal", "linear_riccati",
              "escape_speed"} - {chapter}
    bad = [(module_name(p), t) for p in sorted((PACKAGE / chapter).rglob("*.py")) for t in imported(p)
           if t.split(".")[1] in others]
    assert not bad, bad

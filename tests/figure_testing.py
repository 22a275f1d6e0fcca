"""What every chapter's figure tests share: drawing a render function from exactly what a sidecar keeps, and the
check that a chapter's ``figures`` module is pure (no torch, nothing of stagewise: a restyle must not compute)."""
import ast
import inspect

from stagewise.core.figures import sidecar
from stagewise.core.figures import styles

PRESETS = ("book", "talk-16x9-dark", "poster")


def draw(render, data, preset="book"):
    """``render`` drawn in ``preset`` from ``data`` as its sidecar stores it; returns (figure, style)."""
    style = styles.resolve(preset)
    arrays, values = sidecar.split(data)           # what a sidecar keeps: the figure must draw from that alone
    with style.context():
        return style.finish(render(sidecar._unflatten({**arrays, **values}), style)), style


def assert_pure_renderers(module) -> None:
    """``module`` imports neither torch nor stagewise."""
    tree = ast.parse(inspect.getsource(module))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names} | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and ("torch" in m or m.startswith("stagewise"))}, imported

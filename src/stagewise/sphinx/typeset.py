"""Typeset the ASCII formulas the runs write (row names, details, hypotheses) wherever a page shows them
(:mod:`stagewise.core.book.typeset`).

A transform of every document as Sphinx reads it: a text node holding a formula of the table or a symbol of the
symbol rules becomes text and inline math nodes, so that MathJax typesets it as it does the rest of the page, and a
code name (``eta_white``) an inline literal. Code, literal blocks, raw HTML, math and titles (which the sidebar shows
as plain text) are left as they are.
"""
from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform

_LEAVE = (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.raw, nodes.title, nodes.comment, nodes.target)


class TypesetFormulas(SphinxTransform):
    default_priority = 500

    def apply(self, **kwargs) -> None:
        from stagewise.core.book.typeset import parts
        for text in list(self.document.findall(nodes.Text)):
            parent = text.parent
            if parent is None or _inside(parent):
                continue
            pieces = parts(str(text))
            if all(kind == "text" for kind, _ in pieces):
                continue
            parent.replace(text, [_NODE[kind](s) for kind, s in pieces])


_NODE = {"math": lambda s: nodes.math(s, s), "code": lambda s: nodes.literal(s, s), "text": nodes.Text}


def _inside(node) -> bool:
    while node is not None:
        if isinstance(node, _LEAVE):
            return True
        node = node.parent
    return False


def setup(app):
    app.add_transform(TypesetFormulas)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Typeset the ASCII formulas the runs write (row names, details, hypotheses) wherever a page shows them
(:mod:`stagewise.core.book.typeset`).

A transform of every document as Sphinx reads it: a text node holding a formula of the table or a symbol of the
symbol rules becomes text and inline math nodes, so that MathJax typesets it as it does the rest of the page. Code,
literal blocks, raw HTML, math and titles (which the sidebar shows as plain text) are left as they are.
"""
from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform

_LEAVE = (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.raw, nodes.title, nodes.comment, nodes.target)


class TypesetFormulas(SphinxTransform):
    default_priority = 500

    def apply(self, **kwargs) -> None:
        from stagewise.core.book.typeset import pieces
        for text in list(self.document.findall(nodes.Text)):
            parent = text.parent
            if parent is None or _inside(parent):
                continue
            parts = pieces(str(text))
            if not any(math for math, _ in parts):
                continue
            parent.replace(text, [nodes.math(s, s) if math else nodes.Text(s) for math, s in parts])


def _inside(node) -> bool:
    while node is not None:
        if isinstance(node, _LEAVE):
            return True
        node = node.parent
    return False


def setup(app):
    app.add_transform(TypesetFormulas)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

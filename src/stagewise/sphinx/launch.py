"""Point the launch buttons at the chapter sources, which exist in the repository.

Chapters are rendered from their executions (``book/executed/``, staged as ``chapters/<name>.ipynb``; both ignored
by git), so the theme's Binder links would open ``chapters/<name>.ipynb``: a 404. The MyST source
``book/chapters/<name>.md`` opens as a notebook in Binder (jupytext is in the environment built from
``binder/``), so every link to an executed chapter is rewritten to its source.
"""
from __future__ import annotations

import re

EXECUTED = re.compile(r"(?:book/executed/(?P<name>[a-z0-9-]+)/(?P=name)|chapters/(?P<staged>[a-z0-9-]+))\.ipynb")


def source_path(path: str) -> str:
    """``book/executed/<name>/<name>.ipynb`` or ``chapters/<name>.ipynb`` (the staged copy the book renders) ->
    ``book/chapters/<name>.md``; other text unchanged."""
    return EXECUTED.sub(lambda m: f"book/chapters/{m['name'] or m['staged']}.md", path)


def _rewrite(buttons) -> None:
    for button in buttons or []:
        url = button.get("url")
        if isinstance(url, str) and url.startswith(("http://", "https://")):   # not the _sources/ downloads
            button["url"] = source_path(url)
        _rewrite(button.get("buttons"))


def _page_context(app, pagename, templatename, context, doctree) -> None:
    _rewrite(context.get("header_buttons"))


def setup(app):
    app.connect("html-page-context", _page_context, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Where the book lives on disk: the chapters' executions, the pages Sphinx renders, and the build."""
from __future__ import annotations

from stagewise.core.run.registry import PROJECT_ROOT

EXECUTED_DIR = PROJECT_ROOT / "book" / "executed"
#: What Sphinx renders (git-ignored, made by each build): the executed chapters' notebooks copied out of their run
#: folders and the generated pages, so that a chapter's address is ``chapters/<chapter>.html``, not a path of the
#: run folder. The old addresses (``book/executed/<chapter>/<chapter>.html``) redirect to the new ones.
SITE_DIR = PROJECT_ROOT / "chapters"
#: The chapters' verification pages (git-ignored, made by each build from the same executions).
VERIFICATION_DIR = PROJECT_ROOT / "verification"
BUILD_DIR = PROJECT_ROOT / "_build"
#: The static files (style sheet, icon) that Sphinx copies into ``_build/html/_static`` (``html_static_path``).
STATIC_DIR = PROJECT_ROOT / "book" / "_static"

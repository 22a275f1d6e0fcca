"""A folder of JSON results, one file per chapter (``<folder>/<chapter>.json``), that tests point elsewhere with an
environment variable: the mutation matrices (:mod:`.power`) and the mutant samples (:mod:`.mutants`)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ChapterResults:
    default: Path     # the folder, unless the environment variable names another
    env: str

    def folder(self) -> Path:
        return Path(os.environ.get(self.env) or self.default)

    def path(self, chapter: str) -> Path:
        return self.folder() / f"{chapter}.json"

    def write(self, found: dict[str, Any]) -> Path:
        """Store ``found`` (it names its ``chapter``) atomically; returns the file."""
        from stagewise.core.run.rundir import write_text_atomic
        self.folder().mkdir(parents=True, exist_ok=True)
        path = self.path(found["chapter"])
        write_text_atomic(path, json.dumps(found, indent=1, default=str) + "\n")
        return path

    def read(self, chapter: str) -> dict[str, Any] | None:
        """The chapter's stored result, or None when there is none (or it cannot be read)."""
        try:
            return json.loads(self.path(chapter).read_text())
        except (OSError, ValueError):
            return None

"""Write book/published/<chapter>.yaml from the book's executed runs (the default parameters): each claim's verdict.

Run it after `make book` when a change of the code deliberately changes a finding, and commit the file with the
change: `python tools/publish_findings.py [CHAPTER...]`. It refuses a run that is not at the default parameters.
"""
from __future__ import annotations

import json
import sys

import yaml

from stagewise.core.book.build import EXECUTED_DIR
from stagewise.core.run import findings
from stagewise.core.run.registry import all_chapters, get_chapter


def main(names: list[str]) -> int:
    for chapter in [get_chapter(n) for n in names] if names else all_chapters():
        results = json.loads((EXECUTED_DIR / chapter.name / "results.json").read_text())
        found = findings.compare(chapter, results["parameters"], results.get("claims", []))
        if not found["at_defaults"]:
            print(f"{chapter.name}: the executed run is not at the default parameters; nothing written")
            return 2
        verdicts = {c["name"]: findings.verdict(c) for c in results.get("claims", [])}
        path = findings.published_path(chapter.name)
        if not verdicts:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# The verdicts of {chapter.name}'s claims at its default parameters (tools/publish_findings.py)\n"
                        + yaml.safe_dump(verdicts, sort_keys=False, allow_unicode=True, width=200))
        print(f"{chapter.name}: {len(verdicts)} claims -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

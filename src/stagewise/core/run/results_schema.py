"""The published JSON Schema of ``results.json`` (``results.schema.json`` beside this module) and its check.

``schema_version`` is 1; a change that removes or renames a key raises it. ``stagewise collect`` and the
tests validate every results.json against the schema.
"""
from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

SCHEMA_VERSION = 1


class ResultsSchemaError(ValueError):
    """A results.json that does not follow the schema (one line: where and what)."""


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(resources.files("stagewise.core.run").joinpath("results.schema.json").read_text())


def validate(results: dict[str, Any], where: str = "results.json") -> None:
    """Raise :class:`ResultsSchemaError` unless ``results`` follows the schema."""
    import jsonschema
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema()).iter_errors(results))
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ResultsSchemaError(f"{where} does not follow results schema {SCHEMA_VERSION}: at {path}: "
                                 f"{error.message[:200]}")

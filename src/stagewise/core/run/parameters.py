"""Chapter parameters: declared once, in the notebook's ``parameters`` cell.

Each line of that cell reads ``name: type = default  # meaning; domain`` where the
domain is an interval such as ``(0, 0.5]`` or ``[1, inf)``, or a set of choices
such as ``{auto, cpu, cuda}``. The run command parses the cell to validate
command-line values before any compute, and the notebook validates the values it
actually received with the same declarations (:func:`validate`).
"""
from __future__ import annotations

import ast
import difflib
import io
import json
import math
import re
import tokenize
from dataclasses import dataclass
from typing import Any, Mapping

import yaml

SUPPORTED_TYPES = ("int", "float", "bool", "str", "list[int]", "list[float]")


class ParameterError(ValueError):
    """A parameter value that the chapter does not accept (one-line message)."""


@dataclass(frozen=True)
class Domain:
    """An interval (numbers, or each element of a list) or a finite set of choices."""

    low: float | None = None
    high: float | None = None
    low_closed: bool = True
    high_closed: bool = True
    choices: tuple[str, ...] | None = None

    def contains(self, value: Any) -> bool:
        if self.choices is not None:
            return str(value) in self.choices
        above = self.low is None or (value >= self.low if self.low_closed else value > self.low)
        below = self.high is None or (value <= self.high if self.high_closed else value < self.high)
        return above and below

    def __str__(self) -> str:
        if self.choices is not None:
            return "{" + ", ".join(self.choices) + "}"
        low = "-inf" if self.low is None else _fmt_number(self.low)
        high = "inf" if self.high is None else _fmt_number(self.high)
        return ("[" if self.low_closed else "(") + f"{low}, {high}" + ("]" if self.high_closed else ")")


def _fmt_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: Any
    help: str
    domain: Domain | None = None

    def describe_domain(self) -> str:
        if self.domain is not None:
            prefix = "each in " if self.type.startswith("list") else ""
            return prefix + str(self.domain)
        return {"bool": "true or false", "str": "any text"}.get(self.type, "any " + self.type)


_INTERVAL = re.compile(r"^([\[(])\s*([^,]+?)\s*,\s*([^,]+?)\s*([\])])$")
_CHOICES = re.compile(r"^\{(.+)\}$")


def _parse_bound(text: str) -> float | None:
    text = text.strip()
    if text in ("inf", "+inf", "-inf"):
        return None
    node = ast.parse(text, mode="eval")
    allowed = (ast.Expression, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Pow, ast.Mult,
               ast.Sub, ast.Add, ast.Div, ast.USub)
    if not all(isinstance(n, allowed) for n in ast.walk(node)):
        raise ValueError(f"bad bound {text!r}")
    return float(eval(compile(node, "<bound>", "eval")))  # arithmetic on literals only


def parse_domain(text: str) -> Domain:
    text = text.strip()
    text = text[len("each in"):].strip() if text.startswith("each in") else text
    if m := _CHOICES.match(text):
        return Domain(choices=tuple(c.strip() for c in m.group(1).split(",")))
    if m := _INTERVAL.match(text):
        return Domain(low=_parse_bound(m.group(2)), high=_parse_bound(m.group(3)),
                      low_closed=m.group(1) == "[", high_closed=m.group(4) == "]")
    raise ValueError(f"cannot read domain {text!r}")


def parse_parameters_cell(source: str) -> dict[str, Parameter]:
    """Read the declarations of a ``parameters`` cell (see module docstring)."""
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    params: dict[str, Parameter] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            raise ValueError(f"line {node.lineno}: parameters must read 'name: type = value  # help; domain'")
        name, kind = node.target.id, ast.unparse(node.annotation)
        if kind not in SUPPORTED_TYPES:
            raise ValueError(f"parameter {name}: type {kind} not in {SUPPORTED_TYPES}")
        default = ast.literal_eval(node.value)
        comment = comments.get(node.lineno, "")
        if "=" in comment:
            raise ValueError(f"parameter {name}: its comment must not contain '=' (papermill misreads the line)")
        help_text, domain = comment, None
        if ";" in comment:
            help_text, domain_text = comment.rsplit(";", 1)
            domain = parse_domain(domain_text)
        params[name] = Parameter(name, kind, default, help_text.strip(), domain)
        coerce(params[name], default)  # the declared default must itself be valid
    return params


def shown(value: Any, limit: int = 40) -> str:
    """A short, one-line repr of any value (huge integers and long texts are cut)."""
    try:
        text = repr(value)
    except ValueError:  # an integer beyond Python's digit limit for str()
        text = f"<an integer of about {value.bit_length() * 0.30103:.0f} digits>"
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _scalar(p: Parameter, kind: str, value: Any) -> Any:
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.strip().lower() in ("true", "yes", "1")
        raise ParameterError(f"parameter {p.name}: expected true or false, got {shown(value)}")
    if kind == "str":
        if not isinstance(value, str):
            raise ParameterError(f"parameter {p.name}: expected text, got {shown(value)} (quote it in YAML)")
        return value
    try:
        if isinstance(value, bool) or isinstance(value, str) and not value.isascii():
            raise ValueError  # no booleans as numbers, no non-ASCII digits (int('٣') == 3)
        if kind == "int":
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError
                value = int(value)
            number: Any = value if isinstance(value, int) else int(value) if isinstance(value, str) else None
            if number is None:
                raise TypeError
        else:
            if not isinstance(value, (int, float, str)):
                raise TypeError
            number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(f"parameter {p.name}: expected {kind}, got {shown(value)}") from None
    if kind == "float" and not math.isfinite(number):
        raise ParameterError(f"parameter {p.name}: must be a finite number in {p.describe_domain()}, "
                             f"got {shown(value)}")
    return number


def coerce(p: Parameter, value: Any) -> Any:
    """Turn a command-line string or a YAML value into the declared type and check its domain."""
    if p.type.startswith("list"):
        if isinstance(value, str):
            text = value.strip()
            try:
                value = json.loads(text) if text.startswith("[") else [v for v in text.split(",") if v.strip()]
            except (json.JSONDecodeError, RecursionError):
                raise ParameterError(f"parameter {p.name}: expected a list such as [1, 2] or 1,2; "
                                     f"got {shown(value)}") from None
        if not isinstance(value, (list, tuple)) or not value:
            raise ParameterError(f"parameter {p.name}: expected a non-empty list, got {shown(value)}")
        out = [_scalar(p, p.type[5:-1], v) for v in value]
    else:
        out = _scalar(p, p.type, value)
    for v in out if isinstance(out, list) else [out]:
        if p.domain is not None and not p.domain.contains(v):
            raise ParameterError(f"parameter {p.name}: {shown(v)} is out of range; allowed: {p.describe_domain()}")
    return out


def unknown_parameter_message(name: str, known: Mapping[str, Parameter], chapter: str) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(known)}"
    return f"unknown parameter '{name}' for chapter {chapter}{hint} (see 'stagewise params {chapter}')"


def resolve(declared: Mapping[str, Parameter], overrides: Mapping[str, Any], chapter: str) -> dict[str, Any]:
    """Validate overrides and return the complete, typed parameter set."""
    values = {name: p.default for name, p in declared.items()}
    for name, raw in overrides.items():
        if name not in declared:
            raise ParameterError(unknown_parameter_message(name, declared, chapter))
        values[name] = coerce(declared[name], raw)
    if values.get("device") == "cuda":
        _require_cuda()
    return values


def _require_cuda() -> None:
    """``-p device cuda`` on a machine without CUDA is bad input, refused before any compute."""
    import torch
    if not torch.cuda.is_available():
        raise ParameterError("parameter device: cuda was asked for but this machine has no usable CUDA device; "
                             "allowed here: auto, cpu")


def validate(declared: Mapping[str, Parameter], namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Check the values a notebook actually holds (after papermill injection)."""
    return {name: coerce(p, namespace[name]) for name, p in declared.items()}


def load_parameter_file(path: str) -> dict[str, Any]:
    """Read a YAML mapping of parameter names to values.

    ``yaml.safe_load`` only: a tag such as ``!!python/object`` is refused, never run.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except OSError as err:
        raise ParameterError(f"cannot read parameter file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ParameterError(f"parameter file {path} is not UTF-8 text") from None
    except yaml.constructor.ConstructorError as err:
        tag = f" (tag {err.problem.split()[-1]})" if err.problem and "tag" in err.problem else ""
        raise ParameterError(f"parameter file {path}: refused a YAML tag that could construct objects{tag}; "
                             "give plain values only") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ParameterError(f"parameter file {path} is not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise ParameterError(f"parameter file {path} must map parameter names to values")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise ParameterError(f"parameter file {path}: parameter names must be text, got {shown(bad[0])}")
    return data

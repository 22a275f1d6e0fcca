"""Property-based tests of parameter parsing (Hypothesis), for every parameter of every chapter.

Whatever a user types or writes in a YAML file, the outcome is either a valid value of the
declared type inside the declared domain, equal to what was given (never silently coerced),
or a ``ParameterError`` whose message is one line naming the parameter. Through the command
line the same holds as exit 0 (``--dry-run``) or exit 2 with one line of stderr.
"""
import json
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stagewise.core.cli import main as cli
from stagewise.core.run.registry import all_chapters
from stagewise.core.run.parameters import ParameterError, Parameter, load_parameter_file, resolve

CHAPTERS = {c.name: c for c in all_chapters()}
PARAMS = [(c.name, p) for c in CHAPTERS.values() for p in c.parameters.values()]
# Reproducible in CI: the same examples every run, no example database in the tree.
PROPERTY = settings(derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _edges(p: Parameter) -> list:
    """Numbers at and just beyond every declared bound (as numbers and as typed text)."""
    out = [0, -0.0, 1, -1, 10**30, -(10**30), 10**400, 1e308, -1e308, 5e-324]
    d = p.domain
    if d is not None and d.choices is None:
        for bound in (d.low, d.high):
            if bound is None:
                continue
            out += [bound, math.nextafter(bound, math.inf), math.nextafter(bound, -math.inf)]
            if float(bound).is_integer():
                out += [int(bound), int(bound) + 1, int(bound) - 1]
    return out + [str(v) for v in out]


def raw_values(p: Parameter):
    """Everything a command line or a YAML file can hand over."""
    scalars = st.one_of(
        st.sampled_from(_edges(p)),
        st.text(max_size=30),
        st.text(alphabet="0123456789.-+eE_ infa,[]", max_size=12),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.sampled_from(["nan", "NaN", "-inf", "inf", "Infinity", "1e999", "٣", "３", "0x10", "1_000",
                         "true", "yes", "", " ", "None", "null", "[]", "[[1]]", "[1, [2]]", "1,,2", "--1"]),
        st.booleans(), st.none(),
    )
    return st.one_of(scalars, st.lists(scalars, max_size=4),
                     st.lists(st.lists(scalars, max_size=2), max_size=2),
                     st.dictionaries(st.text(max_size=3), scalars, max_size=2))


def _assert_valid(p: Parameter, raw, value) -> None:
    """An accepted value has the declared type, lies in the domain and equals what was given."""
    kind = p.type
    items = value if kind.startswith("list") else [value]
    element = kind[5:-1] if kind.startswith("list") else kind
    if kind.startswith("list"):
        assert isinstance(value, list) and value
    for v in items:
        if element == "int":
            assert type(v) is int
        elif element == "float":
            assert type(v) is float and math.isfinite(v)
        elif element == "bool":
            assert type(v) is bool
        else:
            assert type(v) is str
        assert p.domain is None or p.domain.contains(v)
    # not silently coerced: a scalar given as a number or as text is the same number
    if not kind.startswith("list") and element in ("int", "float"):
        given_number = float(raw) if isinstance(raw, (int, float, str)) and not isinstance(raw, bool) else None
        assert given_number == float(value), (raw, value)
    if element == "str" and not kind.startswith("list"):
        assert value == raw


@pytest.mark.parametrize("chapter,param", PARAMS, ids=[f"{c}:{p.name}" for c, p in PARAMS])
@settings(PROPERTY, max_examples=60)
@given(data=st.data())
def test_any_value_is_valid_or_a_one_line_error(chapter, param, data):
    raw = data.draw(raw_values(param))
    spec = CHAPTERS[chapter]
    try:
        values = resolve(spec.parameters, {param.name: raw}, chapter)
        spec.check_parameters(values)
    except ParameterError as err:
        message = str(err)
        assert "\n" not in message and message and len(message) < 400
        return
    _assert_valid(param, raw, values[param.name])


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@pytest.mark.parametrize("chapter", list(CHAPTERS))
@settings(PROPERTY, max_examples=80)
@given(data=st.data())
def test_the_command_line_gives_exit_0_or_one_line_exit_2(chapter, data, capsys, tmp_path_factory):
    spec = CHAPTERS[chapter]
    param = data.draw(st.sampled_from(list(spec.parameters.values())))
    raw = data.draw(raw_values(param).map(_text))
    assume("\x00" not in raw)  # a NUL cannot be part of a command-line argument
    code = cli.main(["run", chapter, "-p", param.name, raw, "--dry-run", "--out",
                     str(tmp_path_factory.getbasetemp() / "never-written")])
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("stagewise: error: ") and "Traceback (most recent call last)" not in err
    else:
        shown = json.loads(out)
        _assert_valid(param, raw, shown["parameters"][param.name])


@pytest.mark.parametrize("argv,fragment", [
    (["run", "smoke-test", "-p", "eta", "-inf"], "finite"),
    (["run", "smoke-test", "-p", "eta", "-1e-3"], "out of range"),
    (["run", "smoke-test", "-p", "fail_at_step", "-1", "--dry-run"], None),
    (["run", "smoke-test", "-p", "seed"], "-p seed needs a VALUE"),
    (["run", "smoke-test", "-p"], "-p needs a NAME and a VALUE"),
    (["run", "smoke-test", "-p", "seed", "--strict"], "-p seed needs a VALUE"),
    (["run", "smoke-test", "--no-such-flag"], "unrecognized arguments"),
    (["run"], "required"),
    ([], "required"),
    (["list", "-p", "a", "b"], "-p is an option of 'stagewise run'"),
    (["run", "smoke-test", "-p", "seed", "٣"], "expected int"),
    (["run", "smoke-test", "-p", "seed", "9" * 5000], "expected int"),
    (["run", "smoke-test", "-p", "device", "1"], "allowed"),
])
def test_every_argument_error_is_one_line(argv, fragment, fixture_chapters, capsys, tmp_path):
    code = cli.main(argv + (["--out", str(tmp_path / "r"), "--dry-run"] if argv[:1] == ["run"] and len(argv) > 1
                            and "--dry-run" not in argv else []))
    out, err = capsys.readouterr()
    if fragment is None:
        assert code == 0 and json.loads(out)["parameters"]["fail_at_step"] == -1
        return
    assert code == 2 and fragment in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1 and "Traceback (most recent call last)" not in err
    assert not (tmp_path / "r").exists()


def test_yaml_object_tags_are_refused_and_never_constructed(tmp_path):
    marker = tmp_path / "constructed"
    evil = tmp_path / "evil.yaml"
    evil.write_text(f"seed: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(ParameterError, match="refused a YAML tag"):
        load_parameter_file(str(evil))
    assert not marker.exists()
    for text, fragment in (("seed: [1\n", "not valid YAML (line"), ("- 1\n- 2\n", "must map"),
                           ("1: 2\n", "names must be text")):
        evil.write_text(text)
        with pytest.raises(ParameterError, match=fragment.replace("(", r"\(")):
            load_parameter_file(str(evil))

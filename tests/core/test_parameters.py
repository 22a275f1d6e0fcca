"""The parameter declarations: parsing, coercion, domains and one-line errors."""
import math

import pytest

from stagewise.core.run.registry import all_chapters
from stagewise.core.run.parameters import ParameterError, coerce, parse_domain, parse_parameters_cell, resolve

CELL = '''
eta: float = 0.1            # step size; (0, 1]
steps: int = 20             # number of steps; [1, 2**10]
etas: list[float] = [0.1, 0.2]  # several step sizes; each in (0, 0.5]
mode: str = "a"             # which mode; {a, b}
verbose: bool = False       # print more
'''


def test_parse_cell_reads_types_defaults_help_and_domains():
    params = parse_parameters_cell(CELL)
    assert list(params) == ["eta", "steps", "etas", "mode", "verbose"]
    assert params["eta"].type == "float" and params["eta"].default == 0.1 and params["eta"].help == "step size"
    assert params["steps"].domain.high == 1024 and params["steps"].domain.low_closed
    assert not params["eta"].domain.low_closed and params["eta"].domain.high_closed
    assert params["mode"].domain.choices == ("a", "b")
    assert params["verbose"].domain is None and params["verbose"].describe_domain() == "true or false"
    assert params["etas"].describe_domain() == "each in (0, 0.5]"


@pytest.mark.parametrize("text,inside,outside", [
    ("(0, 1]", [1.0, 1e-9], [0.0, 1.5]),
    ("[1, inf)", [1, 10**9], [0]),
    ("[-1, 2**4]", [-1, 16], [-2, 17]),
])
def test_domains(text, inside, outside):
    domain = parse_domain(text)
    assert all(domain.contains(v) for v in inside)
    assert not any(domain.contains(v) for v in outside)


def test_cli_strings_are_coerced_and_checked():
    params = parse_parameters_cell(CELL)
    assert coerce(params["eta"], "0.5") == 0.5
    assert coerce(params["steps"], "1_000") == 1000
    assert coerce(params["etas"], "0.1,0.3") == [0.1, 0.3]
    assert coerce(params["etas"], "[0.2, 0.4]") == [0.2, 0.4]
    assert coerce(params["verbose"], "yes") is True


@pytest.mark.parametrize("name,value,fragment", [
    ("eta", "nan", "finite"), ("eta", "inf", "finite"), ("eta", "abc", "expected float"),
    ("eta", "0", "out of range"), ("steps", "2.5", "expected int"), ("steps", "0", "out of range"),
    ("etas", "0.1,0.9", "out of range"), ("etas", "[0.1,", "expected a list"), ("mode", "c", "allowed: {a, b}"),
    ("verbose", "maybe", "true or false"), ("steps", True, "expected int"),
])
def test_bad_values_name_the_parameter(name, value, fragment):
    params = parse_parameters_cell(CELL)
    with pytest.raises(ParameterError) as err:
        coerce(params[name], value)
    assert name in str(err.value) and fragment in str(err.value) and "\n" not in str(err.value)


def test_unknown_parameter_suggests_closest_name():
    with pytest.raises(ParameterError, match="did you mean 'eta'"):
        resolve(parse_parameters_cell(CELL), {"etta": "0.1"}, "demo")


def test_declarations_are_validated_when_read():
    with pytest.raises(ValueError, match="must not contain '='"):
        parse_parameters_cell("x: float = 1.0  # a = b; (0, 2]\n")
    with pytest.raises(ParameterError):
        parse_parameters_cell("x: float = 5.0  # default outside its own range; (0, 2]\n")
    with pytest.raises(ValueError, match="type"):
        parse_parameters_cell("x: complex = 1.0  # unsupported type\n")


def test_every_chapter_declares_device_and_seed_and_valid_defaults():
    for chapter in all_chapters():
        params = chapter.parameters
        assert {"device", "seed"} <= set(params), chapter.name
        assert params["device"].domain.choices == ("auto", "cpu", "cuda")
        defaults = {name: p.default for name, p in params.items()}
        chapter.check_parameters(defaults)
        assert all(not (isinstance(v, float) and math.isnan(v)) for v in defaults.values())

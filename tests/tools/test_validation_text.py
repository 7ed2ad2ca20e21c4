"""Text UTF-8 cannot encode, found wherever it hides, and worded so the message can travel."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roomkit.tools.validation import non_finite_at, unencodable_text, validate_tool_arguments

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_what_encodes_is_never_reported(value: Any) -> None:
    assert unencodable_text(value) is None


@given(JSON, st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]), st.text(max_size=5))
def test_a_lone_surrogate_is_found_at_any_depth(value: Any, lone: str, before: str) -> None:
    nested = {"outer": [value, {"inner": before + lone}]}

    problem = unencodable_text(nested)

    assert problem == (
        f"a lone surrogate (U+{ord(lone):04X}) at character {len(before)} of 'outer[1].inner'"
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("ok\ud800", "a lone surrogate (U+D800) at character 2"),
        ({"\udc00": 1}, "a lone surrogate (U+DC00) at character 0 of a key"),
        ({"a": {"b\udc00": 1}}, "a lone surrogate (U+DC00) at character 1 of a key in 'a'"),
        (("x", ["y", "\udfff"]), "a lone surrogate (U+DFFF) at character 0 of '[1][1]'"),
        ("\ud83d\ude00", "a lone surrogate (U+D83D) at character 0"),
    ],
)
def test_the_problem_says_where(value: Any, problem: str) -> None:
    assert unencodable_text(value) == problem
    problem.encode()


def test_tool_arguments_holding_one_are_refused_for_any_schema() -> None:
    for parameters in ({}, {"type": "object"}, {"type": "object", "properties": {}}):
        problem = validate_tool_arguments(parameters, {"q": "\ud800"})
        assert problem == (
            "arguments must be valid Unicode text: a lone surrogate (U+D800) at character 0"
            " of 'q'; write them again"
        )


def test_tool_arguments_holding_a_number_json_cannot_carry_are_refused() -> None:
    for parameters in ({}, {"type": "object", "properties": {"n": {"type": "number"}}}):
        problem = validate_tool_arguments(parameters, {"a": [1, {"n": float("nan")}]})
        assert problem == (
            "arguments must be numbers JSON can carry, not nan at 'a[1].n'; write them again"
        )


def test_a_value_that_holds_itself_is_walked_once() -> None:
    """Each walk ends on a list inside itself, and still finds what is wrong in it."""
    loop: list[object] = ["ok"]
    loop.append(loop)
    assert unencodable_text(loop) is None
    assert non_finite_at(loop) is None
    loop.append({"x": "\ud800", "n": float("nan")})
    assert unencodable_text(loop) == "a lone surrogate (U+D800) at character 0 of '[2].x'"
    assert non_finite_at(loop) == "nan at '[2].n'"


def test_arguments_that_hold_themselves_are_a_problem_for_the_model() -> None:
    arguments: dict[str, object] = {"q": "?"}
    arguments["self"] = arguments
    problem = validate_tool_arguments({"type": "object"}, arguments)
    assert problem == "arguments must be JSON, but hold themselves at 'self'; write them again"

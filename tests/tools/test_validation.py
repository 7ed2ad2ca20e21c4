"""Tool-argument validation: one readable problem per invalid call, and schema checks."""

from __future__ import annotations

import sys
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roomkit.tools import validation
from roomkit.tools.validation import check_tool_schema, validate_tool_arguments

ASK = {
    "type": "object",
    "properties": {"question": {"type": "string"}},
    "required": ["question"],
}

CLOSED = {
    "type": "object",
    "properties": {"b": {"type": "string"}, "a": {"type": "integer"}},
    "additionalProperties": False,
}

QUESTIONS = {
    "type": "object",
    "$defs": {
        "question": {
            "type": "object",
            "properties": {
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"$ref": "#/$defs/option"}},
            },
            "required": ["question"],
        },
        "option": {
            "type": "object",
            "properties": {"label": {"type": "string"}},
            "required": ["label"],
            "additionalProperties": False,
        },
    },
    "properties": {
        "questions": {"type": "array", "items": {"$ref": "#/$defs/question"}, "minItems": 1},
        "color": {"enum": ["red", "blue"]},
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "value": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    },
}


# The exact texts the model reads for top-level problems.


def test_missing_required_argument() -> None:
    assert validate_tool_arguments(ASK, {}) == "missing required argument 'question'"


def test_wrong_type() -> None:
    assert (
        validate_tool_arguments(ASK, {"question": 42})
        == "argument 'question' must be of type string"
    )


@pytest.mark.parametrize("field", ["count", "ratio"])
def test_a_bool_is_never_a_number(field: str) -> None:
    kind = "integer" if field == "count" else "number"
    assert (
        validate_tool_arguments(QUESTIONS, {field: True})
        == f"argument '{field}' must be of type {kind}"
    )


def test_unknown_argument_lists_what_the_tool_accepts() -> None:
    assert (
        validate_tool_arguments(CLOSED, {"a": 1, "k": "x"})
        == "unknown argument 'k' (this tool accepts: a, b)"
    )


def test_unknown_argument_on_a_tool_without_properties() -> None:
    schema = {"type": "object", "additionalProperties": False}
    assert (
        validate_tool_arguments(schema, {"k": 1})
        == "unknown argument 'k' (this tool accepts no arguments)"
    )


def test_extra_arguments_are_fine_unless_forbidden() -> None:
    assert validate_tool_arguments(ASK, {"question": "Q", "extra": 1}) is None


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [([1, 2], "list"), ("question", "str"), (None, "NoneType"), (3, "int")],
)
def test_arguments_must_be_an_object(arguments: object, kind: str) -> None:
    assert validate_tool_arguments(ASK, arguments) == f"expected an object of arguments, got {kind}"


def test_valid_arguments_give_none() -> None:
    assert validate_tool_arguments(ASK, {"question": "Colour?"}) is None
    arguments = {
        "questions": [{"question": "Colour?", "options": [{"label": "red"}]}],
        "color": "blue",
        "count": 2,
        "ratio": 0.5,
        "value": "x",
    }
    assert validate_tool_arguments(QUESTIONS, arguments) is None


# Nested problems name their path.


def test_nested_type_names_the_path() -> None:
    arguments = {"questions": [{"question": "Q", "options": "red"}]}
    assert (
        validate_tool_arguments(QUESTIONS, arguments)
        == "argument 'questions[0].options' must be of type array"
    )


def test_nested_required_through_ref_names_the_path() -> None:
    arguments = {"questions": [{"question": "Q"}, {"options": []}]}
    assert (
        validate_tool_arguments(QUESTIONS, arguments)
        == "missing required argument 'questions[1].question'"
    )


def test_array_of_objects_checks_each_item() -> None:
    arguments = {"questions": [{"question": "Q", "options": [{"label": "a"}, {"label": 2}]}]}
    assert (
        validate_tool_arguments(QUESTIONS, arguments)
        == "argument 'questions[0].options[1].label' must be of type string"
    )


def test_nested_unknown_argument_names_the_path() -> None:
    arguments = {"questions": [{"question": "Q", "options": [{"label": "a", "x": 1}]}]}
    assert (
        validate_tool_arguments(QUESTIONS, arguments)
        == "unknown argument 'questions[0].options[0].x' (accepted here: label)"
    )


def test_enum_lists_the_choices() -> None:
    assert (
        validate_tool_arguments(QUESTIONS, {"color": "green"})
        == "argument 'color' must be one of ['red', 'blue']"
    )


def test_other_keywords_quote_the_schema_message() -> None:
    assert validate_tool_arguments(QUESTIONS, {"count": 0}) == (
        "argument 'count': 0 is less than the minimum of 1"
    )
    assert validate_tool_arguments(QUESTIONS, {"questions": []}) == (
        "argument 'questions': [] should be non-empty"
    )


def test_any_of_failure_names_the_argument() -> None:
    problem = validate_tool_arguments(QUESTIONS, {"value": [1]})
    assert problem is not None
    assert problem.startswith("argument 'value': ")


def test_type_list_reads_as_alternatives() -> None:
    schema = {"type": "object", "properties": {"n": {"type": ["string", "null"]}}}
    assert (
        validate_tool_arguments(schema, {"n": 1}) == "argument 'n' must be of type string or null"
    )


def test_a_missing_argument_outranks_a_nested_problem() -> None:
    schema = {**ASK, "properties": {**ASK["properties"], "n": {"type": "integer"}}}  # type: ignore[dict-item]
    assert validate_tool_arguments(schema, {"n": "x"}) == "missing required argument 'question'"


def test_the_first_missing_argument_is_named() -> None:
    schema = {"type": "object", "required": ["b", "a"]}
    assert validate_tool_arguments(schema, {}) == "missing required argument 'b'"


def test_the_problem_is_chosen_the_same_way_every_time() -> None:
    arguments = {"color": "green", "count": "many", "questions": "none", "value": []}
    problems = {validate_tool_arguments(QUESTIONS, dict(arguments)) for _ in range(5)}
    assert len(problems) == 1


def test_a_huge_value_does_not_flood_the_problem() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}
    problem = validate_tool_arguments(schema, {"s": "x" * 10_000})
    assert problem is not None
    assert problem.startswith("argument 's': ")
    assert len(problem) <= 400


def test_format_is_not_asserted() -> None:
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}}
    assert validate_tool_arguments(schema, {"when": "not a date"}) is None


def test_a_remote_ref_is_never_fetched() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/a.json"}}}
    with pytest.raises(ValueError, match="cannot be resolved"):
        validate_tool_arguments(schema, {"a": 1})


def test_an_invalid_schema_raises_value_error() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "strng"}}}
    with pytest.raises(ValueError, match="invalid"):
        validate_tool_arguments(schema, {"a": 1})


# Compilation is cached.


@pytest.mark.parametrize("schema", [{}, {"type": "object"}])
def test_an_open_schema_needs_no_validator(schema: dict[str, Any]) -> None:
    before = validation._compiled.cache_info()
    assert validate_tool_arguments(schema, {"anything": [1, {"x": None}]}) is None
    assert validation._compiled.cache_info() == before


def test_equal_schemas_share_one_compiled_validator() -> None:
    reordered = {"required": ["question"], "properties": {"question": {"type": "string"}}}
    reordered["type"] = "object"
    assert validation._validator(ASK) is validation._validator(reordered)


def test_a_schema_is_compiled_once() -> None:
    schema = {"type": "object", "properties": {"only_here": {"type": "boolean"}}}
    validate_tool_arguments(schema, {"only_here": True})
    before = validation._compiled.cache_info()
    for _ in range(3):
        validate_tool_arguments(schema, {"only_here": 1})
    after = validation._compiled.cache_info()
    assert after.misses == before.misses
    assert after.hits == before.hits + 3


# Schema checks at declaration.


def test_check_tool_schema_accepts_a_good_schema() -> None:
    check_tool_schema("AskUserQuestion", ASK)
    check_tool_schema("Questions", QUESTIONS)
    check_tool_schema("NoArgs", {})


def test_check_tool_schema_names_the_tool_and_the_problem() -> None:
    with pytest.raises(ValueError, match=r"Tool 'Bad'.*properties\.a\.type") as caught:
        check_tool_schema("Bad", {"type": "object", "properties": {"a": {"type": "strng"}}})
    assert "strng" in str(caught.value)


def test_check_tool_schema_rejects_a_dangling_ref() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    with pytest.raises(ValueError, match=r"Tool 'Dangling'.*'#/\$defs/missing'"):
        check_tool_schema("Dangling", schema)


def test_check_tool_schema_follows_nested_ids() -> None:
    schema = {
        "$id": "https://tools.example/ask",
        "type": "object",
        "$defs": {
            "inner": {
                "$id": "inner",
                "$defs": {"text": {"type": "string"}},
                "properties": {"z": {"$ref": "#/$defs/text"}},
            }
        },
        "properties": {"p": {"$ref": "inner"}},
    }
    check_tool_schema("Nested", schema)
    assert validate_tool_arguments(schema, {"p": {"z": 1}}) == (
        "argument 'p.z' must be of type string"
    )


def test_check_tool_schema_requires_an_object_schema() -> None:
    with pytest.raises(ValueError, match=r"Tool 'Str'.*\"type\": \"object\""):
        check_tool_schema("Str", {"type": "string"})


def test_check_tool_schema_rejects_a_non_mapping() -> None:
    with pytest.raises(ValueError, match=r"Tool 'List'.*got list"):
        check_tool_schema("List", [])  # type: ignore[arg-type]


def test_check_tool_schema_rejects_a_non_json_schema() -> None:
    with pytest.raises(ValueError, match=r"Tool 'Obj'.*JSON"):
        check_tool_schema("Obj", {"type": "object", "default": object()})


# Agreement with the schema's own verdict.

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)
_arguments = st.dictionaries(
    st.sampled_from(["questions", "color", "count", "ratio", "value", "other"]), _json
)


@given(_arguments)
def test_a_problem_is_reported_exactly_when_the_schema_rejects(arguments: dict[str, Any]) -> None:
    problem = validate_tool_arguments(QUESTIONS, arguments)
    assert (problem is None) == jsonschema.Draft202012Validator(QUESTIONS).is_valid(arguments)


def _nested(depth: int) -> list[Any]:
    top: list[Any] = []
    inner = top
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return top


@pytest.mark.parametrize(
    "parameters",
    [
        # A tree the schema walks level by level, and a plain string the value is not.
        {
            "type": "object",
            "properties": {"q": {"$ref": "#/$defs/node"}},
            "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        },
        {"type": "object", "properties": {"q": {"type": "string"}}},
    ],
)
def test_arguments_nested_past_the_stack_are_a_problem_for_the_model(
    parameters: dict[str, Any],
) -> None:
    # The interpreter's own bound: a library that raised it for its own tests (hypothesis
    # does) would let the descent go deeper than these arguments.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)
    try:
        problem = validate_tool_arguments(parameters, {"q": _nested(5_000)})
    finally:
        sys.setrecursionlimit(limit)
    assert problem is not None
    assert problem.startswith("arguments nest objects and lists too deeply to check")


def test_a_nested_tree_within_the_stack_is_checked_as_usual() -> None:
    tree = {
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/node"}},
        "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    }
    assert validate_tool_arguments(tree, {"q": _nested(50)}) is None

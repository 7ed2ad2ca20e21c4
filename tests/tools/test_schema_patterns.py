"""A schema's patterns, matched in bounded time, with the results jsonschema gives."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema.validators import validator_for

from roomkit.tools._schema_patterns import bounded, search
from roomkit.tools.validation import validate_answer, validate_tool_arguments

# Doubles its time per "a" under re: forty of them and a "!" would take hours.
SLOW = "^(a|a)+$"
STUCK = "a" * 40 + "!"
DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"
DRAFT_4 = "http://json-schema.org/draft-04/schema#"
TOO_LONG = f"the tool's schema pattern {SLOW!r} took too long to check against them"


@pytest.mark.parametrize(
    ("schema", "arguments"),
    [
        ({"properties": {"x": {"pattern": SLOW}}}, {"x": STUCK}),
        ({"properties": {"x": {"propertyNames": {"pattern": SLOW}}}}, {"x": {STUCK: 1}}),
        ({"patternProperties": {SLOW: {}}}, {STUCK: 1}),
        ({"patternProperties": {SLOW: {}}, "additionalProperties": False}, {STUCK: 1}),
        ({"patternProperties": {SLOW: {}}, "unevaluatedProperties": False}, {STUCK: 1}),
        (
            {"allOf": [{"patternProperties": {SLOW: {}}}], "unevaluatedProperties": False},
            {STUCK: 1},
        ),
        (
            {
                "$schema": DRAFT_2019,
                "allOf": [{"patternProperties": {SLOW: {}}}],
                "unevaluatedProperties": False,
            },
            {STUCK: 1},
        ),
        ({"$schema": DRAFT_4, "properties": {"x": {"pattern": SLOW}}}, {"x": STUCK}),
        (
            {"$schema": DRAFT_4, "patternProperties": {SLOW: {}}, "additionalProperties": {}},
            {STUCK: 1},
        ),
    ],
    ids=[
        "pattern",
        "propertyNames",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluated-through-allOf",
        "unevaluated-2019-09",
        "draft-04",
        "draft-04-additional",
    ],
)
def test_a_slow_pattern_refuses_the_arguments(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    problem = validate_tool_arguments({"type": "object", **schema}, arguments)
    assert problem is not None
    assert TOO_LONG in problem


def test_a_slow_pattern_refuses_an_answer() -> None:
    problem = validate_answer({"type": "string", "pattern": SLOW}, STUCK)
    assert problem is not None
    assert f"the schema's pattern {SLOW!r} took too long to check against that answer" in problem


def test_a_nested_repeat_is_refused_as_not_matching() -> None:
    problem = validate_answer({"type": "string", "pattern": "^(a+)+$"}, STUCK)
    assert problem == f"answer: {STUCK!r} does not match '^(a+)+$'"


THEIRS = [
    {"properties": {"x": {"pattern": "^[a-c]+\\d?$"}}},
    {"patternProperties": {"^x": {"type": "integer"}, "y$": {"type": "string"}}},
    {"properties": {"a": {}}, "patternProperties": {"^x": {}}, "additionalProperties": False},
    {"patternProperties": {"^x": {}}, "additionalProperties": {"type": "integer"}},
    {"patternProperties": {"^x": {}, "^y": {}}, "additionalProperties": False},
    {"properties": {"a": {}}, "patternProperties": {"^x": {}}, "unevaluatedProperties": False},
    {
        "$defs": {"named": {"patternProperties": {"^x": {}}}},
        "allOf": [{"$ref": "#/$defs/named"}],
        "anyOf": [{"properties": {"a": {}}}, {"required": ["zz"]}],
        "dependentSchemas": {"b": {"properties": {"c": {}}}},
        "if": {"required": ["a"]},
        "then": {"properties": {"t": {}}},
        "else": {"properties": {"e": {}}},
        "additionalProperties": {"type": "integer"},
        "unevaluatedProperties": {"type": "string"},
    },
    {
        "$schema": DRAFT_2019,
        "properties": {"a": {}},
        "allOf": [{"patternProperties": {"^x": {}}}, {"additionalProperties": True}],
        "unevaluatedProperties": False,
    },
    {
        "$schema": DRAFT_2019,
        "oneOf": [{"patternProperties": {"^x": {}}}],
        "unevaluatedProperties": {"type": "integer"},
    },
]
INSTANCES = [
    {},
    {"x": "ab1"},
    {"x": "abd"},
    {"x1": 1, "a": 2},
    {"x1": "s", "ay": "s"},
    {"q": 1},
    {"q": "s", "xy": 1},
    {"a": 1, "b": 2, "c": 3, "t": 4, "e": 5},
    {"b": "s", "c": "s", "e": "s", "xz": [1]},
    {"y": 1, "q": 2},
]


@pytest.mark.parametrize("schema", THEIRS)
def test_patterns_decide_as_jsonschema_decides(schema: dict[str, Any]) -> None:
    """Wherever the library's own keywords end in time, ours reach the same verdicts."""
    schema = {"type": "object", **schema}
    cls = validator_for(schema)
    theirs, ours = cls(schema), bounded(cls)(schema)
    for instance in INSTANCES:
        expected = sorted(error.message for error in theirs.iter_errors(instance))
        assert sorted(error.message for error in ours.iter_errors(instance)) == expected


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [("[[]", "[", True), ("[a&&b]", "&", True), ("(?i)ABC", "xabc", True), ("^b", "ab", False)],
)
def test_a_pattern_reads_as_re_reads_it(pattern: str, text: str, found: bool) -> None:
    """Sets that the regex package's version 1 would read otherwise warn nothing, and match
    as re matches them."""
    assert search(pattern, text) is found

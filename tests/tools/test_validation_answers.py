"""A person's answer checked against an answer schema: read as text first, as JSON second."""

from __future__ import annotations

from typing import Any

import pytest

from roomkit.tools.validation import validate_answer_text


@pytest.mark.parametrize("text", ["42", "true", "null", "1.5", "[]", '"quoted"', "{}"])
def test_text_is_an_answer_to_a_string_schema(text: str) -> None:
    assert validate_answer_text({"type": "string"}, text) is None


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        ({"type": "integer"}, "42"),
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, '{"n": 1}'),
        ({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]}, "42"),
    ],
)
def test_json_is_an_answer_to_a_structured_schema(schema: dict[str, Any], text: str) -> None:
    assert validate_answer_text(schema, text) is None


def test_an_invalid_answer_schema_is_reported() -> None:
    with pytest.raises(ValueError, match="the answer schema is invalid"):
        validate_answer_text({"type": "no-such-type"}, "x")

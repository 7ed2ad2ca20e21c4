"""Whether a grant's JSON Schema narrows the arguments it covers at all.

A grant with a schema covers every call whose arguments match it (and the tool's own
schema). One that matches whatever the tool takes, however it is spelled (an empty
``properties``, ``required: []``, ``additionalProperties: true``, an ``anyOf`` with an empty
branch, annotations alone), would grant the tool outright, which no approval of one call
means: such a schema is refused. The judgement errs towards "narrows": a keyword it does not
know is taken to constrain.
"""

from __future__ import annotations

from typing import Any

__all__ = ["narrows"]

_ANNOTATIONS = frozenset(
    {
        "type",  # the arguments are an object whatever the grant says
        "$schema",
        "$id",
        "$anchor",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
"""Keywords that accept whatever they are given: they narrow nothing."""


def narrows(schema: Any) -> bool:
    """Whether ``schema`` refuses some arguments the tool's schema would take."""
    if schema is True or schema == {}:
        return False
    if not isinstance(schema, dict):
        return True  # ``false``, or no schema at all: nothing matches
    return any(_keyword_narrows(name, value) for name, value in schema.items())


def _keyword_narrows(name: str, value: Any) -> bool:
    if name in _ANNOTATIONS:
        return False
    if name in ("properties", "patternProperties"):
        return not isinstance(value, dict) or any(narrows(sub) for sub in value.values())
    if name == "required":
        return bool(value != [])
    if name in ("additionalProperties", "unevaluatedProperties", "propertyNames"):
        return narrows(value)
    if name in ("anyOf", "oneOf"):
        return not isinstance(value, list) or all(narrows(branch) for branch in value)
    if name == "allOf":
        return not isinstance(value, list) or any(narrows(branch) for branch in value)
    if name == "dependentSchemas":
        return not isinstance(value, dict) or any(narrows(sub) for sub in value.values())
    if name in ("then", "else"):
        return narrows(value)
    # ``if`` narrows only through ``then`` / ``else``; any other keyword is taken to narrow.
    return name != "if"

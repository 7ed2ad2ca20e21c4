"""The flat form an MCP elicitation may ask for: what ``MCPTools`` turns into a request.

MCP limits an elicitation's ``requestedSchema`` to an object of primitive fields (text,
numbers, booleans, choices); :func:`form_schema_problem` says what puts a schema outside
that subset, so the elicitation is declined with the reason instead of shown to a person.
"""

from __future__ import annotations

from typing import Any

__all__ = ["form_schema_problem"]

_PRIMITIVES = {"string", "number", "integer", "boolean"}


def form_schema_problem(schema: object) -> str | None:
    """What makes ``schema`` fall outside MCP's flat form subset, or ``None``.

    The subset: an object whose properties are each a string (``enum``/``oneOf`` allowed),
    a number, an integer, a boolean, or an array of string choices; no nesting, and only the
    keywords MCP's primitive schemas define: a server's ``pattern`` (a regular expression
    the desk would run on a person's answer) or ``$ref`` is refused with the rest.
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'requestedSchema must be {"type": "object", "properties": {...}}'
    other = _unknown(schema, _FORM_KEYS)
    if other:
        return f"requestedSchema takes {sorted(_FORM_KEYS)}, not {other}"
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return "requestedSchema.properties must be an object"
    for name, field in properties.items():
        if not isinstance(field, dict):
            return f"requestedSchema.properties.{name} must be a schema object"
        problem = _field_problem(field)
        if problem is not None:
            return f"requestedSchema.properties.{name}: {problem}"
    required = schema.get("required", [])
    if not isinstance(required, list) or any(name not in properties for name in required):
        return "requestedSchema.required must list names among its properties"
    return None


_FORM_KEYS = frozenset({"type", "properties", "required", "title", "description", "$schema"})
"""The keywords of an elicitation's requested schema."""
_FIELD_KEYS = frozenset(
    {
        "type",
        "title",
        "description",
        "default",
        "minLength",
        "maxLength",
        "format",
        "minimum",
        "maximum",
        "enum",
        "enumNames",
        "oneOf",
        "minItems",
        "maxItems",
        "items",
    }
)
"""The keywords of MCP's primitive schemas (string, number, boolean, enum, multi-select)."""
_CHOICE_KEYS = frozenset({"const", "title"})
"""The keywords of one titled choice (``oneOf`` / ``anyOf`` entries)."""


def _unknown(schema: dict[str, Any], known: frozenset[str]) -> list[str]:
    return sorted(str(key) for key in schema if key not in known)


def _field_problem(field: dict[str, Any]) -> str | None:
    """What makes one property fall outside MCP's primitive schemas, or ``None``."""
    kind = field.get("type")
    if kind == "array":
        items = field.get("items")
        if not isinstance(items, dict) or not ("enum" in items or "anyOf" in items):
            return "an array must list string choices"
        if (
            _unknown(items, frozenset({"type", "enum", "anyOf"}))
            or items.get("type", "string") != "string"
            or not _choices(items)
        ):
            return 'an array\'s items are {"type": "string", "enum": [...]} or titled choices'
    elif not isinstance(kind, str) or kind not in _PRIMITIVES:
        return (
            f"type {kind!r}: only string, number, integer, boolean and arrays of choices "
            "are allowed (no nesting)"
        )
    other = _unknown(field, _FIELD_KEYS)
    if other:
        return f"a field takes {sorted(_FIELD_KEYS)}, not {other}"
    if "oneOf" in field and not _choices({"anyOf": field["oneOf"]}):
        return 'oneOf lists titled choices: [{"const": ..., "title": ...}]'
    return None


def _choices(items: dict[str, Any]) -> bool:
    """Whether ``items``' ``enum`` and ``anyOf`` (when it has them) list text choices only:
    an answer's list of choices is a list of strings in MCP's result."""
    listed = items.get("enum")
    if listed is not None and not (
        isinstance(listed, list) and all(isinstance(value, str) for value in listed)
    ):
        return False
    choices = items.get("anyOf")
    if choices is None:
        return True
    return isinstance(choices, list) and all(
        isinstance(choice, dict)
        and not _unknown(choice, _CHOICE_KEYS)
        and isinstance(choice.get("const"), str)
        for choice in choices
    )

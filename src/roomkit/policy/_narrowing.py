"""Whether a grant's JSON Schema narrows the arguments it covers at all.

A grant with a schema covers every call whose arguments match it (and the tool's own
schema). One that matches whatever the tool takes, however it is spelled (an empty
``properties``, ``required: []``, ``additionalProperties: true``, an ``anyOf`` with an empty
branch, annotations alone), would grant the tool outright, which no approval of one call
means: such a schema is refused. ``format`` and the ``content*`` keywords are annotations
too, as the validator does not assert them.

A keyword the validator does not know (``maxmum`` for ``maximum``) constrains nothing either,
however it reads: a schema holding one is refused, naming it, and so is one holding a number
JSON cannot carry (NaN, an infinity). Among the keywords it knows, the judgement errs towards
"narrows": one whose effect it does not work out (``$ref``, ``not``) is taken to constrain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import Draft202012Validator, validator_for

from roomkit._storable import non_finite_at, unencodable_text
from roomkit.policy._subschemas import subschemas

__all__ = ["narrowing_problem", "narrows"]

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
        "format",  # not asserted by the validator
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "$dynamicAnchor",
        "$vocabulary",
    }
)
"""Keywords that accept whatever they are given: they narrow nothing."""

_SUBSCHEMA_ONLY = frozenset({"then", "else"})
"""Keywords the validator reads through another (``if``)."""


def narrowing_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be a grant's, worded for the person granting; ``None`` when it
    narrows the arguments."""
    number = non_finite_at(schema)
    if number is not None:
        return f"the grant's schema holds a number JSON cannot carry ({number})"
    unreadable = unencodable_text(schema)
    if unreadable is not None:
        # Refused here, not when the grant is recorded: no store keeps such text.
        return (
            f"the grant's schema must be valid Unicode text, but holds {unreadable}, which "
            "UTF-8 cannot encode: write it as UTF-8 text"
        )
    shape = _shape_problem(schema)
    if shape is not None:
        return shape
    unknown = sorted(set(_unknown_keywords(schema)))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        return (
            f"the grant's schema holds keywords the validator does not know ({names}): "
            'they would constrain nothing; spell each as JSON Schema does ("maximum", say)'
        )
    if not narrows(schema):
        return (
            "the grant's schema constrains nothing (annotations such as format are not "
            'checked): give the arguments\' bounds (e.g. {"properties": {"amount": '
            '{"maximum": 100}}}), or no schema to grant exactly the arguments approved'
        )
    return None


def _shape_problem(schema: Any) -> str | None:
    """Why ``schema`` is no JSON Schema of its draft (a ``properties`` that is a list, a
    ``$schema`` that is no URI); ``None`` when it is one."""
    if not isinstance(schema, dict):
        return None
    draft = schema.get("$schema", "")
    if not isinstance(draft, str):
        return f"the grant's schema names its draft by a URI in $schema, got {draft!r}"
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as error:
        return f"the grant's schema is no JSON Schema ({error.message}): write it as one"
    except RecursionError:
        return "the grant's schema nests too deeply to be checked: write it with less nesting"
    return None


def narrows(schema: Any) -> bool:
    """Whether ``schema`` refuses some arguments the tool's schema would take."""
    if schema is True or schema == {}:
        return False
    if not isinstance(schema, dict):
        return True  # ``false``, or no schema at all: nothing matches
    return any(_keyword_narrows(name, value) for name, value in schema.items())


def _unknown_keywords(schema: Any) -> Iterator[str]:
    """The keywords in ``schema`` or any schema within it that its validator does not know."""
    if not isinstance(schema, dict):
        return
    known = set(validator_for(schema, default=Draft202012Validator).VALIDATORS)
    known |= _ANNOTATIONS | _SUBSCHEMA_ONLY
    for contents in subschemas(schema):
        yield from (str(name) for name in contents if name not in known)


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

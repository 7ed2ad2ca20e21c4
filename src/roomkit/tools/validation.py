"""Checking a tool call's arguments against the tool's JSON Schema.

Nothing a model writes is trusted: before a call is gated or served, its arguments are
validated against the ``parameters`` the tool declared, and a failure becomes one short,
readable problem the model can act on (``missing required argument 'question'``). The full
JSON Schema language applies (nested objects, arrays, enums, ``$ref``, ``anyOf``...), except
``format``, which is not asserted. Validators are compiled once per distinct schema and kept
in a bounded cache, since this runs on every tool call. A schema's patterns are matched in
bounded time (:mod:`roomkit.tools._schema_patterns`): one that takes too long on a value
refuses the value, saying so, rather than hold the process.

Text is checked too: a string that UTF-8 cannot encode (a lone surrogate, which JSON's
``\\ud800`` escape can carry) is refused here, since no store, socket or vendor API can send
it on; so is a number JSON has no form for (NaN, an infinity, which Python's JSON reader
takes). A person's answer is read as text first and as JSON second
(:func:`validate_answer_text`): free text that happens to look like JSON stays text.

A tool's declaration is checked once, when it is given: its parameters must be a JSON Schema
for an object of arguments (:func:`check_tool_schema`), and its name one every model provider
takes (:func:`check_tool_name`, the one rule the channels and ``MCPTools`` apply): OpenAI and
Anthropic both refuse a whole request, every tool in it, for one name outside letters,
digits, ``_`` and ``-`` or over 64 characters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

from roomkit._storable import (
    circular_at,
    non_finite_at,
    path_text,
    unencodable_text,
)
from roomkit.models.shown import shown
from roomkit.tools._schema_patterns import PatternTimeout, bounded, search

__all__ = [
    "answer_schema_problem",
    "check_tool_name",
    "check_tool_schema",
    "circular_at",
    "non_finite_at",
    "tool_name_problem",
    "tool_schema_problem",
    "unencodable_text",
    "validate_answer",
    "validate_answer_text",
    "validate_tool_arguments",
]

_CACHE_SIZE = 256
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TOOL_NAME_RULE = "letters, digits, _ and - (1 to 64 of them)"
"""What a tool name every model provider takes is made of (OpenAI's and Anthropic's rule)."""
# A problem quotes what the model wrote; a runaway value should not flood its context.
_MAX_PROBLEM_CHARS = 400


_SCHEMA_FREE_CHECKS: tuple[tuple[Callable[[object], str | None], str], ...] = (
    (circular_at, "arguments must be JSON, but hold themselves at {}; write them again"),
    (unencodable_text, "arguments must be valid Unicode text: {}; write them again"),
    (non_finite_at, "arguments must be numbers JSON can carry, not {}; write them again"),
)
"""What arguments are checked for before their schema, the first problem found reported:
the check that says where the problem is, and the wording the model reads."""

_TOO_DEEP = (
    "arguments nest objects and lists too deeply to check against the tool's schema; "
    "write them again with less nesting"
)


def validate_tool_arguments(parameters: Mapping[str, Any], arguments: object) -> str | None:
    """Check a call's arguments against its tool's JSON Schema.

    Args:
        parameters: the tool's declared JSON Schema (``AITool.parameters``).
        arguments: what the model sent, parsed from JSON.

    Returns:
        ``None`` when the arguments are valid, else one problem, worded for the model:
        ``missing required argument 'question'``, ``argument 'question' must be of type
        string``, ``unknown argument 'k' (this tool accepts: a, b)``, ``expected an object of
        arguments, got list``. Nested problems name their path (``questions[0].options``).
        When several things are wrong, the most relevant one is chosen, always the same way.
        Arguments nested too deeply to check (past the interpreter's stack) are a problem
        too, saying so, and so are arguments a pattern of the schema takes too long to
        check.

    Raises:
        ValueError: the schema itself is invalid or holds a ``$ref`` that cannot be
            resolved; :func:`check_tool_schema` catches both when the tool is declared.
    """
    if not isinstance(arguments, dict):
        return f"expected an object of arguments, got {type(arguments).__name__}"
    for problem_at, worded in _SCHEMA_FREE_CHECKS:
        problem = problem_at(arguments)
        if problem is not None:
            return worded.format(problem)
    if _accepts_any_object(parameters):
        return None
    try:
        error = best_match(_validator(parameters).iter_errors(arguments))
        return None if error is None else _clip(_describe(error))
    except SchemaError as exc:
        raise ValueError(f"the tool's schema is invalid: {exc.message}") from exc
    except Unresolvable as exc:
        raise ValueError(f"the tool's schema holds a $ref that cannot be resolved: {exc}") from exc
    except RecursionError:
        # The validator descends one call per level: arguments nested past the
        # interpreter's stack are refused, as the model can be told to write them again.
        return _TOO_DEEP
    except PatternTimeout as exc:
        return _clip(
            f"arguments: the tool's schema pattern {exc.pattern!r} took too long to check "
            "against them; write them again, shorter or plainer"
        )


def tool_name_problem(name: str) -> str | None:
    """What keeps ``name`` from being offered to a model, or ``None`` when every provider
    takes it.

    Returns:
        ``None`` for a name of letters, digits, ``_`` and ``-`` (1 to 64 of them), else
        the rule, worded to follow the tool: ``model providers take names of ...``.
    """
    if isinstance(name, str) and _TOOL_NAME.fullmatch(name) is not None:
        return None
    return f"model providers take names of {_TOOL_NAME_RULE}"


def check_tool_name(name: str) -> None:
    """Check that a tool's name is one every model provider takes.

    Args:
        name: the name the model would call the tool by.

    Raises:
        ValueError: naming the tool and the rule, when the name is not letters, digits,
            ``_`` and ``-`` (1 to 64 of them): offered, it would make the provider refuse
            every tool of the request.
    """
    problem = tool_name_problem(name)
    if problem is not None:
        raise ValueError(
            f"Tool {shown(name)}: {problem} and refuse a request offering any other: rename it"
        )


def check_tool_schema(name: str, parameters: Mapping[str, Any]) -> None:
    """Check that a tool's parameters are a valid JSON Schema for an object of arguments.

    Args:
        name: the tool's name, for the error message.
        parameters: the tool's declared JSON Schema.

    Raises:
        ValueError: naming the tool and the problem, when the schema is not a mapping, is not
            valid JSON Schema, describes something other than an object, or holds a
            ``$ref`` that cannot be resolved.
    """
    problem = tool_schema_problem(parameters)
    if problem is not None:
        raise ValueError(f"Tool {shown(name)}: {problem}")


def tool_schema_problem(parameters: Mapping[str, Any]) -> str | None:
    """What keeps ``parameters`` from being a tool's JSON Schema, or ``None``.

    Returns:
        ``None`` when they are a valid JSON Schema for an object of arguments whose every
        ``$ref`` resolves, else the problem (``parameters must describe an object of
        arguments ...``, ``invalid parameters schema at ...``), as :func:`check_tool_schema`
        words it after the tool's name.
    """
    if not isinstance(parameters, Mapping):
        return f"parameters must be a JSON Schema object, got {type(parameters).__name__}"
    try:
        key = _canonical(parameters)
    except (TypeError, ValueError) as exc:
        return f"parameters are not JSON-serialisable: {exc}"
    # A tool's schema is checked on every call held for approval: once per schema, kept.
    return _schema_problem(key)


@lru_cache(maxsize=_CACHE_SIZE)
def _schema_problem(key: str) -> str | None:
    """What keeps the schema of canonical JSON ``key`` from being a tool's parameters."""
    parameters = json.loads(key)
    declared_type = parameters.get("type", "object")
    if declared_type != "object" and not (
        isinstance(declared_type, list) and "object" in declared_type
    ):
        return (
            'parameters must describe an object of arguments ("type": "object"), got '
            f'"type": {json.dumps(declared_type)}'
        )
    try:
        _compiled(key)  # compiles, checks and caches the validator
    except SchemaError as exc:
        return f"invalid parameters schema at {exc.json_path}: {exc.message}"
    ref = _unresolvable_ref(parameters)
    if ref is not None:
        return f"parameters schema has an unresolvable $ref {ref!r}"
    return None


def _accepts_any_object(parameters: Mapping[str, Any]) -> bool:
    # The schema of most tools without parameters; no validator is needed for it.
    return not parameters or (len(parameters) == 1 and parameters.get("type") == "object")


def _validator(parameters: Mapping[str, Any]) -> Validator:
    try:
        key = _canonical(parameters)
    except (TypeError, ValueError):
        # Not JSON: cannot be keyed, so compiled for this call only.
        return _compile(dict(parameters))
    return _compiled(key)


def _canonical(parameters: Mapping[str, Any]) -> str:
    return json.dumps(parameters, sort_keys=True, separators=(",", ":"), allow_nan=False)


@lru_cache(maxsize=_CACHE_SIZE)
def _compiled(key: str) -> Validator:
    return _compile(json.loads(key))


def _compile(schema: dict[str, Any]) -> Validator:
    cls = bounded(validator_for(schema, default=Draft202012Validator))
    cls.check_schema(schema)
    # An empty registry: a $ref only ever resolves inside the schema, never over the network.
    validator: Validator = cls(schema, registry=Registry())
    return validator


def _unresolvable_ref(schema: Mapping[str, Any]) -> str | None:
    """The first ``$ref`` in the schema that does not resolve, or ``None``."""
    specification = specification_with(str(schema.get("$schema", "")), default=DRAFT202012)
    root = specification.create_resource(schema)
    resolver = Registry().resolver_with_root(root)
    pending: list[tuple[Resource[Any], Any]] = [(root, resolver)]
    while pending:
        resource, here = pending.pop()
        contents = resource.contents
        ref = contents.get("$ref") if isinstance(contents, Mapping) else None
        if isinstance(ref, str):
            try:
                here.lookup(ref)
            except Unresolvable:
                return ref
        pending.extend((sub, here.in_subresource(sub)) for sub in resource.subresources())
    return None


def _describe(error: ValidationError) -> str:
    path = list(error.absolute_path)
    where = path_text(path)
    if error.validator == "required":
        missing = _first_missing(error.validator_value, error.instance)
        if missing is not None:
            return f"missing required argument {path_text([*path, missing])!r}"
    if error.validator == "type" and path:
        return f"argument {where!r} must be of type {_type_text(error.validator_value)}"
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        problem = _unknown_argument(error, path)
        if problem is not None:
            return problem
    if error.validator == "enum" and path and isinstance(error.validator_value, list):
        return f"argument {where!r} must be one of {error.validator_value!r}"
    if not path:
        return f"arguments: {error.message}"
    return f"argument {where!r}: {error.message}"


def _type_text(types: object) -> str:
    if isinstance(types, list):
        return " or ".join(str(each) for each in types)
    return str(types)


def _first_missing(required: object, instance: object) -> str | None:
    if not isinstance(required, list) or not isinstance(instance, Mapping):
        return None
    return next((str(name) for name in required if name not in instance), None)


def _unknown_argument(error: ValidationError, path: list[str | int]) -> str | None:
    instance, schema = error.instance, error.schema
    if not isinstance(instance, Mapping) or not isinstance(schema, Mapping):
        return None
    known = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    unknown = next(
        (key for key in instance if key not in known and not any(search(p, key) for p in patterns)),
        None,
    )
    if unknown is None:
        return None
    names = ", ".join(sorted(known))
    if not path:
        accepts = f"this tool accepts: {names}" if names else "this tool accepts no arguments"
    else:
        accepts = f"accepted here: {names}" if names else "no arguments are accepted here"
    return f"unknown argument {path_text([*path, unknown])!r} ({accepts})"


def _clip(problem: str) -> str:
    if len(problem) <= _MAX_PROBLEM_CHARS:
        return problem
    return problem[: _MAX_PROBLEM_CHARS - 1] + "…"


def answer_schema_problem(schema: Mapping[str, Any]) -> str | None:
    """What keeps ``schema`` from being a request's answer schema, or ``None``.

    Returns:
        ``None`` when it is a valid JSON Schema whose every ``$ref`` resolves inside it,
        else the problem, worded to follow the argument's name: ``is no valid JSON Schema
        (...)``, or ``holds a $ref that resolves to nothing in it ('#/nowhere')``.
    """
    try:
        key = _canonical(schema)
    except (TypeError, ValueError):
        # Not JSON: cannot be keyed, so checked for this call only.
        return _answer_schema_problem(dict(schema))
    # A schema is checked on every create that gives it: once per schema, kept.
    return _keyed_answer_schema_problem(key)


@lru_cache(maxsize=_CACHE_SIZE)
def _keyed_answer_schema_problem(key: str) -> str | None:
    return _answer_schema_problem(json.loads(key))


def _answer_schema_problem(schema: dict[str, Any]) -> str | None:
    try:
        _validator(schema)  # compiles and checks the schema
    except SchemaError as exc:
        return f"is no valid JSON Schema ({exc.message})"
    ref = _unresolvable_ref(schema)
    if ref is not None:
        return (
            f"holds a $ref that resolves to nothing in it ({ref!r}; a $ref is looked up "
            "inside the schema only, e.g. '#/$defs/Name' for a definition under its $defs)"
        )
    return None


def validate_answer(schema: Mapping[str, Any], value: object) -> str | None:
    """Check a person's answer (parsed from JSON) against a request's answer schema.

    Returns:
        ``None`` when the answer is valid, else one problem naming where it is
        (``answer.choice: 'x' is not one of ['a', 'b']``), or saying that a pattern of the
        schema took too long to check against it.

    Raises:
        ValueError: the schema itself is invalid, or holds a ``$ref`` the answer reaches
            that cannot be resolved (:func:`answer_schema_problem` refuses both).
    """
    try:
        error = _answer_error(schema, value)
    except PatternTimeout as exc:
        return _slow_answer(exc)
    return None if error is None else _answer_problem(error)


def validate_answer_text(schema: Mapping[str, Any], text: str) -> str | None:
    """Check a person's answer, given as text, against a request's answer schema.

    The text itself is the answer when the schema takes it as a string: ``42``, ``true`` or
    ``null`` typed as free text are text. Otherwise the text is read as JSON, so structured
    answers are sent as JSON text (``{"choice": "a"}``, or ``42`` for a number).

    Returns:
        ``None`` when the answer is valid, else one problem, worded as by
        :func:`validate_answer`: the problem of the text when the schema takes text, of its
        JSON value when the schema wants another type.

    Raises:
        ValueError: the schema itself is invalid, or holds a ``$ref`` the answer reaches
            that cannot be resolved.
    """
    try:
        return _text_problem(schema, text)
    except PatternTimeout as exc:
        return _slow_answer(exc)


def _text_problem(schema: Mapping[str, Any], text: str) -> str | None:
    as_text = _answer_error(schema, text)
    if as_text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return _answer_problem(as_text)
    as_json = _answer_error(schema, value)
    if as_json is None:
        return None
    wants_another_type = as_text.validator == "type" and not as_text.absolute_path
    return _answer_problem(as_json if wants_another_type else as_text)


def _answer_error(schema: Mapping[str, Any], value: object) -> ValidationError | None:
    try:
        error: ValidationError | None = best_match(
            _validator(schema).iter_errors(value)  # type: ignore[arg-type]
        )
    except SchemaError as exc:
        raise ValueError(f"the answer schema is invalid: {exc.message}") from exc
    except Unresolvable as exc:
        raise ValueError(f"the answer schema holds a $ref that cannot be resolved: {exc}") from exc
    return error


def _slow_answer(timeout: PatternTimeout) -> str:
    return _clip(
        f"answer: the schema's pattern {timeout.pattern!r} took too long to check against "
        "that answer; send a shorter or plainer one"
    )


def _answer_problem(error: ValidationError) -> str:
    where = path_text(["answer", *error.absolute_path])
    return _clip(f"{where}: {error.message}")

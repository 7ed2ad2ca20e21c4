"""A JSON Schema's patterns, matched in bounded time.

Whoever writes a schema chooses its regular expressions: a tool's author, a model provider's
tool list, an MCP server's ``requestedSchema`` that becomes a request's answer schema. The
standard ``re`` backtracks without bound and holds the interpreter while it runs:
``^(a|a)+$`` against forty ``a`` and a ``!`` takes hours, and no other task of the process runs
meanwhile. Every pattern a validator matches (``pattern`` on strings, ``patternProperties`` on
the names of properties, which ``additionalProperties`` and ``unevaluatedProperties`` read
too) is matched here by the ``regex`` package instead, with a time limit
(:data:`PATTERN_TIMEOUT`): a match that runs out raises :class:`PatternTimeout`, which ends
the validation, and the caller words it as a refusal.

:func:`bounded` extends the validator class jsonschema picks for a schema's draft with these
keywords; every other keyword stays the library's. ``format`` is not asserted by roomkit's
validators, so ``format: regex`` compiles nothing at validation time. ``regex`` reads the
syntax of ``re`` (its version 0); a schema's check already refuses a pattern ``re`` cannot
compile, and one that ``re`` compiles but ``regex`` does not is matched by ``re``, as before.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from jsonschema.exceptions import ValidationError
from jsonschema.validators import Draft201909Validator, extend
from referencing.jsonschema import lookup_recursive_ref

if TYPE_CHECKING:
    import regex

__all__ = ["PATTERN_TIMEOUT", "PatternTimeout", "bounded", "search"]

PATTERN_TIMEOUT = 0.1
"""The seconds one pattern may take to match one string, past which the check is refused."""

_CACHE_SIZE = 1024


class PatternTimeout(Exception):
    """A schema's pattern ran past :data:`PATTERN_TIMEOUT` on one string."""

    def __init__(self, pattern: str) -> None:
        super().__init__(pattern)
        self.pattern = pattern
        """The pattern that took too long."""


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, as ``re.search`` would say.

    Raises:
        PatternTimeout: the match ran past :data:`PATTERN_TIMEOUT`.
        re.error: neither ``regex`` nor ``re`` compiles ``pattern``.
    """
    compiled = _compiled(pattern)
    if compiled is None:
        return re.search(pattern, text) is not None
    try:
        return compiled.search(text, timeout=PATTERN_TIMEOUT) is not None
    except TimeoutError:
        raise PatternTimeout(pattern) from None


@lru_cache(maxsize=_CACHE_SIZE)
def _compiled(pattern: str) -> regex.Pattern[str] | None:
    """``pattern`` compiled by ``regex``, or ``None`` when only ``re`` may read it."""
    # Imported at the first match, not with the module: a workflow's sandbox (Temporal)
    # refuses what importing it reads of the locale, and a workflow matches no pattern.
    import regex

    with warnings.catch_warnings():
        # Version 0 reads "[[" and "--" in a set as re does, and warns that version 1 would
        # not: the pattern is the schema's, read as re reads it.
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return regex.compile(pattern, regex.VERSION0)
        except regex.error:
            return None


@cache
def bounded(cls: Any) -> Any:
    """The validator class ``cls`` with every keyword that matches a pattern bounded."""
    legacy = cls is Draft201909Validator
    keywords = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": _unevaluated_legacy if legacy else _unevaluated,
    }
    replaced = {name: each for name, each in keywords.items() if name in cls.VALIDATORS}
    # jsonschema's stubs leave extend() unannotated.
    return extend(cls, replaced)  # type: ignore[no-untyped-call]


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        name
        for name in instance
        if name not in properties and not any(search(each, name) for each in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            yield ValidationError(
                f"Additional properties are not allowed ({_extras(sorted(extras, key=str))} "
                "unexpected)"
            )


def _unevaluated(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    yield from _unevaluated_properties(validator, unevaluated, instance, schema, legacy=False)


def _unevaluated_legacy(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    yield from _unevaluated_properties(validator, unevaluated, instance, schema, legacy=True)


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any, *, legacy: bool
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema, legacy=legacy)
    invalid = [
        name
        for name in instance
        if name not in evaluated
        and next(validator.descend(instance[name], unevaluated, path=name), None) is not None
    ]
    if not invalid:
        return
    if unevaluated is False:
        extras = _extras(sorted(invalid, key=str))
        yield ValidationError(f"Unevaluated properties are not allowed ({extras} unexpected)")
    else:
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema "
            f"({_extras(invalid)} unevaluated and invalid)"
        )


def _evaluated_keys(validator: Any, instance: Any, schema: Any, *, legacy: bool) -> set[str]:
    """The names of ``instance`` that ``schema`` evaluates, as jsonschema finds them for its
    ``unevaluatedProperties`` (the draft 2019-09 reading when ``legacy``), with the names
    that ``patternProperties`` evaluate matched in bounded time."""
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    resolved = [validator._resolver.lookup(schema["$ref"])] if "$ref" in schema else []
    if legacy and "$recursiveRef" in schema:
        resolved.append(lookup_recursive_ref(validator._resolver))
    elif not legacy and "$dynamicRef" in schema:
        resolved.append(validator._resolver.lookup(schema["$dynamicRef"]))
    for each in resolved:
        there = validator.evolve(schema=each.contents, _resolver=each.resolver)
        keys |= _evaluated_keys(there, instance, each.contents, legacy=legacy)
    keys |= (_named_legacy if legacy else _named)(validator, instance, schema)
    for pattern in schema.get("patternProperties", {}):
        keys.update(name for name in instance if search(pattern, name))
    subschemas = [
        subschema
        for property, subschema in schema.get("dependentSchemas", {}).items()
        if property in instance
    ]
    subschemas += [
        subschema
        for keyword in ("allOf", "oneOf", "anyOf")
        for subschema in schema.get(keyword, [])
        if next(validator.descend(instance, subschema), None) is None
    ]
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            subschemas += [schema["if"], *([schema["then"]] if "then" in schema else [])]
        elif "else" in schema:
            subschemas.append(schema["else"])
    for subschema in subschemas:
        keys |= _evaluated_keys(validator, instance, subschema, legacy=legacy)
    return keys


def _named(validator: Any, instance: Any, schema: Any) -> set[str]:
    """The names ``properties`` evaluates, and those ``additionalProperties`` or
    ``unevaluatedProperties`` take (draft 2020-12)."""
    keys: set[str] = set()
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys.update(
                name
                for name, value in instance.items()
                if next(validator.descend(value, subschema), None) is None
            )
    return keys


def _named_legacy(validator: Any, instance: Any, schema: Any) -> set[str]:
    """The names ``properties``, ``additionalProperties`` and ``unevaluatedProperties``
    evaluate by their names alone, or all when one is ``true`` (draft 2019-09)."""
    keys: set[str] = set()
    for keyword in ("properties", "additionalProperties", "unevaluatedProperties"):
        value = schema.get(keyword)
        if value is True:
            keys |= instance.keys()
        elif validator.is_type(value, "object"):
            keys |= value.keys() & instance.keys()
    return keys


def _extras(names: list[Any]) -> str:
    """``'a', 'b' were`` (or ``'a' was``): the names a message lists, and their verb."""
    verb = "was" if len(names) == 1 else "were"
    return f"{', '.join(repr(name) for name in names)} {verb}"

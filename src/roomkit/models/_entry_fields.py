"""The field types of history entries, and the check of a value against them without the
validator.

A history entry is checked as it is recorded, on every request's path, so a field whose type
is plain (texts, numbers, flags, literal texts, ``None``, anything, a list of texts, an
object keyed by texts) is checked here by the exact type of its value: a value of a type such
a field takes is what the model's validator would take too. A value this check does not
settle (a field of another type, or a value of a type the field does not take) is left to
the validator, which says what is wrong (:func:`roomkit.models.history.check_fields`).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

__all__ = ["Actors", "ModelFields", "model_fields", "plainly_typed"]

Actors = Annotated[list[str], Field(strict=False)]
"""A list of actor ids (a tuple is taken too: JSON writes both alike)."""

Plain = tuple[frozenset[type] | None, frozenset[str], Callable[[Any], bool] | None]
"""What a plain field takes: the exact types of its values (``None``: any value), the texts
a literal names, and for a list of texts or an object keyed by texts, the check of its
items or keys."""

ModelFields = tuple[dict[str, Plain], frozenset[str]]
"""A model's plain fields, with what each takes, and the names of all its fields."""


def _texts(values: Any) -> bool:
    return all(type(value) is str for value in values)


_CONTAINERS: tuple[tuple[Any, type, Callable[[Any], bool]], ...] = (
    (dict[str, Any], dict, _texts),
    (list[str], list, _texts),
    (Actors, list, _texts),
)
"""The containers checked without the validator: an object keyed by texts (its keys
checked) and a list of texts (its items checked), taken as a plain ``dict`` or ``list``,
which the validator takes too (a list of actors takes a tuple besides, which the validator
is left to check)."""

_HELD = frozenset(kind for _, kind, _ in _CONTAINERS)
"""The containers a plain field may take, whose items or keys are checked."""


def _plain_field(annotation: Any) -> Plain | None:
    """What a field of this type takes, when it is plain (texts, numbers, flags, literal
    texts, ``None``, anything, a list of texts, an object keyed by texts); ``None`` for any
    other type."""
    if annotation is Any:
        return None, frozenset(), None
    kinds: set[type] = set()
    texts: set[str] = set()
    members: Callable[[Any], bool] | None = None
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    parts = typing.get_args(annotation) if union else ()
    for part in parts or (annotation,):
        container = next((c for c in _CONTAINERS if c[0] == part), None)
        if part in (str, int, float, bool, type(None)):
            kinds.add(part)
        elif typing.get_origin(part) is Literal and all(
            type(text) is str for text in typing.get_args(part)
        ):
            texts.update(typing.get_args(part))
        elif container is not None and members is None:
            kinds.add(container[1])
            members = container[2]
        else:
            return None
    return frozenset(kinds), frozenset(texts), members


def model_fields(model: type[BaseModel]) -> ModelFields:
    """The plain fields of ``model`` and what each takes, and the names of all its fields."""
    found: dict[str, Plain] = {}
    for name, field in model.model_fields.items():
        plain = _plain_field(field.annotation)
        if plain is not None:
            found[name] = plain
    return found, frozenset(model.model_fields)


def plainly_typed(fields: ModelFields, value: Mapping[str, Any]) -> bool:
    """Whether each field of ``value`` has a type its model's plain field takes (a field of
    the application's own is kept as it is); ``False`` when the validator must judge."""
    plain, named = fields
    for key, item in value.items():
        taken = plain.get(key)
        if taken is None:
            if key in named:
                return False  # a field of another type: the validator checks it
            continue  # a field of the application's own, kept as it is
        kinds, texts, members = taken
        kind = type(item)
        if kinds is not None and kind not in kinds and not (kind is str and item in texts):
            return False
        if members is not None and kind in _HELD and not members(item):
            return False
    return True

"""What a held call asks to run, read alike from the SDK's objects and from the dicts it
holds a call as: a shell or patch call always, and any call of a state loaded again that
its own type does not read (as the SDK wrote it, its unset fields left out).

A function call carries its ``arguments``; a shell command, a patch or another hosted call
carries none, and a person is shown its other fields instead (its ``action``, its
``operation``), so that nobody approves a call without seeing what it runs.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_jsonable_python

__all__ = ["called", "field"]

_BOOKKEEPING = frozenset({"id", "call_id", "status", "type"})
"""The fields of a call without ``arguments`` that say nothing of what it does."""


def field(raw: Any, name: str) -> Any:
    """The field ``name`` of the call ``raw``, an object or a dict (``None`` when absent)."""
    return raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)


def called(raw: Any) -> Any:
    """What the call ``raw`` asks to run: its ``arguments``; else, for a call that has
    none, its other fields as JSON, those unset or ``None`` left out, so that the same call
    is shown the same from the SDK's object and from the dict a loaded state holds."""
    arguments = field(raw, "arguments")
    if arguments is not None:
        return arguments
    # Its fields as the SDK writes them into a state: those set, no default.
    dump = getattr(raw, "model_dump", None)
    found = to_jsonable_python(dump(exclude_unset=True) if callable(dump) else raw, fallback=str)
    if not isinstance(found, dict):
        return found
    return _without_none({name: value for name, value in found.items() if name not in _BOOKKEEPING})


def _without_none(value: Any) -> Any:
    """``value`` with its dicts' ``None`` fields left out, at every depth."""
    if isinstance(value, dict):
        return {name: _without_none(each) for name, each in value.items() if each is not None}
    if isinstance(value, list):
        return [_without_none(each) for each in value]
    return value

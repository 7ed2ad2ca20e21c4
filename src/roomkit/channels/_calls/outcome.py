"""What a tool call came to: the result the model reads, and how the call ended.

Every step that ends a call (a check, the gate, serving, a cut) says so with a
:class:`CallOutcome`; the report step hands it to ON_TOOL_CALL and returns what the model
reads, which a SYNC hook may have replaced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from roomkit.tools import texts

__all__ = ["CallOutcome", "as_text", "cut", "failed", "refused", "served"]


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The result the model reads for one call, and how the call ended."""

    content: str
    """What the model reads as the tool's result."""
    arguments: dict[str, Any]
    """The arguments the call ran with (after any rewrite)."""
    is_error: bool = False
    """True when the model reads an error."""
    refused: bool = False
    """True when the call was refused (by the channel, a hook or a person)."""
    cancelled: bool = False
    """True when the call was cut before its result."""
    error_detail: str | None = None
    """What failed, for observers; never shown to the model."""


def served(content: str, arguments: dict[str, Any], *, is_error: bool = False) -> CallOutcome:
    """The call ran; ``content`` is its result."""
    return CallOutcome(content, arguments, is_error=is_error)


def refused(content: str, arguments: dict[str, Any], *, detail: str | None = None) -> CallOutcome:
    """The call was refused; ``content`` says why."""
    return CallOutcome(content, arguments, is_error=True, refused=True, error_detail=detail)


def failed(content: str, arguments: dict[str, Any], *, detail: str | None = None) -> CallOutcome:
    """The call ran and failed; ``content`` is what the model reads, ``detail`` what failed."""
    return CallOutcome(content, arguments, is_error=True, error_detail=detail)


def cut(name: str, arguments: object, hint: str) -> CallOutcome:
    """The call was cut before its result; ``hint`` says why."""
    shown = arguments if isinstance(arguments, dict) else {}
    return CallOutcome(texts.cancelled(name, hint), shown, is_error=True, cancelled=True)


def as_text(result: object) -> str:
    """A tool's return value as the text the model reads."""
    if isinstance(result, str):
        return result
    return json.dumps(result, default=str)

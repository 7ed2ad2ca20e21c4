"""What a tool call came to, and the texts the model reads for each way it can end."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["CallOutcome", "cancelled", "failed", "refused", "served"]


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The result the model reads for one call, and how the call ended."""

    content: str
    """What the model reads as the tool's result."""
    arguments: dict[str, Any]
    """The arguments the call ran with (after any rewrite)."""
    is_error: bool = False
    refused: bool = False
    cancelled: bool = False
    error_detail: str | None = None
    """What failed, for observers; never shown to the model."""


def error_body(message: str, **extra: str) -> str:
    """The JSON error object the model reads."""
    return json.dumps({"error": message, **extra})


def served(content: str, arguments: dict[str, Any], *, is_error: bool = False) -> CallOutcome:
    return CallOutcome(content, arguments, is_error=is_error)


def refused(content: str, arguments: dict[str, Any], *, detail: str | None = None) -> CallOutcome:
    return CallOutcome(content, arguments, is_error=True, refused=True, error_detail=detail)


def failed(content: str, arguments: dict[str, Any], *, detail: str | None = None) -> CallOutcome:
    return CallOutcome(content, arguments, is_error=True, error_detail=detail)


def cancelled(name: str, arguments: dict[str, Any], *, channel_closed: bool) -> CallOutcome:
    hint = (
        "The channel closed before its result."
        if channel_closed
        else "The turn ended before its result."
    )
    content = error_body("Tool call cancelled", tool=name, hint=hint)
    return CallOutcome(content, arguments, is_error=True, cancelled=True)


def as_text(result: object) -> str:
    """A tool's return value as the text the model reads."""
    if isinstance(result, str):
        return result
    return json.dumps(result, default=str)

"""Input checks and outcome texts shared by the handler's memory and durable paths."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator

from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    InvalidAnswerError,
    RequestWithdrawnError,
)
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.validation import validate_answer, validate_answer_text

__all__ = [
    "check_answer",
    "check_schema",
    "check_text",
    "check_timeout",
    "id_stream",
    "outcome",
]

DEFAULT_REJECTION = "Request rejected"

_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED
_TIMED_OUT = PendingInputStatus.TIMED_OUT


def id_stream() -> Iterator[str]:
    """Random 32-hex-digit ids, cut from one ``os.urandom`` call per 64 ids.

    The system call, not the randomness, is what makes ``os.urandom(16)`` per id cost; the
    ids stay as unguessable as if each had its own call.
    """
    while True:
        pool = os.urandom(16 * 64).hex()
        for start in range(0, len(pool), 32):
            yield pool[start : start + 32]


def check_text(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str (send structured answers as JSON text), "
            f"got {type(value).__name__}"
        )


def check_timeout(timeout: object) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
    if not timeout >= 0 or math.isinf(timeout):
        raise ValueError(
            f"timeout must be a finite number of seconds >= 0 (None waits forever), got {timeout}"
        )


def check_schema(schema: object) -> None:
    """Raise unless ``schema`` is a valid JSON Schema (``ValueError`` names the problem)."""
    if not isinstance(schema, dict):
        raise TypeError(f"answer_schema must be a JSON Schema dict, got {type(schema).__name__}")
    validate_answer(schema, None)


def check_answer(request: PendingInput, result: str) -> None:
    """Raise :class:`InvalidAnswerError` unless ``result`` matches the answer schema.

    A person's text is text: when the schema takes ``result`` as a string, it is the answer
    (``42`` typed as free text is the text ``42``). Otherwise ``result`` is read as JSON.
    """
    assert request.answer_schema is not None
    problem = validate_answer_text(request.answer_schema, result)
    if problem is not None:
        raise InvalidAnswerError(
            f"Invalid answer for pending request {request.pending_id}: {problem}"
        )


def outcome(request: PendingInput) -> str:
    """The settled request's outcome: its answer, or the error it stands for."""
    status = request.status
    if status is _RESOLVED:
        return request.result or ""
    if status is _REJECTED:
        reason = request.reject_reason or DEFAULT_REJECTION
        if request.withdrawn:
            raise RequestWithdrawnError(reason)
        raise HumanInputRejectedError(reason)
    if status is _TIMED_OUT:
        raise HumanInputTimeoutError(
            f"Nobody answered pending request {request.pending_id} before its deadline"
        )
    raise RuntimeError(f"Unexpected pending status: {status!r}")  # pragma: no cover

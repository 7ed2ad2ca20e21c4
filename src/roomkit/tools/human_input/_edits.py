"""What a decision on an approval's arguments is checked against, before it is recorded.

An edit must match the tool's schema (its digest is then what the decision approves), and a
decision made on arguments shown to the decider is refused once the request holds others:
:class:`~roomkit.core.exceptions.ArgumentsChangedError` quotes those it holds now.
"""

from __future__ import annotations

import json
from typing import Any

from roomkit.core.exceptions import ArgumentsChangedError, InvalidAnswerError
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.tools.validation import validate_tool_arguments

__all__ = ["MAX_SHOWN_ARGUMENTS", "changed", "checked_edit"]

MAX_SHOWN_ARGUMENTS = 2000
"""The most characters of the new arguments an :class:`ArgumentsChangedError` message quotes."""


def changed(request: PendingInput) -> ArgumentsChangedError:
    """The error of a decision on arguments ``request`` no longer holds: it quotes them."""
    now = json.dumps(request.arguments, ensure_ascii=False, sort_keys=True)
    if len(now) > MAX_SHOWN_ARGUMENTS:
        now = now[: MAX_SHOWN_ARGUMENTS - 3] + "..."
    return ArgumentsChangedError(
        f"The arguments of {request.tool_name!r} (pending {request.pending_id}) changed after "
        f"they were shown, so nothing was decided: they are now {now}; decide on these",
        request,
    )


def checked_edit(request: PendingInput, arguments: dict[str, Any]) -> str:
    """The digest of an edit's ``arguments``, once they match the tool's schema.

    Raises:
        InvalidAnswerError: they do not.
    """
    problem = validate_tool_arguments(request.answer_schema or {}, arguments)
    if problem is not None:
        raise InvalidAnswerError(
            f"Invalid edit for {request.tool_name!r} (pending {request.pending_id}): {problem}"
        )
    return arguments_digest(request.tool_name, arguments)

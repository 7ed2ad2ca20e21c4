"""A create's ``key`` re-attaching to the request it names: for the same call only.

A key names one call. A create whose key names a request already made (a re-run after a
crash, a retried activity, a reconnecting client) gets that request, and its person is
not asked twice; but the request must have been made for the same call: the same kind and
tool and, on an approval, the same arguments (their digest), since its decision is what
lets that call run. A key naming a request made for another call is refused with
:class:`~roomkit.core.exceptions.KeyConflictError`, so that a decision on one call never
stands for another. An approval whose arguments an approver edited since is still the one
its call re-attaches to: its ``created`` entry keeps the digest of the call it was made for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from roomkit.core.exceptions import KeyConflictError
from roomkit.models.pending_input import PendingInput

__all__ = ["check_same_call", "made_for", "reattached"]


def _same_call(asked: PendingInput, found: PendingInput, digest: str | None) -> bool:
    return (
        found.kind == asked.kind
        and found.tool_name == asked.tool_name
        and (digest == asked.arguments_digest)
    )


def _call(request: PendingInput) -> str:
    digest = request.arguments_digest
    about = "" if digest is None else f" on arguments of digest {digest[:12]}..."
    return f"the {request.kind} of {request.tool_name!r}{about}"


def _conflict(asked: PendingInput, found: PendingInput) -> KeyConflictError:
    return KeyConflictError(
        f"key {asked.key!r} names request {found.pending_id}, made for {_call(found)}, "
        f"not for {_call(asked)}: a key names one call, so give this one a key of its own",
        found,
    )


def check_same_call(asked: PendingInput, found: PendingInput) -> None:
    """Raise unless ``found``, the request a create returned for ``asked``, is ``asked``
    itself or was made for the same call (a question's check: it has no digest).

    Raises:
        KeyConflictError: ``asked``'s key names a request made for another call.
    """
    same = (found.kind, found.tool_name, found.arguments_digest) == (
        asked.kind,
        asked.tool_name,
        asked.arguments_digest,
    )
    if found.pending_id != asked.pending_id and not same:
        raise _conflict(asked, found)


async def made_for(
    found: PendingInput,
    kind: str,
    tool_name: str,
    digest: str | None,
    history: Callable[[str], Awaitable[list[dict[str, Any]]]],
) -> bool:
    """Whether ``found`` was made for the call of ``kind``, ``tool_name`` and arguments
    ``digest`` (``None`` for a question), as its arguments stand or, when an edit changed
    them since, as its ``created`` entry keeps them (read through ``history``)."""
    if found.kind != kind or found.tool_name != tool_name:
        return False
    if found.arguments_digest == digest:
        return True
    entries = await history(found.pending_id)
    return (
        bool(entries)
        and entries[0].get("type") == "created"
        and (entries[0].get("digest") == digest)
    )


async def reattached(
    asked: PendingInput,
    found: PendingInput,
    history: Callable[[str], Awaitable[list[dict[str, Any]]]],
) -> PendingInput:
    """``found``, the request a create returned for the approval ``asked``, once it is
    ``asked`` itself or was made for the same call (:func:`made_for`).

    Raises:
        KeyConflictError: ``asked``'s key names a request made for another call.
    """
    if found.pending_id != asked.pending_id and not await made_for(
        found, asked.kind, asked.tool_name, asked.arguments_digest, history
    ):
        raise _conflict(asked, found)
    return found

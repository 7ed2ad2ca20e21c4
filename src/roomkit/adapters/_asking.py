"""An adapter's entry point asking: its options read into an :class:`Asker`, checked before
the framework runs anything, the pauses of one stop asked at once, and the requests of a
durable run's stop withdrawn together when it cannot be asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from roomkit.adapters._keys import checked_scope
from roomkit.adapters._pauses import Asker
from roomkit.adapters.options import DEFAULT_TIMEOUT, AskOptions
from roomkit.core.exceptions import StoreError
from roomkit.models.pending_input import PendingInput
from roomkit.models.shown import shown
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["all_at_once", "asking", "one_stop"]

T = TypeVar("T")

_ASK_OPTIONS = AskOptions.__optional_keys__


def asking(
    handler: HumanInputHandler,
    channel: str,
    options: Mapping[str, Any],
    *,
    where: str,
    passes_on: bool = False,
) -> tuple[Asker, dict[str, Any]]:
    """The :class:`Asker` of an adapter's entry point, from its :class:`AskOptions`; and the
    options that are not those, for the framework's own call.

    Raises:
        TypeError: an option is not one of :class:`AskOptions` and ``passes_on`` is false
            (``where`` names the entry point in the message); ``actor`` is neither a
            ``str`` nor ``None``, or ``room`` no ``str``.
        ValueError: ``timeout`` is not a number of seconds above 0 and at most a century;
            ``actor`` is empty, or ``actor`` or ``room`` longer than a request's ids may be.
        InvalidTextError: ``actor``, ``room``, or the ladder's default answer or an
            escalation's person, holds text no store can keep.

    Every one is checked before the framework runs anything.
    """
    rest = {name: value for name, value in options.items() if name not in _ASK_OPTIONS}
    if rest and not passes_on:
        raise TypeError(
            f"{where} got unexpected keyword arguments {shown(sorted(rest))}: "
            f"it takes {', '.join(sorted(_ASK_OPTIONS))}"
        )
    checked_scope(options.get("actor"), options.get("room", ""), where=where)
    asker = Asker(
        handler,
        approvals=options.get("approvals"),
        timeout=options.get("timeout", DEFAULT_TIMEOUT),
        actor=options.get("actor"),
        room=options.get("room", ""),
        channel=channel,
        ladder=options.get("ladder"),
    )
    return asker, rest


async def all_at_once(calls: Sequence[Awaitable[T]]) -> list[T]:
    """What ``calls`` return, in order, run at once (people answer them in any order); a lone
    call runs in the caller's task, with no task of its own to start and wait for.

    The first call to fail cuts the others, as cancelling the caller does, and its error is
    raised once they have stopped: a run that failed leaves no wait behind it, for a person
    whose decision nothing would read.
    """
    if len(calls) == 1:
        return [await calls[0]]
    running = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*running))
    except BaseException:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise


@asynccontextmanager
async def one_stop(handler: HumanInputHandler) -> AsyncIterator[list[PendingInput]]:
    """The requests one stop of a durable run opens, put in the list this yields as each is
    opened: withdrawn together when the stop fails for good.

    A stop fails for good on what no store takes (a ``ValueError`` or ``TypeError``: a
    call's arguments too large, a key naming another call, a ladder's default the schema
    refuses), which the run started again meets again: the requests opened before it would
    ask people for decisions no run reads. A store that failed, a cancel or any other error
    leaves them open, for a start run again to re-attach to by key, as after a crash.
    """
    opened: list[PendingInput] = []
    try:
        yield opened
    except (ValueError, TypeError) as error:
        if not isinstance(error, StoreError):
            await _withdraw(handler, opened, error)
        raise


async def _withdraw(
    handler: HumanInputHandler, opened: list[PendingInput], error: Exception
) -> None:
    reason = (
        f"the run stopped: another call of its step could not be asked ({type(error).__name__})"
    )
    for request in opened:
        try:
            await handler.arelease(request.pending_id, reason=reason)
        except StoreError as failed:
            # The stop's own error is the one raised; this one is told beside it.
            error.add_note(f"request {request.pending_id} is left open: {failed}")

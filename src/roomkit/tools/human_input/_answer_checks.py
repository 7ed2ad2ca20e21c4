"""The checks an answer passes before it settles a request: whether anyone will take it.

An integration that hands a request's outcome to something outside roomkit (a Temporal
workflow) may learn that nothing will take it any more (the workflow run ended). Before
``aresolve`` or ``areject`` settles an open request, each check added with
``HumanInputHandler.add_answer_check`` reads the request; the first that gives a reason
has the request withdrawn with it, and the answer is refused as for any request no longer
open. A check that fails (raises, or gives a reason that is no text a store holds) lets
the answer through: a check that cannot tell (its service unreachable) never stands
between a person and a request that may still be wanted.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from roomkit._registry import Registry
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input._checks import check_text

__all__ = ["AnswerCheck", "AnswerChecks"]

logger = logging.getLogger("roomkit.tools.human_input")

AnswerCheck = Callable[[PendingInput], Awaitable[str | None]]
"""``await check(request)``: ``None`` while an answer to the open ``request`` is wanted,
else why it is not (the withdrawal's reason)."""

_PENDING = PendingInputStatus.PENDING


class _Withdraws(Protocol):
    """The handler, as the checks use it: to read a request, and to withdraw it."""

    async def get_request(self, pending_id: str) -> PendingInput | None: ...

    async def arelease(self, pending_id: str, *, reason: str | None = None) -> bool: ...


class AnswerChecks(Registry[AnswerCheck]):
    """The checks added to one handler, in the order added (:meth:`add` returns the undo)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("an answer check")

    def __bool__(self) -> bool:
        """Whether any check is added (an answer with none to pass costs no call)."""
        return bool(self._items)

    async def unwanted(self, handler: _Withdraws, pending_id: str) -> bool:
        """Whether a check says no one takes an answer to ``pending_id``, when open on
        ``handler``; the handler has then withdrawn it with the check's reason."""
        request = await handler.get_request(pending_id)
        if request is None or request.status is not _PENDING:
            return False
        for check in tuple(self._items):
            try:
                reason = await check(request)
                if reason is not None:
                    # A reason the store cannot hold is the check's failure, not the answer's.
                    check_text("an answer check's reason", reason)
            except Exception:
                logger.exception("An answer check on %s failed; the answer goes on", pending_id)
                continue
            if reason is not None:
                await handler.arelease(pending_id, reason=reason)
                return True
        return False

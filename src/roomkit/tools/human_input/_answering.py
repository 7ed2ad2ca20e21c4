"""``aresolve``'s path: an answer, and the rules it is settled by, handed to the engine.

:class:`Answer` is one call's answer with what judging it takes: the request's history
entry of the settle, and :meth:`Answer.decide`, which checks the answer against the request
as read (its answer schema; on an approval, the decision:
:mod:`roomkit.tools.human_input._decisions`) and settles it through the check-and-set it is
given. The engine alone knows what it holds, so it decides how the settle is done
(``engine.answer(answer, connection)``): plain, when nothing needs checking; checked against
a copy of the request it holds (one it created, or read lately: a request's kind and
schema never change, so the copy checks the answer, and the check-and-set decides whether
it is still open); or after a read. Whichever way, an answer is checked against its
request before anything is written.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.approvals import reject
from roomkit.tools.human_input._checks import check_answer, fits
from roomkit.tools.human_input._decisions import APPROVAL, trail
from roomkit.tools.human_input._in_transaction import Settle, Settlement, answered

if TYPE_CHECKING:
    from roomkit.tools.human_input._decisions import Decisions

__all__ = ["Answer", "AnswerEngine", "answer", "refuse"]

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED


class AnswerEngine(Protocol):
    """An engine that settles answers, and reads a request back."""

    async def answer(self, answer: Answer, connection: Any) -> bool: ...

    async def get_request(self, pending_id: str) -> PendingInput | None: ...

    def local(self, pending_id: str) -> PendingInput | None: ...

    @property
    def settle(self) -> Settle:
        """The engine's check-and-set (its ``settle`` method)."""
        ...


@dataclass(slots=True, eq=False)
class Answer:
    """One ``aresolve`` call's answer, and how it is judged against its request."""

    engine: AnswerEngine
    """The engine that settles it."""
    decisions: Decisions
    """The handler's approvals, which judge an answer to an approval."""
    pending_id: str
    result: str
    by: str | None
    surface: str | None
    shown: str | None
    """The digest of the arguments the person was shown, checked on an approval."""
    behalf: InitVar[dict[str, Any] | None] = None
    history: tuple[dict[str, Any], ...] = field(init=False)
    """What the settle records in the request's history when it wins (naming whom a
    delegate answered for, ``behalf``)."""

    def __post_init__(self, behalf: dict[str, Any] | None) -> None:
        self.history = trail(_RESOLVED, self.by, self.surface)
        if behalf:
            self.history = ({**self.history[0], **behalf},)

    @property
    def settlement(self) -> Settlement:
        """The check-and-set that records this answer."""
        return Settlement(self.pending_id, _RESOLVED, self.result, self.by, self.history)

    def is_plain(self, request: PendingInput) -> bool:
        """Whether an answer to ``request`` needs no check: no answer schema, no approval."""
        return request.kind != APPROVAL and request.answer_schema is None

    def fits(self, request: PendingInput) -> bool:
        """Whether this answer passes the checks of ``request``, a question (no approval)."""
        return request.kind != APPROVAL and fits(request, self.result)

    async def won(self, settled: bool) -> bool:
        """``True`` if the settle won, or the request holds this same answer by the same
        actor already (the answer was recorded by an earlier try)."""
        if settled:
            return True
        by = self.by
        return by is not None and answered(
            await self.engine.get_request(self.pending_id), self.result, by
        )

    async def decide(self, request: PendingInput | None, settle: Settle) -> bool:
        """Judge this answer against ``request`` as read (``None``: not stored) and settle
        it through ``settle``, which records :attr:`history` when it wins."""
        if request is not None and request.kind == APPROVAL:
            return await self.decisions.decide(
                request, self.result, self.by, self.surface, settle, self.shown
            )
        if request is None or request.status is not _PENDING:
            return answered(request, self.result, self.by)
        if request.answer_schema is not None:
            check_answer(request, self.result)
        if await settle(self.settlement):
            return True
        return await self.won(False)


def answer(
    engine: AnswerEngine,
    decisions: Decisions,
    pending_id: str,
    result: str,
    by: str | None,
    surface: str | None,
    connection: Any,
    shown: str | None = None,
    behalf: dict[str, Any] | None = None,
) -> Awaitable[bool]:
    """Answer the request (``aresolve``, its arguments checked); ``True`` if this call won.

    ``connection``: the caller's open transaction to settle in (the engine says whether
    its store can). The engine's own coroutine is returned, for the caller to await.
    """
    return engine.answer(
        Answer(engine, decisions, pending_id, result, by, surface, shown, behalf), connection
    )


async def refuse(
    engine: AnswerEngine,
    decisions: Decisions,
    pending_id: str,
    reason: str,
    by: str | None,
    surface: str | None,
    shown: str | None,
) -> bool:
    """Reject the request (``areject``); ``True`` if this call won. On an approval this is
    the decision ``reject(reason)``, judged as any decision is (``shown`` checked)."""
    request = engine.local(pending_id) or await engine.get_request(pending_id)
    if request is not None and request.kind == APPROVAL:
        return await decisions.decide(request, reject(reason), by, surface, shown=shown)
    return await engine.settle(
        Settlement(pending_id, _REJECTED, reason, by, trail(_REJECTED, by, surface))
    )

"""The handler's callbacks and scopes: the notification callbacks (the default one, and one
per channel id), closing a channel's scope or the whole handler, and the checks an answer
passes before it settles a request.

Upstream RoomKit 0.109's code and tests assign ``handler._on_input_required``; that name is
the same callback as :attr:`Callbacks.on_input_required`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from roomkit.core.callables import is_async_callable
from roomkit.tools.human_input._announce import OnInputRequiredCallback
from roomkit.tools.human_input._ids import check_channel, check_id

if TYPE_CHECKING:
    from roomkit.tools.human_input._announce import Announcer
    from roomkit.tools.human_input._answer_checks import AnswerCheck, AnswerChecks
    from roomkit.tools.human_input._durable_engine import DurableEngine
    from roomkit.tools.human_input._memory_engine import MemoryEngine

__all__ = ["Callbacks"]


class Callbacks:
    """The callbacks a handler's :class:`Announcer` calls when a request is created, the
    scopes they serve (:meth:`close`), and the checks its answers pass."""

    __slots__ = ()

    _announcer: Announcer
    _answer_checks: AnswerChecks
    _engine: MemoryEngine | DurableEngine

    @property
    def on_input_required(self) -> OnInputRequiredCallback | None:
        """The callback for requests of a channel with no callback of its own."""
        return self._announcer.default

    @on_input_required.setter
    def on_input_required(self, callback: OnInputRequiredCallback | None) -> None:
        if callback is not None:
            _check_async(callback)
        self._announcer.default = callback

    # RoomKit 0.109's name, which its code and tests assign: the same callback.
    _on_input_required = on_input_required

    def set_on_input_required(self, channel_id: str, callback: OnInputRequiredCallback) -> int:
        """Route the requests of ``channel_id`` to ``callback``; return the registration token.

        Registering re-opens a closed channel scope (a new owner). Pass the token to
        ``close(channel_id=..., registration=token)`` so that a displaced owner's teardown
        leaves the live owner alone. The callback displaced, when it is a method of another
        object (another kit's ``ON_USER_INPUT_REQUIRED``), stays an owner while that object
        lives and until it closes: a request created inside
        :func:`~roomkit.core.ports.announcing_to` with it (that kit's turn) goes to it, and
        the scope closes with the last owner. Any other displaced callback is dropped.

        Raises:
            TypeError: ``callback`` is not an async function.
            HandlerClosedError: the whole handler is closed.
        """
        check_id("channel_id", channel_id)
        _check_async(callback)
        return self._announcer.register(channel_id, callback)

    _set_on_input_required = set_on_input_required

    async def close(
        self, *, channel_id: str | None = None, registration: int | None = None
    ) -> None:
        """Reject active work and refuse later creates: globally, or for one channel only.

        Args:
            channel_id: close only this channel's scope; other owners stay available.
            registration: the token :meth:`set_on_input_required` returned. While another
                owner still routes the channel (another kit registered the same id), only
                this owner leaves: its running notifications stop, the scope stays open to
                the others, and its own questions are left to its own teardown (a channel
                withdraws those of the turns it cuts). A token that owns nothing here any
                more (a displaced owner, or a callback registered again) does nothing.

        On a durable store, a request created here with a ``key`` stays open in the store
        (its waiters here raise :class:`HandlerClosedError`): the process that re-attaches
        to it after a restart gets the answer. Requests without a key are withdrawn.
        """
        check_channel(channel_id, registration)
        announcer = self._announcer
        if channel_id is not None and registration is not None:
            left = announcer.leave(channel_id, registration)
            if left is not None:
                await announcer.cancel(channel_id, left)
                return
        if not announcer.close(channel_id, registration):
            return
        await self._engine.close(channel_id)
        await announcer.cancel(channel_id)

    def add_answer_check(self, check: AnswerCheck) -> Callable[[], None]:
        """Ask ``check`` whether an answer is still wanted before one settles a request.

        Before ``aresolve`` or ``areject`` settles an open request, ``await check(request)``
        returns ``None`` while an answer is wanted, or the reason nobody will take one (an
        integration's workflow run has ended). The request is then withdrawn with that
        reason (``arelease(pending_id, reason=...)``: waiters raise
        :class:`RequestWithdrawnError`, its history's ``settled`` entry names the reason)
        and the call returns ``False``, as for any request no longer open; the desk answers
        409. Checks run in the order added; one that raises, or gives a reason that is no
        text (not a ``str``, or a lone surrogate), is logged and lets the answer through.
        Returns the undo.

        Raises:
            TypeError: ``check`` is not callable.
        """
        return self._answer_checks.add(check)


def _check_async(callback: object) -> None:
    # A plain function would fail at each request, where its ``False`` could deny nothing.
    if not is_async_callable(callback):
        label = getattr(callback, "__name__", "on_input")
        raise TypeError(
            f"the callback must be an async function (async def {label}(event) returning False "
            f"to deny) or None, got {callback!r}"
        )

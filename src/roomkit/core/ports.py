"""What the kit needs from the channels and human-input handlers it drives.

``RoomKit`` sits under the channels and the tools: it reaches them only through these
structural protocols, so any object with the right members plugs in without inheriting from
anything here. Each protocol is ``runtime_checkable``: the kit tells what a registered
channel can do with ``isinstance`` (an AI channel replies and resumes turns, a transport
delivers room events), which checks that the members exist, not their signatures. Such a
check reads every member (tens of microseconds), so the kit asks :func:`delivers`,
:func:`responds` and :func:`resumes` on its hot paths: the answer for a channel's class,
found once.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol, TypeGuard, runtime_checkable

from roomkit.core.context_vars import bound
from roomkit.core.store import OpenTurn
from roomkit.models.pending_input import PendingInput, PendingInputEvent
from roomkit.models.room import RoomEvent

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = [
    "DeliveringChannel",
    "HumanInputRoute",
    "KitChannel",
    "RespondingChannel",
    "ResumableChannel",
    "announcing_to",
    "delivers",
    "positional_fit",
    "responds",
    "resumes",
    "turn_callback",
]


@runtime_checkable
class KitChannel(Protocol):
    """What every channel registered with a kit is: an id, and a place to be wired and
    closed (``roomkit.channels.base.Channel`` and its subclasses)."""

    channel_id: str

    def set_framework(self, kit: RoomKit) -> None:
        """Wire the channel to ``kit`` (called by ``kit.register_channel``)."""
        ...

    async def close(self) -> None:
        """Stop the channel's work (called by ``kit.close()``)."""
        ...

    async def on_detach(self, room_id: str) -> None:
        """Stop the channel's work in ``room_id`` (called by ``kit.detach_channel``)."""
        ...


@runtime_checkable
class DeliveringChannel(KitChannel, Protocol):
    """A channel that delivers room events to people (a WebSocket, a chat, ...)."""

    async def deliver(self, event: RoomEvent) -> None:
        """Send ``event`` to the people of its room."""
        ...


@runtime_checkable
class RespondingChannel(KitChannel, Protocol):
    """A channel that replies to a room's messages as an AI does (``AIChannel``)."""

    async def respond(
        self, room_id: str, event: RoomEvent, *, turn: OpenTurn | None = None
    ) -> RoomEvent | None:
        """Run a turn on ``event`` in ``room_id`` (under ``turn``, the record the kit made
        with the message on a durable store) and return its reply, if any."""
        ...


@runtime_checkable
class ResumableChannel(KitChannel, Protocol):
    """A channel whose turns a durable room store records and the kit can
    re-drive after a restart (``kit.resume_pending()``)."""

    async def resume_turn(self, recorded: OpenTurn) -> RoomEvent | None:
        """Re-drive a turn an earlier process recorded and did not finish."""
        ...


OnInputRequired = Callable[[PendingInputEvent], Awaitable[bool | None]]
"""Called when a request opens; ``False`` rejects it."""

_TURN: ContextVar[OnInputRequired | None] = ContextVar("roomkit_turn_callback", default=None)
"""The callback of the kit whose turn runs now (``None`` outside every kit's turn)."""


@contextlib.contextmanager
def announcing_to(callback: OnInputRequired) -> Iterator[None]:
    """Inside, a new request of a channel that ``callback`` routes is announced to it.

    Several kits may route one handler under one channel id (a kit per request over a
    shared handler): the handler's current callback for the id is the last kit's, and a
    request created in an earlier kit's turn, while that kit still routes the id, goes to
    the earlier kit instead. A kit runs its turns and tool calls inside this.
    """
    with bound(_TURN, callback):
        yield


def turn_callback() -> OnInputRequired | None:
    """The callback :func:`announcing_to` set around the code running now, or ``None``."""
    return _TURN.get()


@runtime_checkable
class HumanInputRoute(Protocol):
    """A human-input handler as the kit routes it (``HumanInputHandler``): its new requests
    go to ON_USER_INPUT_REQUIRED, and a person's message in a room may answer one."""

    def set_on_input_required(self, channel_id: str, callback: OnInputRequired) -> int:
        """Send the requests of ``channel_id`` to ``callback``; return the registration."""
        ...

    async def list_pending(
        self, *, room_id: str | None = None, actor_id: str | None = None
    ) -> list[PendingInput]:
        """The requests of ``actor_id`` in ``room_id`` still waiting for an answer, oldest
        first (``None`` filters nothing)."""
        ...

    async def expire_overdue(self, requests: Iterable[PendingInput]) -> list[PendingInput]:
        """``requests`` as they stand once those past their deadline have timed out."""
        ...

    async def get_request(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled, or ``None``."""
        ...

    async def aresolve(
        self, pending_id: str, result: str, *, by: str | None = None, surface: str | None = None
    ) -> bool:
        """Answer the request; ``True`` if this call won. ``surface`` is where the answer
        came from, for the request's history."""
        ...


_ROLES: dict[tuple[type, type], bool] = {}


def _plays(channel: object, role: type) -> bool:
    """``isinstance(channel, role)``, decided once per class of channel.

    A channel's members are its class's methods (and attributes every instance sets in
    ``__init__``), so the first instance of a class answers for all of them.
    """
    key = (type(channel), role)
    known = _ROLES.get(key)
    if known is None:
        known = _ROLES[key] = isinstance(channel, role)
    return known


def delivers(channel: object) -> TypeGuard[DeliveringChannel]:
    """Whether ``channel`` is a :class:`DeliveringChannel` (decided once per class)."""
    return _plays(channel, DeliveringChannel)


def responds(channel: object) -> TypeGuard[RespondingChannel]:
    """Whether ``channel`` is a :class:`RespondingChannel` (decided once per class)."""
    return _plays(channel, RespondingChannel)


def resumes(channel: object) -> TypeGuard[ResumableChannel]:
    """Whether ``channel`` is a :class:`ResumableChannel` (decided once per class)."""
    return _plays(channel, ResumableChannel)


def positional_fit(signature: inspect.Signature, count: int) -> bool:
    """Whether a callable of ``signature`` takes ``count`` positional arguments: how a
    channel's ``deliver`` or a tool handler of either form is told apart."""
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True

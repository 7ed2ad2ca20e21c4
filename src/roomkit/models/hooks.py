"""Hook data: results, the room context a hook reads, and what a chain decided.

A hook is ``async def hook(event, ctx) -> HookResult | None``. SYNC hooks run one after
another and may allow, block or modify the event; ASYNC hooks observe it afterwards. The
engine that runs them is :class:`roomkit.core.hooks.HookEngine`. The triggers and the ways a
hook runs (``HookTrigger``, ``HookExecution``) live with the other enums in
:mod:`roomkit.models.enums`, and are named here too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from roomkit.models.enums import ChannelType, HookExecution, HookTrigger

__all__ = [
    "HookExecution",
    "HookFn",
    "HookOutcome",
    "HookRegistration",
    "HookResult",
    "HookTrigger",
    "RoomContext",
]


class HookResult(BaseModel):
    """What a SYNC hook decides. Build one with :meth:`allow`, :meth:`block` or :meth:`modify`.

    Returning ``None`` from a hook counts as :meth:`allow`.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    action: Literal["allow", "block", "modify"] = "allow"
    """``allow`` lets the event through, ``block`` stops the chain, ``modify`` replaces it."""
    event: Any = None
    """The replacement event; required for ``modify``."""
    reason: str | None = None
    """Why the event is blocked; required for ``block``."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Extra data for the caller, e.g. ``{"arguments": {...}}`` to rewrite a tool call."""

    @model_validator(mode="after")
    def _check_action(self) -> HookResult:
        if self.action == "modify" and self.event is None:
            raise ValueError("HookResult(action='modify') needs the replacement event")
        if self.action == "block" and self.reason is None:
            raise ValueError("HookResult(action='block') needs a reason")
        return self

    @classmethod
    def allow(cls, *, metadata: dict[str, Any] | None = None) -> HookResult:
        """Let the event through, optionally with ``metadata`` for the caller."""
        return cls(action="allow", metadata=metadata or {})

    @classmethod
    def block(cls, reason: str) -> HookResult:
        """Stop the chain; ``reason`` says why (a tool call's model reads it)."""
        return cls(action="block", reason=reason)

    @classmethod
    def modify(cls, event: Any) -> HookResult:
        """Replace the event: the next hooks, and the caller, see ``event`` instead."""
        return cls(action="modify", event=event)


@dataclass(frozen=True, slots=True)
class RoomContext:
    """The room a hook runs for: the room itself, who is in it, and how channels attach."""

    room: Any
    """The room object (``None`` when the event has no room)."""
    participants: tuple[Any, ...] = ()
    """The room's participants; each has an ``id``."""
    bindings: tuple[Any, ...] = ()
    """The channels attached to the room."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form data the framework or the application attaches to the context."""

    @property
    def participant_ids(self) -> frozenset[str]:
        """The ids of the room's participants, to check an ``actor_id`` against the roster."""
        return frozenset(participant.id for participant in self.participants)


HookFn = Callable[[Any, RoomContext], Awaitable[HookResult | None]]
"""A hook: ``await fn(event, ctx)`` returns a :class:`HookResult`, or ``None`` to allow."""


@dataclass(frozen=True, slots=True)
class HookRegistration:
    """One registered hook. :meth:`HookEngine.register` returns it; pass it to ``unregister``."""

    trigger: HookTrigger
    """The moment the hook attaches to."""
    fn: HookFn
    """The hook itself."""
    execution: HookExecution
    """SYNC (in the chain) or ASYNC (an observer)."""
    priority: int
    """Lower runs first; ties run in registration order."""
    name: str
    """The name used in logs, ``blocked_by`` and error details."""
    timeout: float
    """Seconds one run of the hook may take."""
    channel_types: frozenset[ChannelType] | None
    """Run only for events from these kinds of channel; ``None`` for every kind."""
    channel_ids: frozenset[str] | None
    """Run only for events from these channels; ``None`` for every channel."""
    fail_closed: bool | None
    """Whether a failure of this hook blocks the event; ``None`` follows the trigger."""
    seq: int
    """Registration order, which breaks priority ties."""

    def matches(self, channel_type: ChannelType | None, channel_id: str | None) -> bool:
        """Whether the hook's channel filters admit an event from this channel.

        A hook without filters admits every event; a filter admits only an event whose
        channel is known and listed.
        """
        if self.channel_types is not None and channel_type not in self.channel_types:
            return False
        return self.channel_ids is None or channel_id in self.channel_ids


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """What a SYNC chain decided."""

    allowed: bool
    """False when a hook blocked the event, or failed under fail-closed."""
    reason: str | None = None
    """The blocking hook's reason; ``None`` when nothing blocked or a hook failed closed."""
    blocked_by: str | None = None
    """The name of the hook that stopped the chain (by blocking or by failing closed)."""
    event: Any = None
    """The event after every ``modify`` of the hooks that ran."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The metadata of the allow/modify results, later hooks overriding earlier keys."""
    errors: tuple[str, ...] = ()
    """``"<hook name>: <error>"`` for each hook that raised, timed out or returned junk."""
    detail: str | None = None
    """``"<hook name>: <error>"`` when the chain stopped because a hook failed closed."""

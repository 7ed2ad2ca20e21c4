"""Bounds: how long a call may run, and how long a person has to answer, decided once.

:func:`decide` reads a channel's settings (``tool_timeouts``, ``tool_timeout_seconds`` and the
human-input handler) and fixes a call's bounds before it is served. ``tool_timeouts[name]``
wins; any other host tool gets ``tool_timeout_seconds``, and runs under it as a cancellation.
A human-input call is never cancelled by a bound: its bound (``tool_timeouts[name]``, capped
by the handler's own ``timeout``, or that timeout alone) becomes the deadline of the request,
so an answer that lands with the bound is taken, never lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from roomkit.tools.human_input import HumanInputToolHandler

__all__ = ["BoundSettings", "CallBounds", "decide", "seconds"]


class BoundSettings(Protocol):
    """What a channel (or a conference's realtime config) says about its calls' bounds."""

    @property
    def tool_timeouts(self) -> Mapping[str, float | None] | None:
        """Per-tool bounds, overriding the defaults (human-input names included)."""
        ...

    @property
    def tool_timeout_seconds(self) -> float | None:
        """The bound of a host tool call (``None``: unbounded)."""
        ...

    @property
    def human_input_handler(self) -> HumanInputToolHandler | None:
        """The tools that ask a person."""
        ...


@dataclass(frozen=True, slots=True)
class CallBounds:
    """A call's bounds, as :func:`decide` fixed them."""

    channel: float | None
    """The channel's bound for the name, or ``None`` for none (a human-input name without a
    ``tool_timeouts`` entry has none: its handler's timeout applies)."""
    cancel_after: float | None
    """Seconds after which the call is cancelled; ``None`` for a person's call, whose deadline
    is its request's."""
    person: float | None
    """Seconds the person asked has to answer; ``None`` when the name asks nobody."""


def decide(settings: BoundSettings, name: str) -> CallBounds:
    """The bounds of a call to ``name`` under ``settings``."""
    timeouts = settings.tool_timeouts or {}
    human = settings.human_input_handler
    if human is not None and name in human.tool_names:
        bound = timeouts.get(name)
        person = human.timeout if bound is None else min(bound, human.timeout)
        return CallBounds(bound, None, person)
    bound = timeouts.get(name, settings.tool_timeout_seconds)
    return CallBounds(bound, bound, None)


def seconds(name: str, value: object, *, optional: bool = True) -> float | None:
    """A bound in seconds, checked to be positive (``None``, for unbounded, if ``optional``).

    Raises:
        ValueError: ``value`` is not a positive number (a bool is not one).
    """
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        unbounded = " or None" if optional else ""
        raise ValueError(f"{name} must be a positive number of seconds{unbounded}, got {value!r}")
    return float(value)

"""Waits that outlast a client's patience, on the 2026-07-28 protocol.

A person may take minutes; an MCP client gives one request its request timeout, and the
SDK's client retries a state-only ``input_required`` result at most ten times, 50 to 250 ms
apart. So, on a connection that speaks 2026-07-28, :class:`HumanInputMCPServer` holds each
round of a call for at most ``hold`` seconds (under the client's request timeout) and, when
nobody has answered by then, answers "still waiting": an ``InputRequiredResult`` whose
``requestState`` names the wait and holds nothing else. The wait itself is the request in
the store, under an idempotency key; the retry re-attaches to it by that key, in this
process or any other on the store, after a restart too, answered meanwhile or not. With the
desk's address (``links=``), the first "still waiting" of a wait also asks a client that takes
URL-mode elicitations to show its person a signed, single-use desk link that answers it, so
the person can answer even after the client has stopped retrying. The
state is sealed (AES-256-GCM, by the SDK's boundary) with a key derived from the desk's
secret, which every ``roomkit mcp`` process on the store shares, and bound by the SDK to the
tool, its arguments and the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from roomkit.tools.human_input import HumanInputHandler

__all__ = [
    "HOLD",
    "STATE_AUDIENCE",
    "StillWaiting",
    "held_wait",
    "holds_rounds",
    "linked",
    "state_boundary",
    "state_key",
    "state_of",
    "wait_key",
]

HOLD = 20.0
"""Seconds one round of a call is held before "still waiting": under the request timeouts
clients use (30 s and more), so that none cuts a round off."""
STATE_AUDIENCE = "roomkit-mcp"
"""Who a sealed request state is for: states minted by another service on the same keys
are refused."""
_STATE_INFO = b"roomkit mcp request state v1"
_KEY_PREFIX = "wait:"


class StillWaiting(Exception):
    """Nobody answered within one round's hold: the call answers "still waiting"."""


def state_key(secret: bytes) -> bytes:
    """The key that seals request states, derived from the desk's ``secret``: the same in
    every process that shares the secret, and of no use for anything else."""
    return hmac.new(secret, _STATE_INFO, hashlib.sha256).digest()


def state_boundary(
    keys: Sequence[bytes] | None, caller: Callable[[ServerRequestContext[Any]], str | None]
) -> RequestStateBoundary:
    """The SDK's boundary that seals every state the server mints and checks every one
    that comes back; with no ``keys``, a key of this process only.

    Each state is bound to its ``caller`` (the person asked, as the server tells it from a
    request): a state minted for one person is refused to anyone else.
    """
    security = RequestStateSecurity(
        keys=list(keys) if keys else [os.urandom(32)],
        bind_principal=caller,
        audience=STATE_AUDIENCE,
    )
    return RequestStateBoundary(security, default_audience=STATE_AUDIENCE)


def holds_rounds(protocol_version: str) -> bool:
    """Whether a connection speaking ``protocol_version`` takes "still waiting" results."""
    return protocol_version in MODERN_PROTOCOL_VERSIONS


def state_of(key: str, *, linked: bool = False) -> str:
    """The (plain) request state of a wait: its key, and whether the client was given the
    desk's answer link already (URL mode, once per wait)."""
    state: dict[str, object] = {"wait": key}
    if linked:
        state["linked"] = True
    return json.dumps(state, separators=(",", ":"))


def linked(state: str | None) -> bool:
    """Whether the wait ``state`` names was offered its answer link already."""
    if state is None:
        return False
    try:
        return json.loads(state).get("linked") is True
    except (ValueError, AttributeError):
        return False


def wait_key(state: str | None, given: str | None) -> str:
    """The key of a call's wait: the one its request state names on a retry, else the
    call's own ``_meta`` key, else a fresh one.

    Raises:
        ValueError: the state (already checked by the boundary) names no wait.
    """
    if state is None:
        return given if given is not None else _KEY_PREFIX + uuid.uuid4().hex
    try:
        key = json.loads(state)["wait"]
    except (ValueError, KeyError, TypeError):
        raise ValueError("the requestState names no wait") from None
    if not isinstance(key, str) or not key:
        raise ValueError("the requestState names no wait")
    return key


async def held_wait(
    handler: HumanInputHandler, pending_id: str, *, timeout: float, hold: float
) -> str:
    """The request's answer, if it comes within ``hold`` seconds.

    The wait is cut after ``hold``; the request stays open for the next round (it is keyed,
    on a durable store). Its outcome, when it came in time, is raised as ``wait()`` raises it.

    Raises:
        StillWaiting: nobody answered within ``hold`` seconds.
    """
    waiting = asyncio.ensure_future(handler.wait(pending_id, timeout=timeout))
    try:
        await asyncio.wait({waiting}, timeout=hold)
    except BaseException:
        waiting.cancel()
        raise
    if not waiting.done():
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
    if waiting.cancelled():
        raise StillWaiting
    return waiting.result()

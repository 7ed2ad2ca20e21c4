"""Writes that land once per call, however often the client sends them.

The client sends a command again when its connection fails before the reply comes (the
client :func:`~roomkit.stores.redis._link.connect` builds tries once more; a client passed
in may try more): a command the server ran whose reply was lost then runs twice. A write
that is not the same twice (an append to a history, a spend, a grant's use, an outbox
claim) carries a token for that: :func:`once` wraps its script so that the run that finds
no token's key writes and keeps its reply under the key, and a run that finds the key
replies the same and writes nothing. Each attempt of ours is sent with a token of its own
(:func:`with_token`): an attempt made again because a check-and-set said to read again is a
new write, while the client's re-send of one attempt carries its token.

The key is ``<prefix>:once:<token>``; it expires :data:`KEEP` seconds after the write (or
twice the store's ``timeout``, when that is longer), long after the client has stopped
sending the call again. A run whose reply is ``false`` or empty keeps nothing (it wrote
nothing a second run would change): an idle outbox claim leaves no key behind.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

__all__ = ["KEEP", "once", "with_token"]

KEEP = 600.0
"""Seconds a token's key stays at the least."""

_BEFORE = """
-- The call's token key and how long it stays come last in KEYS and ARGV: the script below
-- sees the rest.
local once_key, once_ms = KEYS[#KEYS], ARGV[#ARGV]
local kept = redis.call('GET', once_key)
if kept then
  -- Sent again after its reply was lost: the reply of the run that wrote.
  return cjson.decode(kept)
end
local KEYS, ARGV = {unpack(KEYS, 1, #KEYS - 1)}, {unpack(ARGV, 1, #ARGV - 1)}
local reply = (function()
"""

_AFTER = """
end)()
if reply and not (type(reply) == 'table' and next(reply) == nil) then
  redis.call('SET', once_key, cjson.encode(reply), 'PX', once_ms)
end
return reply
"""


def once(script: str) -> str:
    """``script``, run at most once per token.

    Its reply must be one JSON holds as it is: text, integers below 10^14, ``false`` and
    arrays of those (no status replies). A reply that is ``nil``, ``false`` or an empty
    array must mean that the script wrote nothing a second run would change.
    """
    return _BEFORE + script + _AFTER


def with_token(
    prefix: str, keys: Sequence[Any], args: Sequence[Any], *, within: float
) -> tuple[list[Any], list[Any]]:
    """``keys`` and ``args`` of a call of a :func:`once` script, with a new token's key under
    ``prefix`` and how long it stays (``within`` is the store's ``timeout``)."""
    keep = max(KEEP, 2 * within)
    return (
        [*keys, f"{prefix}:once:{secrets.token_hex(16)}"],
        [*args, round(keep * 1000)],
    )

"""The Redis store's spend-once ledger: one string key per spent entry.

``P:ledger:<entry>`` holds ``"<spent_at> <expires_at>"`` (``-`` for an entry kept for good),
both on the store's clock, and expires on the server when the entry does, so the server
prunes what has expired. The spend is a Lua script: it writes the key when it is absent or
holds an entry expired on the store's clock (which may run ahead of the server's), and
leaves an unexpired one alone, so exactly one caller among every process sees it go in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from roomkit.stores.redis._once import once

__all__ = ["REFUND", "SPEND", "entry_key", "expiry_ms", "parse", "value"]

SPEND = once("""
-- KEYS: the entry's key
-- ARGV: value, expiry in ms ('' for none), now
local cur = redis.call('GET', KEYS[1])
if cur then
  local expires = tonumber(string.match(cur, ' (%S+)$'))
  if not expires or expires > tonumber(ARGV[3]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[2] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
""")
"""Spends an entry; run once per token (:mod:`~roomkit.stores.redis._once`), so that a
spend sent again after its reply was lost finds its own and reports it won."""

REFUND = once("""
-- KEYS: the entry's key
redis.call('DEL', KEYS[1])
return 1
""")
"""Forgets an entry; run once per token, so that a refund sent again after its reply was lost
never forgets the spend another caller made in between."""

_FOREVER = "-"


def entry_key(prefix: str, entry: str) -> str:
    """The key of ``entry`` under the store's ``prefix``."""
    return f"{prefix}:ledger:{entry}"


def value(spent_at: float, until: float | None) -> str:
    """What the entry's key holds."""
    return f"{spent_at!r} {_FOREVER if until is None else repr(until)}"


def expiry_ms(until: float | None, now: float) -> int | None:
    """Milliseconds until the server may drop the key (at least 1), or ``None`` to keep it."""
    if until is None:
        return None
    return max(1, math.ceil((until - now) * 1000))


def parse(raw: bytes | str | None, now: float) -> float | None:
    """When the entry in ``raw`` was spent, or ``None`` when absent or expired.

    A value this library did not write reads as spent at the end of time: the ledger fails
    closed (the spend script refuses it too).
    """
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    parts: Sequence[str] = text.split(" ")
    try:
        spent_at = float(parts[0])
        until = None if parts[1] == _FOREVER else float(parts[1])
    except (IndexError, ValueError):
        return math.inf
    if math.isnan(spent_at):
        return math.inf  # as any other value this library did not write
    if until is not None and until <= now:
        return None
    return spent_at

"""A Redis checkpoint racing an append by a process without the audit key: the append drops
the head the checkpoint read, between its read and its write; the checkpoint lists the chain
all the same, and the next one, once the chain is signed again, counts it as seen."""

from __future__ import annotations

import asyncio
import hashlib
import time

import pytest
from redis.asyncio import Redis
from tests.servers.stores import fresh_prefix
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.store_kit import PATIENCE
from tests.tools.human_input.stores.trail_places import KEYS

from roomkit import HumanInputHandler
from roomkit.stores import check_trail, new_entry
from roomkit.stores.redis import RedisStore
from roomkit.stores.redis._trail import CHECKPOINT

DAY = 86_400.0
WRITE = hashlib.sha1(CHECKPOINT.encode()).hexdigest().encode()
"""What the checkpoint's write (its script's call) carries."""


async def test_a_head_dropped_under_a_checkpoint_is_counted_once(
    relay: Relay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mark that the chain was listed outlives the dropped head, and expires with the
    chain."""
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    prefix, server = fresh_prefix(), f"redis://127.0.0.1:{relay.upstream}/0"
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(relay.url, prefix=prefix, audit_retention=DAY) as keyed,
        RedisStore(server, prefix=prefix, audit_retention=DAY) as keyless,
        Redis.from_url(server) as raw,
    ):
        keyed.trail.use_keys(KEYS)
        handler = HumanInputHandler(store=keyed)
        asked = await handler.create("Ask", {"question": "?"})
        assert await handler.aresolve(asked.pending_id, "yes", by="bob")
        gate = relay.gate(WRITE)
        first = asyncio.create_task(keyed.trail.checkpoint())
        await gate.holding(1)
        # Its head read, the checkpoint's write waits: an append without the key drops it.
        await HumanInputHandler(store=keyless).record(
            asked.pending_id, new_entry("shown", surface="desk")
        )
        gate.open()
        assert (await first).heads == 1
        assert await raw.pttl(f"{prefix}:ha:{asked.pending_id}") > 0
        assert await keyed.trail.adopt() == (1, [])
        assert (await keyed.trail.checkpoint()).heads == 1
        report = check_trail(await keyed.trail.read(), KEYS, now=time.time())
    assert report.problems == []
    assert (report.chains, report.checkpoints, report.unlisted) == (1, 2, 0)

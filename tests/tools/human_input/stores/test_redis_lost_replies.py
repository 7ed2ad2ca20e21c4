"""A write whose reply is lost is applied once, though the client sends it again.

The relay lets a write reach the server, drops the server's reply and cuts the connection:
the client connects again and sends the same command, which the server runs a second time.
Each write below is made once more by nobody but the client, and lands once: one history
entry, the caller's own spend reported won, one use of a grant, one claim, one attempt. (A
claim whose re-send fails too, the server still away: ``tests/stores/test_outbox_lost_claims``.)
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import pytest
from redis import Redis
from tests.grants.test_grant_flow import granted, held
from tests.servers.redis_server import RedisServer
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.store_kit import FakeClock

from roomkit import HumanInputHandler, PendingInputStatus
from roomkit.policy.grants import GrantScope
from roomkit.stores._history import new_entry
from roomkit.stores.grants import Grant
from roomkit.stores.outbox import OutboxItem
from roomkit.stores.redis import RedisStore
from roomkit.stores.redis._granted import INSERT_GRANTED_SETTLED
from roomkit.stores.redis._inserts import INSERT_SETTLED
from roomkit.stores.redis._votes import VOTE
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import create_decided

T = TypeVar("T")


@pytest.fixture
async def store(relay: Relay, prefix: str, clock: FakeClock) -> AsyncIterator[RedisStore]:
    async with RedisStore(relay.url, prefix=prefix, clock=clock) as store:
        yield store


async def lost(relay: Relay, marker: bytes, call: Awaitable[T]) -> T:
    """Await ``call`` with the reply to its command that holds ``marker`` lost once: the
    client sends the command again."""
    relay.lose_reply_to(marker)
    result = await call
    assert relay.lost.is_set(), "the relay saw no command holding the marker"
    return result


def sha(script: str) -> bytes:
    """The name ``EVALSHA`` calls ``script`` by."""
    return hashlib.sha1(script.encode()).hexdigest().encode()


def grant(grant_id: str, **fields: object) -> Grant:
    values: dict[str, object] = {
        "grant_id": grant_id,
        "tool": "pay",
        "granted_by": ("ann",),
        "expires_at": 1_800_000_100.0,
        "actor_id": "bob",
        "max_uses": 3,
    }
    values.update(fields)
    return Grant(**values)  # type: ignore[arg-type]


async def test_an_append_is_in_the_history_once(store: RedisStore, relay: Relay) -> None:
    handler = HumanInputHandler(store=store)
    request = await handler.create("ask", {"question": "Which hotel?"}, room_id="r")
    pending_id = request.pending_id
    await store.append_history(pending_id, new_entry("shown", surface="first"))

    marked = new_entry("shown", surface="lost-reply")
    seq = await lost(relay, b"lost-reply", store.append_history(pending_id, marked))

    history = await store.read_history(pending_id)
    assert [entry["surface"] for entry in history if entry["type"] == "shown"] == [
        "first",
        "lost-reply",
    ]
    assert history[seq]["surface"] == "lost-reply"
    await store.append_history(pending_id, new_entry("shown", surface="after"))
    assert [entry["seq"] for entry in await store.read_history(pending_id)] == list(
        range(len(history) + 1)
    )
    await handler.close()


async def test_a_spend_is_won_by_its_caller(store: RedisStore, relay: Relay) -> None:
    assert await store.spend_once("link:warm-up", until=None)

    assert await lost(relay, b"link:lost-reply", store.spend_once("link:lost-reply", until=None))
    assert not await store.spend_once("link:lost-reply", until=None)


async def test_a_refund_never_forgets_a_spend_made_after_it(
    store: RedisStore, relay: Relay, redis_server: RedisServer, clock: FakeClock
) -> None:
    """Another process spends the entry between the refund and the client's re-send of it:
    that spend stands."""
    await store.refund_spent("link:warm-up")
    assert await store.spend_once("link:lost-reply", until=None)
    elsewhere = Redis.from_url(redis_server.url)

    def spend_elsewhere() -> None:
        elsewhere.set(f"{store.prefix}:ledger:link:lost-reply", f"{clock.now!r} -")

    # Before the refund goes in: arm the spend elsewhere for the command after it, the
    # client's re-send of the refund.
    relay.call_before(
        b"link:lost-reply", lambda: relay.call_before(b"link:lost-reply", spend_elsewhere)
    )
    await lost(relay, b"link:lost-reply", store.refund_spent("link:lost-reply"))
    elsewhere.close()

    assert await store.read_spent(["link:lost-reply"]) == {"link:lost-reply": clock.now}
    assert not await store.spend_once("link:lost-reply", until=None)


async def test_a_grant_use_is_counted_once(store: RedisStore, relay: Relay) -> None:
    await store.grants.add(grant("g-warm-up"))
    assert await store.grants.use("g-warm-up") is not None
    await store.grants.add(grant("g-lost-reply"))

    used = await lost(relay, b"g-lost-reply", store.grants.use("g-lost-reply"))

    assert used is not None
    assert used.uses == 1
    stored = await store.grants.get("g-lost-reply")
    assert stored is not None
    assert stored.uses == 1


async def test_a_call_a_grant_covers_counts_one_use(store: RedisStore, relay: Relay) -> None:
    """Already safe: the insert that counts the use (and settles the request), sent again,
    finds its request stored and counts nothing more."""
    handler = HumanInputHandler(store=store)
    grant = await granted(handler, GrantScope(expires_in=3600, max_uses=5))
    assert (await held(handler)).status is PendingInputStatus.RESOLVED

    covered = await lost(relay, sha(INSERT_GRANTED_SETTLED), held(handler))

    assert covered.status is PendingInputStatus.RESOLVED
    stored = await store.grants.get(grant.grant_id)
    assert stored is not None
    assert stored.uses == 2
    history = await store.read_history(covered.pending_id)
    assert [entry["type"] for entry in history].count("grant_used") == 1
    await handler.close()


async def test_a_call_a_policy_settles_is_stored_once(store: RedisStore, relay: Relay) -> None:
    """The insert of a request settled as it is made, sent again, finds it stored: one
    request, its history written once."""
    handler = HumanInputHandler(store=store)
    decided = create_decided(
        handler, "pay", {"amount": 5}, approve(), by="policy:p", surface="policy"
    )
    request = await lost(relay, sha(INSERT_SETTLED), decided)

    assert request.status is PendingInputStatus.RESOLVED
    history = await store.read_history(request.pending_id)
    assert [entry["type"] for entry in history] == ["created", "decided", "settled"]
    assert [listed.pending_id for listed in await store.list_settled()] == [request.pending_id]
    await handler.close()


async def test_a_grant_added_or_revoked_says_so_to_its_caller(
    store: RedisStore, relay: Relay
) -> None:
    await store.grants.add(grant("g-warm-up"))
    assert await store.grants.revoke("g-warm-up", by="ann")

    added = await lost(relay, b"g-lost-add", store.grants.add(grant("g-lost-add")))
    assert added.grant_id == "g-lost-add"
    assert await lost(relay, b"g-lost-add", store.grants.revoke("g-lost-add", by="ann")) is True
    assert await store.grants.revoke("g-lost-add", by="ann") is False


async def test_a_claim_hands_its_items_to_its_caller(store: RedisStore, relay: Relay) -> None:
    outbox = store.outbox
    await outbox.claim("warm-up", 0.0, 60.0, 10)
    await outbox.add([OutboxItem("p1.remind0", "p1", 1.0, {"job": "remind"}, created=0.0)])

    claimed = await lost(
        relay, b"owner-lost-reply", outbox.claim("owner-lost-reply", 5.0, 60.0, 10)
    )

    assert [item.item_id for item in claimed] == ["p1.remind0"]


async def test_a_claim_by_lanes_hands_its_items_to_its_caller(
    store: RedisStore, relay: Relay
) -> None:
    outbox = store.outbox
    await outbox.claim("warm-up", 0.0, 60.0, 10, lanes={"slack": 1})
    item = OutboxItem("p1.slack0", "p1", 1.0, {"surface": "slack"}, created=0.0)
    await outbox.add([item])

    claimed = await lost(
        relay, b"owner-lost-reply", outbox.claim("owner-lost-reply", 5.0, 60.0, 10, lanes={})
    )

    assert [item.item_id for item in claimed] == ["p1.slack0"]


async def test_a_postponed_item_counts_one_attempt(store: RedisStore, relay: Relay) -> None:
    outbox = store.outbox
    items = [OutboxItem(f"p1.remind{n}", "p1", 1.0, {}, created=float(n)) for n in range(2)]
    await outbox.add(items)
    await outbox.claim("owner", 5.0, 60.0, 10)
    await outbox.postpone("p1.remind0", 100.0)

    await lost(relay, b"p1.remind1", outbox.postpone("p1.remind1", 100.0, {"tried": 1}))

    found = {item.item_id: item for item in await outbox.items_for("p1")}
    assert [found[f"p1.remind{n}"].attempts for n in range(2)] == [1, 1]
    assert found["p1.remind1"].receipt == {"tried": 1}
    assert found["p1.remind1"].due == 100.0


async def test_a_completed_item_is_done_once(store: RedisStore, relay: Relay) -> None:
    """Already safe: completing an item twice writes the same."""
    outbox = store.outbox
    items = [OutboxItem(f"p1.remind{n}", "p1", 1.0, {}, created=float(n)) for n in range(2)]
    await outbox.add(items)
    await outbox.claim("owner", 5.0, 60.0, 10)
    await outbox.complete("p1.remind0", None)

    await lost(relay, b"p1.remind1", outbox.complete("p1.remind1", {"sent": True}))

    found = {item.item_id: item for item in await outbox.items_for("p1")}
    assert found["p1.remind1"].done
    assert found["p1.remind1"].receipt == {"sent": True}
    assert await outbox.claim("owner", 500.0, 60.0, 10) == []


async def test_a_vote_is_counted_once(store: RedisStore, relay: Relay) -> None:
    """Already safe: the vote sent again finds its token among the votes."""
    handler = HumanInputHandler(store=store)
    approvers = ["ann", "bob", "cid"]
    warm_up = await handler.create_approval("t", {"a": 1}, approvers=approvers, quorum=2)
    assert await handler.aresolve(warm_up.pending_id, approve(), by="ann")
    held = await handler.create_approval("t", {"a": 2}, approvers=approvers, quorum=2)

    assert await lost(relay, sha(VOTE), handler.aresolve(held.pending_id, approve(), by="ann"))

    record = await handler.get_request(held.pending_id)
    assert record is not None
    assert [vote.actor for vote in record.votes] == ["ann"]
    history = await store.read_history(held.pending_id)
    assert [entry["actor"] for entry in history if entry["type"] == "voted"] == ["ann"]
    assert await handler.aresolve(held.pending_id, approve(), by="bob")
    assert await handler.wait(held.pending_id) is not None
    await handler.close()

"""A Redis settle whose reply is lost learns its outcome from its settle token.

The server is killed (SIGKILL) or the store's connections cut (CLIENT KILL) around settles.
A settle that ran on the server but whose reply never arrived reports that it won once the
server answers again; one that did not run settles then. Only a server that stays away for
``settle_retry`` seconds leaves the outcome unknown, and then the same token, sent again,
still tells.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

import pytest
from redis.asyncio import Redis
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import PATIENCE, RESOLVED, logged, make_request

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores import settled_entry
from roomkit.stores.redis import RedisStore

LOGGER = "roomkit.tools.human_input.stores.redis"
RETRYING = "may or may not have landed"
"""What the store logs when it runs a settle again to learn its outcome."""
SETTLES = 96
SETTLERS = "roomkit-settlers"


async def warmed(store: RedisStore) -> None:
    """Settle a request of its own, so that the server holds the settle script: the reply
    a test loses is then the script's, not a NOSCRIPT refusal."""
    request, _ = await store.insert(make_request())
    assert await store.settle(request.pending_id, RESOLVED, result="warm-up") is not None


def ran(dropped: bytes, answer: str) -> bool:
    """Whether the lost reply is a settle script's record holding ``answer``."""
    return dropped.startswith(b"$") and answer.encode() in dropped


async def first_of(*waits: Awaitable[object]) -> None:
    """Return once any of ``waits`` has finished; the futures among them go on running."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for wait, task in zip(waits, tasks, strict=True):
        if task is not wait:
            task.cancel()


async def test_a_settle_whose_reply_a_crash_lost_reports_that_it_won(
    server: RedisServer, prefix: str
) -> None:
    """The script ran and the server died before its reply arrived: after the restart the
    settle finds its own token and reports the win instead of StoreUnavailableError."""
    async with (
        asyncio.timeout(PATIENCE),
        Relay(server.port) as relay,
        RedisStore(relay.url, prefix=prefix, settle_retry=PATIENCE) as store,
    ):
        await warmed(store)
        request, _ = await store.insert(make_request())
        relay.lose_reply_to(b"EVALSHA")
        with logged(LOGGER, RETRYING, level=logging.INFO) as retrying:
            settling = asyncio.create_task(
                store.settle(
                    request.pending_id,
                    RESOLVED,
                    result="kept",
                    settled_by="alice",
                    history=[settled_entry("resolved", actor="alice")],
                )
            )
            await relay.lost.wait()
            assert ran(relay.dropped, "kept")
            await asyncio.to_thread(server.stop, kill=True)
            # The client's own retries are spent on a dead server; the store's are not.
            await first_of(retrying.wait(), settling)
            await asyncio.to_thread(server.start)
        record = await settling
        history = await store.read_history(request.pending_id)

    assert record is not None
    assert (record.status, record.result, record.settled_by) == (RESOLVED, "kept", "alice")
    # The script that ran appended the entry; the run that found its token appended none.
    assert [(entry["type"], entry["actor"]) for entry in history] == [("settled", "alice")]


async def test_a_settle_whose_outcome_stays_unknown_says_so_and_its_token_tells_later(
    server: RedisServer, prefix: str
) -> None:
    """With no time to retry, the lost reply leaves the outcome unknown; once the server is
    back a new token learns that the request is settled, the same token that it won."""
    async with (
        asyncio.timeout(PATIENCE),
        Relay(server.port) as relay,
        RedisStore(relay.url, prefix=prefix, settle_retry=0) as store,
    ):
        await warmed(store)
        request, _ = await store.insert(make_request())
        relay.lose_reply_to(b"EVALSHA")
        settling = asyncio.create_task(
            store.settle(request.pending_id, RESOLVED, result="kept", token="vote-1")
        )
        await relay.lost.wait()
        assert ran(relay.dropped, "kept")
        await asyncio.to_thread(server.stop, kill=True)
        with pytest.raises(StoreUnavailableError, match="unknown") as caught:
            await settling
        await asyncio.to_thread(server.start)

        other = await store.settle(request.pending_id, RESOLVED, result="kept")
        again = await store.settle(request.pending_id, RESOLVED, result="kept", token="vote-1")

    assert "aresolve with the same answer and by=" in str(caught.value)
    assert again is not None
    assert again.result == "kept"
    assert other is None


async def test_settles_around_a_crash_all_report_their_real_outcome(
    server: RedisServer, prefix: str
) -> None:
    """Two stores race to settle every request while the server is killed and restarted:
    none raises, and for each request exactly one settle reports a win, the recorded one."""
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(server.url, prefix=prefix, settle_retry=PATIENCE) as first,
        RedisStore(server.url, prefix=prefix, settle_retry=PATIENCE) as rival,
    ):
        requests = [(await first.insert(make_request()))[0] for _ in range(SETTLES)]
        ids = [request.pending_id for request in requests]
        quarter = asyncio.Event()
        won: dict[tuple[str, str], bool] = {}

        async def settler(store: RedisStore, name: str, share: list[str]) -> None:
            # One settle after another, so that some are in flight whenever the server dies.
            for pending_id in share:
                record = await store.settle(pending_id, RESOLVED, result=f"{name} {pending_id}")
                won[name, pending_id] = record is not None
                if len(won) == SETTLES // 4:
                    quarter.set()

        def crew(store: RedisStore, name: str, order: list[str]) -> list[asyncio.Future[None]]:
            return [asyncio.ensure_future(settler(store, name, order[n::8])) for n in range(8)]

        with logged(LOGGER, RETRYING, level=logging.INFO) as retrying:
            settling = crew(first, "first", ids)
            await first_of(quarter.wait(), asyncio.gather(*settling))
            settling += crew(rival, "rival", ids[::-1])
            await asyncio.to_thread(server.stop, kill=True)
            await first_of(retrying.wait(), asyncio.gather(*settling))
            await asyncio.to_thread(server.start)
            await asyncio.gather(*settling)

        for pending_id in ids:
            # Exactly one of the two settles won, and its answer is the one recorded.
            winners = [name for name in ("first", "rival") if won[name, pending_id]]
            assert len(winners) == 1, (pending_id, winners)
            record = await first.fetch(pending_id)
            assert record is not None
            assert record.result == f"{winners[0]} {pending_id}"


async def test_settles_whose_connections_are_cut_all_report_their_real_outcome(
    redis_server: RedisServer, prefix: str, raw: Redis
) -> None:
    """CLIENT KILL cuts every connection of the settling store while settles are in flight:
    each still reports the win its script recorded."""
    url = f"{redis_server.url}?client_name={SETTLERS}"
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(url, prefix=prefix, settle_retry=PATIENCE) as store,
    ):
        requests = [(await store.insert(make_request()))[0] for _ in range(SETTLES)]
        settling = [
            asyncio.ensure_future(
                store.settle(request.pending_id, RESOLVED, result=f"answer {index}")
            )
            for index, request in enumerate(requests)
        ]
        await asyncio.sleep(0)  # the settles are on their way
        cut = [client["id"] for client in await raw.client_list() if client["name"] == SETTLERS]
        for client_id in cut:
            await raw.client_kill_filter(_id=client_id)
        won = await asyncio.gather(*settling)

        for index, (request, record) in enumerate(zip(requests, won, strict=True)):
            assert record is not None, index
            assert record.result == f"answer {index}"
            stored = await store.fetch(request.pending_id)
            assert stored is not None
            assert stored.result == f"answer {index}"


async def test_once_an_outage_outlasts_the_retries_later_settles_give_up_at_once(
    server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The bound counts from the start of the outage: a close withdrawing many requests
    does not wait it out for each of them."""
    async with RedisStore(server.url, prefix=prefix, settle_retry=0.3) as store:
        first, _ = await store.insert(make_request())
        second, _ = await store.insert(make_request())
        server.stop()
        with caplog.at_level(logging.INFO, logger=LOGGER):
            for request in (first, second):
                with pytest.raises(StoreUnavailableError, match="unknown"):
                    await store.settle(request.pending_id, RESOLVED, result="x")
        server.start()

        retried = [record for record in caplog.records if RETRYING in record.getMessage()]
        assert [record.getMessage().count(repr(first.pending_id)) for record in retried] == [1]
        # The store answers again: a settle goes through, and the outage is over.
        assert await store.settle(second.pending_id, RESOLVED, result="x") is not None

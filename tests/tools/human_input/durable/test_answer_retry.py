"""An answer sent again by the same actor is told it won, on every store; anyone else loses.

A desk that got :class:`StoreUnavailableError` for an answer the store did record sends it
again: ``aresolve(..., by=actor)`` then returns ``True``, because the recorded outcome is
this actor's own answer. A different answer, another actor, or no actor at all still gets
``False``. On Redis the first answer really does fail: its reply is lost and the server killed.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.redis_server import running_redis

from roomkit.core.exceptions import HumanInputRejectedError, StoreUnavailableError
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler


async def test_the_same_answer_by_the_same_actor_is_told_it_won_again(
    make_handler: HandlerFactory,
) -> None:
    asker, desk = make_handler(), make_handler()
    request = await asker.create("AskUserQuestion", {"question": "Ship it?"}, actor_id="alice")
    waiting = asyncio.create_task(asker.wait(request.pending_id, timeout=30))

    assert await desk.aresolve(request.pending_id, "yes", by="alice") is True
    assert await desk.aresolve(request.pending_id, "yes", by="alice") is True
    # The process that asked, answering for the same actor, is told the same.
    assert await asker.aresolve(request.pending_id, "yes", by="alice") is True

    assert await waiting == "yes"


async def test_another_answer_or_another_actor_still_loses(make_handler: HandlerFactory) -> None:
    asker, desk = make_handler(), make_handler()
    request = await asker.create("AskUserQuestion", {"question": "Ship it?"}, actor_id="alice")
    waiting = asyncio.create_task(asker.wait(request.pending_id, timeout=30))
    assert await desk.aresolve(request.pending_id, "yes", by="alice") is True

    assert await desk.aresolve(request.pending_id, "no", by="alice") is False
    assert await desk.aresolve(request.pending_id, "yes", by="bob") is False
    assert await asker.aresolve(request.pending_id, "no", by="alice") is False

    assert await waiting == "yes"
    settled = await desk.get_request(request.pending_id)
    assert settled is not None
    assert (settled.result, settled.settled_by) == ("yes", "alice")


async def test_an_answer_with_no_actor_is_never_recognised(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    anonymous = await handler.create("AskUserQuestion", {"question": "Ship it?"})
    signed = await handler.create("AskUserQuestion", {"question": "Deploy?"})

    assert await handler.aresolve(anonymous.pending_id, "yes") is True
    assert await handler.aresolve(anonymous.pending_id, "yes") is False
    assert await handler.aresolve(signed.pending_id, "yes", by="alice") is True
    assert await handler.aresolve(signed.pending_id, "yes") is False

    assert await handler.wait(anonymous.pending_id, timeout=30) == "yes"
    assert await handler.wait(signed.pending_id, timeout=30) == "yes"


async def test_an_answer_after_the_same_actor_rejected_loses(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "Ship it?"})

    assert await handler.areject(request.pending_id, "yes", by="alice") is True
    assert await handler.aresolve(request.pending_id, "yes", by="alice") is False

    with pytest.raises(HumanInputRejectedError):
        await handler.wait(request.pending_id, timeout=30)


async def test_an_answer_that_failed_but_was_recorded_is_won_when_sent_again(
    tmp_path: Path,
) -> None:
    """The answer ran on Redis and the server died before its reply arrived: aresolve raised.
    Sent again once the server is back, it returns True; bob's answer still loses."""
    prefix = f"retry{os.urandom(4).hex()}"
    with running_redis(tmp_path) as server:
        async with (
            asyncio.timeout(30),
            Relay(server.port) as relay,
            RedisStore(relay.url, prefix=prefix, settle_retry=0) as store,
        ):
            handler = HumanInputHandler(store=store)
            # A first answer loads the settle script: the reply lost below is the script's.
            warm_up = await handler.create("AskUserQuestion", {"question": "Warm?"})
            assert await handler.aresolve(warm_up.pending_id, "yes") is True
            request = await handler.create(
                "AskUserQuestion", {"question": "Ship it?"}, actor_id="alice"
            )
            relay.lose_reply_to(b"EVALSHA")
            answering = asyncio.create_task(handler.aresolve(request.pending_id, "yes", by="alice"))
            await relay.lost.wait()
            assert relay.dropped.startswith(b"$")  # the script ran: a record came back
            await asyncio.to_thread(server.stop, kill=True)
            with pytest.raises(StoreUnavailableError, match="unknown"):
                await answering
            await asyncio.to_thread(server.start)

            assert await handler.aresolve(request.pending_id, "yes", by="bob") is False
            assert await handler.aresolve(request.pending_id, "yes", by="alice") is True
            assert await handler.wait(request.pending_id, timeout=30) == "yes"
            await handler.close()

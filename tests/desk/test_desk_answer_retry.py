"""An answer sent again after a 503 gets 200 when it was in fact recorded; others get 409.

On Redis the first answer really fails: the server runs the settle, its reply is lost and
the server is killed (or the server freezes as the settle reaches it), so the desk answers
503. Once the server is back, the same person sending the same answer is told 200; a
different answer or another person gets 409. An answer through a single-use link whose
spend's reply is lost (the client sends the spend again) is the link's one use: 200; one
whose link the store went down too soon to give back is told so, and where to answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any

import httpx
from desk_harness import SECRET, World, bearer
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.redis_server import running_redis

from roomkit.desk import issue_answer_link
from roomkit.stores.redis import RedisStore
from roomkit.stores.redis._ledger import SPEND
from roomkit.stores.redis._scripts import SETTLE
from roomkit.tools.human_input import HumanInputHandler


async def post_answer(
    client: httpx.AsyncClient, pending_id: str, answer: str, actor: str
) -> tuple[int, dict[str, Any]]:
    response = await client.post(
        f"/api/requests/{pending_id}/answer", json={"answer": answer}, headers=bearer(actor)
    )
    return response.status_code, response.json()


async def test_the_same_answer_sent_again_gets_200_and_any_other_409() -> None:
    world = World()
    await world.room("room", "alice", "bob")
    pending_id = await world.ask({"question": "Colour?"}, actor_id=None)

    async with world.client() as client:
        first = await post_answer(client, pending_id, "blue", "alice")
        again = await post_answer(client, pending_id, "blue", "alice")
        changed = await post_answer(client, pending_id, "red", "alice")
        other = await post_answer(client, pending_id, "blue", "bob")

    assert first[0] == again[0] == 200
    assert again[1] == first[1]
    assert (again[1]["status"], again[1]["result"], again[1]["settled_by"]) == (
        "resolved",
        "blue",
        "alice",
    )
    assert (changed[0], other[0]) == (409, 409)
    assert await world.handler.wait(pending_id) == "blue"
    # Counted once: the answer sent again is the one already recorded.
    async with world.client() as client:
        figures = await client.get("/metrics", headers=bearer("root", admin=True))
    answers = [
        line for line in figures.text.splitlines() if line.startswith("roomkit_answers_total{")
    ]
    assert 'roomkit_answers_total{surface="desk"} 1.0' in answers, answers


async def test_an_answer_that_got_503_but_was_recorded_gets_200_when_sent_again(
    tmp_path: Path,
) -> None:
    with running_redis(tmp_path) as server:
        async with (
            asyncio.timeout(30),
            Relay(server.port) as relay,
            RedisStore(relay.url, prefix=f"desk{os.urandom(4).hex()}", settle_retry=0) as store,
        ):
            world = World(handler=HumanInputHandler(store=store))
            await world.room("room", "alice", "bob")
            # A first answer loads the settle script: the reply lost below is the script's.
            warm_up = await world.ask({"question": "Warm?"}, actor_id=None)
            pending_id = await world.ask({"question": "Colour?"}, actor_id=None)
            async with world.client() as client:
                assert (await post_answer(client, warm_up, "yes", "alice"))[0] == 200

                relay.lose_reply_to(b"EVALSHA")
                answering = asyncio.create_task(post_answer(client, pending_id, "blue", "alice"))
                await relay.lost.wait()
                await asyncio.to_thread(server.stop, kill=True)
                refused = await answering
                await asyncio.to_thread(server.start)

                other = await post_answer(client, pending_id, "blue", "bob")
                again = await post_answer(client, pending_id, "blue", "alice")
            await world.handler.close()

    assert refused[0] == 503
    assert other[0] == 409
    assert again[0] == 200
    assert (again[1]["status"], again[1]["result"], again[1]["settled_by"]) == (
        "resolved",
        "blue",
        "alice",
    )


async def test_an_answer_the_frozen_store_never_acknowledged_gets_503_saying_so(
    tmp_path: Path,
) -> None:
    """The server freezes as the settle reaches it: the desk answers 503 once the store's
    timeout has passed, saying that whether the answer counted is unknown; once the server runs, the
    settle it held is recorded, and the same answer sent again gets 200, another 409."""
    prefix = f"desk{os.urandom(4).hex()}"
    with running_redis(tmp_path) as server:
        try:
            async with (
                asyncio.timeout(30),
                Relay(server.port) as relay,
                # A one-second timeout rather than the default 5 s, which the frozen call sits out.
                RedisStore(relay.url, prefix=prefix, settle_retry=0, timeout=1.0) as store,
            ):
                world = World(handler=HumanInputHandler(store=store))
                await world.room("room", "alice", "bob")
                # A first answer loads the settle script: the call frozen below is the settle.
                warm_up = await world.ask({"question": "Warm?"}, actor_id=None)
                pending_id = await world.ask({"question": "Colour?"}, actor_id=None)
                async with world.client() as client:
                    assert (await post_answer(client, warm_up, "yes", "alice"))[0] == 200

                    relay.call_before(b"EVALSHA", server.pause)
                    refused = await post_answer(client, pending_id, "blue", "alice")
                    server.resume()

                    other = await post_answer(client, pending_id, "blue", "bob")
                    again = await post_answer(client, pending_id, "blue", "alice")
                assert await world.handler.wait(pending_id) == "blue"
                history = await store.read_history(pending_id)
                await world.handler.close()
        finally:
            server.resume()

    assert refused[0] == 503
    assert "did not answer, so whether this decision was recorded is unknown" in str(refused[1])
    assert other[0] == 409
    assert again[0] == 200
    assert (again[1]["result"], again[1]["settled_by"]) == ("blue", "alice")
    assert [entry["actor"] for entry in history if entry["type"] == "settled"] == ["alice"]


async def test_an_answer_link_whose_spend_lost_its_reply_answers_once(tmp_path: Path) -> None:
    """The server spends the link and the reply is lost: the client sends the spend again,
    which finds the link spent by this very answer, and the answer is recorded."""
    with running_redis(tmp_path) as server:
        async with (
            asyncio.timeout(30),
            Relay(server.port) as relay,
            RedisStore(relay.url, prefix=f"desk{os.urandom(4).hex()}") as store,
        ):
            world = World(handler=HumanInputHandler(store=store))
            await world.room("room", "alice", "bob")
            # A first answer loads the spend script: the reply lost below is the spend's.
            warm_up = await world.ask({"question": "Warm?"}, actor_id="bob")
            pending_id = await world.ask({"question": "Colour?"}, actor_id="bob")
            async with world.client() as client:
                link = issue_answer_link(SECRET, warm_up, "bob", 600)
                assert (await post_answer(client, warm_up, "yes", link))[0] == 200

                relay.lose_reply_to(hashlib.sha1(SPEND.encode()).hexdigest().encode())
                link = issue_answer_link(SECRET, pending_id, "bob", 600)
                answered = await post_answer(client, pending_id, "blue", link)
                assert relay.lost.is_set()
                assert answered[0] == 200, answered
                again = await post_answer(client, pending_id, "blue", link)
            assert await world.handler.wait(pending_id) == "blue"
            history = await store.read_history(pending_id)
            await world.handler.close()

    assert (answered[1]["result"], answered[1]["settled_by"]) == ("blue", "bob")
    assert again[0] == 401
    assert [entry["actor"] for entry in history if entry["type"] == "settled"] == ["bob"]


async def test_an_answer_link_the_store_could_not_give_back_says_where_to_answer(
    tmp_path: Path,
) -> None:
    """The server stops between the link's spend and the settle: nothing is recorded and the
    link cannot be given back, so the 503 says to sign in to answer, not to send it again
    through the link (which the desk refuses as used)."""
    with running_redis(tmp_path) as server:
        async with (
            asyncio.timeout(30),
            Relay(server.port) as relay,
            RedisStore(
                relay.url, prefix=f"desk{os.urandom(4).hex()}", settle_retry=0, timeout=1.0
            ) as store,
        ):
            world = World(handler=HumanInputHandler(store=store))
            await world.room("room", "alice", "bob")
            # A first answer loads the settle script: the call stopped below is the settle.
            warm_up = await world.ask({"question": "Warm?"}, actor_id="bob")
            pending_id = await world.ask({"question": "Colour?"}, actor_id="bob")
            async with world.client() as client:
                assert (await post_answer(client, warm_up, "yes", "bob"))[0] == 200
                link = issue_answer_link(SECRET, pending_id, "bob", 600)
                relay.call_before(hashlib.sha1(SETTLE.encode()).hexdigest().encode(), server.stop)
                refused = await post_answer(client, pending_id, "blue", link)
                await asyncio.to_thread(server.start)
                again = await post_answer(client, pending_id, "blue", link)
                held = await world.handler.get_request(pending_id)
            await world.handler.close()

    assert refused[0] == 503
    assert "answer link could not be given back" in refused[1]["detail"]
    assert "sign in to the desk" in refused[1]["detail"]
    assert "send it again" not in refused[1]["detail"]
    assert again[0] == 401
    assert held is not None
    assert held.status == "pending"

"""``GET /metrics``: the desk's figures in the Prometheus text format, open on loopback and
for an administrator's token elsewhere, one registry per desk."""

from __future__ import annotations

import asyncio
import json
import socket

import httpx
import pytest
import websockets
from desk_harness import SECRET, World, bearer, serve, socket_for, token, ws_url
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import connect

from roomkit.desk import issue_answer_link
from roomkit.desk.metrics import from_loopback
from roomkit.tools.human_input import HumanInputHandler

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Every sample of the page, by name and labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def scrape(world: World, **headers: str) -> Samples:
    async with world.client() as client:
        response = await client.get("/metrics", headers=headers or bearer("root", admin=True))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return samples(response.text)


@pytest.fixture
async def world() -> World:
    world = World()
    await world.room("room", "alice", "bob")
    return world


async def test_off_loopback_only_an_administrators_token_reads_the_figures(world: World) -> None:
    link = issue_answer_link(SECRET, await world.ask(), "alice", 600)
    async with world.client() as client:
        missing = await client.get("/metrics")
        forged = await client.get("/metrics", headers={"Authorization": "Bearer forged.token"})
        person = await client.get("/metrics", headers=bearer("alice"))
        answer_link = await client.get("/metrics", headers=bearer(link))
        admin = await client.get("/metrics", headers=bearer("root", admin=True))

    assert (missing.status_code, missing.headers["www-authenticate"]) == (401, "Bearer")
    assert "administrator" in missing.json()["detail"]
    assert forged.status_code == 401
    assert person.status_code == 403
    assert "administrator" in person.json()["detail"]
    # An answer link is refused as everywhere but the desk's page: 401, saying what it is for.
    assert answer_link.status_code == 401
    assert "answers its one request" in answer_link.json()["detail"]
    assert admin.status_code == 200
    assert "roomkit_open_requests" in admin.text


async def test_on_loopback_the_figures_need_no_token_but_a_rebound_name_is_refused(
    world: World,
) -> None:
    async with serve(world.app) as base, httpx.AsyncClient(base_url=base) as client:
        response = await client.get("/metrics")
        rebound = await client.get("/metrics", headers={"Host": "attacker.example"})
    assert response.status_code == 200
    assert "roomkit_websocket_clients 0.0" in response.text
    assert rebound.status_code == 400


def test_only_a_loopback_address_counts_as_loopback() -> None:
    for address in ("127.0.0.1", "127.5.0.1", "::1", "::ffff:127.0.0.1"):
        assert from_loopback({"server": (address, 8765)}), address
    for server in (("10.0.0.7", 80), ("desk.test", 80), ("::ffff:10.0.0.7", 80), None):
        assert not from_loopback({"server": server}), server
    assert not from_loopback({"server": ("/run/desk.sock", None)})
    assert not from_loopback({})


async def test_open_requests_count_by_kind(world: World) -> None:
    await world.ask({"question": "Which?"})
    await world.ask({"question": "Where?"}, actor_id=None)
    await world.ask({"action": "Deploy"}, tool_name="ConfirmAction")
    await world.ask({"anything": 1}, tool_name="Form")
    answered = await world.ask({"question": "Done?"})
    assert await world.handler.aresolve(answered, "yes")

    figures = await scrape(world)

    for kind, count in (("question", 2), ("questions", 0), ("confirm", 1), ("custom", 1)):
        assert figures[("roomkit_open_requests", (("kind", kind),))] == count


async def test_answers_and_refusals_count_by_surface_with_the_time_they_took(
    world: World,
) -> None:
    by_token, by_link = await world.ask(), await world.ask()
    refused = await world.ask(actor_id=None)
    link = issue_answer_link(SECRET, by_link, "alice", 600)
    async with world.client() as client:
        for path, body, who in (
            (f"/api/requests/{by_token}/answer", {"answer": "red"}, bearer("alice")),
            (f"/api/requests/{by_link}/answer", {"answer": "blue"}, bearer(link)),
            (f"/api/requests/{refused}/reject", {"reason": "no"}, bearer("bob")),
        ):
            assert (await client.post(path, json=body, headers=who)).status_code == 200

    figures = await scrape(world)

    assert figures[("roomkit_answers_total", (("surface", "desk"),))] == 1
    assert figures[("roomkit_answers_total", (("surface", "link"),))] == 1
    assert figures[("roomkit_rejections_total", (("surface", "desk"),))] == 1
    assert figures[("roomkit_rejections_total", (("surface", "link"),))] == 0
    assert figures[("roomkit_time_to_answer_seconds_count", ())] == 3
    assert figures[("roomkit_time_to_answer_seconds_bucket", (("le", "+Inf"),))] == 3
    assert figures[("roomkit_time_to_answer_seconds_sum", ())] >= 0


async def test_two_desks_in_one_process_keep_their_own_figures() -> None:
    first, second = World(), World()
    await first.room("room", "alice")
    asked = await first.ask()
    async with first.client() as client:
        answer = {"answer": "red"}
        path = f"/api/requests/{asked}/answer"
        assert (await client.post(path, json=answer, headers=bearer("alice"))).is_success

    assert (await scrape(first))[("roomkit_answers_total", (("surface", "desk"),))] == 1
    assert (await scrape(second))[("roomkit_answers_total", (("surface", "desk"),))] == 0


async def test_websocket_clients_and_the_handlers_own_figures_are_read_at_each_scrape(
    world: World,
) -> None:
    asked = await world.ask()
    waiting = asyncio.create_task(world.handler.wait(asked, timeout=60))
    async with serve(world.app) as base, socket_for(base, "alice"), socket_for(base, "bob"):
        figures = await scrape(world)
    assert figures[("roomkit_websocket_clients", ())] == 2
    assert figures[("roomkit_handler_parked_waits", ())] == 1
    assert figures[("roomkit_handler_armed_deadlines", ())] == 1
    assert figures[("roomkit_handler_active_requests", ())] == 1
    assert figures[("roomkit_handler_running_notifications", ())] == 0
    assert figures[("roomkit_handler_deadline_timers", ())] == 1
    assert world.handler.resolve(asked, "done")
    assert await waiting == "done"
    assert (await scrape(world))[("roomkit_websocket_clients", ())] == 0


def _closed_port() -> int:
    """A port on loopback where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_store_errors_are_counted_and_no_stale_open_count_is_shown() -> None:
    from roomkit.stores.redis import RedisStore

    store = RedisStore(f"redis://127.0.0.1:{_closed_port()}/0")
    world = World(handler=HumanInputHandler(store=store))
    try:
        async with world.client() as client:
            listed = await client.get("/api/requests", headers=bearer("alice"))
            answered = await client.post(
                f"/api/requests/{'a' * 32}/answer", json={"answer": "x"}, headers=bearer("alice")
            )
            remote = await client.get("/metrics", headers=bearer("root", admin=True))
        # Without the lifespan, whose start-up check refuses this store: what is counted is
        # a desk whose store went away while it serves.
        async with serve(world.app, lifespan="off") as base:
            async with connect(ws_url(base)) as ws:
                await ws.send(json.dumps({"type": "auth", "token": token("alice")}))
                with pytest.raises(websockets.ConnectionClosed):
                    await ws.recv()
            async with httpx.AsyncClient(base_url=base) as local:
                scraped = await local.get("/metrics")
    finally:
        await world.app.state.desk.aclose()
        await store.close()
    assert (listed.status_code, answered.status_code) == (503, 503)
    # Off loopback the token cannot be checked without the store: refused, not let through.
    assert remote.status_code == 503
    assert "loopback" in remote.json()["detail"]
    assert scraped.status_code == 200
    figures = samples(scraped.text)
    # The list, the answer, the socket, the refused scrape and the loopback scrape's read.
    assert figures[("roomkit_store_errors_total", ())] == 5
    assert not any(name == "roomkit_open_requests" for name, _ in figures)

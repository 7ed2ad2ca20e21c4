"""``notifier=``: the desk runs a notifier while its app runs, and counts it in /metrics."""

from __future__ import annotations

import httpx
import pytest
from desk_harness import SECRET, World, serve
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from tests.notify.receiver import Receiver

from roomkit import RoomKit
from roomkit.desk import Desk, desk_router
from roomkit.notify import Notifier, Webhook
from roomkit.tools.human_input import HumanInputHandler


def counted(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


async def test_the_desk_runs_its_notifier_and_the_answer_link_answers() -> None:
    """A webhook's answer link answers through the desk, once; /metrics counts both notices."""
    handler = HumanInputHandler()
    async with Receiver() as receiver:
        webhook = Webhook(receiver.url, receiver.secret)
        notifier = Notifier(handler, [webhook], desk_url="http://desk.test", link_secret=SECRET)
        world = World(handler=handler, notifier=notifier)
        await world.room("room", "alice")
        async with serve(world.app) as base:
            pending_id = await world.ask({"question": "Colour?"})
            [(_, pending)] = await receiver.wait_for(1)
            link = pending["answer_urls"]["alice"].split("#token=", 1)[1]
            async with httpx.AsyncClient(base_url=base) as client:
                headers = {"Authorization": f"Bearer {link}"}
                url = f"/api/requests/{pending_id}/answer"
                first = await client.post(url, json={"answer": "blue"}, headers=headers)
                again = await client.post(url, json={"answer": "red"}, headers=headers)
                [_, (_, settled)] = await receiver.wait_for(2)
                await notifier.wait_idle()
                figures = (await client.get("/metrics")).text
    assert first.status_code == 200, first.text
    assert again.status_code in (401, 409)
    assert settled["outcome"] == "resolved"
    assert counted(figures, "roomkit_notifications_delivered_total") == {
        (("surface", "webhook"),): 2.0
    }


def test_a_notifier_option_must_be_a_notifier() -> None:
    wrong: object = object()
    with pytest.raises(TypeError, match=r"notifier must be a roomkit\.notify\.Notifier"):
        Desk(RoomKit(), handler=HumanInputHandler(), secret=SECRET, notifier=wrong)  # type: ignore[typeddict-item]


async def test_an_app_including_desk_router_runs_the_notifier() -> None:
    handler = HumanInputHandler()
    async with Receiver() as receiver:
        notifier = Notifier(handler, [Webhook(receiver.url, receiver.secret)])
        app = FastAPI()
        app.include_router(
            desk_router(RoomKit(), handler=handler, secret=SECRET, notifier=notifier)
        )
        async with serve(app):
            await handler.create("ask", {"question": "Here?"}, actor_id="alice")
            [(_, body)] = await receiver.wait_for(1)
    assert body["type"] == "question_pending"

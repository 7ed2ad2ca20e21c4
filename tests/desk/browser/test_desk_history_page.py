"""The page's "Recently settled": the person's outcomes come back from the store on a reload,
each with what was answered, or why not."""

from __future__ import annotations

import json

import pytest
from desk_page import OpenPage, card, settled, wait_live
from desk_server import DeskServer
from playwright.sync_api import expect

from roomkit.core.exceptions import HumanInputTimeoutError
from roomkit.desk.demo import DEMO_PERSON


def test_recent_outcomes_come_back_after_a_reload_with_the_answer_or_the_reason(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    handler = desk.demo.handler

    async def settle_some() -> None:
        async def ask(tool_name: str, arguments: dict[str, object]) -> str:
            request = await handler.create_detached(
                tool_name, arguments, room_id=room, actor_id=DEMO_PERSON
            )
            return request.pending_id

        picked = await ask("AskUserQuestion", {"question": "Which city?", "options": ["Rome"]})
        assert await handler.aresolve(picked, "Rome", by=DEMO_PERSON)
        yes = await ask("ConfirmAction", {"action": "Book the flight"})
        assert await handler.aresolve(yes, json.dumps({"confirmed": True}), by=DEMO_PERSON)
        refused = await ask("AskUserQuestion", {"question": "Budget?"})
        assert await handler.areject(refused, "ask my partner", by="partner")
        timed = await handler.create(
            "AskUserQuestion", {"question": "Anyone?"}, room_id=room, actor_id=DEMO_PERSON
        )
        with pytest.raises(HumanInputTimeoutError):
            await handler.wait(timed.pending_id, timeout=0.01)

    desk.run(settle_some())
    desk.run(
        handler.create_detached(
            "AskUserQuestion", {"question": "Your name?"}, room_id=room, actor_id=DEMO_PERSON
        )
    )
    page = open_page(desk.link(room)).page
    wait_live(page)
    free = card(page, "question")
    free.get_by_label("Your answer").fill("Ada <b>Lovelace</b>")
    free.get_by_role("button", name="Answer").click()
    expect(page.locator(".card")).to_have_count(0)
    page.reload()
    wait_live(page)

    outcomes = settled(page, room)
    expect(outcomes.locator(".settled-what")).to_have_text(
        ["Your name?", "Anyone?", "Budget?", "Book the flight", "Which city?"]
    )
    expect(outcomes.locator(".settled-how")).to_have_text(
        [
            "Answered by you",
            "Timed out: nobody answered in time",
            "Declined by partner: ask my partner",
            "Confirmed by you",
            "Answered by you",
        ]
    )
    expect(outcomes.locator(".settled-answer")).to_have_text(["Ada <b>Lovelace</b>", "Rome"])
    assert outcomes.evaluate_all("items => items.map(i => i.dataset.outcome)") == [
        "answered",
        "timed_out",
        "declined",
        "confirmed",
        "answered",
    ]


def test_a_no_to_a_confirmation_reads_as_declined_live_and_after_a_reload(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    desk.run(
        desk.demo.handler.create_detached(
            "ConfirmAction", {"action": "Delete the backups"}, room_id=room, actor_id=DEMO_PERSON
        )
    )
    page = open_page(desk.link(room)).page
    confirm = card(page, "confirm")
    confirm.get_by_label("Reason").fill("keep them")
    confirm.get_by_role("button", name="No").click()
    outcome = settled(page, room)
    expect(outcome.locator(".settled-how")).to_have_text("Declined by you: keep them")
    page.reload()
    wait_live(page)
    expect(outcome.locator(".settled-how")).to_have_text("Declined by you: keep them")
    expect(outcome.locator(".settled-answer")).to_have_count(0)


def test_another_person_gets_none_of_the_history(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    handler = desk.demo.handler

    async def settle() -> None:
        request = await handler.create_detached(
            "AskUserQuestion", {"question": "Secret?"}, room_id=room, actor_id=DEMO_PERSON
        )
        assert await handler.aresolve(request.pending_id, "the secret", by=DEMO_PERSON)

    desk.run(settle())
    stranger = open_page(f"{desk.url}/#token={desk.token('eve')}&room={room}").page
    wait_live(stranger)
    mine = open_page(desk.link(room)).page
    expect(settled(mine, room).locator(".settled-answer")).to_have_text(["the secret"])
    expect(stranger.locator(".settled")).to_have_count(0)
    assert "the secret" not in stranger.content()

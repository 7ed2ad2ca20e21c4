"""A click deciding on a request its Slack message could not show whole changes nothing.

The message of such a request carries no Approve, Yes, No or option; a button that does
anyway (from a message sent by an older release) is refused, and a Reject still counts, as
refusing runs nothing. So is an option too long for its button.
"""

from __future__ import annotations

import pytest
from desk_harness import World
from tests.servers.slack_clicks import click

from roomkit.models.pending_input import arguments_digest
from roomkit.notify import Directory, Person, Slack

DIRECTORY = Directory({"alice": Person(slack_user="U0ALICE")})
ARGUMENTS = {"memo": "x" * 3000, "amount": 5000}
DIGEST = arguments_digest("pay", ARGUMENTS)
REFUSED = (
    "This request is too long for its Slack message, so nothing was changed: read it whole "
    "and decide in the desk."
)


async def status(world: World, pending_id: str) -> str:
    request = await world.handler.get_request(pending_id)
    assert request is not None
    return str(request.status)


@pytest.fixture
async def world(slack: Slack) -> World:
    made = World(slack=slack, directory=DIRECTORY)
    await made.room("room", "alice")
    return made


async def test_an_approve_on_an_approval_cut_short_changes_nothing(world: World) -> None:
    request = await world.handler.create_approval(
        "pay", ARGUMENTS, approvers=["alice"], room_id="room"
    )
    pending_id = request.pending_id
    async with world.client() as client:
        approve = click("U0ALICE", pending_id, f"roomkit:approve:{DIGEST}")
        refused = await client.post("/api/slack/interactions", **approve)
        assert refused.json() == {
            "response_type": "ephemeral",
            "replace_original": False,
            "text": REFUSED,
        }
        assert await status(world, pending_id) == "pending"
        reject = click("U0ALICE", pending_id, f"roomkit:reject:{DIGEST}")
        assert (await client.post("/api/slack/interactions", **reject)).status_code == 200
    assert await status(world, pending_id) == "rejected"
    counted = world.app.state.desk.metrics.render().decode()
    assert 'roomkit_slack_interactions_total{outcome="too_long"} 1.0' in counted


@pytest.mark.parametrize(
    ("arguments", "action_id"),
    [
        ({"action": "Pay", "details": {"memo": "x" * 3000}}, "roomkit:confirm:no"),
        ({"question": "Q" * 3000, "options": ["A", "B"]}, "roomkit:choose:0"),
    ],
)
async def test_an_answer_to_a_question_cut_short_changes_nothing(
    world: World, arguments: dict[str, object], action_id: str
) -> None:
    pending_id = await world.ask(arguments, actor_id="alice")
    async with world.client() as client:
        response = await client.post(
            "/api/slack/interactions", **click("U0ALICE", pending_id, action_id)
        )
    assert response.json()["text"] == REFUSED
    assert await status(world, pending_id) == "pending"


async def test_an_option_longer_than_its_button_is_not_chosen_by_a_click(world: World) -> None:
    """A button sent before such options went to the desk showed the option cut short: its
    click could choose what it did not say."""
    options = [f"Delete the branch {'x' * 70}-{end}" for end in ("old", "new")]
    pending_id = await world.ask({"question": "Which?", "options": options}, actor_id="alice")
    async with world.client() as client:
        response = await client.post(
            "/api/slack/interactions", **click("U0ALICE", pending_id, "roomkit:choose:0")
        )
    assert "answer it in the desk" in response.json()["text"]
    assert await status(world, pending_id) == "pending"

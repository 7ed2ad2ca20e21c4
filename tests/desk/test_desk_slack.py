"""``POST /api/slack/interactions``: a click on a Slack message settles the request as the
person the directory names, under the desk's own rule of who may answer.

The message is the one the real ``Slack`` surface posted to a fake Web API on loopback; the
click is signed with ``slack_sdk.signature`` the way Slack signs it, and posted to the real
desk app. The interaction's ``response_url`` points at the fake API, which records what the
desk told the clicker.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from desk_harness import World, bearer, serve
from slack_sdk.models.views import View
from tests.notify.slack_api import SIGNING_SECRET, TOKEN, SlackAPI, free_port
from tests.servers.slack_clicks import signed

from roomkit.desk import DeskLimits
from roomkit.models.pending_input import PendingInput
from roomkit.notify import Directory, Notice, Notifier, Person, Slack
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

DIRECTORY = Directory(
    {
        "alice": Person(slack_user="U0ALICE"),
        "bob": Person(slack_user="U0BOB"),
    }
)
PATH = "/api/slack/interactions"
QUESTION = {"question": "Q?", "options": ["A", "B"]}
NO_USER = urlencode(
    {
        "payload": json.dumps(
            {"type": "block_actions", "actions": [{"action_id": "roomkit:approve"}]}
        )
    }
).encode()


@pytest.fixture
async def world(slack: Slack) -> World:
    made = World(slack=slack, directory=DIRECTORY)
    await made.room("room", "alice", "bob")
    return made


class Click:
    """A click on one button of a message the Slack surface posted."""

    def __init__(self, slack_api: SlackAPI, message: dict[str, Any], button: str) -> None:
        actions = [b for b in message["blocks"] if b["type"] == "actions"]
        element = next(e for e in actions[0]["elements"] if e["text"]["text"] == button)
        self.slack_api = slack_api
        self.message = message
        self.element = element
        self.block_id = actions[0]["block_id"]

    def body(self, user: str = "U0ALICE", *, response: str = "r1", team: str = "T0TEAM") -> bytes:
        action = {
            "type": "button",
            "action_id": self.element["action_id"],
            "block_id": self.block_id,
            "text": self.element["text"],
            "action_ts": "1700000001.000200",
        }
        if "value" in self.element:
            action["value"] = self.element["value"]
        payload = {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "team_id": team},
            "api_app_id": "A0APP",
            "team": {"id": team, "domain": "example"},
            "channel": {"id": self.message["channel"], "name": "directmessage"},
            "container": {"type": "message", "message_ts": "1700000000.000001"},
            "message": {
                "type": "message",
                "text": self.message["text"],
                "blocks": self.message["blocks"],
            },
            "response_url": f"{self.slack_api.url}/response/{response}",
            "trigger_id": "1234.5678.abcd",
            "actions": [action],
        }
        return urlencode({"payload": json.dumps(payload)}).encode()


async def told(slack: Slack, slack_api: SlackAPI, request: PendingInput, button: str) -> Click:
    """Tell alice of ``request`` on Slack, and ready a click on ``button`` of the message."""
    notice = Notice(
        type="question_pending",
        delivery_id="d-1",
        request=request,
        recipient="alice",
        person=DIRECTORY.get("alice"),
        answer_url="https://desk.example.com/#token=x",
    )
    await slack.send(notice)
    return Click(slack_api, slack_api.posted()[-1], button)


async def posted_click(
    world: World,
    slack: Slack,
    slack_api: SlackAPI,
    arguments: dict[str, Any],
    button: str,
    *,
    actor_id: str | None = "alice",
) -> tuple[str, Click]:
    """Ask ``arguments`` of ``actor_id``, tell them on Slack, and ready a click on ``button``."""
    pending_id = await world.ask(arguments, actor_id=actor_id)
    return pending_id, await told(slack, slack_api, await stored(world, pending_id), button)


@pytest.fixture
async def asked(world: World, slack: Slack, slack_api: SlackAPI) -> tuple[str, Click]:
    """A question of alice's ("Q?", options A and B) told on Slack, a click on "A" ready."""
    return await posted_click(world, slack, slack_api, QUESTION, "A")


async def stored(world: World, pending_id: str) -> PendingInput:
    """The request as the desk's store holds it now."""
    request = await world.handler.get_request(pending_id)
    assert request is not None
    return request


async def interact(world: World, body: bytes, headers: dict[str, str]) -> httpx.Response:
    async with world.client() as client:
        return await client.post(PATH, content=body, headers=headers)


async def clicked(world: World, click: Click, user: str = "U0ALICE") -> httpx.Response:
    """What the desk answers to ``user``'s click, signed as Slack signs it."""
    body = click.body(user)
    return await interact(world, body, signed(body))


SLACK_SERIES = ("roomkit_slack_interactions_total", 'roomkit_answers_total{surface="slack"')


async def slack_figures(world: World) -> dict[str, float]:
    async with world.client() as client:
        text = (await client.get("/metrics", headers=bearer("root", admin=True))).text
    figures = {}
    for line in text.splitlines():
        if line.startswith(SLACK_SERIES):
            name, _, value = line.rpartition(" ")
            figures[name] = float(value)
    return figures


async def test_a_click_answers_as_the_person_the_directory_names(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    arguments = {"question": "Window or aisle?", "options": ["Window", "Aisle"]}
    pending_id, click = await posted_click(world, slack, slack_api, arguments, "Aisle")
    response = await clicked(world, click)
    assert response.status_code == 200
    request = await stored(world, pending_id)
    assert (request.status, request.result, request.settled_by) == ("resolved", "Aisle", "alice")
    [(where, reply)] = slack_api.responses
    assert where == "r1"
    assert reply["replace_original"] is True
    assert reply["text"] == "Answered by alice in Slack"
    assert response.json() == reply
    assert await slack_figures(world) == {
        'roomkit_slack_interactions_total{outcome="settled"}': 1.0,
        'roomkit_answers_total{surface="slack"}': 1.0,
    }


async def test_a_confirmation_is_answered_yes_or_no(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    pending_id, click = await posted_click(world, slack, slack_api, {"action": "Book it"}, "No")
    assert (await clicked(world, click)).status_code == 200
    assert (await stored(world, pending_id)).result == '{"confirmed":false}'
    assert slack_api.responses[0][1]["text"] == "Declined by alice in Slack"


async def test_a_question_of_the_room_is_answered_by_a_participant(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    arguments = {"question": "Window or aisle?", "options": ["Window", "Aisle"]}
    pending_id, click = await posted_click(
        world, slack, slack_api, arguments, "Window", actor_id=None
    )
    assert (await clicked(world, click, "U0BOB")).status_code == 200
    assert (await stored(world, pending_id)).settled_by == "bob"


async def test_someone_who_may_not_answer_is_told_and_nothing_changes(
    world: World, slack_api: SlackAPI, asked: tuple[str, Click]
) -> None:
    pending_id, click = asked
    response = await clicked(world, click, "U0BOB")
    assert response.status_code == 200
    assert slack_api.responses == [
        (
            "r1",
            {
                "text": "This question is not yours to answer, so nothing was changed.",
                "response_type": "ephemeral",
                "replace_original": False,
            },
        )
    ]
    assert (await stored(world, pending_id)).status == "pending"
    figures = await slack_figures(world)
    assert figures['roomkit_slack_interactions_total{outcome="not_yours"}'] == 1.0
    assert figures['roomkit_answers_total{surface="slack"}'] == 0.0


async def test_an_unknown_slack_user_is_told_how_to_be_added(
    world: World, slack_api: SlackAPI, asked: tuple[str, Click]
) -> None:
    pending_id, click = asked
    response = await clicked(world, click, "U0MALLORY")
    assert response.status_code == 200
    assert "add your Slack member id (U0MALLORY) to the directory" in response.json()["text"]
    assert slack_api.responses[0][1]["response_type"] == "ephemeral"
    assert (await stored(world, pending_id)).status == "pending"


async def test_a_click_on_a_settled_request_says_how_it_ended(
    world: World, asked: tuple[str, Click]
) -> None:
    pending_id, click = asked
    assert await world.handler.aresolve(pending_id, "B", by="alice")
    response = await clicked(world, click)
    assert response.json()["text"] == "Already answered by alice"
    assert (await stored(world, pending_id)).result == "B"


@pytest.mark.parametrize(
    "case", ["forged", "other-secret", "stale", "future", "no-headers", "odd-timestamp"]
)
async def test_a_request_slack_did_not_sign_just_now_is_refused(
    world: World, slack_api: SlackAPI, asked: tuple[str, Click], case: str
) -> None:
    pending_id, click = asked
    body = click.body()
    headers = {
        "forged": {**signed(body), "X-Slack-Signature": "v0=" + "0" * 64},
        "other-secret": signed(body, secret="another-apps-signing-secret"),
        "stale": signed(body, at=time.time() - 600),
        "future": signed(body, at=time.time() + 600),
        "no-headers": {"Content-Type": "application/x-www-form-urlencoded"},
        "odd-timestamp": {**signed(body), "X-Slack-Request-Timestamp": "soon"},
    }[case]
    response = await interact(world, body, headers)
    assert response.status_code == 401
    assert "forged, older than 5 minutes" in response.json()["detail"]
    assert (await stored(world, pending_id)).status == "pending"
    assert slack_api.responses == []
    figures = await slack_figures(world)
    assert figures['roomkit_slack_interactions_total{outcome="forged"}'] == 1.0


async def test_a_tampered_body_is_refused(world: World, asked: tuple[str, Click]) -> None:
    pending_id, click = asked
    headers = signed(click.body("U0BOB"))
    response = await interact(world, click.body("U0ALICE"), headers)
    assert response.status_code == 401
    assert (await stored(world, pending_id)).status == "pending"


async def test_a_replayed_payload_is_taken_once(
    world: World, slack_api: SlackAPI, asked: tuple[str, Click]
) -> None:
    pending_id, click = asked
    body = click.body()
    headers = signed(body)
    first = await interact(world, body, headers)
    again = await interact(world, body, headers)
    assert first.status_code == 200
    assert again.status_code == 409
    assert again.json() == {"detail": "This Slack interaction was already taken"}
    assert len(slack_api.responses) == 1
    assert (await stored(world, pending_id)).settled_by == "alice"
    figures = await slack_figures(world)
    assert figures['roomkit_slack_interactions_total{outcome="replayed"}'] == 1.0


async def test_a_payload_is_taken_once_across_desk_processes(
    tmp_path: Path, slack: Slack, slack_api: SlackAPI
) -> None:
    """Two desks on one SQLite file share the ledger: a payload replayed to the other is refused."""
    stores = [SQLiteStore(tmp_path / "desk.db") for _ in range(2)]
    try:
        first, second = (
            World(handler=HumanInputHandler(store=store), slack=slack, directory=DIRECTORY)
            for store in stores
        )
        pending_id, click = await posted_click(first, slack, slack_api, QUESTION, "A")
        body = click.body()
        headers = signed(body)
        replayed_first = await interact(second, body, headers)
        assert replayed_first.status_code == 200
        assert (await interact(first, body, headers)).status_code == 409
        assert (await stored(first, pending_id)).settled_by == "alice"
    finally:
        for store in stores:
            await store.close()


async def test_a_button_that_no_longer_fits_changes_nothing(
    world: World, asked: tuple[str, Click]
) -> None:
    """An approval's button on a question (or an option that is not there) is refused."""
    pending_id, click = asked
    for action_id in ("roomkit:approve", "roomkit:choose:7", "roomkit:confirm:yes"):
        click.element = {**click.element, "action_id": action_id}
        response = await clicked(world, click)
        assert response.json()["text"] == (
            "This button does not fit the question any more: answer it in the desk."
        )
    assert (await stored(world, pending_id)).status == "pending"


async def test_the_desk_link_and_other_payloads_are_acknowledged(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    _, click = await posted_click(
        world, slack, slack_api, {"question": "Any wishes?"}, "Answer in the desk"
    )
    opened = await clicked(world, click)
    assert (opened.status_code, opened.content) == (200, b"")
    other = urlencode({"payload": json.dumps({"type": "view_closed"})}).encode()
    closed = await interact(world, other, signed(other))
    assert (closed.status_code, closed.content) == (200, b"")
    assert slack_api.responses == []


async def test_a_click_from_another_workspace_than_the_team_changes_nothing(
    slack_api: SlackAPI,
) -> None:
    """With Slack(team=...), a click signed by the app but from another workspace the app is
    installed in is refused (403) and settles nothing; one from the team is taken."""
    slack = Slack(
        token=TOKEN, signing_secret=SIGNING_SECRET, base_url=slack_api.base_url, team="T0TEAM"
    )
    world = World(slack=slack, directory=DIRECTORY)
    await world.room("room", "alice", "bob")
    try:
        pending_id, click = await posted_click(world, slack, slack_api, QUESTION, "A")
        for body in (click.body(team="T0OTHER"), click.body(team="T0OTHER", response="r2")):
            refused = await interact(world, body, signed(body))
            assert refused.status_code == 403
            assert "comes from workspace T0OTHER" in refused.json()["detail"]
            assert "takes only T0TEAM's" in refused.json()["detail"]
        assert (await stored(world, pending_id)).status == "pending"
        assert (await clicked(world, click)).status_code == 200
    finally:
        await slack.aclose()
    assert (await stored(world, pending_id)).result == "A"
    figures = await slack_figures(world)
    assert figures['roomkit_slack_interactions_total{outcome="other_team"}'] == 2.0


async def test_without_a_team_a_click_from_any_workspace_is_taken(
    world: World, asked: tuple[str, Click]
) -> None:
    """Without Slack(team=...), the directory alone says who clicked, from any workspace."""
    pending_id, click = asked
    body = click.body(team="T0OTHER")
    assert (await interact(world, body, signed(body))).status_code == 200
    assert (await stored(world, pending_id)).result == "A"


async def test_a_modal_submission_is_answered_with_a_modal_saying_nothing_was_saved(
    world: World, asked: tuple[str, Click], slack_api: SlackAPI
) -> None:
    """The desk opens no modals: one submitted to it is replaced at once by a modal saying
    nothing was saved (an empty 200 would close it as if it were), and nothing changes."""
    pending_id, _ = asked
    payload = {
        "type": "view_submission",
        "team": {"id": "T0TEAM", "domain": "example"},
        "user": {"id": "U0ALICE", "team_id": "T0TEAM"},
        "view": {
            "id": "V0FORM",
            "type": "modal",
            "callback_id": "expense",
            "blocks": [{"type": "input", "block_id": "amount", "label": {}, "element": {}}],
            "state": {"values": {"amount": {"a": {"type": "plain_text_input", "value": "A"}}}},
        },
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    response = await interact(world, body, signed(body))
    assert response.status_code == 200
    answer = response.json()
    assert answer["response_action"] == "update"
    assert answer["view"]["blocks"][0]["text"]["text"].startswith("Nothing was saved: ")
    View(**answer["view"]).validate_json()  # a view Slack takes
    assert (await stored(world, pending_id)).status == "pending"
    assert slack_api.responses == []
    figures = await slack_figures(world)
    assert figures['roomkit_slack_interactions_total{outcome="modal"}'] == 1.0


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"not a form", "Expected Slack's form body"),
        (b"payload=%7Bnot+json", "Slack's 'payload' is not valid JSON"),
        (urlencode({"payload": "[1]"}).encode(), "must be a JSON object"),
        (urlencode({"payload": '{"type": "block_actions"}'}).encode(), "names no action"),
        (NO_USER, "names no user or no request"),
    ],
)
async def test_a_signed_payload_of_the_wrong_shape_is_a_400(
    world: World, body: bytes, detail: str
) -> None:
    response = await interact(world, body, signed(body))
    assert response.status_code == 400
    assert detail in response.json()["detail"]


@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        ("[" * 50_000, "nests arrays and objects 50000 levels deep; at most 64"),
        ('{"type": "block_actions", "type": "view_closed"}', "names the key 'type' twice"),
        ('{"type": "block_actions", "n": ' + "9" * 5000 + "}", "5000 characters long"),
        ('{"type": "block_actions", "n": 1e999}', "beyond a float's range"),
    ],
    ids=["50000-deep", "duplicate-key", "huge-number", "out-of-range"],
)
async def test_a_signed_payload_json_does_not_take_is_a_400_and_the_desk_serves_on(
    world: World, asked: tuple[str, Click], payload: str, detail: str
) -> None:
    """Before the payload was read under limits, 50,000 brackets made the parser recurse: 500."""
    body = urlencode({"payload": payload}).encode()
    response = await interact(world, body, signed(body))
    assert response.status_code == 400
    assert response.json()["detail"].startswith("Slack's 'payload' ")
    assert detail in response.json()["detail"]
    pending_id, click = asked
    assert (await clicked(world, click)).status_code == 200
    assert (await stored(world, pending_id)).result == "A"
    figures = await slack_figures(world)
    assert figures['roomkit_slack_interactions_total{outcome="invalid"}'] == 1.0


async def test_a_body_over_the_cap_is_refused() -> None:
    world = World(slack=SIGNING_SECRET, directory=DIRECTORY)
    body = b"payload=" + b"x" * (256 * 1024)
    response = await interact(world, body, signed(body))
    assert response.status_code == 413


async def test_an_unreachable_response_url_still_settles(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    pending_id, click = await posted_click(world, slack, slack_api, QUESTION, "B")
    click.slack_api = SlackAPI(url=f"http://127.0.0.1:{free_port()}")
    response = await clicked(world, click)
    assert response.status_code == 200
    assert response.json()["text"] == "Answered by alice in Slack"
    assert (await stored(world, pending_id)).result == "B"


async def test_without_slack_the_desk_has_no_such_route() -> None:
    world = World()
    body = b"payload=%7B%7D"
    response = await interact(world, body, signed(body))
    # No such API route: the JSON 404 (the page's static files serve no /api path).
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"slack": SIGNING_SECRET}, "needs directory="),
        ({"slack": 42, "directory": DIRECTORY}, "slack= takes the Slack surface"),
        ({"slack": "", "directory": DIRECTORY}, "slack= takes the Slack surface"),
    ],
)
def test_slack_options_are_checked_when_the_desk_is_built(
    options: dict[str, Any], words: str
) -> None:
    with pytest.raises(TypeError, match=words):
        World(**options)


async def test_a_body_streamed_past_the_cap_is_refused() -> None:
    """A body sent in chunks, with no length declared, is counted as it arrives."""
    world = World(slack=SIGNING_SECRET, directory=DIRECTORY)

    async def chunks() -> AsyncIterator[bytes]:
        yield b"payload="
        for _ in range(5):
            yield b"x" * (64 * 1024)

    async with world.client() as client:
        response = await client.post(PATH, content=chunks(), headers=signed(b""))
    assert response.status_code == 413


async def test_an_unreachable_store_is_a_503(tmp_path: Path, slack: Slack) -> None:
    """The ledger that refuses replays lives in the store: without it, nothing is taken."""
    store = SQLiteStore(tmp_path / "missing" / "desk.db")
    world = World(handler=HumanInputHandler(store=store), slack=slack, directory=DIRECTORY)
    body = urlencode({"payload": json.dumps({"type": "block_actions"})}).encode()
    try:
        response = await interact(world, body, signed(body))
    finally:
        await store.close()
    assert response.status_code == 503
    assert response.json() == {"detail": "The request store is unavailable: try again"}
    # /metrics itself cannot check a token without the store: the figures are read as it would.
    figures = world.app.state.desk.metrics.render().decode()
    assert 'roomkit_slack_interactions_total{outcome="store_error"} 1.0' in figures
    assert "roomkit_store_errors_total 1.0" in figures


async def test_clicks_past_the_person_s_rate_change_nothing(
    slack: Slack, slack_api: SlackAPI
) -> None:
    world = World(slack=slack, directory=DIRECTORY, limits=DeskLimits(rate=0.001, burst=1))
    first_id, first = await posted_click(world, slack, slack_api, QUESTION, "A")
    second_id, second = await posted_click(world, slack, slack_api, QUESTION, "B")
    for click in (first, second):
        response = await clicked(world, click)
    assert response.json()["text"] == (
        "Too many answers at once, so nothing was changed: try again in 1000 s."
    )
    answered, waiting = [await stored(world, i) for i in (first_id, second_id)]
    assert (answered.status, waiting.status) == ("resolved", "pending")


async def test_only_an_approver_decides_an_approval_from_slack(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    """Alice may see the approval (she asked), but only bob may decide it; bob's click is
    recorded in its history as a decision through Slack."""
    request = await world.handler.create_approval(
        "send_email",
        {"to": "carol@example.com"},
        approvers=["bob"],
        tool_schema={"type": "object"},
        room_id="room",
        actor_id="alice",
    )
    click = await told(slack, slack_api, request, "Approve")
    by_alice = click.body("U0ALICE")
    assert (await interact(world, by_alice, signed(by_alice))).status_code == 200
    assert (await stored(world, request.pending_id)).status == "pending"
    by_bob = click.body("U0BOB", response="r2")
    assert (await interact(world, by_bob, signed(by_bob))).status_code == 200
    decided = await stored(world, request.pending_id)
    assert (decided.status, decided.settled_by) == ("resolved", "bob")
    entry, settled = (await world.handler.history(request.pending_id))[-2:]
    assert (entry["type"], entry["decision"], entry["surface"]) == ("decided", "approve", "slack")
    assert (settled["type"], settled["actor"], settled["surface"]) == ("settled", "bob", "slack")


async def test_a_vote_from_slack_that_counts_leaves_the_message_for_the_others(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    """On a quorum approval a click is a vote: the voter hears how far it has come, and the
    message stays for the other approvers."""
    request = await world.handler.create_approval(
        "pay", {"amount": 9}, approvers=["alice", "bob"], room_id="room", quorum=2
    )
    click = await told(slack, slack_api, request, "Approve")
    by_alice = click.body("U0ALICE")
    response = await interact(world, by_alice, signed(by_alice))
    assert response.status_code == 200
    reply = response.json()
    assert reply["response_type"] == "ephemeral"
    assert reply["text"] == "Your vote is in: 1 of 2 approvals — waiting for bob."
    by_bob = click.body("U0BOB", response="r2")
    response = await interact(world, by_bob, signed(by_bob))
    assert response.json()["replace_original"] is True
    decided = await world.handler.get_request(request.pending_id)
    assert decided is not None
    assert (decided.status, [vote.actor for vote in decided.votes]) == (
        "resolved",
        ["alice", "bob"],
    )


async def test_a_second_click_by_the_same_voter_says_the_vote_is_in(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    """Alice clicks Approve again (another device, an impatient double click) on a quorum
    approval still waiting for bob: she hears her vote is in already, not that the request
    is open, and nothing changes."""
    request = await world.handler.create_approval(
        "pay", {"amount": 9}, approvers=["alice", "bob"], room_id="room", quorum=2
    )
    click = await told(slack, slack_api, request, "Approve")
    first = click.body("U0ALICE")
    assert (await interact(world, first, signed(first))).status_code == 200
    again = click.body("U0ALICE", response="r2")
    response = await interact(world, again, signed(again))
    assert response.status_code == 200
    reply = response.json()
    assert reply["response_type"] == "ephemeral"
    assert reply["text"] == (
        "Your vote is in already: each approver votes once (1 of 2 approvals — waiting for bob)."
    )
    waiting = await world.handler.get_request(request.pending_id)
    assert waiting is not None
    assert (waiting.status, [vote.actor for vote in waiting.votes]) == ("pending", ["alice"])
    counted = world.app.state.desk.metrics.render().decode()
    assert 'roomkit_slack_interactions_total{outcome="vote_in"} 1.0' in counted
    assert 'roomkit_slack_interactions_total{outcome="voted"} 1.0' in counted


@pytest.mark.parametrize(
    ("answer_in", "line"),
    [("slack", "Answered by alice in Slack"), ("desk", "Answered by alice in the desk")],
)
async def test_a_questions_slack_message_says_where_it_was_answered(
    slack: Slack, slack_api: SlackAPI, answer_in: str, line: str
) -> None:
    """The notifier posts the question to Slack; answered by a click there or on the desk,
    the message is updated with the surface the question's settled entry names."""
    handler = HumanInputHandler()
    notifier = Notifier(handler, [slack], directory=DIRECTORY, desk_url="http://desk.test")
    world = World(handler=handler, notifier=notifier, slack=slack, directory=DIRECTORY)
    await world.room("room", "alice")
    async with serve(world.app):
        arguments = {"question": "Window or aisle?", "options": ["Window", "Aisle"]}
        pending_id = await world.ask(arguments, actor_id="alice")
        await slack_api.wait_until(lambda: bool(slack_api.posted()))
        [message] = slack_api.posted()
        if answer_in == "slack":
            body = Click(slack_api, message, "Aisle").body()
            assert (await interact(world, body, signed(body))).status_code == 200
        else:
            async with world.client() as client:
                url = f"/api/requests/{pending_id}/answer"
                answered = await client.post(url, json={"answer": "Aisle"}, headers=bearer("alice"))
            assert answered.status_code == 200, answered.text
        [kept] = slack_api.messages.values()
        await slack_api.wait_until(lambda: kept.updates >= 1)
        history = await handler.history(pending_id)
    assert kept.text == line
    [settled] = [entry for entry in history if entry["type"] == "settled"]
    assert (settled["actor"], settled["surface"]) == ("alice", answer_in)


async def test_a_click_on_arguments_edited_since_shows_the_new_ones(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    """Alice was told of ``{"amount": 5}`` in Slack; bob's edit on the desk made it 5000:
    her click on that first message decides nothing and shows her the new arguments. The
    message about the new arguments decides on them."""
    request = await world.handler.create_approval(
        "pay", {"amount": 5}, approvers=["alice", "bob"], room_id="room", quorum=2
    )
    pending_id = request.pending_id
    click = await told(slack, slack_api, request, "Approve")
    async with world.client() as client:
        edited = await client.post(
            f"/api/requests/{pending_id}/answer",
            json={"decision": "edit", "arguments": {"amount": 5000}},
            headers=bearer("bob"),
        )
    assert edited.status_code == 200
    response = await clicked(world, click)
    assert response.status_code == 200
    reply = response.json()
    assert reply["response_type"] == "ephemeral"
    assert reply["text"].startswith("The arguments changed after this message was sent")
    assert "Amount: 5,000" in reply["text"]
    record = await stored(world, pending_id)
    assert (record.status, [vote.actor for vote in record.votes]) == ("pending", ["bob"])
    reject = Click(slack_api, click.message, "Reject")
    body = reject.body(response="r2")
    refused = await interact(world, body, signed(body))
    assert refused.json()["text"] == reply["text"]
    assert (await stored(world, pending_id)).status == "pending"

    fresh = await told(slack, slack_api, record, "Approve")
    body = fresh.body(response="r3")
    response = await interact(world, body, signed(body))
    assert response.json()["replace_original"] is True
    decided = await stored(world, pending_id)
    assert (decided.status, decided.arguments) == ("resolved", {"amount": 5000})
    assert (await slack_figures(world))['roomkit_slack_interactions_total{outcome="stale"}'] == 2


async def test_an_approval_button_that_names_no_arguments_changes_nothing(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    """A button of a message older than buttons naming their arguments is refused."""
    request = await world.handler.create_approval(
        "pay", {"amount": 5}, approvers=["alice"], room_id="room"
    )
    click = await told(slack, slack_api, request, "Approve")
    click.element = {**click.element, "action_id": "roomkit:approve"}
    response = await clicked(world, click)
    assert response.json()["text"] == (
        "This button does not say which arguments it decides on (its message is older than "
        "this desk), so nothing was changed: decide in the desk."
    )
    assert (await stored(world, request.pending_id)).status == "pending"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


STEERING = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\x00\x1b\x85"


async def test_a_click_s_replacement_shows_steering_characters_as_replaced(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    """``Amount: <RLO>0001`` reads ``Amount: 1000`` where the override is honoured: the message
    a click leaves shows it as ``Amount: �0001``, and the approval runs the stored arguments."""
    arguments = {"amount": "\u202e0001", "memo": "\u2066ok\x1b[2J\u2069"}
    request = await world.handler.create_approval(
        "pay", arguments, approvers=["alice"], room_id="room"
    )
    click = await told(slack, slack_api, request, "Approve")
    reply = (await clicked(world, click)).json()
    assert reply["replace_original"] is True
    shown = [reply["text"], *_strings(reply["blocks"])]
    assert [text for text in shown if any(ch in STEERING for ch in text)] == []
    assert any("Amount: \ufffd0001" in text for text in shown)
    decided = await stored(world, request.pending_id)
    assert (decided.status, decided.arguments) == ("resolved", arguments)


async def test_a_stale_click_shows_the_new_arguments_with_steering_characters_replaced(
    world: World, slack: Slack, slack_api: SlackAPI
) -> None:
    request = await world.handler.create_approval(
        "pay", {"amount": "5"}, approvers=["alice", "bob"], room_id="room", quorum=2
    )
    click = await told(slack, slack_api, request, "Approve")
    async with world.client() as client:
        edited = await client.post(
            f"/api/requests/{request.pending_id}/answer",
            json={"decision": "edit", "arguments": {"amount": "\u202e0005"}},
            headers=bearer("bob"),
        )
    assert edited.status_code == 200
    reply = (await clicked(world, click)).json()
    assert reply["response_type"] == "ephemeral"
    assert "Amount: \ufffd0005" in reply["text"]
    assert not any(ch in STEERING for ch in reply["text"])
    assert (await stored(world, request.pending_id)).arguments == {"amount": "\u202e0005"}

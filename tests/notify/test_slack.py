"""The Slack surface, through the real ``slack_sdk`` client, against a fake Web API on loopback."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.signature import SignatureVerifier
from tests.notify.slack_api import SIGNING_SECRET, TOKEN, SlackAPI, free_port

from roomkit._extras import install_command
from roomkit.desk.slack import signing_secret_of
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.notify import DeliveryError, Notice, NoticeType, Person, Slack, Surface
from roomkit.notify.slack_blocks import Action, parse_action
from roomkit.tools.human_input import HumanInputHandler

ALICE = Person(email="alice@example.com", slack_user="U0ALICE")
LINK = "https://desk.example.com/#token=abc.def"


@dataclass(slots=True, eq=False)
class ApprovalRecord(PendingInput):
    """A stored request with the approval ``kind`` that approvals add to every request."""

    kind: str = "approval"


async def _ask(arguments: dict[str, Any], *, tool: str = "AskUserQuestion") -> PendingInput:
    return await HumanInputHandler().create_detached(
        tool, arguments, room_id="trip", actor_id="alice"
    )


def _notice(request: PendingInput, type: NoticeType = "question_pending", **fields: Any) -> Notice:
    fields.setdefault("recipient", "alice")
    fields.setdefault("person", ALICE)
    fields.setdefault("answer_url", None if type == "question_settled" else LINK)
    return Notice(type=type, delivery_id=f"{type}-1", request=request, **fields)


def _parsed(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks, checked by the SDK's models: each parses, validates and reads back alike."""
    models = Block.parse_all(blocks)
    for model in models:
        model.validate_json()
    assert [model.to_dict() for model in models] == blocks
    return blocks


def _buttons(blocks: list[dict[str, Any]]) -> list[tuple[str, str | None, str | None]]:
    """``(text, action_id, value or url)`` of each button."""
    return [
        (item["text"]["text"], item["action_id"], item.get("value") or item.get("url"))
        for block in blocks
        if block["type"] == "actions"
        for item in block["elements"]
    ]


def _texts(blocks: list[dict[str, Any]]) -> list[str]:
    texts: list[str] = []
    for block in blocks:
        if "text" in block:
            texts.append(block["text"]["text"])
        texts.extend(item["text"] for item in block.get("elements", []) if "action_id" not in item)
    return texts


def test_slack_is_a_surface() -> None:
    surface = Slack(token=TOKEN, signing_secret=SIGNING_SECRET)
    assert isinstance(surface, Surface)
    assert surface.name == "slack"
    assert surface.reaches("alice", ALICE)
    assert not surface.reaches("carol", Person(email="carol@example.com"))
    assert not surface.reaches(None, None)
    in_channel = Slack(token=TOKEN, signing_secret=SIGNING_SECRET, channel="C0TEAM")
    assert in_channel.reaches(None, None)
    assert in_channel.reaches("carol", None)


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"token": "", "signing_secret": "s"}, "token"),
        ({"token": "t", "signing_secret": " "}, "signing_secret"),
        ({"token": "t", "signing_secret": "s", "channel": ""}, "channel"),
        ({"token": "t", "signing_secret": "s", "team": ""}, r"Slack\(team=\.\.\.\)"),
        ({"token": "t", "signing_secret": "s", "team": "T0 TEAM\n"}, r"got 'T0 TEAM\\n'"),
    ],
)
def test_slack_refuses_empty_settings(arguments: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Slack(**arguments)


async def test_a_choice_goes_to_the_person_with_a_button_per_option(
    slack: Slack, slack_api: SlackAPI
) -> None:
    request = await _ask({"question": "Window or aisle?", "options": ["Window", "Aisle"]})
    receipt = await slack.send(_notice(request))
    assert receipt == {"channel": "DU0ALICE", "ts": "1700000000.000001"}
    assert slack_api.posted("conversations.open") == [{"users": "U0ALICE"}]
    assert {call.authorization for call in slack_api.calls} == {f"Bearer {TOKEN}"}
    [posted] = slack_api.posted()
    assert posted["channel"] == "DU0ALICE"
    assert posted["text"] == "A question for you: Window or aisle?"
    blocks = _parsed(posted["blocks"])
    assert _buttons(blocks) == [
        ("Window", "roomkit:choose:0", request.pending_id),
        ("Aisle", "roomkit:choose:1", request.pending_id),
        ("Open in the desk", "roomkit:open", LINK),
    ]
    assert _texts(blocks)[:3] == [
        "A question for you",
        "Window or aisle?\n• Window\n• Aisle",
        "room trip · AskUserQuestion",
    ]


async def test_a_second_message_reuses_the_direct_conversation(
    slack: Slack, slack_api: SlackAPI
) -> None:
    request = await _ask({"question": "Window or aisle?"})
    first = await slack.send(_notice(request))
    again = await slack.send(_notice(request, "question_reminder"))
    assert first is not None
    assert again is not None
    assert len(slack_api.posted("conversations.open")) == 1
    assert first["channel"] == again["channel"]
    assert first["ts"] != again["ts"]
    assert slack_api.posted()[1]["text"] == "Still waiting: a question: Window or aisle?"


async def test_a_confirmation_has_yes_and_no(slack: Slack, slack_api: SlackAPI) -> None:
    request = await _ask({"action": "Book the flight", "details": {"price": 120}})
    await slack.send(_notice(request))
    blocks = _parsed(slack_api.posted()[0]["blocks"])
    assert [button[1] for button in _buttons(blocks)] == [
        "roomkit:confirm:yes",
        "roomkit:confirm:no",
        "roomkit:open",
    ]
    assert _texts(blocks)[1] == "Book the flight\nPrice: 120"


async def test_an_approval_has_approve_and_reject(slack: Slack, slack_api: SlackAPI) -> None:
    stored = await _ask({"to": "bob@example.com"}, tool="send_email")
    request = ApprovalRecord(
        stored.pending_id, "send_email", {"to": "bob@example.com"}, "trip", "", ""
    )
    await slack.send(_notice(request))
    blocks = _parsed(slack_api.posted()[0]["blocks"])
    buttons = next(block for block in blocks if block["type"] == "actions")["elements"]
    # Each decision names the digest of the arguments the message shows.
    digest = arguments_digest("send_email", {"to": "bob@example.com"})
    assert [(b["action_id"], b.get("style")) for b in buttons] == [
        (f"roomkit:approve:{digest}", "primary"),
        (f"roomkit:reject:{digest}", "danger"),
        ("roomkit:open", None),
    ]
    assert _texts(blocks)[0] == "Approval needed: send_email"


async def test_an_approval_that_takes_no_approve_has_no_approve_button(
    slack: Slack, slack_api: SlackAPI
) -> None:
    """A framework's approval may take fewer decisions: the message offers only those."""
    request = await HumanInputHandler().create_approval(
        "send_email",
        {"to": "bob@example.com"},
        approvers=["alice"],
        decisions=["edit", "reject"],
        room_id="trip",
        actor_id="alice",
    )
    await slack.send(_notice(request))
    blocks = _parsed(slack_api.posted()[0]["blocks"])
    digest = arguments_digest("send_email", {"to": "bob@example.com"})
    assert [action for _, action, _ in _buttons(blocks)] == [
        f"roomkit:reject:{digest}",
        "roomkit:open",
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        {"question": "Any wishes?"},
        {"question": "What to include?", "options": ["Flights", "Hotel"], "multiSelect": True},
        {"question": "Which city?", "options": [f"City {n}" for n in range(11)]},
        {"questions": [{"question": "When?", "options": ["May", "June"], "multiSelect": False}]},
        {"nights": 3},
    ],
    ids=["free-text", "several", "many-options", "questions", "custom"],
)
async def test_other_shapes_are_answered_in_the_desk(
    slack: Slack, slack_api: SlackAPI, arguments: dict[str, Any]
) -> None:
    request = await _ask(arguments, tool="AskUserQuestion" if "nights" not in arguments else "Plan")
    await slack.send(_notice(request))
    blocks = _parsed(slack_api.posted()[0]["blocks"])
    assert _buttons(blocks) == [("Answer in the desk", "roomkit:open", LINK)]


async def test_a_channel_message_mentions_the_person(slack_api: SlackAPI) -> None:
    surface = Slack(
        token=TOKEN, signing_secret=SIGNING_SECRET, channel="C0TEAM", base_url=slack_api.base_url
    )
    try:
        request = await _ask({"question": "Window or aisle?"})
        receipt = await surface.send(_notice(request))
    finally:
        await surface.aclose()
    assert receipt == {"channel": "C0TEAM", "ts": "1700000000.000001"}
    assert slack_api.posted("conversations.open") == []
    posted = slack_api.posted()[0]
    assert posted["text"] == "A question: Window or aisle?"
    context = [b for b in _parsed(posted["blocks"]) if b["type"] == "context"]
    assert [item["text"] for item in context[0]["elements"]] == [
        "For <@U0ALICE>",
        "room trip · AskUserQuestion",
    ]


async def test_what_a_model_wrote_reads_as_text(slack: Slack, slack_api: SlackAPI) -> None:
    """A question holding Slack markup is shown as plain text: no mention, no link."""
    question = "Hi <!channel> see <https://evil.example|this> & *act* now"
    request = await _ask({"question": question, "options": ["<@U0BOB>"]})
    await slack.send(_notice(request))
    posted = slack_api.posted()[0]
    assert posted["text"] == (
        "A question for you: Hi &lt;!channel&gt; see &lt;https://evil.example|this&gt; "
        "&amp; *act* now"
    )
    blocks = _parsed(posted["blocks"])
    shown = {"type": "plain_text", "text": f"{question}\n• <@U0BOB>", "emoji": False}
    assert blocks[1]["text"] == shown
    assert _buttons(blocks)[0][0] == "<@U0BOB>"
    assert all(block["text"]["type"] == "plain_text" for block in blocks if "text" in block)


async def test_long_texts_are_clipped_to_what_slack_takes(
    slack: Slack, slack_api: SlackAPI
) -> None:
    request = await _ask({"question": "Q" * 5000})
    await slack.send(_notice(request))
    blocks = _parsed(slack_api.posted()[0]["blocks"])
    assert len(blocks[1]["text"]["text"]) <= 3000


async def _posted_twice(slack: Slack, request: PendingInput) -> tuple[dict[str, Any], ...]:
    first = await slack.send(_notice(request))
    second = await slack.send(_notice(request, "question_reminder"))
    assert first is not None
    assert second is not None
    return dict(first), dict(second)


async def test_a_settled_request_updates_every_message_in_place(
    slack: Slack, slack_api: SlackAPI
) -> None:
    handler = HumanInputHandler()
    request = await handler.create_detached(
        "AskUserQuestion", {"question": "Window or aisle?"}, room_id="trip", actor_id="alice"
    )
    receipts = await _posted_twice(slack, request)
    assert await handler.aresolve(request.pending_id, "Aisle", by="alice")
    settled = await handler.get_request(request.pending_id)
    assert settled is not None
    notice = _notice(
        settled,
        "question_settled",
        outcome="resolved",
        answered_by="alice",
        answered_via="desk",
        receipts=receipts,
    )
    assert await slack.send(notice) is None
    assert len(slack_api.posted()) == 2
    for receipt in receipts:
        message = slack_api.messages[(receipt["channel"], receipt["ts"])]
        assert message.updates == 1
        assert message.text == "Answered by alice in the desk"
        blocks = _parsed(message.blocks)
        assert _texts(blocks) == ["Window or aisle?", "Answered by alice in the desk"]
        assert _buttons(blocks) == []


async def _outcome(slack: Slack, slack_api: SlackAPI, request: PendingInput, **fields: Any) -> str:
    receipt = await slack.send(_notice(request))
    assert receipt is not None
    await slack.send(_notice(request, "question_settled", receipts=(receipt,), **fields))
    return slack_api.messages[(receipt["channel"], receipt["ts"])].text


async def test_each_ending_reads_as_it_happened(slack: Slack, slack_api: SlackAPI) -> None:
    handler = HumanInputHandler()

    async def ask(arguments: dict[str, Any]) -> PendingInput:
        return await handler.create_detached(
            "AskUserQuestion", arguments, room_id="trip", actor_id="alice"
        )

    withdrawn = await ask({"question": "Withdrawn?"})
    await handler.arelease(withdrawn.pending_id)
    timed = await handler.create(
        "AskUserQuestion", {"question": "Timed?"}, room_id="trip", actor_id="alice"
    )
    with pytest.raises(TimeoutError):
        await handler.wait(timed.pending_id, timeout=0.01)
    refused = await ask({"question": "Refused?"})
    await handler.areject(refused.pending_id, "not now", by="bob")
    confirm = await ask({"action": "Book it"})
    await handler.aresolve(confirm.pending_id, '{"confirmed":false}', by="bob")

    async def current(request: PendingInput) -> PendingInput:
        found = await handler.get_request(request.pending_id)
        assert found is not None
        return found

    by_bob = {"answered_by": "bob", "answered_via": "slack"}
    assert await _outcome(slack, slack_api, await current(withdrawn), outcome="withdrawn") == (
        "Withdrawn"
    )
    assert await _outcome(slack, slack_api, await current(timed), outcome="timed_out") == (
        "Timed out"
    )
    assert await _outcome(
        slack, slack_api, await current(refused), outcome="rejected", **by_bob
    ) == ("Declined by bob in Slack: not now")
    assert await _outcome(
        slack, slack_api, await current(confirm), outcome="resolved", **by_bob
    ) == ("Declined by bob in Slack")


@pytest.mark.parametrize(
    ("decision", "line"),
    [
        ('{"decision":"approve"}', "Approved by bob in Slack"),
        ('{"decision":"edit","arguments":{}}', "Approved with changes by bob in Slack"),
        ('{"decision":"reject","reason":"no"}', "Rejected by bob in Slack"),
    ],
)
async def test_an_approval_says_who_decided_what(
    slack: Slack, slack_api: SlackAPI, decision: str, line: str
) -> None:
    request = ApprovalRecord("p-1", "send_email", {"to": "x"}, "trip", "", "", result=decision)
    by_bob = {"answered_by": "bob", "answered_via": "slack", "outcome": "resolved"}
    assert await _outcome(slack, slack_api, request, **by_bob) == line


async def test_a_deleted_message_does_not_stop_the_others_updating(
    slack: Slack, slack_api: SlackAPI
) -> None:
    request = await _ask({"question": "Window or aisle?"})
    first, second = await _posted_twice(slack, request)
    del slack_api.messages[(first["channel"], first["ts"])]
    await slack.send(
        _notice(request, "question_settled", outcome="withdrawn", receipts=(first, second))
    )
    assert slack_api.messages[(second["channel"], second["ts"])].text == "Withdrawn"


async def test_a_failing_update_is_retried_whole(slack: Slack, slack_api: SlackAPI) -> None:
    request = await _ask({"question": "Window or aisle?"})
    receipts = await _posted_twice(slack, request)
    slack_api.fail_next("chat.update", 503, "<html>Service Unavailable</html>")
    notice = _notice(request, "question_settled", outcome="withdrawn", receipts=receipts)
    with pytest.raises(DeliveryError) as raised:
        await slack.send(notice)
    assert raised.value.retry
    await slack.send(notice)
    assert [slack_api.messages[(r["channel"], r["ts"])].text for r in receipts] == [
        "Withdrawn",
        "Withdrawn",
    ]


async def test_a_settle_with_nothing_posted_sends_nothing(
    slack: Slack, slack_api: SlackAPI
) -> None:
    request = await _ask({"question": "Window or aisle?"})
    await slack.send(_notice(request, "question_settled", outcome="withdrawn"))
    assert slack_api.calls == []


@pytest.mark.parametrize(
    ("setup", "person", "retry", "words"),
    [
        ("revoked", ALICE, False, "the bot token was revoked"),
        ("bad-token", ALICE, False, "the bot token was revoked"),
        ("none", Person(slack_user="U0CAROL"), False, "no user U0CAROL"),
        ("none", Person(email="carol@example.com"), False, "has no slack_user"),
        ("ratelimited", ALICE, True, "ratelimited, Slack asks to wait 7 s"),
        ("down", ALICE, True, "HTTP 503"),
        ("odd", ALICE, False, "Slack refused chat.postMessage (invalid_blocks)"),
    ],
)
async def test_slack_refusals_say_what_to_fix(
    slack_api: SlackAPI, setup: str, person: Person, retry: bool, words: str
) -> None:
    token = "xoxb-wrong" if setup == "bad-token" else TOKEN
    surface = Slack(token=token, signing_secret=SIGNING_SECRET, base_url=slack_api.base_url)
    slack_api.revoked = setup == "revoked"
    if setup == "ratelimited":
        error = {"ok": False, "error": "ratelimited"}
        slack_api.fail_next("chat.postMessage", 429, error, {"Retry-After": "7"})
    elif setup == "down":
        slack_api.fail_next("chat.postMessage", 503, "<html>Service Unavailable</html>")
    elif setup == "odd":
        slack_api.fail_next("chat.postMessage", 200, {"ok": False, "error": "invalid_blocks"})
    request = await _ask({"question": "Window or aisle?"})
    try:
        with pytest.raises(DeliveryError, match=re.escape(words)) as raised:
            await surface.send(_notice(request, recipient="carol", person=person))
    finally:
        await surface.aclose()
    assert raised.value.retry is retry


@pytest.mark.parametrize(
    ("method", "body", "words"),
    [
        ("chat.postMessage", [{"ok": True}], 'a JSON array ([{"ok": true}])'),
        ("chat.postMessage", 7, "a JSON number (7)"),
        ("conversations.open", None, "JSON null"),
    ],
)
async def test_an_answer_that_is_no_json_object_fails_that_delivery_saying_what_came(
    slack: Slack, slack_api: SlackAPI, method: str, body: Any, words: str
) -> None:
    """A 200 whose body is not Slack's JSON object (a proxy, another service at base_url)
    fails the delivery for good, naming what came back, and the next one goes through."""
    slack_api.fail_next(method, 200, body)
    request = await _ask({"question": "Window or aisle?"})
    with pytest.raises(
        DeliveryError, match=re.escape(f"{method} with HTTP 200 and {words}")
    ) as raised:
        await slack.send(_notice(request))
    assert not raised.value.retry
    assert "check base_url" in str(raised.value)
    assert await slack.send(_notice(request)) is not None


@pytest.mark.parametrize(
    ("channel", "words"),
    [
        ("C0GONE", "no channel C0GONE the bot can see"),
        ("C0OTHER", "cannot post in channel C0OTHER (not_in_channel): invite the app"),
    ],
)
async def test_a_channel_the_bot_cannot_post_in_is_named(
    slack_api: SlackAPI, channel: str, words: str
) -> None:
    surface = Slack(
        token=TOKEN, signing_secret=SIGNING_SECRET, channel=channel, base_url=slack_api.base_url
    )
    request = await _ask({"question": "Window or aisle?"})
    try:
        with pytest.raises(DeliveryError, match=re.escape(words)) as raised:
            await surface.send(_notice(request))
    finally:
        await surface.aclose()
    assert not raised.value.retry


async def test_secrets_read_with_their_file_s_newline_still_work(slack_api: SlackAPI) -> None:
    """A token and a signing secret kept in files (mounted secrets) end in a newline: the
    token is sent without it, and clicks signed with the secret still verify."""
    surface = Slack(
        token=TOKEN + "\n", signing_secret=SIGNING_SECRET + "\r\n", base_url=slack_api.base_url
    )
    request = await _ask({"question": "Window or aisle?"})
    try:
        receipt = await surface.send(_notice(request))
    finally:
        await surface.aclose()
    assert receipt is not None
    assert {call.authorization for call in slack_api.calls} == {f"Bearer {TOKEN}"}
    body, timestamp = "payload=%7B%7D", str(int(time.time()))
    signed = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=timestamp, body=body)
    for given in (surface, SIGNING_SECRET + "\n"):
        # The surface, or its secret as text read from a file, as the desk's slack= takes it.
        checker = SignatureVerifier(signing_secret_of(given))
        assert checker.is_valid(body, timestamp, signed)


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"token": "xoxb-1\r\nx-admin: yes", "signing_secret": "s"}, r"Slack\(token=.*line break"),
        ({"token": "xoxb-\u00e9", "signing_secret": "s"}, r"Slack\(token=.*outside ASCII"),
        ({"token": "xoxb-1", "signing_secret": "ab cd"}, r"Slack\(signing_secret=.*a space"),
    ],
)
def test_a_secret_that_is_no_header_value_is_refused_saying_so(
    arguments: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        Slack(**arguments)


async def test_an_unreachable_slack_is_worth_retrying() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/api/"
    surface = Slack(token=TOKEN, signing_secret=SIGNING_SECRET, base_url=base_url)
    request = await _ask({"question": "Window or aisle?"})
    try:
        with pytest.raises(DeliveryError, match="Slack cannot be reached") as raised:
            await surface.send(_notice(request))
    finally:
        await surface.aclose()
    assert raised.value.retry


def test_roomkit_notify_imports_without_the_slack_sdk() -> None:
    """The other surfaces need nothing; naming Slack says which extra to install."""
    script = (
        "import sys\n"
        "sys.modules['slack_sdk'] = None\n"
        "import roomkit.notify\n"
        "try:\n"
        "    roomkit.notify.Slack\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == (
        "roomkit.notify.slack needs the slack extra (slack_sdk is not installed): "
        f"{install_command('slack')}"
    )


def test_an_approval_button_is_read_with_the_digest_it_names() -> None:
    digest = arguments_digest("pay", {"amount": 5})
    assert parse_action(f"roomkit:approve:{digest}") == Action("approve", digest=digest)
    assert parse_action(f"roomkit:reject:{digest}") == Action("reject", digest=digest)
    assert parse_action("roomkit:approve") == Action("approve")
    for other in (f"roomkit:approve:{digest[:-1]}", f"roomkit:open:{digest}", "roomkit:reject:x"):
        assert parse_action(other) is None

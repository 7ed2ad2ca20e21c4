"""What Slack and email show of text a model wrote: nothing in it may change how the rest
reads (``Amount: <RLO>0001`` reads ``Amount: 1000`` where the override is honoured), while
the request, and the digest its buttons name, keep every character."""

from __future__ import annotations

import json
from typing import Any

from tests.notify.slack_api import SlackAPI
from tests.notify.smtp_server import LINK_SECRET, PEOPLE, Mailbox, SMTPServer, texts

from roomkit.models.pending_input import arguments_digest
from roomkit.notify import Email, Notice, Notifier, Person, Slack
from roomkit.notify.wording import STEERING, shown
from roomkit.tools.human_input import HumanInputHandler

ALICE = Person(email="alice@example.com", slack_user="U0ALICE")
CONTROLS = "".join(
    chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]
)
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ARGUMENTS = {"iban": "DE89 3704 0044", "amount": "\u202e0001", "memo": f"a{BIDI}{CONTROLS}b"}


def steered(text: str) -> list[str]:
    """The characters of ``text`` that would change how it reads."""
    return [f"U+{ord(ch):04X}" for ch in text if ch in BIDI + CONTROLS]


def strings(value: Any) -> list[str]:
    """Every string in a JSON value (Slack's blocks, a reply)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return []


def test_shown_replaces_each_steering_character_and_keeps_lines() -> None:
    assert shown("Amount: \u202e0001") == "Amount: \ufffd0001"
    assert steered(shown(f"a{BIDI}{CONTROLS}\n\tb")) == []
    assert shown("first\n\tsecond — ünïcode, עברית") == "first\n\tsecond — ünïcode, עברית"
    assert all(STEERING.fullmatch(ch) for ch in BIDI + CONTROLS)


async def test_a_slack_message_shows_steering_characters_as_replaced(
    slack: Slack, slack_api: SlackAPI
) -> None:
    """The message's text, header, section, context and buttons show no bidi override, isolate,
    mark or control character; the approve button names the digest of the stored arguments."""
    handler = HumanInputHandler()
    request = await handler.create_approval(
        "pay\u202e", ARGUMENTS, approvers=["alice"], room_id="trip\u2066"
    )
    question = await handler.create_detached(
        "AskUserQuestion",
        {"question": "Pay \u202e0001?", "options": ["\u202eyes", "no\u200f"]},
        actor_id="alice",
    )
    for asked in (request, question):
        notice = Notice(
            type="question_pending",
            delivery_id=f"d-{asked.pending_id}",
            request=asked,
            recipient="alice",
            person=ALICE,
            answer_url="https://desk.example.com/#token=abc.def",
        )
        await slack.send(notice)
    approval, choice = slack_api.posted()
    shown_texts = [approval["text"], *strings(approval["blocks"])]
    shown_texts += [choice["text"], *strings(choice["blocks"])]
    assert [steered(text) for text in shown_texts if steered(text)] == []
    assert any("Amount: \ufffd0001" in text for text in strings(approval["blocks"]))
    assert choice["text"] == "A question for you: Pay \ufffd0001?"
    buttons = [
        b for block in choice["blocks"] if block["type"] == "actions" for b in block["elements"]
    ]
    assert [button["text"]["text"] for button in buttons[:2]] == ["\ufffdyes", "no\ufffd"]
    digest = arguments_digest("pay\u202e", ARGUMENTS)
    assert f"roomkit:approve:{digest}" in strings(approval["blocks"])
    stored = await handler.get_request(request.pending_id)
    assert stored is not None
    assert (stored.tool_name, stored.arguments) == ("pay\u202e", ARGUMENTS)


async def test_a_settled_slack_message_shows_steering_characters_as_replaced(
    slack: Slack, slack_api: SlackAPI
) -> None:
    handler = HumanInputHandler()
    request = await handler.create_detached(
        "AskUserQuestion", {"question": "Pay \u202e0001?"}, actor_id="alice"
    )
    pending = Notice(
        type="question_pending", delivery_id="d-1", request=request, recipient="alice", person=ALICE
    )
    receipt = await slack.send(pending)
    assert receipt is not None
    assert await handler.areject(request.pending_id, "no\u202e1", by="bob")
    settled = await handler.get_request(request.pending_id)
    assert settled is not None
    ended = Notice(
        type="question_settled",
        delivery_id="d-2",
        request=settled,
        recipient="alice",
        person=ALICE,
        outcome="rejected",
        answered_by="bob",
        answered_via="slack",
        receipts=(receipt,),
    )
    await slack.send(ended)
    message = slack_api.messages[(receipt["channel"], receipt["ts"])]
    assert message.text == "Declined by bob in Slack: no\ufffd1"
    assert [steered(text) for text in strings(message.blocks) if steered(text)] == []
    assert "Pay \ufffd0001?" in strings(message.blocks)


async def test_an_email_shows_steering_characters_as_replaced() -> None:
    """Subject, plain text and HTML show each bidi override, isolate, mark and control
    character of the question as a replacement character; a line break stays one."""
    handler = HumanInputHandler()
    mailbox = Mailbox()
    question = f"Pay \u202e0001?\u2066{CONTROLS}\nThe memo"
    with SMTPServer(mailbox) as server:
        email = Email("127.0.0.1", server.port, sender="agent@example.com", security="none")
        notifier = Notifier(
            handler, [email], directory=PEOPLE, desk_url="http://desk.test", link_secret=LINK_SECRET
        )
        async with notifier:
            asked = await handler.create("ask", {"question": question}, actor_id="alice")
            approval = await handler.create_approval("pay", ARGUMENTS, approvers=["alice"])
            first, second = await mailbox.next_message(), await mailbox.next_message()
            await notifier.wait_idle()
    by_subject = {
        message["Subject"].startswith("Question: Pay"): message for message in (first, second)
    }
    message, approved = by_subject[True], by_subject[False]
    assert message["Subject"].startswith("Question: Pay \ufffd0001?\ufffd\ufffd")
    for text in (message["Subject"], *texts(message), approved["Subject"], *texts(approved)):
        assert steered(text) == []
    plain, _ = texts(message)
    assert "Pay \ufffd0001?\ufffd" in plain
    assert "\nThe memo" in plain
    assert "Amount: \ufffd0001" in texts(approved)[0]
    stored = await handler.get_request(asked.pending_id)
    assert stored is not None
    assert stored.arguments == {"question": question}
    assert json.loads(json.dumps(approval.arguments)) == ARGUMENTS

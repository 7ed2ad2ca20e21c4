"""A Slack message too short for its request: it says so, and no button decides on the rest.

Slack shows at most 3000 characters in a section; a request longer than the message shows
is cut short, and then its message carries no Approve, no Yes or No, no option: only an
approval's Reject (refusing runs nothing) and the link to the desk, where it reads whole.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.notify.slack_api import SlackAPI

from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.notify import Notice, NoticeType, Person, Slack
from roomkit.tools.human_input import HumanInputHandler

LINK = "https://desk.example.com/#token=abc.def"
TOO_LONG = "Too long to decide here: open it in the desk"
"""The last line of a message cut short."""
LONG = "x" * 3000
"""A value that makes any request too long for its message."""


def _notice(request: PendingInput, type: NoticeType = "question_pending") -> Notice:
    return Notice(
        type=type,
        delivery_id=f"{type}-1",
        request=request,
        recipient="alice",
        person=Person(slack_user="U0ALICE"),
        answer_url=LINK,
    )


async def _posted(slack: Slack, slack_api: SlackAPI, notice: Notice) -> tuple[str, list[str]]:
    """The message's section text, and the action id of each of its buttons."""
    await slack.send(notice)
    blocks: list[dict[str, Any]] = slack_api.posted()[-1]["blocks"]
    section = next(block for block in blocks if block["type"] == "section")
    buttons = [
        element["action_id"]
        for block in blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]
    return section["text"]["text"], buttons


async def _approval(arguments: dict[str, Any]) -> PendingInput:
    return await HumanInputHandler().create_approval(
        "pay", arguments, approvers=["alice"], room_id="trip"
    )


@pytest.mark.parametrize("type", ["question_pending", "question_reminder", "question_edited"])
async def test_an_approval_cut_short_keeps_reject_alone(
    slack: Slack, slack_api: SlackAPI, type: NoticeType
) -> None:
    request = await _approval({"memo": LONG, "amount": 5000})
    text, buttons = await _posted(slack, slack_api, _notice(request, type))
    digest = arguments_digest("pay", {"memo": LONG, "amount": 5000})
    assert buttons == [f"roomkit:reject:{digest}", "roomkit:open"]
    assert len(text) <= 3000
    assert text.startswith("pay\nMemo: xxx")
    assert text.endswith(f"x…\n\n{TOO_LONG}")


async def test_an_approval_shown_whole_keeps_approve(slack: Slack, slack_api: SlackAPI) -> None:
    """Up to the last character a message shows, the request reads whole."""
    memo = "x" * (2900 - len("pay\nMemo: "))
    request = await _approval({"memo": memo})
    text, buttons = await _posted(slack, slack_api, _notice(request))
    assert text == f"pay\nMemo: {memo}"
    assert [button.split(":")[1] for button in buttons] == ["approve", "reject", "open"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"action": "Pay the invoice", "details": {"memo": LONG}},
        {"question": f"Which one? {LONG}", "options": ["Window", "Aisle"]},
        {"question": "Q" * 2300, "options": [f"Option {n} " + "y" * 60 for n in range(10)]},
    ],
    ids=["confirmation", "long-question", "options-past-the-end"],
)
async def test_a_question_cut_short_is_answered_in_the_desk(
    slack: Slack, slack_api: SlackAPI, arguments: dict[str, Any]
) -> None:
    """A No answers a confirmation as much as a Yes: neither stays, nor does an option."""
    request = await HumanInputHandler().create_detached(
        "AskUserQuestion", arguments, room_id="trip", actor_id="alice"
    )
    text, buttons = await _posted(slack, slack_api, _notice(request))
    assert buttons == ["roomkit:open"]
    assert text.endswith(f"…\n\n{TOO_LONG}")
    assert len(text) <= 3000


@pytest.mark.parametrize(("size", "buttons"), [(75, 2), (76, 0)])
async def test_an_option_too_long_for_its_button_is_chosen_in_the_desk(
    slack: Slack, slack_api: SlackAPI, size: int, buttons: int
) -> None:
    """A button shows at most 75 characters: one cut short could choose what it does not say
    (two options alike in their first 74 characters would read the same), so then no option
    gets a button."""
    options = [f"Delete the staging database{'.' * (size - 27)}", "Keep it"]
    request = await HumanInputHandler().create_detached(
        "AskUserQuestion", {"question": "Which?", "options": options}, actor_id="alice"
    )
    text, shown = await _posted(slack, slack_api, _notice(request))
    assert shown == [f"roomkit:choose:{n}" for n in range(buttons)] + ["roomkit:open"]
    assert text == f"Which?\n• {options[0]}\n• Keep it"

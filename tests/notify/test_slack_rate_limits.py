"""Slack's rate limit: the wait its ``Retry-After`` asks for holds the delivery back, within
bounds, whatever the header holds."""

from __future__ import annotations

import pytest
from tests.notify.slack_api import SIGNING_SECRET, TOKEN, SlackAPI

from roomkit.notify import DeliveryError, Notice, Person, Slack
from roomkit.tools.human_input import HumanInputHandler


@pytest.mark.parametrize(
    ("retry_after", "wait", "words"),
    [
        ("7", 7.0, "(ratelimited, Slack asks to wait 7 s): retrying"),
        ("99999999999999999999", 300.0, "Slack asks to wait 300 s"),
        ("soon", 0.0, "(ratelimited): retrying"),
        ("-5", 0.0, "(ratelimited): retrying"),
    ],
)
async def test_a_rate_limited_call_waits_as_long_as_slack_asks(
    slack_api: SlackAPI, retry_after: str, wait: float, words: str
) -> None:
    surface = Slack(token=TOKEN, signing_secret=SIGNING_SECRET, base_url=slack_api.base_url)
    error = {"ok": False, "error": "ratelimited"}
    slack_api.fail_next("chat.postMessage", 429, error, {"Retry-After": retry_after})
    request = await HumanInputHandler().create(
        "AskUserQuestion", {"question": "Window or aisle?"}, actor_id="alice"
    )
    notice = Notice(
        type="question_pending",
        delivery_id="d-1",
        request=request,
        recipient="alice",
        person=Person(slack_user="U0ALICE"),
    )
    try:
        with pytest.raises(DeliveryError) as raised:
            await surface.send(notice)
    finally:
        await surface.aclose()
    assert raised.value.retry
    assert raised.value.retry_after == wait
    assert words in str(raised.value)

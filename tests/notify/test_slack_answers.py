"""What Slack's Web API answers that is not a plain refusal: a rate limit (the wait its
``Retry-After`` asks for holds the delivery back, within bounds, whatever the header holds),
an ok answer missing what the surface needs."""

from __future__ import annotations

import pytest
from tests.notify.slack_api import SIGNING_SECRET, TOKEN, SlackAPI

from roomkit.models.pending_input import PendingInput
from roomkit.notify import DeliveryError, Notice, Person, Slack
from roomkit.tools.human_input import HumanInputHandler


def _notice(request: PendingInput) -> Notice:
    person = Person(slack_user="U0ALICE")
    return Notice(
        type="question_pending",
        delivery_id="d-1",
        request=request,
        recipient="alice",
        person=person,
    )


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
    try:
        with pytest.raises(DeliveryError) as raised:
            await surface.send(_notice(request))
    finally:
        await surface.aclose()
    assert raised.value.retry
    assert raised.value.retry_after == wait
    assert words in str(raised.value)


@pytest.mark.parametrize(
    ("method", "answer", "retry"),
    [
        ("chat.postMessage", {"ok": True}, False),
        ("chat.postMessage", {"ok": True, "channel": "DU0ALICE", "ts": None}, False),
        ("conversations.open", {"ok": True, "channel": "DU0ALICE"}, True),
    ],
)
async def test_an_ok_answer_missing_what_is_needed_is_a_delivery_error(
    slack_api: SlackAPI, method: str, answer: dict[str, object], retry: bool
) -> None:
    """A message posted without its ts is not posted again (it would show twice)."""
    surface = Slack(token=TOKEN, signing_secret=SIGNING_SECRET, base_url=slack_api.base_url)
    slack_api.fail_next(method, 200, answer)
    request = await HumanInputHandler().create(
        "AskUserQuestion", {"question": "Window or aisle?"}, actor_id="alice"
    )
    try:
        with pytest.raises(DeliveryError, match=f"Slack answered {method} ok without") as raised:
            await surface.send(_notice(request))
    finally:
        await surface.aclose()
    assert raised.value.retry is retry

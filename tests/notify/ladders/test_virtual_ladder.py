"""A ladder run to its end on the virtual clock: remind, escalate, then the default."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.notify.recorder import Recorder

from roomkit.models.enums import ChannelType
from roomkit.notify import Directory, Ladder, Notifier, Person, default, escalate, remind
from roomkit.testing import advance
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
from roomkit.tools.human_input.tool_handler import HumanInputCall

CALL = HumanInputCall("room", "agent", ChannelType.AI, "tc-1", "alice")
STEPS = ["question_pending", "question_reminder", "question_escalated", "question_settled"]
PEOPLE = Directory({"alice": Person(email="alice@example.com", manager="bob")})


def ladder() -> Ladder:
    return Ladder(
        remind(after=300), escalate(after=900, to="manager"), on_expiry=default('{"answer": "no"}')
    )


async def test_nobody_answers_so_the_ladder_runs_and_the_default_is_read() -> None:
    handler = HumanInputHandler()
    human = HumanInputToolHandler({"ask"}, timeout=1800, handler=handler, ladder=ladder())
    recorder = Recorder()
    async with Notifier(handler, [recorder], directory=PEOPLE):
        result = await human.ask("ask", {"question": "Deploy?"}, call=CALL)
        await recorder.wait_until(lambda seen: len(seen) == 6)
    assert sorted(recorder.seen(), key=lambda seen: (STEPS.index(seen[0]), seen[1] or "")) == [
        ("question_pending", "alice"),
        ("question_reminder", "alice"),
        ("question_escalated", "alice"),
        ("question_escalated", "bob"),
        ("question_settled", "alice"),
        ("question_settled", "bob"),
    ]
    assert recorder.notices[-1].outcome == "timed_out"
    read = json.loads(result)
    assert read["answer"] == '{"answer": "no"}'
    assert read["default"] is True
    assert "within 30 minutes" in read["note"]
    # The trail says what the model read after the timeout: the ladder's default.
    history = await handler.history(recorder.notices[-1].request.pending_id)
    assert [entry["type"] for entry in history][-2:] == ["settled", "defaulted"]
    assert history[-2]["status"] == "timed_out"
    assert history[-1]["answer"] == '{"answer": "no"}'


async def test_an_answer_before_the_reminder_stops_the_ladder() -> None:
    handler = HumanInputHandler()
    human = HumanInputToolHandler({"ask"}, timeout=1800, handler=handler, ladder=ladder())
    recorder = Recorder()
    async with Notifier(handler, [recorder], directory=PEOPLE) as notifier:
        asking = asyncio.create_task(human.ask("ask", {"question": "Deploy?"}, call=CALL))
        await recorder.wait_until(lambda seen: len(seen) == 1)
        [request] = await handler.list_pending()
        assert await handler.aresolve(request.pending_id, "yes", by="alice")
        assert await asking == "yes"
        await recorder.wait_until(lambda seen: len(seen) == 2)
        await advance(1800)  # the ladder's times come and go on the virtual clock
        await notifier.wait_idle()
    assert recorder.seen() == [("question_pending", "alice"), ("question_settled", "alice")]
    assert recorder.notices[-1].answered_by == "alice"


@pytest.mark.parametrize("after", [1800, 2000])
def test_a_step_at_or_past_the_timeout_is_refused(after: float) -> None:
    with pytest.raises(ValueError, match="at or past the 1800s timeout"):
        HumanInputToolHandler({"ask"}, timeout=1800, ladder=Ladder(remind(after=after)))


def test_a_default_too_long_to_record_is_refused_where_it_is_written() -> None:
    """A default whose ``defaulted`` entry could not be kept would fail only at expiry,
    on every retry: it is refused by ``default()``, saying the limit."""
    assert default("x" * 31_000).text == "x" * 31_000
    with pytest.raises(ValueError, match="at most 32000 characters as JSON, got 64002"):
        default("y" * 64_000)
    with pytest.raises(ValueError, match="at most 32000"):
        default("\x01" * 6_000)  # six characters each, as JSON
    with pytest.raises(TypeError, match="takes the answer as text"):
        default(5)  # type: ignore[arg-type]

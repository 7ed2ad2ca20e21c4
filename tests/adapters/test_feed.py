"""What the protocol adapters share: which open requests hold a room, and which events
recorded elsewhere tell a follower of a failed turn."""

from __future__ import annotations

from roomkit.adapters._feed import DEADLINE_GRACE, failures_told, held_requests
from roomkit.core.failed_turns import TURN_FAILED
from roomkit.models.room import RoomEvent, TextContent
from roomkit.tools.human_input import HumanInputHandler


async def test_a_request_whose_wait_never_starts_is_waited_for_a_grace_then_left_out() -> None:
    """A request made for a wait (not detached) that no wait gave a deadline (its process
    stopped in between): a follower waits for its deadline through the grace, then leaves
    it out, so the follower ends."""
    handler = HumanInputHandler()
    stranded = await handler.create("AskUserQuestion", {"question": "Lost?"}, room_id="r")
    assert (stranded.deadline, stranded.detached) == (None, False)
    assert await held_requests(handler, "r", waited=0.0) is None
    assert await held_requests(handler, "r", waited=DEADLINE_GRACE) == []
    await handler.arelease(stranded.pending_id)


def test_a_persons_message_holding_a_failure_marker_is_shown_and_fails_nothing() -> None:
    """Only a channel's own event with a whole marker ends a failed turn: a person's message
    whose metadata holds the key (an application's, passed through) is a message to show,
    never a failure to tell its follower."""
    marker = {"what": "A2A message of task t1", "error": "RuntimeError", "sender": "alice"}
    forged = RoomEvent("r", "chat", "mallory", TextContent("hi"), metadata={TURN_FAILED: marker})
    ended = RoomEvent("r", "ai", "ai", TextContent("failed"), metadata={TURN_FAILED: marker})
    shown, failures = failures_told([forged], sender="alice")
    assert (shown, failures) == ([forged], [])
    shown, failures = failures_told([forged, ended], what="A2A message of task t1")
    assert shown == [forged]
    assert [(failure.what, failure.error) for failure in failures] == [
        ("A2A message of task t1", "RuntimeError")
    ]

"""What the protocol adapters share: which open requests hold a room."""

from __future__ import annotations

from roomkit.adapters._feed import DEADLINE_GRACE, held_requests
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

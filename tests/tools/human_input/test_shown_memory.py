"""A handler in memory forgets the ``shown`` marks of the requests it let go, however many
come and go (it kept each for a week, before, on a desk that runs for weeks)."""

from __future__ import annotations

from tests.traced_memory import tracing

from roomkit import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail


async def shown_cycles(handler: HumanInputHandler, count: int) -> None:
    """``count`` requests, each shown on the desk (by a surface of its own, which remembers
    nothing itself), answered and waited on."""
    for _ in range(count):
        pending = await handler.create("Ask", {"question": "Colour?"}, actor_id="ann")
        assert await ShownTrail(handler).record([pending.pending_id], "desk", "ann") == 1
        handler.resolve(pending.pending_id, "blue")
        assert await handler.wait(pending.pending_id) == "blue"


async def test_the_marks_of_requests_let_go_leave_nothing_behind() -> None:
    """3,000 requests shown hold what 1,000 hold, within 256 kB (131 bytes a request).

    Before, each kept its mark in the ledger for a week (about 300 bytes): 600 kB here.
    """
    handler = HumanInputHandler()
    with tracing() as traced:
        await shown_cycles(handler, 1_000)
        few = traced()
        await shown_cycles(handler, 2_000)
        many = traced()
    assert many - few < 256 * 1024


async def test_an_open_request_is_shown_once_however_many_come_and_go() -> None:
    """Its mark stays while the handler holds it: a second trail writes no second entry."""
    handler = HumanInputHandler(retention=4)
    still_open = await handler.create("Ask", {"question": "Still there?"}, actor_id="ann")
    assert await ShownTrail(handler).record([still_open.pending_id], "desk", "ann") == 1
    await shown_cycles(handler, 3_000)
    assert await ShownTrail(handler).record([still_open.pending_id], "desk", "bob") == 0
    history = await handler.history(still_open.pending_id)
    assert [(e["type"], e.get("actor")) for e in history] == [("created", "ann"), ("shown", "ann")]

"""A voice channel asking on a durable store: a call cut at any point withdraws its request."""

from __future__ import annotations

from pathlib import Path

from tests.channels.realtime_harness import ANSWER, new_human
from tests.channels.realtime_voice.voice_harness import MakeVoice

from roomkit import HumanInputHandler
from roomkit.notify import Ladder, remind
from roomkit.stores.sqlite import SQLiteStore


async def test_hanging_up_while_the_ladder_is_written_withdraws_the_request(
    make: MakeVoice, tmp_path: Path
) -> None:
    """The caller hangs up as the question is announced, before the call's wait begins
    (it is writing the ladder): a late answer is refused all the same."""
    store = SQLiteStore(tmp_path / "pending.db")
    human = new_human(handler=HumanInputHandler(store=store), ladder=Ladder(remind(60)))
    h = await make(human=human)
    try:
        await h.provider.simulate_tool_call(h.session, "call-1", "Ask", {"question": "Color?"})
        event = await h.questions.get()
        await h.transport.simulate_client_disconnect(h.session)

        assert (await h.report("Ask")).outcome == "cancelled"
        assert not await human.handler.aresolve(event.pending_id, ANSWER)
        assert await human.handler.list_pending() == []
        assert h.sent_to_provider() == []
    finally:
        await h.kit.close()
        await store.close()

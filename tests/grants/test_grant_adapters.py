"""A framework's pause (the adapters' door) is covered by a grant like a channel's call."""

from __future__ import annotations

from roomkit.adapters._pauses import Asker, Pause
from roomkit.policy.grants import GrantScope, approve_and_grant
from roomkit.tools.approvals import Approval
from roomkit.tools.human_input import HumanInputHandler


def _pause(key: str, amount: int) -> Pause:
    return Pause(key=key, kind="approval", tool_name="pay", arguments={"amount": amount})


async def test_a_pause_within_a_grant_is_approved_without_asking() -> None:
    handler = HumanInputHandler()
    asker = Asker(
        handler,
        approvals={"pay": Approval(approvers=["ann"])},
        timeout=60,
        actor="agent-7",
        room="r1",
        channel="langgraph",
    )
    first = await asker.open(_pause("run-1:a", 5))
    await approve_and_grant(handler, first.pending_id, GrantScope(expires_in=60), by="ann")
    assert (await asker.ask(_pause("run-1:b", 5))).kind == "approve"
    assert await asker.look(_pause("run-1:c", 6), []) is None
    grant_uses = [
        entry
        for request in await handler.list_settled()
        for entry in await handler.history(request.pending_id)
        if entry["type"] == "grant_used"
    ]
    assert len(grant_uses) == 1

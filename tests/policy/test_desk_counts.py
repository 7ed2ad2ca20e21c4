"""The desk shows an administrator how often each policy allowed, denied, asked or
abstained, per tool: a shadow policy's rows say what it would have done."""

from __future__ import annotations

from typing import Any

from engines import CASES, CEDAR
from tests.desk.desk_harness import World, bearer

from roomkit import Approval, HumanInputToolHandler
from roomkit.policy import CedarPolicy
from roomkit.tools.approvals import approve


async def test_an_administrator_reads_the_shadow_counts_per_tool(
    turn: Any,
) -> None:
    policy = CedarPolicy(CEDAR, shadow=True)
    human = HumanInputToolHandler(
        {"Ask"}, policy=policy, approvals={"pay": Approval(approvers="carol")}
    )
    for case in ("allow", "allow", "deny"):
        await turn(human, CASES[case], answer=approve(), room=f"r-{case}")
    world = World()
    async with world.client() as client:
        person = await client.get("/api/policy/counts", headers=bearer("alice"))
        counts = await client.get("/api/policy/counts", headers=bearer("root", admin=True))
        missing = await client.get("/api/policy/counts")

    assert person.status_code == 403
    assert "administrator" in person.json()["detail"]
    assert missing.status_code == 401
    assert counts.status_code == 200
    rows = {
        (row["tool"], row["decision"], row["enforced"]): row["calls"]
        for row in counts.json()
        if row["policy"] == "cedar"
    }
    assert rows == {("pay", "allow", False): 2, ("pay", "deny", False): 1}

"""/metrics shows how often each policy allowed, denied, asked or abstained, per tool: a
shadow policy's counts say what it would have done."""

from __future__ import annotations

from typing import Any

from engines import CASES, CEDAR
from prometheus_client.parser import text_string_to_metric_families

from roomkit import Approval, HumanInputHandler, HumanInputToolHandler
from roomkit.desk.metrics import DeskMetrics
from roomkit.policy import CedarPolicy
from roomkit.tools.approvals import approve


async def test_metrics_count_shadow_decisions_per_tool_and_decision(turn: Any) -> None:
    policy = CedarPolicy(CEDAR, shadow=True)
    human = HumanInputToolHandler(
        {"Ask"}, policy=policy, approvals={"pay": Approval(approvers="carol")}
    )
    for case in ("allow", "allow", "deny", "ask"):
        done = await turn(human, CASES[case], answer=approve(), room=f"r-{case}")
        assert done.paid == [CASES[case]]  # in shadow, carol still decides each one
    metrics = DeskMetrics()
    metrics.observe(open_requests=[], statistics=HumanInputHandler().statistics(), clients=0)
    figures = {
        (sample.labels["decision"], sample.labels["enforced"]): sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
        if sample.name == "roomkit_policy_decisions"
        and sample.labels["tool"] == "pay"
        and sample.labels["policy"] == "cedar"
    }
    assert figures == {("allow", "false"): 2, ("deny", "false"): 1, ("ask", "false"): 1}

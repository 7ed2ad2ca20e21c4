"""Rego decides off the event loop, within its ``timeout``: a decision past its time limit
fails closed (``on_error``), which the loop could not see if the decision held it. Cedar,
with no loops and no recursion, decides on the loop and takes no ``timeout``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roomkit.policy import Allow, CedarPolicy, PolicyCall, PolicyError, RegoPolicy, rule_call
from roomkit.policy.config import policy_from_table

pytest.importorskip("cedarpy")

GUARD = 10.0
"""Seconds a test waits for what must happen before it fails (a hang guard only)."""

PERMIT_ALL = 'permit(principal, action == Action::"pay", resource);'


def call(**arguments: object) -> PolicyCall:
    return PolicyCall("pay", arguments, "digest", "alice", "r1", "agent")


async def test_a_slow_rego_rule_fails_closed_past_its_timeout() -> None:
    """A rule over ``numbers.range(1, n)`` for a caller's ``n`` is cut by the time limit."""
    pytest.importorskip("regopy")
    policy = RegoPolicy(
        """
package roomkit

import rego.v1

decision := {"decision": "allow"} if {
    count([x | some x in numbers.range(1, input.arguments.n); x % 7 == 0]) > 0
}
""",
        timeout=0.05,
        on_error="deny",
    )
    assert isinstance(policy.decide(call(n=10)), Allow)
    ruling = await asyncio.wait_for(rule_call(policy, None, call(n=1_000_000)), GUARD)
    assert ruling.refusal is not None
    assert ruling.record is not None
    assert ruling.record.failed
    assert "TimeoutError" in (ruling.record.reason or "")


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), "2", True, 4e9])
def test_a_timeout_not_above_0_and_at_most_a_century_is_refused(timeout: object) -> None:
    with pytest.raises(PolicyError, match="timeout is a positive number"):
        RegoPolicy("package roomkit\n", timeout=timeout)  # type: ignore[arg-type]


def test_a_cedar_policy_takes_no_timeout(tmp_path: Path) -> None:
    """Neither in code nor in a notifier file: a cedar decision is never cut short."""
    with pytest.raises(TypeError):
        CedarPolicy(PERMIT_ALL, timeout=1.0)  # type: ignore[call-arg]
    (tmp_path / "pay.cedar").write_text(PERMIT_ALL, encoding="utf-8")
    table = {"engine": "cedar", "file": "pay.cedar", "timeout": 1.0}
    with pytest.raises(PolicyError, match="timeout is for rego and opa policies"):
        policy_from_table(table, tmp_path)

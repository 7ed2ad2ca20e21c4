"""Rego and Cedar decide off the event loop, within their ``timeout``: a slow decision holds
neither the loop nor other calls, and one past its time limit fails closed (``on_error``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from engines import CEDAR

from roomkit.policy import Allow, CedarPolicy, PolicyCall, PolicyError, RegoPolicy, rule_call
from roomkit.tools.approvals import Approval

pytest.importorskip("cedarpy")

GUARD = 10.0
"""Seconds a test waits for what must happen before it fails (a hang guard only)."""

PERMIT_ALL = 'permit(principal, action == Action::"pay", resource);'


def call(**arguments: object) -> PolicyCall:
    return PolicyCall("pay", arguments, "digest", "alice", "r1", "agent")


class Held:
    """Cedar entities that hold the decision until released, telling the loop it started."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.entered = asyncio.Event()
        self.release = threading.Event()
        self.threads: list[str] = []

    def __call__(self, call: PolicyCall) -> list[dict[str, Any]]:
        self.threads.append(threading.current_thread().name)
        self.loop.call_soon_threadsafe(self.entered.set)
        self.release.wait(GUARD)
        return []


@pytest.fixture
def released() -> Iterator[list[Held]]:
    """Every ``Held`` made in the test, released at its end whatever happened."""
    made: list[Held] = []
    yield made
    for held in made:
        held.release.set()


async def test_a_slow_cedar_decision_holds_neither_the_loop_nor_other_calls(
    released: list[Held],
) -> None:
    held = Held()
    released.append(held)
    slow = CedarPolicy(PERMIT_ALL, entities=held, timeout=GUARD * 6)
    pending = asyncio.create_task(rule_call(slow, None, call(amount=5)))
    await asyncio.wait_for(held.entered.wait(), GUARD)
    # The decision is under way on its thread: another call is decided meanwhile.
    other = await asyncio.wait_for(rule_call(CedarPolicy(CEDAR), None, call(amount=5)), GUARD)
    assert other.record is not None
    assert other.record.decision == "allow"
    assert not pending.done()
    held.release.set()
    ruling = await asyncio.wait_for(pending, GUARD)
    assert ruling.record is not None
    assert ruling.record.decision == "allow"
    assert held.threads[0].startswith("roomkit-cedar")


@pytest.mark.parametrize("on_error", ["ask", "deny"])
async def test_a_cedar_decision_past_its_timeout_fails_closed(
    on_error: str, released: list[Held]
) -> None:
    held = Held()
    released.append(held)
    slow = CedarPolicy(PERMIT_ALL, entities=held, timeout=0.05, on_error=on_error)  # type: ignore[arg-type]
    rule = Approval(approvers="carol")
    ruling = await asyncio.wait_for(rule_call(slow, rule, call(amount=5)), GUARD)
    assert held.entered.is_set()
    assert ruling.record is not None
    assert ruling.record.failed
    assert "TimeoutError" in (ruling.record.reason or "")
    if on_error == "deny":
        assert (ruling.ask, ruling.refusal is not None) == (None, True)
    else:
        assert ruling.ask is not None
        assert ruling.ask.approvers == ("carol",)


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


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), "2", True])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout: object) -> None:
    with pytest.raises(PolicyError, match="timeout is a positive number"):
        CedarPolicy(PERMIT_ALL, timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="timeout is a positive number"):
        RegoPolicy("package roomkit\n", timeout=timeout)  # type: ignore[arg-type]

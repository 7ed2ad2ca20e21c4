"""The policy step's cost on a call it allows: a tool turn under CedarPolicy beside the same
turn without a policy.

A turn is one ``process_inbound``: the scripted model calls ``lookup``, the call runs, the
model replies. Under the policy, Cedar (in process) allows the call before it runs, and the
call's history is written (created, policy_decided, the policy's decision, executed) in the
memory store. Target: at most 10 % added to the tool turn (paired medians: blocks of turns
of each kind in alternation on fresh kits, so a shared machine's load falls on both alike).
Also shown, to tell the engine from the evidence: the same turn under a Python policy that
allows every call (the history written, no engine), and one ``CedarPolicy.decide`` alone:
on the allowed call (no policy that reads ``context`` applies to it, so Cedar is not handed
one and the policy remembers its decision per actor and tool), on such a call by an actor
it has not decided for yet (Cedar evaluates it), and on a call a policy reading ``context``
may apply to (Cedar builds its context, every time).

Run: python bench/bench_policy.py (``--quick``: fewer rounds)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

from _harness import Row, start

from roomkit import AITool, HumanInputToolHandler, InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.policy import Allow, CedarPolicy, Policy, PolicyCall
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider

TARGET = 10.0
"""Percent the policy step may add to a tool turn."""

POLICIES = """
@id("lookups")
permit(principal, action == Action::"lookup", resource);

@id("ask:large-payments")
forbid(principal, action == Action::"pay", resource) when { context.arguments.amount >= 1000 };
"""

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)
LOOKUP = AITool(
    name="lookup",
    description="Look something up.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


async def lookup(name: str, arguments: dict[str, Any]) -> str:
    return '{"found": true}'


class AllowAll:
    """A Python policy that allows every call: the step's cost without an engine."""

    name = "allow-all"

    def decide(self, call: PolicyCall) -> Allow:
        return Allow()


async def build(policy: Policy | None) -> RoomKit:
    kit = RoomKit()
    human = HumanInputToolHandler({"AskUserQuestion"}, tool_definitions=[ASK], policy=policy)
    call = AIToolCall(id="tc-1", name="lookup", arguments={"q": "x"})
    kit.register_channel(
        AIChannel(
            "agent",
            provider=MockAIProvider(
                ai_responses=[AIResponse(tool_calls=[call]), AIResponse(content="Done.")]
            ),
            tool_handler=lookup,
            tools=[LOOKUP],
            human_input_handler=human,
        )
    )
    await kit.create_room("r")
    await kit.attach_channel("r", "agent")
    return kit


async def time_turns(kit: RoomKit, count: int) -> list[float]:
    message = InboundMessage("web", "alice", TextContent("hi"))
    laps = []
    for _ in range(count):
        began = time.perf_counter()
        await kit.process_inbound(message, room_id="r")
        laps.append(time.perf_counter() - began)
    return laps


async def paired(rounds: int, turns: int) -> tuple[float, float, float]:
    """Median turns without a policy, under CedarPolicy and under a Python policy (medians of
    alternating blocks), in ms."""
    policies: tuple[Policy | None, ...] = (None, CedarPolicy(POLICIES), AllowAll())
    medians: tuple[list[float], ...] = ([], [], [])
    for _ in range(rounds):
        for chosen, found in zip(policies, medians, strict=True):
            kit = await build(chosen)
            await time_turns(kit, 50)  # warm-up
            found.append(statistics.median(await time_turns(kit, turns)) * 1e3)
            await kit.close()
    plain, cedar, python = (statistics.median(found) for found in medians)
    return plain, cedar, python


def decide_alone(count: int, call: PolicyCall) -> float:
    """One CedarPolicy.decide on ``call``, in microseconds (median of batches)."""
    policy = CedarPolicy(POLICIES)
    batches = []
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(count):
            policy.decide(call)
        batches.append((time.perf_counter() - began) / count * 1e6)
    return statistics.median(batches)


def decide_first(count: int) -> float:
    """One CedarPolicy.decide on ``lookup`` by an actor the policy has not decided for yet
    (Cedar evaluates it), in microseconds (median of batches, each on a fresh policy)."""
    calls = [
        PolicyCall("lookup", {"q": "x"}, "d" * 64, f"user-{n}", "r", "agent") for n in range(count)
    ]
    batches = []
    for _ in range(5):
        policy = CedarPolicy(POLICIES)
        began = time.perf_counter()
        for call in calls:
            policy.decide(call)
        batches.append((time.perf_counter() - began) / count * 1e6)
    return statistics.median(batches)


async def main(rounds: int, turns: int) -> list[Row]:
    plain, policed, python = await paired(rounds, turns)
    added = (policed / plain - 1) * 100
    chain = (python / plain - 1) * 100
    alone = decide_alone(2_000, PolicyCall("lookup", {"q": "x"}, "d" * 64, "alice", "r", "agent"))
    first = decide_first(2_000)
    # A policy reading the context may apply to ``pay``: Cedar is handed the call's context.
    paid = PolicyCall("pay", {"amount": 5}, "d" * 64, "alice", "r", "agent")
    with_context = decide_alone(2_000, paid)
    return [
        Row(
            "a tool turn, the call allowed by CedarPolicy, beside no policy (paired medians)",
            f"{policed:.3f} / {plain:.3f} ms ({added:+.1f} %)",
            f"<= +{TARGET:.0f} %",
            added <= TARGET,
            value=policed,
            unit="ms",
            ratio=policed / plain,
        ),
        Row(
            "the same turn allowed by a Python policy (the history alone), beside no policy",
            f"{python:.3f} / {plain:.3f} ms ({chain:+.1f} %)",
            value=python,
            unit="ms",
            ratio=python / plain,
        ),
        Row(
            "CedarPolicy.decide alone, on the allowed call (no policy reading context applies)",
            f"{alone:.2f} us",
            value=alone,
            unit="us",
        ),
        Row(
            "CedarPolicy.decide alone, on such a call by an actor not decided for yet",
            f"{first:.1f} us",
            value=first,
            unit="us",
        ),
        Row(
            "CedarPolicy.decide alone, on a call a policy reading context may apply to",
            f"{with_context:.1f} us",
            value=with_context,
            unit="us",
        ),
    ]


if __name__ == "__main__":
    run = start("policy", __doc__)
    rounds = run.rounds_or(6, quick=2)
    turns = 100 if run.quick else 300
    run.table("policy", asyncio.run(main(rounds, turns)))
    sys.exit(run.finish())

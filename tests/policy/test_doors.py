"""The external tool handler's path goes through the same policy step as the channel's own;
the rules refuse what is not a policy."""

from __future__ import annotations

from typing import Any

import pytest

from roomkit import (
    AIChannel,
    Approval,
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    PendingInputEvent,
    RoomKit,
    TextContent,
)
from roomkit.core.exceptions import ArgumentsTooLargeError, InvalidTextError
from roomkit.policy import Allow, Deny, PolicyCall, PolicyDecision
from roomkit.policy.ruling import asks_person
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools import PolicyExternalToolHandler, ToolDecision


class Fixed:
    name = "fixed"

    def __init__(self, decision: PolicyDecision) -> None:
        self.decision = decision

    def decide(self, call: PolicyCall) -> PolicyDecision:
        return self.decision


class Provider(PolicyExternalToolHandler):
    """Lets every call through, and keeps what it is told of a refusal."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[str] = []

    async def on_tool_refused(
        self, tool_name: str, tool_input: dict[str, Any], reason: str, **context: Any
    ) -> None:
        self.refused.append(reason)


async def external_turn(policy: Any) -> tuple[list[PendingInputEvent], list[str], list[str]]:
    human = HumanInputToolHandler({"Ask"}, policy=policy, approvals={"Bash": Approval()})
    call = AIToolCall(id="tc-1", name="Bash", arguments={"cmd": "ls"})
    provider = MockAIProvider(
        ai_responses=[AIResponse(tool_calls=[call]), AIResponse(content="ok")]
    )
    kit = RoomKit()
    external = Provider()
    kit.register_channel(
        AIChannel(
            "agent",
            provider=provider,
            human_input_handler=human,
            external_tool_handler=external,
        )
    )
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    asked: list[PendingInputEvent] = []

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def person(event: PendingInputEvent, ctx: Any) -> None:
        asked.append(event)

    await kit.process_inbound(InboundMessage("web", "alice", TextContent("go")), room_id="r1")
    await kit.hooks.drain()
    (settled,) = await human.handler.list_settled()
    types = [entry["type"] for entry in await human.handler.history(settled.pending_id)]
    await kit.close()
    return asked, types, external.refused


async def test_an_external_call_the_policy_allows_is_handed_over_unasked() -> None:
    asked, types, _ = await external_turn(Fixed(Allow()))
    assert asked == []
    assert types == ["created", "policy_decided", "decided", "settled", "executed"]


async def test_an_external_call_the_policy_denies_never_runs() -> None:
    asked, types, refused = await external_turn(Fixed(Deny("no shell")))
    assert asked == []
    assert types == ["created", "policy_decided", "decided", "settled"]
    (reason,) = refused
    assert "no shell" in reason


class Rewriting(Provider):
    """Lets every call through with the arguments it was given to rewrite it to."""

    def __init__(self, arguments: dict[str, Any]) -> None:
        super().__init__()
        self.arguments = arguments

    async def process_tool_call(
        self, tool_name: str, tool_input: dict[str, Any], **context: Any
    ) -> ToolDecision:
        return ToolDecision(approved=True, modified_input=self.arguments)


def holding_itself() -> dict[str, Any]:
    arguments: dict[str, Any] = {"cmd": "ls"}
    arguments["again"] = arguments
    return arguments


def nested(depth: int) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for _ in range(depth):
        arguments = {"cmd": arguments}
    return arguments


UNHELD = [
    pytest.param({"cmd": "l\ud800s"}, InvalidTextError, r"lone surrogate .* of 'cmd'", id="text"),
    pytest.param(holding_itself(), ValueError, r"hold themselves at 'again'", id="loop"),
    pytest.param({"cmd": {"ls"}}, TypeError, r"type set at 'cmd'", id="set"),
    pytest.param({"cmd": float("nan")}, ValueError, r"hold nan at 'cmd'", id="nan"),
    # Deeper than a copy's recursion reaches, not as deep as the digest's.
    pytest.param(nested(600), ArgumentsTooLargeError, r"nest .* more than 24", id="deep"),
    pytest.param(nested(5_000), ArgumentsTooLargeError, r"nest .* more than 24", id="deeper"),
]


@pytest.mark.parametrize("policy", [None, Fixed(Allow())], ids=["rule", "policy"])
@pytest.mark.parametrize(("arguments", "error", "match"), UNHELD)
async def test_rewritten_arguments_no_store_takes_are_refused_alike_with_a_policy(
    policy: Any, arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    """The handler's rewritten arguments, which no request can hold, are refused with the
    message saying where, whether a policy or the tool's rule alone looks at the call."""
    human = HumanInputToolHandler({"Ask"}, policy=policy, approvals={"Bash": Approval()})
    call = AIToolCall(id="tc-1", name="Bash", arguments={"cmd": "ls"})
    provider = MockAIProvider(ai_responses=[AIResponse(tool_calls=[call])])
    kit = RoomKit()
    external = Rewriting(arguments)
    kit.register_channel(
        AIChannel(
            "agent", provider=provider, human_input_handler=human, external_tool_handler=external
        )
    )
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    with pytest.raises(error, match=match):
        await kit.process_inbound(InboundMessage("web", "alice", TextContent("go")), room_id="r1")
    await kit.close()


def test_approval_refuses_what_is_not_a_policy() -> None:
    with pytest.raises(TypeError, match=r"policy= takes a Policy"):
        Approval(policy=object())  # type: ignore[arg-type]


def test_the_tool_handler_refuses_what_is_not_a_policy() -> None:
    with pytest.raises(TypeError, match=r"policy= takes a Policy"):
        HumanInputToolHandler({"Ask"}, policy="cedar")  # type: ignore[arg-type]


class ShadowText(Fixed):
    """A policy whose ``shadow`` is text, which ``bool()`` would read as true."""

    shadow = "false"


def test_a_policy_whose_shadow_is_no_bool_is_refused_where_it_is_given() -> None:
    with pytest.raises(TypeError, match=r"^Approval policy= .* shadow='false'"):
        Approval(policy=ShadowText(Allow()))
    with pytest.raises(TypeError, match=r"^policy= .* shadow is True or False"):
        HumanInputToolHandler({"Ask"}, policy=ShadowText(Allow()))
    huge = ShadowText(Allow())
    huge.shadow = "y" * 1_000_000
    with pytest.raises(TypeError) as refused:
        Approval(policy=huge)
    assert len(str(refused.value)) < 300


@pytest.mark.parametrize(("arguments", "error", "match"), UNHELD)
async def test_asks_person_with_a_policy_refuses_arguments_no_store_takes(
    arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    """Refused as ``create`` refuses them, before they are digested for the policy: never
    json's own error, nor a ``RecursionError``."""
    with pytest.raises(error, match=match):
        await asks_person(Approval(policy=Fixed(Allow())), "Bash", arguments, actor="alice")
    assert not await asks_person(Approval(policy=Fixed(Allow())), "Bash", {"cmd": "ls"})

"""A model that writes a lone surrogate into a call's arguments (JSON's ``"\\ud800"``): the
call is refused with an error the model can act on, nothing is asked or stored, the rest of
the round runs, and the conversation sent back to the model stays encodable. One in its
reply, a call's name or id reaches the room and the model as U+FFFD."""

from __future__ import annotations

import json
from typing import Any

from ai_harness import LOOKUP, Build, ask, round_of, tool_call

from roomkit.providers.ai.base import AIResponse, AIToolCall, ServedCall
from roomkit.tools.external import ExternalToolHandler, ToolDecision

LONE = "caf\ud800"


def encodes(value: Any) -> bool:
    """Whether ``value`` makes JSON that UTF-8 can carry (what a vendor API is sent)."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


async def test_the_call_is_refused_and_nobody_is_asked(build: Build) -> None:
    h = await build(round_of(ask(LONE)))

    await h.say()

    [(content, is_error)] = h.read()
    error = json.loads(content)["error"]
    assert is_error
    assert error.startswith("Invalid arguments for 'Ask': arguments must be valid Unicode text")
    assert "lone surrogate (U+D800) at character 3 of 'question'" in error
    assert h.human is not None
    assert await h.human.handler.list_pending() == []
    assert h.report().refused
    assert encodes(h.report().arguments)
    assert encodes([message.model_dump(mode="json") for message in h.provider.calls[1].messages])


async def test_the_other_calls_of_the_round_run(build: Build) -> None:
    h = await build(
        round_of(ask(LONE, id="tc-1"), tool_call("lookup", {"key": "café"}, id="tc-2")),
        tools=[LOOKUP],
    )

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        return f"found {arguments['key']}"

    h.ai.tool_handler = lookup

    await h.say()

    [(refused, refused_error), (found, found_error)] = h.read()
    assert refused_error
    assert "valid Unicode text" in json.loads(refused)["error"]
    assert (found, found_error) == ("found café", False)


async def test_a_call_for_the_external_handler_never_reaches_it(build: Build) -> None:
    asked: list[dict[str, Any]] = []

    class Sandbox(ExternalToolHandler):
        async def process_tool_call(
            self, tool_name: str, tool_input: dict[str, Any], **kwargs: Any
        ) -> ToolDecision:
            asked.append(tool_input)  # the call is refused before it gets here
            return ToolDecision(approved=True)

        async def on_tool_result(
            self, tool_name: str, tool_input: dict[str, Any], result: Any, **kwargs: Any
        ) -> None:
            pass

    h = await build(
        round_of(tool_call("Bash", {"cmd": ["ls", LONE]})), external_tool_handler=Sandbox()
    )

    await h.say()

    report = h.report()
    assert (report.refused, report.is_error) == (True, True)
    assert "of 'cmd[1]'" in json.loads(str(report.result))["error"]
    assert asked == []
    assert encodes(report.arguments)


async def test_a_call_the_provider_ran_is_reported_with_clean_arguments(build: Build) -> None:
    ran = AIToolCall(
        id="tc-1",
        name="web_search",
        arguments={"query": LONE},
        served=ServedCall(result="3 results"),
    )
    h = await build(round_of(ran))

    await h.say()

    report = h.report()
    assert (report.outcome, report.arguments) == ("served", {"query": "caf\ufffd"})


async def test_a_reply_a_name_and_an_id_holding_one_reach_the_room_cleaned(build: Build) -> None:
    h = await build(
        round_of(tool_call(f"look{LONE}", id=f"tc-{LONE}")), AIResponse(content=f"Bon {LONE}")
    )

    result = await h.say()

    [(content, is_error)] = h.read()
    assert is_error
    assert json.loads(content) == {"error": "Tool 'lookcaf\ufffd' is not declared."}
    assert (h.report("tc-caf\ufffd").name, h.report("tc-caf\ufffd").refused) == (
        "lookcaf\ufffd",
        True,
    )
    assert encodes([message.model_dump(mode="json") for message in h.provider.calls[1].messages])
    assert [reply.content.body for reply in result.responses] == ["Bon caf\ufffd"]
    assert [event.content.body for event in h.delivered] == ["Bon caf\ufffd"]

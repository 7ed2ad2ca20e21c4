"""An approval keeps its tool's description in its first history entry, on every store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ai_harness import ASK, Build, round_of, tool_call

from roomkit import HookTrigger, HumanInputToolHandler, PendingInputEvent
from roomkit.providers.ai.base import AITool
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input._decisions import MAX_DESCRIPTION_CHARS

SEND = AITool(
    name="send_email",
    description="Send an email.",
    parameters={"type": "object", "properties": {"to": {"type": "string"}}},
)


async def test_the_pipeline_passes_the_tools_description_to_the_approval(build: Build) -> None:
    human = HumanInputToolHandler({"Ask"}, tool_definitions=[ASK], approvals={"send_email"})
    seen: list[str] = []

    async def send(name: str, arguments: dict[str, Any]) -> str:
        return "sent"

    h = await build(
        round_of(tool_call("send_email", {"to": "bob"})),
        human=human,
        tools=[SEND],
        tool_handler=send,
    )

    @h.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def decide(event: PendingInputEvent, ctx: Any) -> None:
        seen.append(event.pending_id)
        await human.handler.aresolve(event.pending_id, approve(), by="alice")

    await h.say()
    (created, *_) = await human.handler.history(seen[0])
    assert (created["type"], created["description"]) == ("created", "Send an email.")


async def test_the_description_outlives_the_process_and_a_long_one_is_cut(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"
    first = SQLiteStore(path)
    handler = HumanInputHandler(store=first)
    described = await handler.create_approval(
        "book", {}, approvers=["alice"], description="Book it." + "x" * MAX_DESCRIPTION_CHARS
    )
    plain = await handler.create_approval("book", {}, approvers=["alice"])
    await first.close()

    store = SQLiteStore(path)
    again = HumanInputHandler(store=store)
    try:
        (created, *_) = await again.history(described.pending_id)
        assert created["description"] == ("Book it." + "x" * MAX_DESCRIPTION_CHARS)[:4000]
        (bare, *_) = await again.history(plain.pending_id)
        assert "description" not in bare
    finally:
        await store.close()

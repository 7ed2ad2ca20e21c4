"""An OpenAI Agents SDK run whose tool approvals are decided through roomkit, durably.

``delete_branch`` has ``needs_approval=True``. ``roomkit.adapters.openai_agents.start`` runs
the agent until it pauses, opens a roomkit approval for the call (approve or reject: the SDK
carries no edit) and keeps the run's ``RunState`` in roomkit's store under the run's key.
Later, in any process sharing the store, ``resume`` continues the run once a person has
decided. The model is the SDK's own ``ScriptedModel`` and tracing is off, so this runs offline.

Run: python examples/openai_agents_approval.py
(needs: pip install -e '.[openai-agents,sqlite]')
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from roomkit.adapters import openai_agents as roomkit_agents
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

DELETED: list[str] = []


@function_tool(needs_approval=True)
def delete_branch(name: str) -> str:
    """Delete a git branch."""
    DELETED.append(name)
    return f"deleted {name}"


def build() -> Agent:
    model = ScriptedModel(
        [
            [function_call("delete_branch", {"name": "old-feature"}, call_id="call-1")],
            [assistant_message("The branch is gone.")],
        ]
    )
    return Agent(name="git", model=model, tools=[delete_branch])


async def main() -> list[str]:
    set_tracing_disabled(True)
    log: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "roomkit.db")
        handler = HumanInputHandler(store=store)
        agent = build()
        (pending_id,) = await roomkit_agents.start(
            agent, "Clean up old-feature", handler=handler, run_key="cleanup-1", actor="alice"
        )
        request = await handler.get_request(pending_id)
        assert request is not None
        log.append(f"[paused] {request.tool_name} {request.arguments} for {request.approvers}")
        # Later, on the desk: alice approves. Then a resumer (any process) continues the run.
        await handler.aresolve(pending_id, approve(), by="alice")
        left = await roomkit_agents.resume(agent, "cleanup-1", handler=handler, actor="alice")
        log.append(f"[resumed] deleted {DELETED}, still pending: {left}")
        await store.close()
    return log


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)

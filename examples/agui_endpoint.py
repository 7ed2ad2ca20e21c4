"""An AG-UI front end talks to a RoomKit agent: the agent asks, the run ends with an
interrupt, the next run's ``resume`` answers it.

Runs in-process (httpx over ASGI), so nothing listens on a port; serve ``app`` with uvicorn
to point CopilotKit or any AG-UI client at ``http://127.0.0.1:8000/agui``.

Run: python examples/agui_endpoint.py (needs: pip install -e '.[agui,desk]': the desk extra
brings httpx, which drives the endpoint here, and uvicorn, which serves it)
"""

from __future__ import annotations

import asyncio
import json

import httpx
from fastapi import FastAPI

from roomkit import AITool, HumanInputHandler, HumanInputToolHandler, RoomKit
from roomkit.adapters.agui import agui_router
from roomkit.auth import issue_token
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.human_input import ASK_USER_QUESTION

SECRET = "example-secret-change-me-0123456789abcdef"


def build() -> FastAPI:
    """A kit whose agent asks one question, behind the AG-UI endpoint."""
    handler = HumanInputHandler()
    kit = RoomKit()
    provider = MockAIProvider(
        ai_responses=[
            MockAIProvider.tool_call("AskUserQuestion", {"question": "Which colour?"}),
            AIResponse(content="Blue it is."),
        ]
    )
    human = HumanInputToolHandler(
        {"AskUserQuestion"}, handler=handler, tool_definitions=[AITool(**ASK_USER_QUESTION)]
    )
    kit.register_channel(AIChannel("agent", provider=provider, human_input_handler=human))
    app = FastAPI()
    app.include_router(agui_router(kit, agent="agent", secret=SECRET))
    return app


def events_of(stream: str) -> list[dict[str, object]]:
    """The AG-UI events of a ``text/event-stream`` body."""
    frames = [frame for frame in stream.split("\n\n") if frame.startswith("data: ")]
    return [json.loads(frame.removeprefix("data: ")) for frame in frames]


async def main() -> list[str]:
    app = build()
    headers = {"Authorization": f"Bearer {issue_token(SECRET, 'alice')}"}
    transcript: list[str] = []
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        messages = [{"id": "m1", "role": "user", "content": "Paint my logo"}]
        body = {"threadId": "logo", "runId": "run-1", "messages": messages}
        first = events_of((await client.post("/agui", json=body, headers=headers)).text)
        outcome = first[-1]["outcome"]
        assert isinstance(outcome, dict)
        [interrupt] = outcome["interrupts"]
        transcript.append(f"[interrupt] {interrupt['message']} (until {interrupt['expiresAt']})")
        resume = [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"answer": "blue"}}
        ]
        body = {"threadId": "logo", "runId": "run-2", "messages": messages, "resume": resume}
        second = events_of((await client.post("/agui", json=body, headers=headers)).text)
        transcript += [
            f"[agent] {e['delta']}" for e in second if e["type"] == "TEXT_MESSAGE_CONTENT"
        ]
        transcript.append(f"[run] {second[-1]['type']}")
    return transcript


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)

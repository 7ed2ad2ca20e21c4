"""Another agent asks a RoomKit agent over A2A: the task waits for a person
(``input-required``), and a follow-up message on the task answers it.

Runs in-process with the SDK's own client over ASGI; serve ``app`` with uvicorn to expose
it, and run a ``Notifier`` with ``A2APush`` for durable push notifications (then give the
request handler the push's ``configs`` as its ``push_config_store``: it refuses, as they are
set, configs the push could not send; see docs/how-to/a2a.md).

Run: python examples/a2a_agent.py (needs: pip install -e '.[a2a]')
"""

from __future__ import annotations

import asyncio

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_text_parts, new_text_part
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_rest_routes
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from starlette.applications import Starlette

from roomkit import AITool, HumanInputHandler, HumanInputToolHandler, RoomKit
from roomkit.adapters.a2a import A2AGate, RoomKitExecutor
from roomkit.auth import issue_token
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.human_input import ASK_USER_QUESTION

SECRET = "example-secret-change-me-0123456789abcdef"
URL = "http://agent.example"
CARD = AgentCard(
    name="logo agent",
    description="Makes logos; asks a person when it must.",
    version="1.0",
    supported_interfaces=[
        AgentInterface(protocol_binding="HTTP+JSON", url=URL, protocol_version="1.0")
    ],
    capabilities=AgentCapabilities(streaming=False, push_notifications=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="logo", name="Logo", description="Makes a logo.", tags=["logo"])],
)


def build() -> A2AGate:
    """The kit's agent behind the SDK's REST routes and the desk's tokens."""
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
    executor = RoomKitExecutor(kit, agent="agent")
    requests = DefaultRequestHandler(
        executor,
        # A cancel the SDK only writes to the store (after a restart) is carried out too.
        executor.task_store(InMemoryTaskStore()),
        CARD,
        push_config_store=InMemoryPushNotificationConfigStore(),
        # A message sent again (its reply lost) reaches the task its first sending started.
        request_context_builder=executor.request_context_builder(),
    )
    routes = create_agent_card_routes(CARD) + create_rest_routes(requests)
    return A2AGate(Starlette(routes=routes), handler=handler, secret=SECRET)


async def send(http: httpx.AsyncClient, text: str, task: Task | None = None) -> Task:
    config = ClientConfig(
        httpx_client=http, streaming=False, supported_protocol_bindings=["HTTP+JSON"]
    )
    client = ClientFactory(config).create(CARD)
    message = Message(
        role=Role.ROLE_USER,
        parts=[new_text_part(text)],
        message_id=f"m-{text}",
        context_id="logo",
        task_id="" if task is None else task.id,
    )
    found = None
    async for response in client.send_message(SendMessageRequest(message=message)):
        if response.HasField("task"):
            found = response.task
    assert found is not None
    return found


async def main() -> list[str]:
    headers = {"Authorization": f"Bearer {issue_token(SECRET, 'alice')}"}
    transport = httpx.ASGITransport(app=build())
    transcript: list[str] = []
    async with httpx.AsyncClient(transport=transport, base_url=URL, headers=headers) as http:
        task = await send(http, "Make me a logo")
        question = get_text_parts(list(task.status.message.parts))[0]
        transcript.append(f"[{TaskState.Name(task.status.state)}] {question}")
        task = await send(http, "blue", task)
        reply = get_text_parts(list(task.status.message.parts))[0]
        transcript.append(f"[{TaskState.Name(task.status.state)}] {reply}")
    return transcript


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)

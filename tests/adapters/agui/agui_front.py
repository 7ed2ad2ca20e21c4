"""A kit with an agent behind the AG-UI endpoint and the desk, and a front end that reads
every SSE frame back through the ``ag_ui`` package's own event models."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from ag_ui.core import Event, EventType
from fastapi import FastAPI
from pydantic import TypeAdapter

from roomkit import (
    AITool,
    Approval,
    HumanInputHandler,
    HumanInputToolHandler,
    RoomKit,
)
from roomkit.adapters.agui import agui_router
from roomkit.channels.ai import AIChannel
from roomkit.desk import DeskLimits, issue_token
from roomkit.desk.api import Desk, desk_router
from roomkit.providers.ai.base import AIProvider, AIResponse
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.human_input import ASK_USER_QUESTION, CONFIRM_ACTION

SECRET = "agui-tests-secret-0123456789abcdef"
ROOMY = DeskLimits(rate=1_000_000.0, burst=1_000_000)
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
TERMINAL = {EventType.RUN_FINISHED, EventType.RUN_ERROR}
SEND = AITool(
    name="send",
    description="Send an email.",
    parameters={
        "type": "object",
        "properties": {"to": {"type": "string"}},
        "required": ["to"],
    },
)


DONE = AIResponse(content="Blue it is.")
"""The reply a front's turn ends with once its question is answered."""


def ask(question: str = "Which colour?", *, id: str = "tc-ask") -> AIResponse:
    return MockAIProvider.tool_call("AskUserQuestion", {"question": question}, id=id)


def confirm(action: str = "Delete the draft.", *, id: str = "tc-confirm") -> AIResponse:
    return MockAIProvider.tool_call("ConfirmAction", {"action": action}, id=id)


def send(to: str = "bob@example.com", *, id: str = "tc-send") -> AIResponse:
    return MockAIProvider.tool_call("send", {"to": to}, id=id)


class Outbox:
    """The ``send`` tool: what it sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.sent.append(arguments)
        return "sent"


class Front:
    """The kit, its agent, the desk and the AG-UI endpoint on one app."""

    def __init__(
        self,
        script: list[AIResponse],
        *,
        questions: Any = None,
        rooms: Any = None,
        answer_schemas: dict[str, Any] | None = None,
        approval: Approval | None = None,
        max_new_messages: int | None = None,
        provider: AIProvider | None = None,
        clock: Callable[[], float] | None = None,
        human_tools: list[AITool] | None = None,
    ) -> None:
        """``human_tools``: the host's own human-input tools, served beside the two
        standard ones."""
        self.handler = HumanInputHandler(store=questions) if questions else HumanInputHandler()
        self.outbox = Outbox()
        self.provider = provider or MockAIProvider(ai_responses=script)
        own = human_tools or []
        human = HumanInputToolHandler(
            {"AskUserQuestion", "ConfirmAction", *(tool.name for tool in own)},
            handler=self.handler,
            approvals={"send": approval or Approval()},
            tool_definitions=[AITool(**ASK_USER_QUESTION), AITool(**CONFIRM_ACTION), *own],
            answer_schemas=answer_schemas,
        )
        self.kit = RoomKit(store=rooms, clock=clock) if clock else RoomKit(store=rooms)
        self.kit.register_channel(
            AIChannel(
                "ai",
                provider=self.provider,
                human_input_handler=human,
                tools=[SEND],
                tool_handler=self.outbox,
            )
        )
        self._desk: Desk | None = None
        self.app = FastAPI()
        limits = {} if max_new_messages is None else {"max_new_messages": max_new_messages}
        self.app.include_router(
            agui_router(self.kit, agent="ai", handler=self.handler, secret=SECRET, **limits)
        )
        self.messages: list[dict[str, Any]] = []
        """The conversation the front end holds, as it sends it."""

    @property
    def desk(self) -> Desk:
        """The desk on the front's handler, its routes added to the app when first wanted (a
        request under ``/api``): most tests never answer on it, and it takes a while to build."""
        if self._desk is None:
            self._desk = Desk(self.kit, handler=self.handler, secret=SECRET, limits=ROOMY)
            self.app.include_router(desk_router(self._desk))
        return self._desk

    def client(self) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self._serve)
        return httpx.AsyncClient(transport=transport, base_url="http://localhost")

    async def _serve(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan" and scope["path"].startswith("/api"):
            _ = self.desk
        await self.app(scope, receive, send)

    async def post(self, body: object, *, actor: str = "alice") -> httpx.Response:
        """POST ``body`` to the endpoint as a client sends it: JSON text (a lone surrogate
        as its escape), or ``bytes`` as they are."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {**bearer(actor), "content-type": "application/json"}
        async with self.client() as client:
            return await client.post("/agui", content=content, headers=headers)

    async def run(
        self,
        text: str | None = None,
        *,
        thread: str = "t1",
        resume: list[dict[str, Any]] | None = None,
        actor: str = "alice",
    ) -> list[Any]:
        """One run: the events, each validated, in order; the front end keeps the replies."""
        if text is not None:
            self.messages.append({"id": f"m{len(self.messages)}", "role": "user", "content": text})
        body: dict[str, Any] = {
            "threadId": thread,
            "runId": f"r{len(self.messages)}",
            "messages": self.messages,
        }
        if resume is not None:
            body["resume"] = resume
        async with self.client() as client:
            response = await client.post("/agui", json=body, headers=bearer(actor))
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        events = parse(response.text)
        for event in events:
            if event.type == EventType.TEXT_MESSAGE_CONTENT:
                self.messages.append(
                    {"id": event.message_id, "role": "assistant", "content": event.delta}
                )
        return events

    async def close(self) -> None:
        await self.kit.close()
        if self._desk is not None:
            await self._desk.aclose()


def bearer(actor: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, actor)}"}


def parse(stream: str) -> list[Any]:
    """Every frame of ``stream`` as an AG-UI event; one RUN_STARTED first, one terminal
    event last."""
    frames = [frame for frame in stream.split("\n\n") if frame.strip()]
    events = []
    for frame in frames:
        assert frame.startswith("data: "), frame
        events.append(EVENTS.validate_json(frame.removeprefix("data: ")))
    assert events[0].type == EventType.RUN_STARTED
    assert [e.type for e in events].count(EventType.RUN_STARTED) == 1
    assert [e.type in TERMINAL for e in events] == [False] * (len(events) - 1) + [True]
    return events


def interrupts(events: list[Any]) -> list[Any]:
    """The interrupts the run ended with."""
    finished = events[-1]
    assert finished.type == EventType.RUN_FINISHED, finished
    assert finished.outcome.type == "interrupt"
    return list(finished.outcome.interrupts)


def texts(events: list[Any]) -> list[str]:
    return [e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT]


def frame_json(events: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(e.model_dump_json(by_alias=True)) for e in events]

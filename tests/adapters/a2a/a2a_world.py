"""A kit's agent behind the SDK's A2A routes and the desk's tokens, and the SDK's own client
talking to it in-process."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.server.cluster import LegacyTaskStoreAdapter, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    PushNotificationConfigStore,
    TaskStore,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
)
from starlette.applications import Starlette

from roomkit import (
    AITool,
    Approval,
    HookResult,
    HookTrigger,
    HumanInputHandler,
    HumanInputToolHandler,
    RoomKit,
)
from roomkit.adapters.a2a import A2AGate, A2APush, RoomKitExecutor
from roomkit.auth import issue_token
from roomkit.channels.ai import AIChannel
from roomkit.desk.stores import close_stores, open_stores
from roomkit.models.pending_input import PendingInput
from roomkit.notify.retry import Retry
from roomkit.providers.ai.base import AIProvider, AIResponse
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.human_input import ASK_USER_QUESTION

OPENED: list[World] = []
"""Every world made since the running test began, in order: the test's fixture closes them
when it ends (see ``conftest``)."""

SECRET = "a2a-tests-secret-0123456789abcdef0123"
BASE = "http://agent.test"
SIGNING = "whsec_" + base64.b64encode(b"a2a-push-signing-secret!").decode()
"""The secret A2A pushes are signed with in these tests."""
CARD = AgentCard(
    name="roomkit agent",
    description="Asks a person when it must.",
    version="1.0",
    supported_interfaces=[
        AgentInterface(protocol_binding="HTTP+JSON", url=BASE, protocol_version="1.0"),
        AgentInterface(protocol_binding="JSONRPC", url=f"{BASE}/rpc", protocol_version="1.0"),
    ],
    skills=[AgentSkill(id="ask", name="Ask a person", description="Asks.", tags=["hitl"])],
    capabilities=AgentCapabilities(streaming=False, push_notifications=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
)


SEND = AITool(
    name="send",
    description="Send an email.",
    parameters={"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
)


def ask(question: str = "Which colour?") -> AIResponse:
    return MockAIProvider.tool_call("AskUserQuestion", {"question": question})


def asked(task: Task) -> tuple[list[str], list[dict[str, object]]]:
    """The texts and the data of the task's status message."""
    parts = list(task.status.message.parts)
    return get_text_parts(parts), [d for d in get_data_parts(parts) if isinstance(d, dict)]


def send(to: str = "bob@example.com") -> AIResponse:
    return MockAIProvider.tool_call("send", {"to": to})


class FileTaskStore(InMemoryTaskStore):
    """The SDK's task store, each task also kept as a file: a new process reads them back."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        folder.mkdir(exist_ok=True)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        (self.folder / f"{task.id}.pb").write_bytes(task.SerializeToString())

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        kept = self.folder / f"{task_id}.pb"
        return Task.FromString(kept.read_bytes()) if kept.exists() else None


class World:
    def __init__(
        self,
        script: list[AIResponse],
        *,
        timeout: float = 300,
        questions: Any = None,
        rooms: Any = None,
        tasks: TaskStore | VersionedTaskStore | None = None,
        approval: Approval | None = None,
        provider: AIProvider | None = None,
        clock: Callable[[], float] | None = None,
        answer_schemas: dict[str, Any] | None = None,
    ) -> None:
        self.handler = HumanInputHandler(store=questions) if questions else HumanInputHandler()
        self.kit = RoomKit(store=rooms, clock=clock) if clock else RoomKit(store=rooms)
        human = HumanInputToolHandler(
            {"AskUserQuestion"},
            handler=self.handler,
            tool_definitions=[AITool(**ASK_USER_QUESTION)],
            timeout=timeout,
            approvals={"send": approval if approval is not None else Approval()},
            answer_schemas=answer_schemas,
        )
        self.provider = provider if provider is not None else MockAIProvider(ai_responses=script)
        self.sent: list[dict[str, Any]] = []
        """What the approved ``send`` tool sent."""
        self.kit.register_channel(
            AIChannel(
                "agent",
                provider=self.provider,
                human_input_handler=human,
                tools=[SEND],
                tool_handler=self._send,
            )
        )
        self.executor = RoomKitExecutor(self.kit, agent="agent")
        self.tasks = tasks if tasks is not None else InMemoryTaskStore()
        self.configs = InMemoryPushNotificationConfigStore()
        """Where the push configs are kept."""
        self._served: list[DefaultRequestHandler] = []
        self.serve(self.configs)
        OPENED.append(self)

    def serve(self, configs: PushNotificationConfigStore) -> None:
        """Serve the routes with ``configs`` as the request handler's config store."""
        # The executor's view of the task store carries out a cancel the SDK only writes.
        tasks = self.executor.task_store(self.tasks)
        # A message sent again names the task its first sending started.
        contexts = self.executor.request_context_builder()
        requests = DefaultRequestHandler(
            self.executor, tasks, CARD, push_config_store=configs, request_context_builder=contexts
        )
        self.requests = requests
        """The SDK's request handler the routes serve."""
        self._served.append(requests)
        routes = Starlette(
            routes=create_agent_card_routes(CARD)
            + create_jsonrpc_routes(requests, rpc_url="/rpc")
            + create_rest_routes(requests)
        )
        self.app = A2AGate(routes, handler=self.handler, secret=SECRET)

    async def close(self) -> None:
        """Stop the SDK's work for the tasks it holds (the tasks waiting for input too), in
        every request handler it served, then close the kit; idempotent."""
        for requests in self._served:
            await requests.aclose()
        await self.kit.close()

    async def _send(self, name: str, arguments: dict[str, Any]) -> str:
        self.sent.append(arguments)
        return "sent"

    def http(self, actor: str | None = "alice") -> httpx.AsyncClient:
        headers = {} if actor is None else {"Authorization": f"Bearer {issue_token(SECRET, actor)}"}
        transport = httpx.ASGITransport(app=self.app)
        return httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers)

    def client(self, http: httpx.AsyncClient, binding: str = "HTTP+JSON") -> Any:
        """The SDK's own client, over ``http``, speaking ``binding`` (or ``"JSONRPC"``)."""
        config = ClientConfig(
            httpx_client=http, streaming=False, supported_protocol_bindings=[binding]
        )
        return ClientFactory(config).create(CARD)

    async def send(
        self,
        http: httpx.AsyncClient,
        *,
        text: str | None = None,
        data: Any = None,
        task: Task | None = None,
        context_id: str = "ctx-1",
        push: TaskPushNotificationConfig | None = None,
        binding: str = "HTTP+JSON",
        immediately: bool = False,
        message_id: str | None = None,
    ) -> Task:
        """One message (a new ``messageId`` unless given) through the SDK's client; the
        task as it then stands (as soon as the task exists, when ``immediately``)."""
        client = self.client(http, binding)
        parts = []
        if text is not None:
            parts.append(new_text_part(text))
        if data is not None:
            parts.append(new_data_part(data))
        message = Message(
            role=Role.ROLE_USER,
            parts=parts,
            message_id=message_id or str(uuid.uuid4()),
            context_id=context_id,
            task_id=task.id if task is not None else "",
        )
        found: Task | None = None
        configuration = SendMessageConfiguration(
            task_push_notification_config=push, return_immediately=immediately
        )
        request = SendMessageRequest(message=message, configuration=configuration)
        async for response in client.send_message(request):
            if response.HasField("task"):
                found = response.task
        assert found is not None
        return found


def pushes(world: World, **options: Any) -> A2APush:
    """``world``'s task updates pushed through the outbox: signed with :data:`SIGNING`,
    retried at once; ``options`` go to :class:`A2APush` (a client, a timeout). The
    receivers are on the loopback, which the default URL check refuses. The routes set
    configs through it from then on."""
    options.setdefault("push_url_validator", None)
    push = A2APush(
        world.tasks,
        world.configs,
        secret=SIGNING,
        retry=Retry(first=0.01, cap=0.02, jitter=0.0),
        **options,
    )
    # The request handler sets configs through the push, which refuses those it cannot send.
    world.serve(push.configs)
    return push


async def gone(world: World, questions: Any, rooms: Any) -> None:
    """The server process of ``world`` goes, as a kill takes it: its turn is cut where it
    waits, and its stores are closed."""
    [turn] = [t for t in asyncio.all_tasks() if t.get_name() == "a2a-turn-ctx-1"]
    turn.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await turn
    await world.close()
    await close_stores(questions, rooms)


async def left_on_a_call(
    folder: Path,
    approval: Approval | None = None,
    *,
    call: AIResponse | None = None,
    text: str = "Mail bob",
) -> tuple[Task, PendingInput]:
    """A server process on the stores in ``folder`` (``kit.db``) takes a task (``text``) to
    the request its ``call`` waits on (the approval of a ``send``, by default), then goes:
    the task, and the request."""
    questions, rooms = open_stores(f"sqlite:///{folder / 'kit.db'}")
    first = World(
        [send() if call is None else call],
        questions=questions,
        rooms=rooms,
        tasks=FileTaskStore(folder),
        approval=approval,
    )
    async with first.http() as http:
        task = await first.send(http, text=text)
    [request] = await first.handler.list_pending(room_id="ctx-1")
    await gone(first, questions, rooms)
    return task, request


@contextlib.asynccontextmanager
async def restarted(
    url: str,
    folder: Path,
    script: list[AIResponse],
    *,
    approval: Approval | None = None,
    at_call: bool = False,
    versioned: bool = False,
) -> AsyncIterator[World]:
    """The next server process on the stores at ``url`` and the tasks kept in ``folder``,
    its turns re-driven (``resume_pending``) and their end awaited before its stores close;
    given once a re-driven turn reached a call (its ``BEFORE_TOOL_USE``), when ``at_call``;
    the tasks in the SDK's ``VersionedTaskStore`` interface, when ``versioned``."""
    questions, rooms = open_stores(url)
    kept: TaskStore | VersionedTaskStore = FileTaskStore(folder)
    if versioned:
        kept = LegacyTaskStoreAdapter(kept)
    world = World(script, questions=questions, rooms=rooms, tasks=kept, approval=approval)
    reached = asyncio.Event()

    @world.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def calling(event: Any, context: Any) -> HookResult:
        reached.set()
        return HookResult.allow()

    redrive = asyncio.create_task(world.kit.resume_pending())
    try:
        if at_call:
            await reached.wait()
        yield world
        await redrive
    finally:
        await world.close()
        await close_stores(questions, rooms)

"""A local stand-in for the OpenAI Realtime API (this module holds no tests).

:class:`FakeOpenAIRealtime` runs a websockets server on 127.0.0.1, on a free port, speaking the
Realtime API's event protocol. It checks the bearer key; greets each connection with
``session.created``; answers ``session.update`` with ``session.updated``,
``conversation.item.create`` with ``conversation.item.added``, and ``response.create`` with
``response.created`` then ``response.done``. Each connection (:class:`FakeConnection`) records
the client events it receives and everything it sends, lets a test play the model (a function
call, a transcript, an error) and can drop the connection without a closing handshake. Every
event it sends has the API's documented shape; the tests check them against the SDK's types.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from http import HTTPStatus
from types import TracebackType
from typing import Any, Literal

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

API_KEY = "sk-test-key"
"""The key the fake accepts unless told otherwise."""

Event = dict[str, Any]

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    """An id in the API's style (``event_12``, ``item_3``...)."""
    return f"{prefix}_{next(_ids)}"


def error_event(code: str, message: str, kind: str = "invalid_request_error") -> Event:
    """An ``error`` server event."""
    return {
        "type": "error",
        "event_id": new_id("event"),
        "error": {"type": kind, "code": code, "message": message, "param": None},
    }


class FakeConnection:
    """One client connection to the fake API."""

    def __init__(self, socket: ServerConnection) -> None:
        self.socket = socket
        request = socket.request
        assert request is not None
        self.path: str = request.path
        """The request's path and query (``/v1/realtime?model=...``)."""
        self.headers: Headers = request.headers
        """The handshake's request headers."""
        self.received: list[Event] = []
        """Every client event, oldest first."""
        self.sent: list[Event] = []
        """Every server event sent, oldest first."""
        self.log: list[tuple[Literal["in", "out"], str]] = []
        """Both directions in order, as (direction, event type)."""
        self.closed = asyncio.Event()
        """Set once the connection is over."""
        self._changed = asyncio.Condition()

    @property
    def received_types(self) -> list[str]:
        """The types of the client events, oldest first."""
        return [event["type"] for event in self.received]

    async def wait_for(self, kind: str, where: Callable[[Event], bool] = lambda e: True) -> Event:
        """Wait for a client event of type ``kind`` that ``where`` accepts; return the first."""

        def found() -> Event | None:
            return next((e for e in self.received if e["type"] == kind and where(e)), None)

        async with self._changed:
            await self._changed.wait_for(lambda: found() is not None)
        event = found()
        assert event is not None
        return event

    async def send(self, event: Event) -> None:
        """Send a server event (an ``event_id`` is added when it has none)."""
        event.setdefault("event_id", new_id("event"))
        self.sent.append(event)
        self.log.append(("out", event["type"]))
        await self.socket.send(json.dumps(event))

    async def drop(self) -> None:
        """Cut the connection without a closing handshake, as a network failure does."""
        self.socket.transport.abort()
        await self.closed.wait()

    # -- playing the model ------------------------------------------------------------------

    async def start_response(self) -> str:
        """``response.created``; returns the response's id."""
        response_id = new_id("resp")
        await self.send(
            {
                "type": "response.created",
                "response": {
                    "id": response_id,
                    "object": "realtime.response",
                    "status": "in_progress",
                    "output": [],
                    "conversation_id": "conv_1",
                },
            }
        )
        return response_id

    async def finish_response(self, response_id: str, output: list[Event] | None = None) -> None:
        """``response.done`` for ``response_id``."""
        await self.send(
            {
                "type": "response.done",
                "response": {
                    "id": response_id,
                    "object": "realtime.response",
                    "status": "completed",
                    "output": output or [],
                    "conversation_id": "conv_1",
                },
            }
        )

    async def push_function_calls(self, *calls: tuple[str, str, str], finish: bool = True) -> str:
        """The model calls functions in one response, each ``(call_id, name, arguments)``
        with the arguments as JSON text; returns the response's id. With ``finish=False``
        the response stays running until :meth:`finish_response`."""
        response_id = await self.start_response()
        items = []
        for index, (call_id, name, arguments) in enumerate(calls):
            item_id = new_id("item")
            item = {
                "id": item_id,
                "object": "realtime.item",
                "type": "function_call",
                "status": "in_progress",
                "name": name,
                "call_id": call_id,
                "arguments": "",
            }
            where = {"response_id": response_id, "output_index": index}
            await self.send({"type": "response.output_item.added", **where, "item": item})
            where |= {"item_id": item_id, "call_id": call_id}
            delta = {"type": "response.function_call_arguments.delta", **where}
            await self.send({**delta, "delta": arguments})
            done = {"type": "response.function_call_arguments.done", **where}
            await self.send({**done, "name": name, "arguments": arguments})
            item = {**item, "status": "completed", "arguments": arguments}
            items.append(item)
            item_done = {"type": "response.output_item.done", "response_id": response_id}
            await self.send({**item_done, "output_index": index, "item": item})
        if finish:
            await self.finish_response(response_id, items)
        return response_id

    async def push_function_call(
        self, call_id: str, name: str, arguments: str, *, finish: bool = True
    ) -> str:
        """The model calls one function; returns the response's id."""
        return await self.push_function_calls((call_id, name, arguments), finish=finish)

    async def push_assistant_transcript(self, text: str, *, legacy: bool = False) -> None:
        """The model says ``text``, in a response of its own. ``legacy`` uses the older event
        names (``response.audio_transcript.*``)."""
        response_id = await self.start_response()
        prefix = "response.audio_transcript" if legacy else "response.output_audio_transcript"
        where = {
            "response_id": response_id,
            "item_id": new_id("item"),
            "output_index": 0,
            "content_index": 0,
        }
        await self.send({"type": f"{prefix}.delta", **where, "delta": text})
        await self.send({"type": f"{prefix}.done", **where, "transcript": text})
        await self.finish_response(response_id)

    async def push_audio(self, chunk: str) -> None:
        """The model speaks: ``chunk`` is base64 audio."""
        response_id = await self.start_response()
        where = {"response_id": response_id, "item_id": new_id("item")}
        await self.send(
            {"type": "response.output_audio.delta", **where, "output_index": 0, "content_index": 0}
            | {"delta": chunk}
        )
        await self.finish_response(response_id)

    async def push_user_transcript(self, text: str) -> None:
        """The caller's speech was transcribed as ``text``."""
        await self.send(
            {
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": new_id("item"),
                "content_index": 0,
                "transcript": text,
                "usage": {"type": "duration", "seconds": 1.5},
            }
        )

    # -- the server's side ------------------------------------------------------------------

    async def received_event(self, event: Event) -> None:
        self.received.append(event)
        self.log.append(("in", str(event.get("type"))))
        async with self._changed:
            self._changed.notify_all()


class FakeOpenAIRealtime:
    """The fake API server; use it as an async context manager.

    Args:
        api_key: the key it accepts.
        refuse_key_with: how a wrong key is refused: ``"event"`` (the connection opens, an
            ``invalid_api_key`` error event comes, then a close with code 3000, as the API
            does) or ``"handshake"`` (HTTP 401).
    """

    def __init__(
        self,
        *,
        api_key: str = API_KEY,
        refuse_key_with: Literal["event", "handshake"] = "event",
    ) -> None:
        self.api_key = api_key
        self.refuse_key_with = refuse_key_with
        self.connections: list[FakeConnection] = []
        """Every connection accepted, oldest first."""
        self.refuse_session_update: Event | None = None
        """When set, the error event sent instead of ``session.updated``."""
        self.ignore_session_update = False
        """When True, ``session.update`` goes unanswered."""
        self._server: Server | None = None
        self._changed = asyncio.Condition()

    @property
    def url(self) -> str:
        """The address to connect to."""
        assert self._server is not None, "start the server first"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"ws://{host}:{port}/v1/realtime"

    async def __aenter__(self) -> FakeOpenAIRealtime:
        self._server = await serve(
            self._serve, "127.0.0.1", 0, process_request=self._check_handshake
        )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def connection(self, index: int = 0) -> FakeConnection:
        """Wait for the ``index``-th connection; return it."""
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.connections) > index)
        return self.connections[index]

    def _key_ok(self, headers: Headers) -> bool:
        return headers.get("Authorization") == f"Bearer {self.api_key}"

    def _check_handshake(self, socket: ServerConnection, request: Request) -> Response | None:
        if self.refuse_key_with != "handshake" or self._key_ok(request.headers):
            return None
        body = {
            "error": {
                "message": "Incorrect API key provided.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
        response = socket.respond(HTTPStatus.UNAUTHORIZED, json.dumps(body))
        response.headers["Content-Type"] = "application/json"
        return response

    async def _serve(self, socket: ServerConnection) -> None:
        connection = FakeConnection(socket)
        self.connections.append(connection)
        async with self._changed:
            self._changed.notify_all()
        try:
            if not self._key_ok(connection.headers):
                await connection.send(error_event("invalid_api_key", "Incorrect API key provided."))
                await socket.close(3000, "invalid_request_error.invalid_api_key")
                return
            session = {
                "type": "realtime",
                "model": "gpt-realtime",
                "output_modalities": ["audio"],
                "tool_choice": "auto",
                "tools": [],
            }
            await connection.send({"type": "session.created", "session": session})
            async for message in socket:
                event = json.loads(message)
                await connection.received_event(event)
                await self._answer(connection, event)
        except ConnectionClosed:
            pass
        finally:
            connection.closed.set()

    async def _answer(self, connection: FakeConnection, event: Event) -> None:
        kind = event.get("type")
        if kind == "session.update":
            if self.ignore_session_update:
                return
            if self.refuse_session_update is not None:
                await connection.send(dict(self.refuse_session_update))
                return
            await connection.send({"type": "session.updated", "session": event["session"]})
        elif kind == "conversation.item.create":
            item = {**event["item"], "id": new_id("item"), "object": "realtime.item"}
            await connection.send({"type": "conversation.item.added", "item": item})
        elif kind == "response.create":
            await connection.finish_response(await connection.start_response())

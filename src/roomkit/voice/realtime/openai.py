"""OpenAIRealtimeProvider: OpenAI's speech-to-speech models, over the Realtime API's WebSocket.

Needs the ``realtime`` extra (``pip install -e '.[realtime]'``, for ``websockets``).
Each session opens a WebSocket of its own. :meth:`~OpenAIRealtimeProvider.connect` sends the
session's instructions and tools (``session.update``) and returns once the API has applied
them, so a refused key or a refused configuration fails right there, as a typed
:class:`~roomkit.core.exceptions.ProviderError`. A reader task then turns the API's events
into the provider's callbacks: a finished function call into a tool call, the model's and the
caller's transcripts into transcriptions, an ``error`` event into an error, and the
connection dropping into a lost session (:meth:`RealtimeSession.on_lost`).

A tool result goes back as a ``function_call_output`` item followed by ``response.create``;
injected context is a system message, followed by ``response.create`` only when it is not
silent. The API refuses a ``response.create`` while a response is still running, so one asked
for then is sent when that response is done; the results of calls the model made together
ask for one response, once the last of them is in.
"""

from __future__ import annotations

from roomkit._extras import requires_extra

with requires_extra("roomkit.voice.realtime.openai", "realtime"):
    from websockets.asyncio.client import ClientConnection
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
    from websockets.uri import parse_uri

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Unpack
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from roomkit.core.exceptions import (
    ProviderAuthError,
    ProviderError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from roomkit.voice.callbacks import Callbacks
from roomkit.voice.realtime import _openai_events as events
from roomkit.voice.realtime._openai_link import Link
from roomkit.voice.realtime.base import ConnectOptions, RealtimeProvider, RealtimeSession

__all__ = ["DEFAULT_URL", "AudioCallback", "OpenAIRealtimeProvider"]

logger = logging.getLogger("roomkit.voice.realtime.openai")

DEFAULT_URL = "wss://api.openai.com/v1/realtime"
"""The Realtime API's address; the model goes in its ``model`` query parameter."""

# Server events are small, but a conversation item read back with its audio is not.
_MAX_EVENT_BYTES = 16 * 2**20

AudioCallback = Callable[[RealtimeSession, bytes], Awaitable[None]]
"""``await cb(session, chunk)``: the model spoke; ``chunk`` is audio in the session's output
format (24 kHz 16-bit mono PCM unless configured otherwise)."""


class OpenAIRealtimeProvider(RealtimeProvider):
    """OpenAI's Realtime API as the model of a realtime voice channel.

    A function call the model makes is reported once, when its arguments are complete
    (``response.function_call_arguments.done``). Its arguments are parsed from JSON; text
    that is not a JSON object is passed on as it came, and the channel refuses the call with
    a message the model reads as the call's result.

    Args:
        api_key: the API key; ``OPENAI_API_KEY`` when ``None``.
        model: the model, sent in the URL's ``model`` query parameter.
        url: the Realtime API's WebSocket address (``ws://`` or ``wss://``); OpenAI's when
            ``None``. A ``model`` query parameter is added unless the URL has one.
        voice: the voice the model speaks with; the API's default when ``None``.
        connect_timeout: seconds :meth:`connect` may take, the handshake and the session's
            configuration included.
        transcription_model: the model transcribing the caller's speech (reported as
            ``user`` transcriptions); ``None`` turns the transcription off.

    Raises:
        ProviderAuthError: no key was given and ``OPENAI_API_KEY`` is not set.
        ValueError: the URL is not a WebSocket URL, or the timeout is not positive.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model: str = "gpt-realtime",
        url: str | None = None,
        voice: str | None = None,
        connect_timeout: float = 10.0,
        transcription_model: str | None = "gpt-4o-mini-transcribe",
    ) -> None:
        super().__init__()
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ProviderAuthError(
                "No OpenAI API key: pass api_key= or set OPENAI_API_KEY", provider=events.PROVIDER
            )
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        if isinstance(connect_timeout, bool) or not (
            isinstance(connect_timeout, int | float) and connect_timeout > 0
        ):
            raise ValueError(f"connect_timeout must be a positive number, got {connect_timeout!r}")
        self.model = model
        """The model every session talks to."""
        self.url = _session_url(url or DEFAULT_URL, model)
        """The WebSocket address sessions connect to, ``model`` parameter included."""
        self.voice = voice
        """The voice the model speaks with, or ``None`` for the API's default."""
        self.connect_timeout = float(connect_timeout)
        """Seconds :meth:`connect` may take."""
        self.transcription_model = transcription_model
        """The model transcribing the caller, or ``None``."""
        self._api_key = key
        self._links: dict[str, Link] = {}
        self._audio: Callbacks[AudioCallback] = Callbacks("audio", logger)

    @property
    def name(self) -> str:
        """Always ``"openai"``."""
        return events.PROVIDER

    def on_audio(self, callback: AudioCallback) -> Callable[[], None]:
        """Call ``callback`` with every chunk of the model's audio; returns its unregister."""
        return self._audio.add(callback)

    async def connect(self, session: RealtimeSession, **options: Unpack[ConnectOptions]) -> None:
        """Open a WebSocket for ``session`` and configure it; return once the API applied it.

        Raises:
            ProviderAuthError: the API refused the key.
            ProviderTimeoutError: the API could not be reached, or did not answer within
                ``connect_timeout`` seconds.
            ProviderError: the API refused the configuration, or answered something else.
            RuntimeError: ``session`` is already connected.
        """
        if session.id in self._links:
            raise RuntimeError(f"Session {session.id} is already connected to {self.name}")
        update = events.session_update(
            instructions=options.get("system_prompt"),
            tools=options.get("tools", ()),
            voice=self.voice,
            transcription_model=self.transcription_model,
        )
        link: Link | None = None
        try:
            async with asyncio.timeout(self.connect_timeout):
                link = Link(session, await self._open())
                self._links[session.id] = link
                link.reader = asyncio.get_running_loop().create_task(
                    self._read(link), name=f"openai-realtime-{session.id}"
                )
                # A send refused because the API closed at once: the reader tells why.
                with contextlib.suppress(ProviderError):
                    await link.send(update)
                await link.ready
        except BaseException as exc:
            if link is not None:
                self._links.pop(session.id, None)
                await link.close()
            if isinstance(exc, TimeoutError) and not isinstance(exc, ProviderError):
                raise ProviderTimeoutError(
                    f"The OpenAI Realtime API did not open the session within "
                    f"{self.connect_timeout}s",
                    provider=events.PROVIDER,
                ) from exc
            raise

    async def submit_tool_result(self, session: RealtimeSession, call_id: str, result: str) -> None:
        """Give the model the result of ``call_id``, then ask it to respond.

        Raises:
            ProviderTimeoutError: the session's connection is gone.
            RuntimeError: ``session`` is not connected.
        """
        link = self._link(session)
        await link.send(events.function_call_output(call_id, result))
        if link.settle_call(call_id):
            await link.respond()

    async def inject_context(
        self, session: RealtimeSession, text: str, *, silent: bool = True
    ) -> None:
        """Add ``text`` to the conversation as a system message; with ``silent`` false, the
        model is asked to respond (arguments as :meth:`RealtimeProvider.inject_context`).

        Raises:
            ProviderTimeoutError: the session's connection is gone.
            RuntimeError: ``session`` is not connected.
        """
        link = self._link(session)
        await link.send(events.context_message(text))
        if not silent:
            await link.respond()

    async def send_audio(self, session: RealtimeSession, chunk: bytes) -> None:
        """Append the caller's audio (in the session's input format) to the model's input.

        Raises:
            ProviderTimeoutError: the session's connection is gone.
            RuntimeError: ``session`` is not connected.
        """
        if not isinstance(chunk, bytes | bytearray | memoryview):
            raise TypeError(f"chunk must be bytes, got {type(chunk).__name__}")
        await self._link(session).send(events.audio_append(bytes(chunk)))

    async def disconnect(self, session: RealtimeSession) -> None:
        """Close the session's WebSocket; a session not connected is left as it is."""
        link = self._links.pop(session.id, None)
        if link is not None:
            await link.close()

    def _link(self, session: RealtimeSession) -> Link:
        link = self._links.get(session.id)
        if link is None:
            raise RuntimeError(f"Session {session.id} is not connected to {self.name}")
        return link

    async def _open(self) -> ClientConnection:
        """The WebSocket, with a vendor failure in the handshake turned into a typed error."""
        try:
            return await ws_connect(
                self.url,
                additional_headers={"Authorization": f"Bearer {self._api_key}"},
                open_timeout=None,  # connect() bounds the whole opening
                max_size=_MAX_EVENT_BYTES,
            )
        except InvalidStatus as exc:
            raise events.handshake_error(exc.response.status_code, exc.response.body) from exc
        except InvalidHandshake as exc:
            raise ProviderResponseError(
                f"The server at {self.url} did not open a WebSocket: {exc}",
                provider=events.PROVIDER,
            ) from exc
        except OSError as exc:
            raise ProviderTimeoutError(
                f"Could not reach the OpenAI Realtime API at {self.url}: {exc}",
                provider=events.PROVIDER,
            ) from exc

    # -- the reader ------------------------------------------------------------------------

    async def _read(self, link: Link) -> None:
        """Take the session's events in order until its connection ends."""
        try:
            async for message in link.socket:
                event = events.decode(message)
                if event is None:
                    logger.warning("Unreadable event in session %s: ignored", link.session.id)
                    continue
                try:
                    await self._take(link, event)
                except Exception:
                    # One event the provider cannot take must not end the session.
                    logger.exception("Could not take %s in %s", event.get("type"), link)
        except ConnectionClosed:
            pass  # the connection ended abnormally; _ended says what that means
        await self._ended(link)

    async def _take(self, link: Link, event: dict[str, Any]) -> None:
        kind = event.get("type")
        session = link.session
        if kind == events.SESSION_UPDATED:
            link.opened()
        elif kind == events.ERROR:
            code, error_type, message = events.error_fields(event)
            if link.error(events.error_for(code, error_type, message)):
                return
            logger.warning("OpenAI Realtime error in session %s: %s: %s", session.id, code, message)
            await self._fire_error(session, code or error_type or "error", message)
        elif kind == events.RESPONSE_CREATED:
            link.response_started()
        elif kind == events.RESPONSE_DONE:
            await link.response_done()
        elif kind == events.FUNCTION_CALL_DONE:
            await self._function_call(link, event)
        elif kind in events.AUDIO_DELTA:
            chunk = events.audio_of(event)
            if chunk is not None:
                await self._audio.fire(session, chunk)
        elif (said := events.transcript_of(event)) is not None:
            text, role, final = said
            await self._fire_transcription(session, text, role, final)

    async def _function_call(self, link: Link, event: dict[str, Any]) -> None:
        call_id, name = event.get("call_id"), event.get("name")
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
            logger.warning("A function call without an id or a name in %s: ignored", link)
            return
        if not link.take_call(call_id, str(event.get("response_id") or "")):
            logger.debug("Function call %s was already taken: the repeat is ignored", call_id)
            return
        arguments = events.parse_arguments(event.get("arguments"))
        await self._fire_tool_call(link.session, call_id, name, arguments)

    async def _ended(self, link: Link) -> None:
        """The connection ended: nothing when the provider closed it; otherwise the session
        failed to open, or it is lost."""
        socket = link.socket
        if not link.ended(events.closed_error(socket.close_code, socket.close_reason or "")):
            return
        reason = (
            f"The connection to the OpenAI Realtime API was lost "
            f"(code {socket.close_code}: {socket.close_reason or 'no reason given'})"
        )
        logger.warning("Session %s: %s", link.session.id, reason)
        await self._fire_error(link.session, "connection_lost", reason)
        await self._fire_session_lost(link.session, reason)


def _session_url(url: str, model: str) -> str:
    """``url`` with the ``model`` query parameter, unless it names one already."""
    try:
        parse_uri(url)
    except InvalidURI as exc:
        raise ValueError(f"url must be a ws:// or wss:// URL, got {url!r}") from exc
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(name == "model" for name, _ in query):
        return url
    return urlunsplit(parts._replace(query=urlencode([*query, ("model", model)])))

"""The Redis store: pending requests shared by processes on many machines.

Every record is a Redis hash; the key check-and-insert, the settle and the deadline update
are Lua scripts, so each is atomic on the server whichever process runs it, and each write
is announced on a pub/sub channel that feeds :meth:`RedisStore.subscribe`.

An outcome is durable to the degree the server is configured: with
``appendonly yes`` and ``appendfsync always`` Redis writes it to disk before it replies, so
a settle that returned survives a crash of the server; with ``appendfsync everysec`` (the
usual default) up to a second of outcomes can be lost, and without persistence a restart
loses them all. Settled records expire on the server ``retention_seconds`` after they were
settled.

The store talks to one server (a primary, with or without replicas). The scripts find a
record's index keys from the record itself, which Redis Cluster does not allow.

Needs the ``redis`` extra (``pip install roomkit-hitl[redis]``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from roomkit.core.exceptions import CorruptRecordError, StoreError, StoreUnavailableError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input.stores import _redis_scripts as scripts
from roomkit.tools.human_input.stores._records import FORMAT, NONE, decode, encode
from roomkit.tools.human_input.stores._redis_batch import ScriptBatcher
from roomkit.tools.human_input.stores._redis_feed import ChangeFeed
from roomkit.tools.human_input.stores.base import ChangeListener, PendingChange, PendingChangeKind

__all__ = ["DEFAULT_URL", "RedisStore"]

logger = logging.getLogger(__name__)

DEFAULT_URL = "redis://127.0.0.1:6379/0"
"""The server :class:`RedisStore` connects to when given neither a URL nor a client."""

_UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
_PURGE_BATCH = 256


class RedisStore:
    """A :class:`~roomkit.tools.human_input.stores.base.DurableStore` on a Redis server.

    Args:
        url: the server, as a ``redis://``, ``rediss://`` or ``unix://`` URL (options such
            as ``?socket_timeout=2`` go in its query). The default is
            ``redis://127.0.0.1:6379/0``.
        client: an existing ``redis.asyncio.Redis`` client to use instead of ``url``; the
            store does not close it.
        prefix: the first part of every key and of the events channel, so that several
            stores share one database.
        retention_seconds: how long a settled record stays replayable (and its key keeps
            re-attaching).
        backstop_interval: seconds between re-reads by a waiter, in case a change hint
            was lost.
        clock: the store's clock, in seconds since the epoch; deadlines and retention are
            measured on it.

    Raises:
        TypeError: an argument has the wrong type, or both ``url`` and ``client`` are given.
        ValueError: an argument is out of range, or the URL is not a Redis URL.

    Use it as an async context manager, or call :meth:`open` and :meth:`close`::

        async with RedisStore("redis://cache.internal:6379/2") as store:
            handler = HumanInputHandler(store=store)
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Redis | None = None,
        prefix: str = "roomkit",
        retention_seconds: float = 86_400,
        backstop_interval: float = 0.25,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if client is not None:
            if url is not None:
                raise TypeError("pass either url or client to RedisStore, not both")
            if not isinstance(client, Redis):
                raise TypeError(
                    f"client must be a redis.asyncio.Redis, got {type(client).__name__}"
                )
            self._owned = False
        else:
            url = DEFAULT_URL if url is None else url
            if not isinstance(url, str):
                raise TypeError(f"url must be a str, got {type(url).__name__}")
            try:
                # Callers beyond the pool's size wait for a connection rather than fail.
                pool = BlockingConnectionPool.from_url(
                    url,
                    max_connections=64,
                    timeout=10,
                    retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),
                    socket_connect_timeout=5,
                    socket_timeout=5,
                )
            except ValueError as error:
                raise ValueError(f"url is not a Redis URL ({error})") from None
            client = Redis(connection_pool=pool)
            self._owned = True
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"prefix must be a non-empty str, got {prefix!r}")
        self.retention_seconds = _positive("retention_seconds", retention_seconds)
        self.backstop_interval = _positive("backstop_interval", backstop_interval)
        if not callable(clock):
            raise TypeError(f"clock must be callable, got {type(clock).__name__}")
        self.clock = clock
        self.prefix = prefix
        self._client = client
        self._where = _describe(client)
        self._channel = f"{prefix}:events"
        self._pending_index = f"{prefix}:pending"
        self._insert = ScriptBatcher(client, client.register_script(scripts.INSERT))
        self._settle = ScriptBatcher(client, client.register_script(scripts.SETTLE))
        self._set_deadline = client.register_script(scripts.SET_DEADLINE)
        self._purge = client.register_script(scripts.PURGE)
        self._feed = ChangeFeed(client.connection_pool, self._channel, where=self._where)
        self._opened = False

    @property
    def where(self) -> str:
        """The server, as a URL without its password."""
        return self._where

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Check that the server answers and start the change feed if anyone listens.

        Redis needs no schema; the scripts load themselves on first use.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        if not self._opened:
            with self._guard():
                await self._client.ping()
            self._opened = True
        self._feed.start()

    async def close(self) -> None:
        """Stop the change feed and disconnect (an owned client only); idempotent."""
        self._opened = False
        await self._feed.stop()
        if self._owned:
            await self._client.aclose(close_connection_pool=True)

    async def insert(self, request: PendingInput) -> tuple[PendingInput, bool]:
        """Record a new pending request; ``(record, True)`` when it was created.

        When ``request.key`` names a retained record, nothing is written and
        ``(that record, False)`` comes back.

        Raises:
            ValueError: the request is not pending.
            StoreError: another request already has this id.
            StoreUnavailableError: the server cannot be reached.
        """
        if request.status is not PendingInputStatus.PENDING:
            raise ValueError(f"only a pending request can be inserted, not {request.status}")
        await self._ensure_open()
        fields = _flat(encode(request))
        pending_id = request.pending_id
        keys = [self._record(pending_id), self._pending_index, self._room(request.room_id)]
        if request.key is not None:
            keys.append(f"{self.prefix}:k:{request.key}")
        args: list[Any] = [
            pending_id,
            repr(request.created_at.timestamp()),
            self._channel,
            f"{self.prefix}:p:",
            repr(self._cutoff()),
            fields["created_at"],
            fields["arguments"],
        ]
        for name, value in fields.items():
            args += (name, value)
        with self._guard():
            reply = await self._insert(keys, args)
        if isinstance(reply, bytes | str) and _text(reply) == scripts.DUPLICATE:
            raise StoreError(f"pending record {pending_id!r} is already stored at {self._where}")
        created = bool(int(reply[0]))
        record = decode(_unpack(reply[1]) if len(reply) > 1 else fields)
        if created:
            self._feed.emit(PendingChange(PendingChangeKind.CREATED, pending_id))
        return record, created

    async def fetch(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled (within retention), or ``None``.

        Raises:
            CorruptRecordError: the key holds something this library did not write.
            StoreUnavailableError: the server cannot be reached.
        """
        await self._ensure_open()
        key = self._record(pending_id)
        with self._guard(pending_id):
            fields: dict[Any, Any] = await self._client.hgetall(key)
        if not fields:
            return None
        try:
            record = decode(fields)
        except CorruptRecordError as error:
            raise CorruptRecordError(f"{key} at {self._where}: {error}") from None
        return record if self._retained(record, fields) else None

    async def fetch_many(self, pending_ids: Collection[str]) -> list[PendingInput]:
        """The records among ``pending_ids`` that exist; unreadable ones are logged and skipped."""
        await self._ensure_open()
        return await self._read_many(list(pending_ids))

    async def set_deadline(self, pending_id: str, deadline: float) -> float | None:
        """Set the deadline of a pending request unless it has an earlier one.

        Returns the deadline in force, or ``None`` when the request is not pending.
        """
        if not math.isfinite(deadline):
            raise ValueError(f"deadline must be a finite time, got {deadline!r}")
        await self._ensure_open()
        with self._guard(pending_id):
            reply = await self._set_deadline(
                keys=[self._record(pending_id)], args=[repr(float(deadline)), NONE, FORMAT]
            )
        if reply is None:
            return None
        text = _text(reply)
        if text == scripts.CORRUPT:
            raise self._unreadable(pending_id)
        return float(text)

    async def settle(
        self,
        pending_id: str,
        status: PendingInputStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        withdrawn: bool = False,
        settled_by: str | None = None,
    ) -> PendingInput | None:
        """The check-and-set: settle a pending request; return the record when this call won.

        ``TIMED_OUT`` wins only once the deadline has passed on :attr:`clock`; any other
        status loses to a passed deadline, and ``TIMED_OUT`` is recorded instead. ``None``
        means this call did not win. The outcome is as durable as the server's
        ``appendfsync`` makes it.
        """
        await self._ensure_open()
        status = PendingInputStatus(status)
        if status is PendingInputStatus.PENDING:
            raise ValueError("settle needs an outcome, not PENDING")
        args: list[Any] = [
            pending_id,
            status.value,
            _or_none(result),
            _or_none(reason),
            int(withdrawn),
            _or_none(settled_by),
            repr(float(self.clock())),
            max(1, round(self.retention_seconds * 1000)),
            # Marks the record with this call, so that a retry after a lost reply knows
            # it won.
            secrets.token_hex(8),
            NONE,
            self._channel,
            f"{self.prefix}:",
            FORMAT,
        ]
        with self._guard(pending_id):
            reply = await self._settle([self._record(pending_id), self._pending_index], args)
        if reply is None:
            return None
        text = _text(reply)
        if text == scripts.CORRUPT:
            raise self._unreadable(pending_id)
        self._feed.emit(PendingChange(PendingChangeKind.SETTLED, pending_id))
        if text == scripts.LOST_TO_DEADLINE:
            return None
        return decode(_unpack(reply))

    async def list_pending(
        self,
        *,
        room_id: str | None = None,
        actor_id: str | None = None,
        channel_id: str | None = None,
    ) -> list[PendingInput]:
        """The requests still pending, oldest first; ``None`` filters nothing."""
        await self._ensure_open()
        index = self._pending_index if room_id is None else self._room(room_id)
        with self._guard():
            ids = await self._client.zrange(index, 0, -1)
        records = await self._read_many([_text(pending_id) for pending_id in ids])
        order = {_text(pending_id): rank for rank, pending_id in enumerate(ids)}
        records.sort(key=lambda record: order[record.pending_id])
        return [
            record
            for record in records
            if record.status is PendingInputStatus.PENDING
            and (actor_id is None or record.actor_id == actor_id)
            and (channel_id is None or record.channel_id == channel_id)
        ]

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` for changes made by any process; returns the unsubscribe.

        The feed runs while someone listens. It covers this store's own writes (at once,
        and again when the server's message comes back) and sends
        :attr:`PendingChangeKind.RESYNC` each time its subscription goes live: on the first
        connection and after every reconnect.
        """
        if not callable(listener):
            raise TypeError(f"listener must be callable, got {type(listener).__name__}")
        return self._feed.add(listener)

    async def purge_expired(self) -> int:
        """Drop records settled more than ``retention_seconds`` ago on :attr:`clock`.

        The server expires them on its own clock as well; this catches up when the store's
        clock runs ahead (a test's fake clock, a server clock that lags).
        """
        await self._ensure_open()
        cutoff = repr(self._cutoff())
        pattern = _glob_escape(f"{self.prefix}:p:") + "*"
        args = [cutoff, NONE, FORMAT, f"{self.prefix}:k:"]
        gone = 0
        batch: list[Any] = []
        with self._guard():
            async for key in self._client.scan_iter(match=pattern, count=_PURGE_BATCH):
                batch.append(key)
                if len(batch) == _PURGE_BATCH:
                    gone += int(await self._purge(keys=batch, args=args))
                    batch = []
            if batch:
                gone += int(await self._purge(keys=batch, args=args))
        return gone

    async def _ensure_open(self) -> None:
        if not self._opened:
            await self.open()
        elif self._feed.listening:
            self._feed.start()

    async def _read_many(self, pending_ids: Sequence[str]) -> list[PendingInput]:
        if not pending_ids:
            return []
        async with self._client.pipeline(transaction=False) as pipe:
            for pending_id in pending_ids:
                pipe.hgetall(self._record(pending_id))
            with self._guard():
                replies = await pipe.execute(raise_on_error=False)
        records = []
        for pending_id, fields in zip(pending_ids, replies, strict=True):
            if not fields:
                continue
            try:
                if isinstance(fields, Exception):
                    raise CorruptRecordError(str(fields))
                record = decode(fields)
            except CorruptRecordError as error:
                logger.warning("skipping %s: %s", self._record(pending_id), error)
                continue
            if self._retained(record, fields):
                records.append(record)
        return records

    def _cutoff(self) -> float:
        """Outcomes settled at or before this time on :attr:`clock` have expired."""
        return float(self.clock()) - self.retention_seconds

    def _retained(self, record: PendingInput, fields: Mapping[Any, Any]) -> bool:
        """Whether ``record`` is pending or settled within the retention on the store's clock.

        The server expires outcomes on its own clock; this hides them on the store's, which
        can run ahead (a fake clock, a server whose clock lags).
        """
        if record.status is PendingInputStatus.PENDING:
            return True
        settled_at = fields.get(b"settled_at", fields.get("settled_at"))
        try:
            return settled_at is None or float(settled_at) > self._cutoff()
        except ValueError:
            return True

    def _unreadable(self, pending_id: str) -> CorruptRecordError:
        return CorruptRecordError(
            f"pending record {pending_id!r} at {self._where} is not a readable {FORMAT} record"
        )

    def _record(self, pending_id: str) -> str:
        return f"{self.prefix}:p:{pending_id}"

    def _room(self, room_id: str) -> str:
        return f"{self.prefix}:r:{room_id}"

    @contextmanager
    def _guard(self, pending_id: str | None = None) -> Iterator[None]:
        """Turn the client's failures into the store's errors, and keep cancellations.

        The client can finish a call whose task was cancelled meanwhile and return as if
        nothing happened; the cancellation still ends the caller here.
        """
        task = asyncio.current_task()
        cancels = task.cancelling() if task is not None else 0
        try:
            yield
        except _UNREACHABLE as error:
            raise StoreUnavailableError(
                f"the Redis store at {self._where} cannot be reached: {error}"
            ) from error
        except ResponseError as error:
            if pending_id is not None and str(error).startswith("WRONGTYPE"):
                raise CorruptRecordError(
                    f"pending record {pending_id!r} is not a hash at {self._where}"
                ) from None
            raise StoreError(f"the Redis store at {self._where} failed: {error}") from error
        except RedisError as error:
            raise StoreError(f"the Redis store at {self._where} failed: {error}") from error
        if task is not None and task.cancelling() > cancels:
            raise asyncio.CancelledError


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{name} must be > 0 seconds, got {value!r}")
    return float(value)


def _describe(client: Redis) -> str:
    """The client's server as a URL, without the password."""
    kwargs = client.connection_pool.connection_kwargs
    db = kwargs.get("db", 0)
    if "path" in kwargs:
        return f"unix://{kwargs['path']}?db={db}"
    scheme = (
        "rediss" if "ssl" in client.connection_pool.connection_class.__name__.lower() else "redis"
    )
    user = kwargs.get("username")
    host = f"{user}@" if user else ""
    return f"{scheme}://{host}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{db}"


def _flat(fields: Mapping[str, object]) -> dict[str, Any]:
    flat = {name: NONE if value is None else value for name, value in fields.items()}
    if fields["answer_schema"] is None:
        # JSON text: an empty one reads back as no schema.
        flat["answer_schema"] = ""
    return flat


def _or_none(value: str | None) -> str:
    return NONE if value is None else value


def _unpack(reply: bytes | str) -> dict[str, Any]:
    """A record from a script's JSON array of names and values."""
    try:
        flat = json.loads(reply)
        return dict(zip(flat[::2], flat[1::2], strict=True))
    except (TypeError, ValueError) as error:
        raise CorruptRecordError(f"a pending record came back unreadable ({error})") from None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _glob_escape(text: str) -> str:
    return "".join(f"\\{char}" if char in "*?[]\\" else char for char in text)

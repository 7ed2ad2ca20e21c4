"""The Redis stores' client: built from a URL, named without its password, its faults mapped.

Shared by the pending-request store and the room store (so it lives in ``core``, under both).
:func:`connect` checks the client a store is given (and, when it decodes replies, makes the
store one of its own beside it), or builds the one it owns: a blocking pool with short
timeouts and a few retries.
:func:`describe` names the server for messages, without the password. :func:`guard` bounds
a call by the store's ``timeout``, turns the client's failures into the store's errors, and
keeps a cancellation that the client swallowed; a server that refuses the store's user (its
password, or its ACL: ``NOPERM``) raises a plain store error saying what to grant, since no
retry helps. :func:`check_persistence` reads how the
server persists what it is told and warns when a restart or a crash would lose acknowledged
outcomes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote_plus

from roomkit._extras import requires_extra

with requires_extra("roomkit.stores.redis (RedisStore, RedisRoomStore)", "redis"):
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import AuthenticationError, NoPermissionError, RedisError, ResponseError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

from roomkit.core.exceptions import CorruptRecordError, StoreError, StoreUnavailableError
from roomkit.stores._checks import seconds
from roomkit.stores.redis._bounds import Bound
from roomkit.stores.redis._bytes_client import bytes_client, decodes
from roomkit.stores.redis._pools import QUEUE_TIMEOUT, PoolExhaustedError, StoreBlockingPool

__all__ = [
    "DEFAULT_URL",
    "TIMEOUT",
    "check_persistence",
    "connect",
    "describe",
    "glob_escape",
    "guard",
    "persistence_risk",
    "store_timeout",
    "text",
]

DEFAULT_URL = "redis://127.0.0.1:6379/0"
"""The server a Redis store (:class:`~roomkit.stores.redis.RedisStore`,
:class:`~roomkit.stores.redis.RedisRoomStore`) connects to when given neither a URL nor a
client."""

TIMEOUT = 5.0
"""Seconds a call of a Redis store waits for the server by default (``timeout=``).

The bound covers the whole call once it has a pooled connection: connecting, the client's
own retries and every round trip. A call that queues for a connection of the store's own
pool (more calls at once than its ``max_connections``), or for its batch behind the batches
in flight (:mod:`~roomkit.stores.redis._batch`), does not count its queue, which has a bound
of its own (:data:`~roomkit.stores.redis._pools.QUEUE_TIMEOUT`). A server that is
frozen (stopped, swapping, stuck on a disk) keeps its connections open and answers nothing,
which no connect timeout sees; the bound turns it into
:class:`~roomkit.core.exceptions.StoreUnavailableError`."""

_UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
_SCRIPT_DENIED = "The user executing the script can't"
"""How the server refuses a script a command or a key its user's ACL denies."""
_PERSISTENCE = ("appendonly", "appendfsync", "save")
"""The settings that say what the server keeps across a restart."""
_ADVICE = (
    "run it with appendonly yes and appendfsync always to lose none (see docs/how-to/stores.md)"
)


def connect(url: object, client: object, *, store: str = "RedisStore") -> tuple[Redis, bool]:
    """The store's client, and whether the store owns it (and closes it).

    ``client`` when given, used as it is; else a new client for ``url`` (:data:`DEFAULT_URL`
    when ``None``). A new client sends nothing until it is used. Its pool (64 connections,
    or the URL's ``max_connections``) queues callers beyond its size until a connection
    frees up, rather than failing them. ``store`` names the class in messages.

    The store reads replies as bytes, so that an entry, a field or a key that is not UTF-8
    (no store writes one) is named for what it is, not a ``UnicodeDecodeError`` inside
    redis-py that fails every read it is part of. A given ``client`` that decodes replies
    is thus not used: the store gets a client of its own to the same server, with the same
    settings but for decoding (:func:`~roomkit.stores.redis._bytes_client.bytes_client`),
    and owns it. A ``decode_responses`` option in ``url``'s query is dropped.

    Raises:
        TypeError: both ``url`` and ``client`` are given, ``client`` is not a
            ``redis.asyncio.Redis`` or ``url`` is not a ``str``.
        ValueError: ``url`` is not a Redis URL, or ``client`` decodes replies on a pool
            that cannot be rebuilt without decoding (a subclass of redis-py's pools).
    """
    if client is not None:
        if url is not None:
            raise TypeError(f"pass either url or client to {store}, not both")
        if not isinstance(client, Redis):
            raise TypeError(f"client must be a redis.asyncio.Redis, got {type(client).__name__}")
        if decodes(client.connection_pool):
            return bytes_client(client, store=store), True
        return client, False
    url = DEFAULT_URL if url is None else url
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    try:
        pool = StoreBlockingPool.from_url(
            url,
            max_connections=64,
            timeout=QUEUE_TIMEOUT,
            # One more try, for a connection a restart dropped; a server that stops
            # answering then fails the call within two socket timeouts, not four. A write
            # that ran before its reply was lost runs again: those that would change
            # something twice carry a token (._once).
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 1),
            socket_connect_timeout=5,
            socket_timeout=5,
        )
    except ValueError as error:
        raise ValueError(f"url is not a Redis URL ({error})") from None
    # The client is the store's own, and reads bytes whatever the option says (redis-py
    # keeps its text as it is: "false" would decode too).
    pool.connection_kwargs.pop("decode_responses", None)
    _check_options(pool)
    return Redis(connection_pool=pool), True


def _check_options(pool: BlockingConnectionPool) -> None:
    """Build, without connecting, one connection as the pool would: redis-py passes a query
    option it does not know on to the connection, which refuses it only on first use.

    Raises:
        ValueError: the URL's query holds an option the connection does not take.
    """
    try:
        pool.connection_class(**pool.connection_kwargs)
    except TypeError as error:
        found = re.search(r"argument '([^']*)'", str(error))
        name = found.group(1) if found else str(error)
        tls = ": ssl_ options need a rediss:// URL" if name.startswith("ssl") else ""
        raise ValueError(
            f"url is not a Redis URL (its query option {name!r} is not one redis-py takes{tls})"
        ) from None
    except RedisError as error:
        raise ValueError(f"url is not a Redis URL ({error})") from None


def store_timeout(url: str | None, timeout: float | None) -> tuple[str | None, float]:
    """``url`` without its ``timeout`` query option, and the store's ``timeout``: the
    argument, else the option, else :data:`TIMEOUT`.

    redis-py would take ``?timeout=`` as the wait for a pooled connection; here it is the
    store's bound on every call, as the argument of the same name is. The rest of the URL
    is passed on as written.

    Raises:
        TypeError: ``timeout`` is not a number.
        ValueError: the option is not a positive number of seconds, is given twice, or is
            given beside the argument; or the argument is not positive.
    """
    if isinstance(url, str) and "?" in url:
        head, _, query = url.partition("?")
        options = query.split("&")
        taken = [option for option in options if _option_name(option) == "timeout"]
        if taken:
            if timeout is not None:
                raise ValueError(
                    "the store's timeout is given twice, as timeout= and in the URL's query: "
                    "keep one"
                )
            if len(taken) > 1:
                raise ValueError(f"the URL gives timeout= {len(taken)} times: keep one")
            timeout = _url_seconds(taken[0].partition("=")[2])
            rest = "&".join(option for option in options if option not in taken)
            url = f"{head}?{rest}" if rest else head
    return url, seconds("timeout", TIMEOUT if timeout is None else timeout, zero=False)


def _option_name(option: str) -> str:
    return unquote_plus(option.partition("=")[0])


def _url_seconds(text: str) -> float:
    """The URL's ``timeout`` option as seconds, or an error saying what it takes."""
    value = unquote_plus(text)
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise ValueError(
            f"the URL's timeout={value!r} is not a positive number of seconds: write it as "
            "?timeout=5 or ?timeout=0.5 (how long any call waits for the server)"
        )
    return number


def describe(client: Redis) -> str:
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


@asynccontextmanager
async def guard(
    where: str,
    pending_id: str | None = None,
    *,
    within: float | None,
    store: str = "Redis store",
    write: bool = False,
) -> AsyncIterator[None]:
    """Bound a call, turn the client's failures into the store's errors, keep cancellations.

    The client can finish a call whose task was cancelled meanwhile and return as if
    nothing happened; the cancellation still ends the caller here.

    Args:
        where: the server, as :func:`describe` names it.
        pending_id: the record the call reads or writes, if one: a key of another type
            there is a corrupt record, not a failure of the server.
        within: seconds the block may take (the store's ``timeout``), but for a queue for a
            connection of the store's own pool or for a batch to go out; past them the call
            is cut and the server counts as not answering. ``None`` leaves each round trip
            to the client's own socket timeout (a bulk read or write of many keys).
        store: what the messages call the store.
        write: the call writes: cut by ``within``, it may still run once the server
            answers, and the message says so.

    Raises:
        StoreUnavailableError: the server cannot be reached, or did not answer in time; or
            the call waited for a connection or for its batch past the queue's own bound
            (the message says the store was busy).
        CorruptRecordError: the record ``pending_id`` is not a hash.
        StoreError: the server refused the call, or the user (its password, or a command
            or key its ACL denies it: retrying will not help, the message says what to grant).
    """
    task = asyncio.current_task()
    cancels = task.cancelling() if task is not None else 0
    bound = asyncio.timeout(within)
    counted = Bound(bound)
    try:
        async with bound:
            with counted:
                yield
    except PoolExhaustedError as error:
        raise StoreUnavailableError(f"the {store} at {where} is busy: {error}") from error
    except TimeoutError as error:
        if counted.outwaited is not None:
            raise StoreUnavailableError(
                f"the {store} at {where} is busy: {counted.outwaited}"
            ) from None
        counted.answered(False)
        if not bound.expired():
            raise StoreUnavailableError(
                f"the {store} at {where} cannot be reached: {error}"
            ) from error
        message = silent(store, where, within)
        if write:
            message += (
                "; whether this write was applied is unknown (it may still run once the "
                "server answers): read the room before writing it again"
            )
        raise StoreUnavailableError(message) from None
    except (AuthenticationError, NoPermissionError) as error:
        raise StoreError(refused(store, where, error)) from error
    except _UNREACHABLE as error:
        counted.answered(False)
        raise StoreUnavailableError(f"the {store} at {where} cannot be reached: {error}") from error
    except ResponseError as error:
        if _SCRIPT_DENIED in str(error):
            raise StoreError(refused(store, where, error)) from error
        if pending_id is not None and str(error).startswith("WRONGTYPE"):
            raise CorruptRecordError(
                f"pending record {pending_id!r} is not a hash at {where}"
            ) from None
        raise StoreError(f"the {store} at {where} failed: {error}") from error
    except RedisError as error:
        raise StoreError(f"the {store} at {where} failed: {error}") from error
    counted.answered(True)
    if task is not None and task.cancelling() > cancels:
        raise asyncio.CancelledError


def refused(store: str, where: str, error: RedisError) -> str:
    """The message of a call the server at ``where`` refused its user: a wrong password, or
    a command or a key the user's ACL denies it (``NOPERM``)."""
    if isinstance(error, AuthenticationError):
        return (
            f"the {store} at {where} refused its user ({error}): check the user name and "
            "password in the URL (redis://USER:PASSWORD@host:port/db)"
        )
    return (
        f"the {store} at {where} refused its user a command or a key ({error}): grant the "
        "user the commands the store runs and its keys and channels, e.g. ACL SETUSER <user> "
        "+@read +@write +@scripting +@pubsub +@connection ~<prefix>:* &<prefix>:*"
    )


def silent(store: str, where: str, within: float | None) -> str:
    """The message of a call the server at ``where`` did not answer within ``within`` s."""
    return (
        f"the {store} at {where} did not answer within {within:g} s: check that "
        f"redis-server is running (not stopped, swapping or stuck on a slow disk) and that "
        f"the network reaches it; a server that is only slow needs a longer timeout= on "
        f"the store"
    )


@asynccontextmanager
async def beside(store: Any, what: str) -> AsyncIterator[None]:
    """Around each call of a part kept beside ``store`` (its grants, its outbox): refused once
    the store is closed; the client's failures become the store's errors, naming ``what``."""
    await store._ensure_open()
    async with guard(store.where, within=store.timeout, store=what):
        yield


def text(value: object) -> str:
    """A reply as text, whether the client decodes replies or not."""
    return value.decode() if isinstance(value, bytes) else str(value)


def glob_escape(pattern: str) -> str:
    """``pattern`` with the characters ``SCAN MATCH`` treats as wildcards escaped."""
    return "".join(f"\\{char}" if char in "*?[]\\" else char for char in pattern)


async def check_persistence(
    client: Redis, where: str, logger: logging.Logger, *, within: float
) -> None:
    """Log a warning on ``logger`` when the server would lose acknowledged outcomes.

    The settings come from ``CONFIG GET``; a server that refuses it (managed services often
    do) gets a warning that its persistence could not be checked.

    Raises:
        StoreUnavailableError: the server cannot be reached, or did not answer within
            ``within`` seconds.
    """
    async with client.pipeline(transaction=False) as pipe:
        for name in _PERSISTENCE:
            pipe.config_get(name)
        async with guard(where, within=within):
            replies = await pipe.execute(raise_on_error=False)
    refused = next((reply for reply in replies if isinstance(reply, Exception)), None)
    if refused is not None:
        logger.warning(
            "could not check the persistence of the Redis store at %s (CONFIG GET was "
            "refused: %s): unless the server runs with appendonly yes and appendfsync "
            "always, a restart or a crash of it can lose acknowledged answers",
            where,
            refused,
        )
        return
    settings = {text(name): text(value) for reply in replies for name, value in dict(reply).items()}
    risk = persistence_risk(settings)
    if risk is not None:
        logger.warning("the Redis store at %s %s", where, risk)


def persistence_risk(settings: Mapping[str, str]) -> str | None:
    """What the server's persistence ``settings`` would lose, or ``None`` when nothing.

    ``settings`` maps ``appendonly``, ``appendfsync`` and ``save`` to their values as
    ``CONFIG GET`` reports them; a missing one is reported as unknown.
    """
    missing = [name for name in _PERSISTENCE if name not in settings]
    if missing:
        return (
            f"does not report {', '.join(missing)}: its persistence is unknown, and a restart "
            f"may lose acknowledged answers; {_ADVICE}"
        )
    if settings["appendonly"] == "yes":
        fsync = settings["appendfsync"]
        if fsync == "always":
            return None
        if fsync == "everysec":
            return (
                "syncs its append-only file once a second (appendfsync everysec): a crash "
                "of its machine (a power cut, a kernel panic) loses up to the last two "
                f"seconds of acknowledged answers; {_ADVICE}"
            )
        return (
            f"leaves syncing its append-only file to the operating system (appendfsync "
            f"{fsync}): a crash of its machine loses the acknowledged answers not yet "
            f"written out, often the last 30 seconds; {_ADVICE}"
        )
    save = settings["save"].strip()
    if save:
        return (
            f"keeps snapshots only (appendonly no, save {save!r}): a crash of the server "
            f"loses every request and acknowledged answer since its last snapshot; {_ADVICE}"
        )
    return (
        "keeps nothing on disk (appendonly no, no snapshots): a restart of the server loses "
        f"every pending request and every acknowledged answer; {_ADVICE}"
    )

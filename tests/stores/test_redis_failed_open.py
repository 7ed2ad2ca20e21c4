"""A Redis store whose ``open()`` fails on a server that answers leaves no connection of its
own behind (the caller of ``async with store:`` gets no store to close); a server that
refuses the store's user (its password, or a command its ACL denies) raises a plain
:class:`~roomkit.core.exceptions.StoreError` saying what to grant, not a raw redis-py error
and not an outage that a retry would heal."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix

from roomkit.core.exceptions import (
    StoreError,
    StoreFormatError,
    StoreNotFoundError,
    StoreUnavailableError,
)
from roomkit.models.room import Room
from roomkit.stores.redis import RedisRoomStore, RedisStore


@pytest.fixture
async def admin(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """A client of the server's default user, to set users up and list connections."""
    client = Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()


async def _user(admin: Redis, *commands: str) -> str:
    """A new ACL user (password ``pw``) allowed ``commands`` on every key and channel."""
    name = f"store{os.urandom(4).hex()}"
    await admin.acl_setuser(
        name, enabled=True, passwords=["+pw"], keys=["*"], channels=["*"], commands=list(commands)
    )
    return name


def _url(server: RedisServer, user: str, password: str = "pw") -> str:
    return server.url.replace("redis://", f"redis://{user}:{password}@")


async def _connected(admin: Redis, user: str) -> int:
    """How many connections the server holds for ``user``."""
    return sum(1 for client in await admin.client_list() if client.get("user") == user)


async def _failed_open(
    admin: Redis,
    user: str,
    store: RedisStore | RedisRoomStore,
    error: type[StoreError] = StoreError,
    match: str | None = None,
) -> StoreError:
    """What ``store``'s open raised (an ``error`` matching ``match``), once it is checked
    that none of ``user``'s connections is left."""
    try:
        with pytest.raises(error, match=match) as raised:
            await store.open()
        assert await _connected(admin, user) == 0
    finally:
        await store.close()
    return raised.value


async def test_a_store_not_found_leaves_no_connection(
    admin: Redis, redis_server: RedisServer
) -> None:
    user = await _user(admin, "+@all")
    store = RedisStore(_url(redis_server, user), prefix=fresh_prefix(), create=False)
    await _failed_open(admin, user, store, StoreNotFoundError)


@pytest.mark.parametrize(
    ("format_key", "error", "match"),
    [("rooms/v0", StoreFormatError, None), ({"not": "a string"}, StoreError, "WRONGTYPE")],
    ids=["another format", "a key of another type"],
)
async def test_a_room_store_of_another_format_leaves_no_connection(
    format_key: str | dict[str, str],
    error: type[StoreError],
    match: str | None,
    admin: Redis,
    redis_server: RedisServer,
) -> None:
    user, prefix = await _user(admin, "+@all"), fresh_prefix()
    if isinstance(format_key, str):
        await admin.set(f"{prefix}:rooms:format", format_key)
    else:
        await admin.hset(f"{prefix}:rooms:format", mapping=format_key)
    store = RedisRoomStore(_url(redis_server, user), prefix=prefix)
    await _failed_open(admin, user, store, error, match)


async def test_a_failed_open_leaves_a_given_client_connected(
    admin: Redis, redis_server: RedisServer
) -> None:
    """A client the store was given is its owner's: the store disconnects nothing of it."""
    user = await _user(admin, "+@all")
    client = Redis.from_url(_url(redis_server, user))
    store = RedisStore(client=client, prefix=fresh_prefix(), create=False)
    try:
        with pytest.raises(StoreNotFoundError):
            await store.open()
        assert await _connected(admin, user) == 1
    finally:
        await store.close()
        await client.aclose()


async def test_a_wrong_password_is_a_store_error_naming_what_to_check(
    admin: Redis, redis_server: RedisServer
) -> None:
    user = await _user(admin, "+@all")
    store = RedisStore(_url(redis_server, user, "wrong"), prefix=fresh_prefix())
    raised = await _failed_open(admin, user, store, match="check the user name and password")
    assert not isinstance(raised, StoreUnavailableError), "no retry heals a password"
    assert "wrong" not in str(raised), "the password is not shown"


@pytest.mark.parametrize(
    ("commands", "refusal"),
    [
        (["+ping", "+exists", "+hello", "+client"], "evalsha"),
        (["+@connection", "+@scripting", "+@read"], "can't run this command"),
    ],
    ids=["a command", "a command inside a script"],
)
async def test_a_user_denied_the_store_s_commands_is_told_what_to_grant(
    commands: list[str], refusal: str, admin: Redis, redis_server: RedisServer
) -> None:
    user = await _user(admin, *commands)
    store = RedisRoomStore(_url(redis_server, user), prefix=fresh_prefix())
    raised = await _failed_open(admin, user, store, match="ACL SETUSER")
    assert not isinstance(raised, StoreUnavailableError), "no retry heals an ACL"
    assert refusal in str(raised)


async def test_the_commands_the_message_names_are_enough(
    admin: Redis, redis_server: RedisServer
) -> None:
    """A user granted what the refusal advises opens both stores and uses them."""
    user = await _user(admin, "+@read", "+@write", "+@scripting", "+@pubsub", "+@connection")
    url, prefix = _url(redis_server, user), fresh_prefix()
    async with RedisStore(url, prefix=prefix) as store, RedisRoomStore(url, prefix=prefix) as rooms:
        assert await store.list_pending() == []
        await rooms.create_room(Room("room-1"))
        assert await rooms.get_room("room-1") is not None

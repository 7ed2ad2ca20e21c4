"""A call in flight while a Redis store closes leaves no connection open once it ends.

Closing the store cuts the connection the call waits on; the client then tries the call
again on a new connection, which it gives back to the pool when the call ends. That
connection used to stay open, with nothing left to close it: a socket the garbage collector
found, in whatever test ran then, with its event loop long gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from tests.tools.human_input.stores.redis_relay import Relay, decoding_client, unclosed
from tests.tools.human_input.stores.store_kit import make_request
from tests.traced_memory import collecting_only_new

from roomkit.stores.redis import RedisStore


@pytest.fixture(autouse=True)
def only_new_objects_collected() -> Iterator[None]:
    """The collection that finds unclosed connections walks this test's objects alone."""
    with collecting_only_new():
        yield


@pytest.mark.parametrize("given", ["url", "decoding client"])
async def test_a_call_in_flight_at_close_leaves_no_connection_open(
    relay: Relay, prefix: str, given: str
) -> None:
    if given == "url":
        store = RedisStore(relay.url, prefix=prefix)
    else:
        store = RedisStore(client=decoding_client(relay.url), prefix=prefix)
    await store.open()
    request = make_request(pending_id="in-flight-at-close")
    await store.insert(request)

    held = relay.hold(b"in-flight-at-close")  # the fetch's read of the record
    fetch = asyncio.create_task(store.fetch(request.pending_id))
    await held.wait()
    await store.close()
    # The close cut the held connection; the client fetched again on a new one.
    fetched = await fetch
    assert fetched is not None
    assert fetched.pending_id == request.pending_id

    del store, fetch
    assert unclosed(relay.port) == []

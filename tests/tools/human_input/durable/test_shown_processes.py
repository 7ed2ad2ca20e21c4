"""A request's ``shown`` entry across processes: a process killed while it records one
leaves the entry to the next showing, and processes showing a request at once write it
once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from tests.forked_processes import Peer, ready
from tests.servers.plugin import HandlerFactory
from tests.servers.stores import DURABLE, STORES
from tests.tools.human_input.durable import shown_peer
from tests.tools.human_input.durable.store_fixtures import chain_breaks

from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail

pytestmark = pytest.mark.timeout(60)

durable = pytest.mark.parametrize("store_kind", DURABLE, indirect=True)


async def shown(handler: HumanInputHandler, pending_id: str) -> list[tuple[str, str]]:
    """The request's ``shown`` entries, as (surface, actor), oldest first."""
    return [
        (entry["surface"], entry["actor"])
        for entry in await handler.history(pending_id)
        if entry["type"] == "shown"
    ]


@asynccontextmanager
async def showing(
    url: str, prefix: str, pending_id: str, actor: str, hold: str
) -> AsyncIterator[Peer]:
    """A desk in a process of its own, told to show the request (see
    :mod:`~tests.tools.human_input.durable.shown_peer`)."""
    async with ready(shown_peer.main, url, prefix, pending_id, "desk", actor, hold) as peer:
        peer.stdin.write(b"show\n")
        yield peer


async def said(peer: Peer) -> str:
    return (await peer.stdout.readline()).decode().strip()


@durable
@pytest.mark.parametrize(
    ("hold", "written", "entries"),
    [("append", 1, [("desk", "bob")]), ("mark", 0, [("desk", "alice")])],
    ids=["before-the-append", "after-the-append"],
)
async def test_a_showing_killed_mid_way_leaves_the_entry_to_the_next(
    make_handler: HandlerFactory,
    store_url: str,
    store_prefix: str,
    hold: str,
    written: int,
    entries: list[tuple[str, str]],
) -> None:
    """SIGKILL before the entry is appended, or after it and before the ledger knows: the
    next showing, in another process, finds one ``shown`` entry in the history (its own,
    or the one that landed), and the showings after it add none."""
    handler = make_handler()
    asked = (await handler.create("AskUserQuestion", {"question": "Ship it?"})).pending_id
    async with showing(store_url, store_prefix, asked, "alice", hold) as peer:
        assert await said(peer) == "held"
        peer.kill()
        assert await peer.wait() == -9

    assert await ShownTrail(make_handler()).record([asked], "desk", "bob") == written
    assert await ShownTrail(make_handler()).record([asked], "desk", "carol") == 0
    assert await ShownTrail(handler).record([asked], "desk", "dan") == 0
    assert await shown(handler, asked) == entries
    assert await chain_breaks(handler, [asked]) == {asked: None}


@durable
async def test_two_processes_showing_at_once_write_one_entry(
    make_handler: HandlerFactory, store_url: str, store_prefix: str
) -> None:
    """Both read the history before either writes: one entry, written by one of them."""
    handler = make_handler()
    asked = (await handler.create("AskUserQuestion", {"question": "Ship it?"})).pending_id
    async with (
        showing(store_url, store_prefix, asked, "ann", "read") as one,
        showing(store_url, store_prefix, asked, "bob", "read") as two,
    ):
        assert [await said(one), await said(two)] == ["read", "read"]
        for peer in (one, two):
            peer.stdin.write(b"go\n")
        wrote = sorted([await said(one), await said(two)])
    assert wrote == ["wrote 0", "wrote 1"]
    [(surface, actor)] = await shown(handler, asked)
    assert (surface, actor) in {("desk", "ann"), ("desk", "bob")}
    assert await ShownTrail(make_handler()).record([asked], "desk", "carol") == 0
    assert await chain_breaks(handler, [asked]) == {asked: None}


@pytest.mark.parametrize("store_kind", STORES, indirect=True)
async def test_handlers_showing_the_same_requests_at_once_write_each_once(
    make_handler: HandlerFactory,
) -> None:
    """Four handlers (separate connections, as processes have) list the same requests at
    the same time, twice: one entry per request."""
    handlers = [make_handler() for _ in range(4)]
    asked = [
        (await handlers[0].create("AskUserQuestion", {"question": f"#{n}"})).pending_id
        for n in range(5)
    ]
    trails = [ShownTrail(handler) for handler in handlers for _ in range(2)]
    written = await asyncio.gather(
        *(trail.record(asked, "desk", f"viewer-{n}") for n, trail in enumerate(trails))
    )
    assert sum(written) == len(asked)
    for pending_id in asked:
        assert [surface for surface, _ in await shown(handlers[0], pending_id)] == ["desk"]
    assert await chain_breaks(handlers[0], asked) == dict.fromkeys(asked)

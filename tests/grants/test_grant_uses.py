"""Every use of a grant is recorded by the request it settled: none is spent without one."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from typing import Any

import pytest
from tests.grants.conftest import HandlerMaker
from tests.grants.support import Clock
from tests.grants.test_grant_flow import PAY, PAY_SCHEMA, granted, held
from tests.servers.stores import StoreSite

from roomkit import PendingInputStatus
from roomkit.core.exceptions import StoreError
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.policy.grants import GrantScope
from roomkit.stores._records import marked
from roomkit.stores.grants import LIST_LIMIT, Grant
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input._checks import owned_key

_RESOLVED = PendingInputStatus.RESOLVED
_PENDING = PendingInputStatus.PENDING


async def keyed(handler: HumanInputHandler, key: str = "call-1") -> Any:
    """The approval of a ``pay`` call made with ``key``, as a re-driven turn makes it."""
    return await handler.create_approval(
        "pay",
        dict(PAY),
        approvers=("ann",),
        tool_schema=PAY_SCHEMA,
        room_id="r1",
        channel_id="agent",
        actor_id="agent-7",
        key=key,
        timeout=600,
    )


async def uses(handler: HumanInputHandler, grant: Grant) -> int:
    stored = await handler.grants.get(grant.grant_id)
    assert stored is not None
    return stored.uses


async def test_a_keyed_retry_spends_no_second_use(handlers: HandlerMaker) -> None:
    handler = handlers()
    grant = await granted(handler, GrantScope(expires_in=3600, max_uses=2))
    first = await keyed(handler)
    assert first.status is _RESOLVED
    again = await keyed(handler)
    assert again.pending_id == first.pending_id
    assert again.status is _RESOLVED
    assert await uses(handler, grant) == 1
    # The use the retry did not take is still there for another call.
    assert (await held(handler)).status is _RESOLVED
    assert (await held(handler)).status is _PENDING


async def test_a_rerun_after_a_restart_spends_no_second_use(handlers: HandlerMaker) -> None:
    """A process started anew re-attaches to the request by its key: the grant was used
    once, by that request, and its history says so once."""
    before = handlers()
    grant = await granted(before, GrantScope(expires_in=3600, max_uses=2))
    first = await keyed(before)
    after = handlers()
    again = await keyed(after)
    assert (again.pending_id, again.status) == (first.pending_id, _RESOLVED)
    assert await uses(after, grant) == 1
    history = await after.history(first.pending_id)
    assert [entry["type"] for entry in history].count("grant_used") == 1


async def test_a_granted_request_left_open_is_settled_on_re_attaching(
    handlers: HandlerMaker, store_site: StoreSite
) -> None:
    """A process that stopped after the insert that used the grant, before its settle:
    the request re-attached to is settled by the grant it cites, and no use is spent."""
    if not store_site.durable:
        pytest.skip("the memory store inserts and settles in one step")
    handler = handlers()
    grant = await granted(handler, GrantScope(expires_in=3600, max_uses=2))
    request = _approval(handler, "p-cut")
    store: Any = handler.store
    inserted = await store.insert_granted(request, grant.grant_id, history=_used_history)
    assert inserted is not None
    assert (inserted.created, inserted.grant.uses) == (True, 1)
    assert inserted.record.status is _PENDING
    again = await keyed(handlers())
    assert again.pending_id == "p-cut"
    assert again.status is _RESOLVED
    assert again.settled_by == f"grant:{grant.grant_id}"
    assert await uses(handler, grant) == 1
    types = [entry["type"] for entry in await handler.history("p-cut")]
    assert types == ["created", "grant_used", "decided", "settled"]


async def test_an_insert_that_fails_leaves_the_use_unspent(
    handlers: HandlerMaker, store_site: StoreSite
) -> None:
    """The use is counted in the write that records the request it settles: when that
    write fails, neither the request nor the use is there."""
    if not store_site.durable:
        pytest.skip("the memory store counts the use and adds the request in one step")
    handler = handlers()
    grant = await granted(handler, GrantScope(expires_in=3600, max_uses=1))
    await _break_inserts(store_site)
    # PostgreSQL hands the trigger's refusal on as it is; the others as the store's error.
    refused: type[Exception] = StoreError
    if store_site.kind == "postgres":
        import psycopg

        refused = psycopg.errors.RaiseException
    with pytest.raises(refused):
        await keyed(handler)
    assert await uses(handler, grant) == 0
    await _mend_inserts(store_site)
    settled = await keyed(handler)
    assert settled.status is _RESOLVED
    assert await uses(handler, grant) == 1


async def test_an_insert_of_a_stored_id_spends_no_use(
    handlers: HandlerMaker, store_site: StoreSite
) -> None:
    """The store refuses a request whose id is stored already after it counted the use,
    in the same write: the use goes back with the rest of that write."""
    if not store_site.durable:
        pytest.skip("the memory store counts the use and adds the request in one step")
    handler = handlers()
    grant = await granted(handler, GrantScope(expires_in=3600, max_uses=1))
    store: Any = handler.store
    first = await handler.create_approval("other", {}, approvers=("ann",))
    clash = _approval(handler, first.pending_id, key=None)
    with pytest.raises(StoreError, match="already stored"):
        await store.insert_granted(clash, grant.grant_id, history=_used_history)
    assert await uses(handler, grant) == 0


async def test_processes_racing_for_the_last_uses_record_one_use_each(
    handlers: HandlerMaker,
) -> None:
    """Calls racing in several processes for a grant's last uses: each use taken is cited
    by exactly one settled request, and the calls past them are asked."""
    mine, theirs = handlers(), handlers()
    grant = await granted(mine, GrantScope(expires_in=3600, max_uses=3))
    calls = await asyncio.gather(*(held(handler) for handler in (mine, theirs) * 3))
    settled = [call for call in calls if call.status is _RESOLVED]
    assert len(settled) == 3
    assert sum(call.status is _PENDING for call in calls) == 3
    assert await uses(mine, grant) == 3
    cited = [
        entry["use"]
        for call in settled
        for entry in await mine.history(call.pending_id)
        if entry["type"] == "grant_used"
    ]
    assert sorted(cited) == [1, 2, 3]


async def test_the_oldest_of_many_live_grants_still_covers(
    handlers: HandlerMaker, clock: Clock
) -> None:
    """Past the most grants a list shows, every live grant on the tool still covers."""
    handler = handlers()
    grants = handler.grants
    oldest = await granted(handler, GrantScope(expires_in=86_400, max_uses=1))
    for n in range(LIST_LIMIT + 1):
        clock.now += 0.001
        await grants.add(
            Grant(
                grant_id=f"g-other-{n}",
                tool="pay",
                granted_by=("ann",),
                expires_at=clock.now + 3600,
                digest=f"{n:064x}",
                actor_id="agent-7",
            )
        )
    shown = await grants.list(tool="pay", live=True)
    assert len(shown) == LIST_LIMIT
    assert oldest.grant_id not in {grant.grant_id for grant in shown}
    again = await held(handler)
    assert again.status is _RESOLVED
    assert again.settled_by == f"grant:{oldest.grant_id}"


def _approval(handler: HumanInputHandler, pending_id: str, key: str | None = "call-1") -> Any:
    """The approval :func:`keyed` makes, with the id ``pending_id``, ready to insert."""
    request = PendingInput(
        pending_id=pending_id,
        tool_name="pay",
        arguments=dict(PAY),
        room_id="r1",
        tool_call_id="",
        channel_id="agent",
        actor_id="agent-7",
        kind="approval",
        approvers=("ann",),
        answer_schema=PAY_SCHEMA,
        arguments_digest=arguments_digest("pay", PAY),
    )
    if key is not None:
        request.key = owned_key(request, key)
    return request


def _used_history(grant: Grant) -> list[dict[str, Any]]:
    from roomkit.stores import new_entry

    return [
        new_entry("created", tool="pay", arguments=PAY),
        new_entry("grant_used", surface="grant", grant=grant.grant_id, use=grant.uses),
    ]


async def _break_inserts(site: StoreSite) -> None:
    """Make the store's next insert of a keyed request fail, as a full disk would."""
    if site.kind == "sqlite":
        with closing(sqlite3.connect(site.url.removeprefix("sqlite:///"))) as db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_pending "
                "BEGIN SELECT RAISE(ABORT, 'no room left'); END"
            )
            db.commit()
    elif site.kind == "postgres":
        import psycopg

        async with await psycopg.AsyncConnection.connect(site.url, autocommit=True) as db:
            await db.execute(
                f'CREATE FUNCTION "{site.prefix}".refuse() RETURNS trigger LANGUAGE plpgsql '
                "AS $$ BEGIN RAISE EXCEPTION 'no room left'; END $$"
            )
            await db.execute(
                f'CREATE TRIGGER refuse BEFORE INSERT ON "{site.prefix}".roomkit_pending '
                f'FOR EACH ROW EXECUTE FUNCTION "{site.prefix}".refuse()'
            )
    else:
        from redis.asyncio import Redis

        async with Redis.from_url(site.url) as raw:
            # The key's entry is read first: one of the wrong type fails the insert.
            await raw.hset(_key_entry(site), "wrong", "type")


async def _mend_inserts(site: StoreSite) -> None:
    if site.kind == "sqlite":
        with closing(sqlite3.connect(site.url.removeprefix("sqlite:///"))) as db:
            db.execute("DROP TRIGGER refuse")
            db.commit()
    elif site.kind == "postgres":
        import psycopg

        async with await psycopg.AsyncConnection.connect(site.url, autocommit=True) as db:
            await db.execute(f'DROP TRIGGER refuse ON "{site.prefix}".roomkit_pending')
    else:
        from redis.asyncio import Redis

        async with Redis.from_url(site.url) as raw:
            await raw.delete(_key_entry(site))


def _key_entry(site: StoreSite) -> str:
    request = PendingInput(
        pending_id="p",
        tool_name="pay",
        arguments={},
        room_id="r1",
        tool_call_id="",
        channel_id="agent",
    )
    request.actor_id = "agent-7"
    return f"{site.prefix}:k:{marked(owned_key(request, 'call-1'))}"

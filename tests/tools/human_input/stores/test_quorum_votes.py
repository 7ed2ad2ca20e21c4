"""Quorum votes on every durable store: the deadline on an injected clock, and the last two
votes racing from two processes."""

from __future__ import annotations

import asyncio
import json
import sys

from tests.tools.human_input.stores.store_kit import (
    OPEN_ELSEWHERE,
    Backend,
    Changes,
    FakeClock,
)

from roomkit import HumanInputHandler
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores import PendingChange, PendingChangeKind, broken_link
from roomkit.tools.approvals import approve

VOTE_ELSEWHERE = (
    OPEN_ELSEWHERE
    + """
import asyncio, json, sys
from roomkit import HumanInputHandler
from roomkit.tools.approvals import approve

async def main(kind, where, prefix, actor, *ids):
    async with open_store(kind, where, prefix) as store:
        handler = HumanInputHandler(store=store)
        print("ready", flush=True)
        sys.stdin.readline()
        votes = [handler.aresolve(pending_id, approve(), by=actor) for pending_id in ids]
        print(json.dumps(await asyncio.gather(*votes)), flush=True)

asyncio.run(main(*sys.argv[1:]))
"""
)
"""Run with ``kind location prefix actor id...``: says ``ready``, waits for a line, then
votes ``approve()`` as ``actor`` on every id at once and prints whether each counted."""


async def test_a_vote_and_the_deadline_never_both_win(backend: Backend, clock: FakeClock) -> None:
    async with backend.make(clock=clock) as store:
        handler = HumanInputHandler(store=store)
        held = await handler.create_approval(
            "t", {"a": 1}, approvers=["ann", "bob"], quorum=2, timeout=10
        )
        clock.advance(9.5)
        assert await handler.aresolve(held.pending_id, approve(), by="ann")
        clock.advance(0.5)  # the deadline, to the instant
        assert not await handler.aresolve(held.pending_id, approve(), by="bob")
        record = await handler.get_request(held.pending_id)
        assert record is not None
        assert record.status is PendingInputStatus.TIMED_OUT
        assert [vote.actor for vote in record.votes] == ["ann"]
        assert not await store.settle(held.pending_id, PendingInputStatus.TIMED_OUT)


async def test_the_deadline_loses_to_the_vote_that_came_first(
    backend: Backend, clock: FakeClock
) -> None:
    async with backend.make(clock=clock) as store:
        handler = HumanInputHandler(store=store)
        held = await handler.create_approval(
            "t", {"a": 1}, approvers=["ann", "bob"], quorum=2, timeout=10
        )
        assert await handler.aresolve(held.pending_id, approve(), by="ann")
        clock.advance(9.999)
        assert await handler.aresolve(held.pending_id, approve(), by="bob")
        clock.advance(1)
        assert await store.settle(held.pending_id, PendingInputStatus.TIMED_OUT) is None
        record = await handler.get_request(held.pending_id)
        assert record is not None
        assert (record.status, record.settled_by) == (PendingInputStatus.RESOLVED, "bob")


async def test_the_last_two_votes_racing_from_two_processes_settle_once(
    backend: Backend,
) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = [
            (
                await handler.create_approval(
                    "t", {"a": n}, approvers=["ann", "left", "right"], quorum=2
                )
            ).pending_id
            for n in range(12)
        ]
        for pending_id in ids[:6]:
            # Half already hold one vote: the race is for the last one, and one loses.
            assert await handler.aresolve(pending_id, approve(), by="ann")
        voters = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                VOTE_ELSEWHERE,
                *backend.elsewhere,
                actor,
                *ids,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            for actor in ("left", "right")
        ]
        async with asyncio.timeout(60):
            for voter in voters:
                assert voter.stdout is not None
                assert await voter.stdout.readline() == b"ready\n"
            for voter in voters:
                assert voter.stdin is not None
                voter.stdin.write(b"go\n")
                await voter.stdin.drain()
            counted = []
            for voter in voters:
                out, _ = await voter.communicate()
                assert voter.returncode == 0
                counted.append(json.loads(out))
        chains = await store.history_texts()
        for n, pending_id in enumerate(ids):
            record = await handler.get_request(pending_id)
            assert record is not None
            assert record.status is PendingInputStatus.RESOLVED
            history = await handler.history(pending_id)
            kinds = [entry["type"] for entry in history]
            assert kinds.count("settled") == 1
            assert broken_link(pending_id, chains[pending_id]) is None
            took = [counted[0][n], counted[1][n]]
            if n < 6:
                # Ann's vote and the first of the two reach the quorum; the second is late.
                assert sorted(took) == [False, True]
                assert len(record.votes) == 2
            else:
                assert took == [True, True]
                assert sorted(vote.actor for vote in record.votes) == ["left", "right"]
            assert kinds[-1] == "settled"


async def test_a_vote_through_one_store_object_reaches_another_ones_listener(
    backend: Backend,
) -> None:
    """A vote that leaves the quorum open is a VOTED change on every store's feed (what the
    desk's cards follow); the vote that decides is a SETTLED one."""
    async with backend.make() as a, backend.make() as b:
        changes = Changes()
        unsubscribe = b.subscribe(changes)
        await backend.live(changes)
        handler = HumanInputHandler(store=a)
        held = await handler.create_approval("t", {"a": 1}, approvers=["ann", "bob"], quorum=2)
        assert await handler.aresolve(held.pending_id, approve(), by="ann")
        await changes.arrival(PendingChange(PendingChangeKind.VOTED, held.pending_id))
        assert await handler.aresolve(held.pending_id, approve(), by="bob")
        await changes.arrival(PendingChange(PendingChangeKind.SETTLED, held.pending_id))
        unsubscribe()

"""Two processes racing on one durable store, and a process killed mid-way: one outcome per
request, one vote per approver, one use of a grant's last, and a history that verifies."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

from tests.forked_processes import Peer
from tests.forked_processes import start as start_peer
from tests.notify.receiver import Receiver
from tests.tools.human_input.stores import race_peer
from tests.tools.human_input.stores.store_kit import Backend, Changes

from roomkit import HumanInputHandler
from roomkit.models.pending_input import PendingInputStatus, arguments_digest
from roomkit.stores import PendingChange, PendingChangeKind, broken_link, check_trail
from roomkit.stores.grants import Grant
from roomkit.tools.approvals import approve, reject

ROOT = Path(__file__).resolve().parents[4]
PATIENCE = 60.0

RESOLVED = PendingInputStatus.RESOLVED
REJECTED = PendingInputStatus.REJECTED
PENDING = PendingInputStatus.PENDING


async def ready(
    backend: Backend, *plans: dict[str, Any], elsewhere: list[str] | None = None
) -> list[Peer]:
    """Each plan in a process of its own, every one ready and waiting to be let go; each
    opens the store ``elsewhere`` names (kind, location, prefix), else the backend's."""
    peers = [
        await start_peer(race_peer.main, ROOT, *(elsewhere or backend.elsewhere), json.dumps(plan))
        for plan in plans
    ]
    async with asyncio.timeout(PATIENCE):
        for peer in peers:
            assert await peer.stdout.readline() == b"ready\n"
    return peers


async def let_go(peers: list[Peer]) -> None:
    """Let every peer go, all at once."""
    for peer in peers:
        peer.stdin.write(b"go\n")
    for peer in peers:
        await peer.stdin.drain()


async def outcome(peer: Peer, *, exit_code: int = 0) -> Any:
    """What ``peer`` printed once it ends with ``exit_code`` (``None`` if nothing)."""
    async with asyncio.timeout(PATIENCE):
        out, _ = await peer.communicate()
    assert peer.returncode == exit_code
    return json.loads(out) if out.strip() else None


async def race(backend: Backend, *plans: dict[str, Any]) -> list[Any]:
    """Run each plan in a process of its own, all let go at once once every one is ready;
    what each printed."""
    peers = await ready(backend, *plans)
    await let_go(peers)
    return [
        await outcome(peer, exit_code=-9 if plan.get("then") == "die" else 0)
        for peer, plan in zip(peers, plans, strict=True)
    ]


async def verified(store: Any, *ids: str) -> None:
    """Every chain of the store holds, as ``roomkit audit verify`` checks it."""
    report = check_trail(await store.trail.read(), None, now=time.time())
    assert report.problems == []
    chains = await store.history_texts()
    for pending_id in ids:
        assert broken_link(pending_id, chains[pending_id]) is None


def kinds(history: list[dict[str, Any]]) -> list[str]:
    return [entry["type"] for entry in history]


async def two_of_three(handler: HumanInputHandler, count: int) -> list[str]:
    """The ids of ``count`` new approvals that two of ann, bob and cat decide."""
    return [
        (
            await handler.create_approval(
                "pay", {"n": n}, approvers=["ann", "bob", "cat"], quorum=2
            )
        ).pending_id
        for n in range(count)
    ]


async def test_two_processes_answering_one_request_at_once_one_wins(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = [(await handler.create("ask", {"n": n}, actor_id="ann")).pending_id for n in range(8)]
        left, right = await race(
            backend,
            {"op": "settle", "calls": [[pid, "left", "ann"] for pid in ids]},
            {"op": "settle", "calls": [[pid, "right", "bob"] for pid in ids]},
        )
        for n, pending_id in enumerate(ids):
            assert sorted([left[n], right[n]]) == [False, True]
            record = await handler.get_request(pending_id)
            assert record is not None
            assert record.status is RESOLVED
            assert record.result == ("left" if left[n] else "right")
            assert kinds(await handler.history(pending_id)).count("settled") == 1
        await verified(store, *ids)


async def test_one_answer_sent_from_two_processes_at_once_is_recorded_once(
    backend: Backend,
) -> None:
    """The same actor's same answer, sent twice at once: both told ``True``, one decision."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = [(await handler.create("ask", {"n": n}, actor_id="ann")).pending_id for n in range(8)]
        calls = {"op": "settle", "calls": [[pid, "yes", "ann"] for pid in ids]}
        left, right = await race(backend, calls, calls)
        assert left == right == [True] * len(ids)
        for pending_id in ids:
            assert kinds(await handler.history(pending_id)).count("settled") == 1
        await verified(store, *ids)


async def test_one_approver_voting_from_two_processes_at_once_counts_once(
    backend: Backend,
) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = await two_of_three(handler, 8)
        vote = {"op": "settle", "calls": [[pid, approve(), "ann"] for pid in ids]}
        left, right = await race(backend, vote, vote)
        for n, pending_id in enumerate(ids):
            assert sorted([left[n], right[n]]) == [False, True]
            record = await handler.get_request(pending_id)
            assert record is not None
            assert record.status is PENDING
            assert [v.actor for v in record.votes] == ["ann"]
            assert kinds(await handler.history(pending_id)).count("voted") == 1
            # Ann's vote stands once: Bob's is the second, and decides.
            assert await handler.aresolve(pending_id, approve(), by="bob")
            assert kinds(await handler.history(pending_id)).count("settled") == 1
        await verified(store, *ids)


async def test_a_veto_racing_the_deciding_approval_one_decides(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = await two_of_three(handler, 8)
        for pending_id in ids:
            assert await handler.aresolve(pending_id, approve(), by="ann")
        approving, vetoing = await race(
            backend,
            {"op": "settle", "calls": [[pid, approve(), "bob"] for pid in ids]},
            {"op": "settle", "calls": [[pid, reject("no"), "cat"] for pid in ids]},
        )
        for n, pending_id in enumerate(ids):
            assert sorted([approving[n], vetoing[n]]) == [False, True]
            record = await handler.get_request(pending_id)
            assert record is not None
            assert record.status is (RESOLVED if approving[n] else REJECTED)
            assert record.settled_by == ("bob" if approving[n] else "cat")
            assert [v.actor for v in record.votes] == ["ann", record.settled_by]
            history = kinds(await handler.history(pending_id))
            assert history.count("settled") == 1
            assert history.count("voted") == 2
        await verified(store, *ids)


async def test_a_process_killed_after_its_create_leaves_a_request_answered_once(
    backend: Backend,
) -> None:
    """SIGKILL between the create and the first wait; a restart asks again under the same key:
    the same request, asked once, answerable, its answer waited for."""
    ask = {"op": "create", "tool": "ask", "arguments": {"q": "Go?"}, "key": "k1"}
    ask |= {"actor_id": "ann"}
    [pending_id] = await race(backend, {**ask, "then": "die"})
    async with backend.make() as store:
        restarted = HumanInputHandler(store=store)
        again = await restarted.create("ask", {"q": "Go?"}, key="k1", actor_id="ann")
        assert again.pending_id == pending_id
        assert again.status is PENDING
        waiting = asyncio.ensure_future(restarted.wait(pending_id, timeout=PATIENCE))
        [answered] = await race(backend, {"op": "settle", "calls": [[pending_id, "yes", "ann"]]})
        assert answered == [True]
        assert await waiting == "yes"
        history = kinds(await restarted.history(pending_id))
        assert history.count("created") == 1
        assert history.count("settled") == 1
        await verified(store, pending_id)


async def test_a_process_killed_after_the_deciding_vote_leaves_it_decided_once(
    backend: Backend,
) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        held = await handler.create_approval(
            "pay", {"a": 1}, approvers=["ann", "bob", "cat"], quorum=2, key="k2"
        )
        waiting = asyncio.ensure_future(handler.wait(held.pending_id, timeout=PATIENCE))
        assert await handler.aresolve(held.pending_id, approve(), by="ann")
        calls = [[held.pending_id, approve(), "bob"]]
        [voted] = await race(backend, {"op": "settle", "calls": calls, "then": "die"})
        assert voted == [True]
        assert await waiting == approve()
    async with backend.make() as store:
        restarted = HumanInputHandler(store=store)
        again = await restarted.create_approval(
            "pay", {"a": 1}, approvers=["ann", "bob", "cat"], quorum=2, key="k2"
        )
        assert (again.pending_id, again.status) == (held.pending_id, RESOLVED)
        assert not await restarted.aresolve(held.pending_id, approve(), by="cat")
        assert await restarted.wait(held.pending_id) == approve()
        history = kinds(await restarted.history(held.pending_id))
        assert history.count("created") == 1
        assert history.count("voted") == 2
        assert history.count("settled") == 1
        await verified(store, held.pending_id)


async def test_a_grant_of_one_use_covers_one_of_two_processes_racing(backend: Backend) -> None:
    args = {"to": "x", "amount": 5}
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        await handler.grants.add(
            Grant(
                grant_id="g-1",
                tool="pay",
                granted_by=("ann",),
                expires_at=time.time() + 3600,
                digest=arguments_digest("pay", args),
                actor_id="bob",
                max_uses=1,
            )
        )
        plan = {"op": "approval", "tool": "pay", "arguments": args, "approvers": ["ann"]}
        plan["actor_id"] = "bob"
        outcomes = await race(backend, plan, plan, plan)
        statuses = sorted(status for _, status in outcomes)
        assert statuses == ["pending", "pending", "resolved"]
        grant = await handler.grants.get("g-1")
        assert grant is not None
        assert grant.uses == 1
        for pending_id, status in outcomes:
            history = kinds(await handler.history(pending_id))
            assert history.count("grant_used") == (status == "resolved")
        await verified(store, *(pending_id for pending_id, _ in outcomes))


async def test_a_grant_of_one_use_is_spent_once_by_two_processes(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        await handler.grants.add(
            Grant(
                grant_id="g-2",
                tool="pay",
                granted_by=("ann",),
                expires_at=time.time() + 3600,
                max_uses=1,
            )
        )
        use = {"op": "use", "grant_id": "g-2", "times": 4}
        left, right = await race(backend, use, use)
        assert left + right == 1
        grant = await handler.grants.get("g-2")
        assert grant is not None
        assert grant.uses == 1


async def test_one_key_asked_from_two_processes_at_once_makes_one_request(
    backend: Backend,
) -> None:
    ask = {"op": "create", "tool": "ask", "arguments": {"q": "Go?"}, "key": "k"}
    hold = {"op": "approval", "tool": "pay", "arguments": {"a": 1}, "approvers": ["ann", "bob"]}
    hold |= {"quorum": 2, "key": "h"}
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        asked, asked_again, held, held_again = await race(backend, ask, ask, hold, hold)
        assert asked == asked_again
        assert held == held_again == [held[0], "pending"]
        for pending_id in (asked, held[0]):
            assert kinds(await handler.history(pending_id)) == ["created"]
        assert len(await handler.list_pending()) == 2
        await verified(store, asked, held[0])


async def test_a_rejection_racing_an_answer_one_wins(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = [(await handler.create("ask", {"n": n}, actor_id="ann")).pending_id for n in range(8)]
        answering, rejecting = await race(
            backend,
            {"op": "settle", "calls": [[pid, "yes", "ann"] for pid in ids]},
            {"op": "settle", "calls": [[pid, "no", "bob", "reject"] for pid in ids]},
        )
        for n, pending_id in enumerate(ids):
            assert sorted([answering[n], rejecting[n]]) == [False, True]
            record = await handler.get_request(pending_id)
            assert record is not None
            assert record.status is (RESOLVED if answering[n] else REJECTED)
            assert kinds(await handler.history(pending_id)).count("settled") == 1
        await verified(store, *ids)


async def test_a_process_killed_amid_deciding_votes_leaves_each_whole(backend: Backend) -> None:
    """SIGKILL as the first of a burst of deciding votes lands: each request holds both votes
    and its decision, or neither, and the rest are decided after the restart."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = await two_of_three(handler, 30)
        for pending_id in ids:
            assert await handler.aresolve(pending_id, approve(), by="ann")
        decided = asyncio.Event()
        changes = Changes()

        def hear(change: PendingChange) -> None:
            changes(change)
            if change.kind is PendingChangeKind.SETTLED:
                decided.set()

        unsubscribe = store.subscribe(hear)
        await backend.live(changes)
        [peer] = await ready(
            backend, {"op": "settle", "calls": [[pid, approve(), "bob"] for pid in ids]}
        )
        await let_go([peer])
        async with asyncio.timeout(PATIENCE):
            await decided.wait()
        if peer.returncode is None:
            peer.kill()
        await peer.wait()
        unsubscribe()
    async with backend.make() as store:
        restarted = HumanInputHandler(store=store)
        for pending_id in ids:
            record = await restarted.get_request(pending_id)
            assert record is not None
            history = kinds(await restarted.history(pending_id))
            if record.status is PENDING:
                assert [v.actor for v in record.votes] == ["ann"]
                assert history == ["created", "voted"]
                assert await restarted.aresolve(pending_id, approve(), by="cat")
            else:
                assert record.status is RESOLVED
                assert [v.actor for v in record.votes] == ["ann", "bob"]
                assert history == ["created", "voted", "voted", "settled"]
            assert await restarted.wait(pending_id, timeout=PATIENCE) == approve()
        await verified(store, *ids)


async def test_two_notifier_processes_claiming_one_backlog_deliver_each_once(
    backend: Backend,
) -> None:
    async with backend.make() as store, Receiver() as receiver:
        handler = HumanInputHandler(store=store)
        for n in range(20):
            await handler.create("ask", {"question": f"#{n}"}, actor_id="alice")
        notify = {"op": "notify", "url": receiver.url, "secret": receiver.secret}
        peers = await ready(backend, notify, notify)
        await let_go(peers)
        await receiver.wait_for(20)
        for peer in peers:
            peer.send_signal(signal.SIGTERM)
        for peer in peers:
            await outcome(peer)
        ids = [webhook_id for webhook_id, _ in receiver.deliveries]
        assert len(ids) == 20
        assert len(set(ids)) == 20
        assert receiver.attempts == 20


async def test_entries_recorded_from_two_processes_at_once_all_chain(backend: Backend) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = [(await handler.create("ask", {"n": n}, actor_id="ann")).pending_id for n in range(4)]
        await race(
            backend,
            {"op": "record", "ids": ids, "times": 5, "actor": "ann"},
            {"op": "record", "ids": ids, "times": 5, "actor": "bob"},
        )
        for pending_id in ids:
            history = await handler.history(pending_id)
            shown = [entry["actor"] for entry in history if entry["type"] == "shown"]
            assert sorted(shown) == ["ann"] * 5 + ["bob"] * 5
        await verified(store, *ids)


async def test_an_escalation_racing_the_deciding_vote_keeps_one_decision(
    backend: Backend,
) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        ids = [
            (
                await handler.create_approval("pay", {"n": n}, approvers=["ann", "bob"], quorum=2)
            ).pending_id
            for n in range(6)
        ]
        for pending_id in ids:
            assert await handler.aresolve(pending_id, approve(), by="ann")
        plans = [{"op": "escalate", "id": pid, "actors": ["dan"], "by": "ops"} for pid in ids]
        voted, *escalated = await race(
            backend, {"op": "settle", "calls": [[pid, approve(), "bob"] for pid in ids]}, *plans
        )
        assert voted == [True] * len(ids)
        for took, pending_id in zip(escalated, ids, strict=True):
            record = await handler.get_request(pending_id)
            assert record is not None
            assert record.status is RESOLVED
            history = kinds(await handler.history(pending_id))
            assert history.count("settled") == 1
            assert history.count("escalated") == (1 if took else 0)
            if took:
                assert history.index("escalated") < history.index("settled")
        await verified(store, *ids)


async def test_one_keyed_call_held_from_two_processes_spends_one_use(backend: Backend) -> None:
    """The same keyed call held by two processes at once (a turn and its resumption): one
    request, covered by the grant, and one use of it spent."""
    args = {"to": "x", "amount": 5}
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        await handler.grants.add(
            Grant(
                grant_id="g-3",
                tool="pay",
                granted_by=("ann",),
                expires_at=time.time() + 3600,
                digest=arguments_digest("pay", args),
                max_uses=5,
            )
        )
        plan = {"op": "approval", "tool": "pay", "arguments": args, "approvers": ["ann"]}
        plan |= {"actor_id": "bob", "key": "call-1"}
        first, second = await race(backend, plan, plan)
        assert first == second
        assert first[1] == "resolved"
        grant = await handler.grants.get("g-3")
        assert grant is not None
        assert grant.uses == 1
        assert kinds(await handler.history(first[0])).count("grant_used") == 1
        await verified(store, first[0])

"""Webhooks through the notifier, on every store, to a receiver that checks signatures."""

from __future__ import annotations

from collections.abc import Callable

from tests.notify.receiver import Receiver, body_types

from roomkit.notify import Notifier, Retry, Webhook
from roomkit.tools.approvals import approve, edit
from roomkit.tools.human_input import HumanInputHandler

FAST = Retry(first=0.01, cap=0.05)


async def test_a_question_and_its_outcome_reach_the_webhook(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """The receiver verifies a question_pending and a question_settled, flat bodies."""
    handler = make_handler()
    async with Receiver() as receiver, Notifier(handler, [Webhook(receiver.url, receiver.secret)]):
        request = await handler.create(
            "ask", {"question": "Ship it?"}, actor_id="alice", room_id="r1"
        )
        [(first_id, pending)] = await receiver.wait_for(1)
        assert pending["type"] == "question_pending"
        assert pending["pending_id"] == request.pending_id
        assert pending["kind"] == "question"
        assert pending["arguments"] == {"question": "Ship it?"}
        assert (pending["actor"], pending["room"], pending["tool"]) == ("alice", "r1", "ask")
        assert await handler.aresolve(request.pending_id, "yes", by="alice")
        deliveries = await receiver.wait_for(2)
    assert body_types(deliveries) == ["question_pending", "question_settled"]
    settled_id, settled = deliveries[1]
    assert settled["outcome"] == "resolved"
    assert settled["answered_by"] == "alice"
    assert settled_id != first_id
    assert receiver.refused == 0


async def test_a_retried_delivery_keeps_its_webhook_id(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """Two 503s then a 200: three attempts, one webhook-id."""
    handler = make_handler()
    seen: list[int] = []

    def status(attempt: int) -> int:
        seen.append(attempt)
        return 503 if attempt <= 2 else 200

    async with Receiver(status=status) as receiver:
        notifier = Notifier(handler, [Webhook(receiver.url, receiver.secret, retry=FAST)])
        async with notifier:
            await handler.create("ask", {"question": "Again?"}, actor_id="alice")
            [(webhook_id, _)] = await receiver.wait_for(1)
            await notifier.wait_idle()
    assert receiver.attempts == 3
    assert notifier.statistics().failed["webhook"] == 2
    assert notifier.statistics().delivered["webhook"] == 1
    assert webhook_id.endswith(".webhook.-")


async def test_a_client_error_is_not_retried_and_loses_no_answer(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """A 404 is dropped and counted; the request is still answered."""
    handler = make_handler()
    async with Receiver(status=lambda n: 404 if n == 1 else 200) as receiver:
        notifier = Notifier(handler, [Webhook(receiver.url, receiver.secret, retry=FAST)])
        async with notifier:
            request = await handler.create("ask", {"question": "Here?"}, actor_id="alice")
            await notifier.wait_idle()
            assert receiver.attempts == 1
            assert await handler.aresolve(request.pending_id, "yes")
            [(_, settled)] = await receiver.wait_for(1)
            assert settled["type"] == "question_settled"
            await notifier.wait_idle()
    assert notifier.statistics().dropped["webhook"] == 1
    assert await handler.wait(request.pending_id) == "yes"


async def test_each_surface_is_recorded_once_as_shown(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    handler = make_handler()
    async with Receiver() as receiver, Receiver() as second:
        surfaces = [
            Webhook(receiver.url, receiver.secret),
            Webhook(second.url, second.secret, name="audit-hook"),
        ]
        async with Notifier(handler, surfaces) as notifier:
            request = await handler.create("ask", {"question": "Ship?"}, actor_id="alice")
            await notifier.wait_idle()
            assert await handler.aresolve(request.pending_id, "yes", by="alice", surface="desk")
            await receiver.wait_for(2)
            await second.wait_for(2)
    shown = [e for e in await handler.history(request.pending_id) if e["type"] == "shown"]
    assert sorted(e["surface"] for e in shown) == ["audit-hook", "webhook"]


async def test_an_ending_missed_while_no_notifier_ran_is_sent_by_the_next(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """Announced by one notifier, settled while none runs: the next one tells the ending."""
    handler = make_handler()
    async with Receiver() as receiver:
        async with Notifier(handler, [Webhook(receiver.url, receiver.secret)]) as notifier:
            request = await handler.create("ask", {"question": "Later?"}, actor_id="alice")
            await receiver.wait_for(1)
            await notifier.wait_idle()
        assert await handler.aresolve(request.pending_id, "yes")
        async with Notifier(handler, [Webhook(receiver.url, receiver.secret)]):
            deliveries = await receiver.wait_for(2)
    assert body_types(deliveries) == ["question_pending", "question_settled"]


async def test_every_ending_missed_while_no_notifier_ran_is_sent_however_many(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """120 requests settle while no notifier runs, more than any listing of recent outcomes
    holds: the next notifier tells each ending, once."""
    handler = make_handler()
    async with Receiver() as receiver:
        async with Notifier(handler, [Webhook(receiver.url, receiver.secret)]) as notifier:
            requests = [
                await handler.create("ask", {"question": f"Item {n}?"}, actor_id="alice")
                for n in range(120)
            ]
            await receiver.wait_for(120)
            await notifier.wait_idle()
        for request in requests:
            assert await handler.aresolve(request.pending_id, "yes")
        async with Notifier(handler, [Webhook(receiver.url, receiver.secret)]) as notifier:
            await receiver.wait_for(240)
            await notifier.wait_idle()
    endings = [b["pending_id"] for _, b in receiver.deliveries if b["type"] == "question_settled"]
    assert sorted(endings) == sorted(r.pending_id for r in requests)
    assert len(set(receiver.ids_seen)) == len(receiver.ids_seen) == 240


async def test_a_quorum_approval_is_told_when_it_opens_is_edited_and_settles(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """A vote that leaves it open sends nothing; an edit tells those who vote again; the
    vote that decides sends the outcome."""
    handler = make_handler()
    async with Receiver() as receiver:
        notifier = Notifier(handler, [Webhook(receiver.url, receiver.secret)])
        async with notifier:
            request = await handler.create_approval(
                "pay", {"amount": 9}, approvers=["ann", "bob", "cy"], quorum=2
            )
            await receiver.wait_for(1)
            assert await handler.aresolve(request.pending_id, approve(), by="ann")
            await notifier.wait_idle()
            assert receiver.attempts == 1
            assert await handler.aresolve(request.pending_id, edit({"amount": 5}), by="bob")
            deliveries = await receiver.wait_for(2)
            assert await handler.aresolve(request.pending_id, approve(), by="cy")
            deliveries = await receiver.wait_for(3)
            await notifier.wait_idle()
    assert body_types(deliveries[:2]) == ["question_pending", "question_edited"]
    edited = deliveries[1][1]
    assert edited["arguments"] == {"amount": 5}
    assert edited["approvers"] == ["ann", "cy"]
    assert body_types(deliveries[2:]) == ["question_settled"]
    assert receiver.attempts == 3

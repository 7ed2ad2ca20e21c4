"""Who may decide an approval, within what every store keeps: at most ``MAX_APPROVERS``
approvers, more refused by count before anything is written, at the longest within what a
history entry holds; a set of approvers listed in one order."""

from __future__ import annotations

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.models.json_limits import MAX_APPROVERS, MAX_ARGUMENTS_CHARS, MAX_ID_CHARS

ARGUMENTS = {"city": "Paris"}


def _names(count: int, *, length: int = 8) -> list[str]:
    """``count`` distinct actor ids of ``length`` characters."""
    return [f"{i:04d}".ljust(length, "x") for i in range(count)]


def _too_many(held: str) -> str:
    return (
        f"{held}, over the {MAX_APPROVERS} approvers an approval may list on every store: "
        "name a role or an on-call schedule of the directory ('role:ops') for a large "
        "group; nothing was stored"
    )


async def test_more_approvers_than_the_bound_are_refused(make_handler: HandlerFactory) -> None:
    handler = make_handler()

    with pytest.raises(ValueError, match=r"^approvers hold 101 actor ids") as caught:
        await handler.create_approval("book", ARGUMENTS, approvers=_names(MAX_APPROVERS + 1))

    assert str(caught.value) == _too_many(f"approvers hold {MAX_APPROVERS + 1} actor ids")
    assert await handler.list_pending() == []


async def test_the_most_approvers_at_their_longest_keep_their_created_entry(
    make_handler: HandlerFactory,
) -> None:
    """Every approver at the bound beside the longest arguments and description: within
    what a history entry holds, on every store."""
    handler = make_handler()
    arguments = {"note": "x" * (MAX_ARGUMENTS_CHARS - len('{"note":""}'))}
    approvers = _names(MAX_APPROVERS, length=MAX_ID_CHARS)

    request = await handler.create_approval(
        "book",
        arguments,
        approvers=approvers,
        description="Book it." * 500,
        room_id="r" * MAX_ID_CHARS,
        channel_id="c" * MAX_ID_CHARS,
        actor_id="a" * MAX_ID_CHARS,
        surface="s" * MAX_ID_CHARS,
    )

    [created, *_] = await handler.history(request.pending_id)
    assert created["approvers"] == approvers
    assert created["arguments"] == arguments


async def test_an_escalation_past_the_bound_is_refused(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create_approval("book", ARGUMENTS, approvers=_names(MAX_APPROVERS - 1))

    with pytest.raises(ValueError, match=r"^actors and the 99 approvers") as caught:
        await handler.add_approvers(request.pending_id, ["late-1", "late-2"])

    listed = MAX_APPROVERS - 1
    assert str(caught.value) == _too_many(
        f"actors and the {listed} approvers listed already make {MAX_APPROVERS + 1}"
    )
    [kept] = await handler.list_pending()
    assert kept.approvers == tuple(_names(listed))
    assert [entry["type"] for entry in await handler.history(request.pending_id)] == ["created"]


async def test_an_escalation_of_a_quorum_past_the_bound_is_refused(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    voters = _names(MAX_APPROVERS)
    request = await handler.create_approval("book", ARGUMENTS, approvers=voters, quorum=2)

    with pytest.raises(ValueError, match=r"^actors and the 100 approvers listed already make"):
        await handler.add_approvers(request.pending_id, ["late"])

    [kept] = await handler.list_pending()
    assert (kept.approvers, kept.voters) == (tuple(voters), tuple(voters))


async def test_an_escalation_up_to_the_bound_is_kept(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create_approval("book", ARGUMENTS, approvers=_names(MAX_APPROVERS - 1))

    assert await handler.add_approvers(request.pending_id, ["late", _names(1)[0]])

    [kept] = await handler.list_pending()
    assert len(kept.approvers) == MAX_APPROVERS


async def test_a_set_of_approvers_is_listed_sorted(make_handler: HandlerFactory) -> None:
    """A set has no order of its own (it differs from one process to the next): its ids
    are sorted, in the request, its created entry and an escalation's entry."""
    handler = make_handler()
    names = [f"person-{i}" for i in range(40)]

    request = await handler.create_approval("book", ARGUMENTS, approvers=set(names))
    await handler.add_approvers(request.pending_id, frozenset(f"late-{i}" for i in range(20)))

    late = sorted(f"late-{i}" for i in range(20))
    [kept] = await handler.list_pending()
    assert kept.approvers == (*sorted(names), *late)
    created, escalated = await handler.history(request.pending_id)
    assert created["approvers"] == sorted(names)
    assert escalated["approvers"] == late

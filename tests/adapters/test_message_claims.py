"""The claims on running a door's messages: one run of each message, whatever its ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from roomkit import HumanInputHandler, RoomKit
from roomkit.adapters._message_claims import CLAIM_LEASE, MessageClaims
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.core.store import InMemoryStore
from roomkit.models.room import InboundMessage, RoomEvent, TextContent
from roomkit.stores.sqlite import SQLiteStore


def message(sender: str, message_id: str | None) -> InboundMessage:
    metadata = {} if message_id is None else {"message_id": message_id}
    return InboundMessage("agui", sender, TextContent("Paint it"), metadata=metadata)


async def test_a_message_is_claimed_once() -> None:
    claims = MessageClaims(RoomKit(), HumanInputHandler())
    assert await claims.claim("t1", message("alice", "m0"))
    assert not await claims.claim("t1", message("alice", "m0"))
    assert await claims.claim("t1", message("bob", "m0"))
    assert await claims.claim("t2", message("alice", "m0"))


async def test_ids_holding_colons_name_other_messages() -> None:
    """A room, sender and message id joined by ``:`` would name these two alike."""
    claims = MessageClaims(RoomKit(), HumanInputHandler())
    assert await claims.claim("a:b", message("c", "m"))
    assert await claims.claim("a", message("b:c", "m"))


async def test_a_long_id_is_claimed_once() -> None:
    claims = MessageClaims(RoomKit(), HumanInputHandler())
    long = "m" * 100_000
    assert await claims.claim("t1", message("alice", long))
    assert not await claims.claim("t1", message("alice", long))
    assert await claims.claim("t1", message("alice", long + "2"))


async def test_a_message_given_back_is_claimed_again() -> None:
    claims = MessageClaims(RoomKit(), HumanInputHandler())
    assert await claims.claim("t1", message("alice", "m0"))
    await claims.release("t1", message("alice", "m0"))
    assert await claims.claim("t1", message("alice", "m0"))


async def test_a_message_without_an_id_always_runs() -> None:
    claims = MessageClaims(RoomKit(), HumanInputHandler())
    assert await claims.claim("t1", message("alice", None))
    assert await claims.claim("t1", message("alice", None))


async def test_a_message_the_room_holds_is_not_claimed() -> None:
    """Recorded by a holder whose claim lapsed since: it does not run again."""
    kit = RoomKit()
    await kit.create_room("t1")
    recorded = RoomEvent(
        "t1", "agui", "alice", TextContent("Paint it"), metadata={"message_id": "m0"}
    )
    await kit.store.add_event(recorded)
    claims = MessageClaims(kit, HumanInputHandler())
    assert not await claims.claim("t1", message("alice", "m0"))
    assert await claims.claim("t1", message("bob", "m0"))


class _RoomsAway(InMemoryStore):
    """Rooms whose store cannot be reached for the next read of a room's recent events."""

    def __init__(self) -> None:
        super().__init__()
        self.away = True

    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]:
        if self.away:
            self.away = False
            raise StoreUnavailableError("the room store is restarting")
        return await super().recent_events(room_id, limit)


async def test_a_claim_whose_room_could_not_be_read_is_given_back() -> None:
    """The run fails before the message, whose sender is told to send it again: the
    message is claimed at once then, not a lease later."""
    claims = MessageClaims(RoomKit(store=_RoomsAway()), HumanInputHandler())
    with pytest.raises(StoreUnavailableError):
        await claims.claim("t1", message("alice", "m0"))
    assert await claims.claim("t1", message("alice", "m0"))


async def test_a_claim_past_its_lease_is_not_given_back(tmp_path: Path) -> None:
    """Another process may hold the message once the lease is over: a late release of
    the first claim leaves the second standing."""
    now = [1_000.0]
    store = SQLiteStore(tmp_path / "kit.db", clock=lambda: now[0])
    try:
        first = MessageClaims(RoomKit(), HumanInputHandler(store=store))
        second = MessageClaims(RoomKit(), HumanInputHandler(store=store))
        assert await first.claim("t1", message("alice", "m0"))
        now[0] += CLAIM_LEASE + 1
        assert await second.claim("t1", message("alice", "m0"))
        await first.release("t1", message("alice", "m0"))
        assert not await MessageClaims(RoomKit(), HumanInputHandler(store=store)).claim(
            "t1", message("alice", "m0")
        )
        await second.release("t1", message("alice", "m0"))
        assert await first.claim("t1", message("alice", "m0"))
    finally:
        await store.close()

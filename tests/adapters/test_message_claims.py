"""The claims on running a door's messages: one run of each message, whatever its ids."""

from __future__ import annotations

from roomkit import HumanInputHandler, RoomKit
from roomkit.adapters._message_claims import MessageClaims
from roomkit.models.room import InboundMessage, RoomEvent, TextContent


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

"""One run of a caller's message, however many server processes receive it at once.

A front end's message can reach two processes on one store at the same moment (a retry
through a load balancer, the same conversation open in two tabs): each reads the room
before either records the message, and each would record it and run its turn. Before a door
runs a message, it claims it in the handler's spend-once ledger (:class:`MessageClaims`),
which every process on the store shares: the first claim runs it; a later one finds the
claim (or the message already in the room) and leaves the message to the process that
holds it. A claim lasts :data:`CLAIM_LEASE` seconds, long enough for its holder to record
the message (from then on the room holds it, and every later run sees it held); a holder
that stopped before recording it leaves the message runnable again once its lease lapses,
and one whose recording failed gives it back at once.
"""

from __future__ import annotations

import contextlib
import json

from roomkit.adapters._claims import ledger_name
from roomkit.adapters._resumes import ledger_now
from roomkit.core.framework import RoomKit
from roomkit.models.room import InboundMessage
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["CLAIM_LEASE", "MESSAGE_ID", "MessageClaims"]

CLAIM_LEASE = 60.0
"""Seconds a process holds its claim on a message before another may run it: the time it
takes to record the message, with room to spare."""
MESSAGE_ID = "message_id"
"""The key of a message's metadata holding the id its client gave it."""
_RECENT = 200
"""How many of the room's last events are read for a message claimed after its lease
lapsed (recorded by its earlier holder meanwhile)."""


class MessageClaims:
    """The claims on running a door's messages, kept in ``handler``'s ledger.

    A message is known by its room, its sender and the id its client gave it (its metadata's
    :data:`MESSAGE_ID`); one without an id is never claimed, and always runs.

    Args:
        kit: the kit whose room store records the messages.
        handler: the human-input handler whose ledger keeps the claims.
    """

    __slots__ = ("_held", "handler", "kit")

    def __init__(self, kit: RoomKit, handler: HumanInputHandler) -> None:
        self.kit = kit
        self.handler = handler
        # The claims this process holds, each with the end of its lease.
        self._held: dict[str, float] = {}

    async def claim(self, room_id: str, message: InboundMessage) -> bool:
        """Claim ``message`` for this process; ``False`` when another process holds it, or
        the room holds it already (recorded by an earlier holder whose claim lapsed).

        Raises:
            StoreUnavailableError: the ledger or the room store cannot be reached (a claim
                taken before the room store failed is given back).
        """
        entry = _entry(room_id, message)
        if entry is None:
            return True
        until = ledger_now(self.handler) + CLAIM_LEASE
        ledger = self.handler.ledger
        if not await ledger.spend_once(entry, until=until):
            return False
        try:
            recorded = await self._recorded(room_id, message)
        except BaseException:
            # Unclaimed again: the run fails before the message, which is sent again.
            with contextlib.suppress(Exception):
                await ledger.refund_spent(entry)
            raise
        if not recorded:
            self._held[entry] = until
        return not recorded

    async def release(self, room_id: str, message: InboundMessage) -> None:
        """Give the claim on ``message`` back: it was not recorded (its turn failed first),
        and its sender is told to send it again. A claim whose lease is over is not given
        back (another process may hold the message since), nor is one this process does
        not hold.

        Raises:
            StoreUnavailableError: the ledger cannot be reached.
        """
        entry = _entry(room_id, message)
        if entry is None:
            return
        until = self._held.pop(entry, None)
        # A claim past its lease may be another process's by now: it is left to lapse.
        if until is not None and ledger_now(self.handler) < until:
            await self.handler.ledger.refund_spent(entry)

    async def _recorded(self, room_id: str, message: InboundMessage) -> bool:
        """Whether the room's recent events hold ``message``, from its sender on its door."""
        own = (message.channel_id, message.sender_id, message.metadata[MESSAGE_ID])
        return any(
            (event.channel_id, event.sender_id, event.metadata.get(MESSAGE_ID)) == own
            for event in await self.kit.store.recent_events(room_id, _RECENT)
        )


def _entry(room_id: str, message: InboundMessage) -> str | None:
    """The ledger's name of the claim on ``message`` (its door, room, sender and id, each
    escaped as JSON, as ids may hold any character); ``None`` when it has no id."""
    message_id = message.metadata.get(MESSAGE_ID)
    if not isinstance(message_id, str):
        return None
    named = [message.channel_id, room_id, message.sender_id, message_id]
    return ledger_name("message", json.dumps(named))

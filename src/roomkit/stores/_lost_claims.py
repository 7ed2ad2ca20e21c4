"""A claim on a database outbox whose caller never heard what it took.

A claim on SQLite, Redis or PostgreSQL may land and its caller still fail: a connection cut
after the server committed it, a file moved as it committed, a caller cancelled while its
transaction ran. The items it leased would then wait out their lease unsent. Each claim
therefore marks the items it takes with a token of its own; one that fails is kept, per
owner, and that owner's next claim first asks for what it took (the items still its owner's,
marked with its token, leased past now), which come back to the owner then, not when the
lease lapses. They are leased anew until the end of the claim that hands them back: a holder
works on what it claimed as long as that claim's lease. A hand-over whose own reply is lost
is kept in turn, as the lost claim with the later of the two leases' ends, whatever either
lease: the claim after it finds the items wherever the two leases left them. A claim that
took nothing, or whose items' leases are all over, is forgotten: the next claim takes what
is due as any does.
"""

from __future__ import annotations

import asyncio
import secrets

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.outbox import Claim, ClaimingOutbox, OutboxItem

__all__ = ["HeardClaims", "held_by"]

Sent = tuple[Claim, str]
"""A claim sent, and its token."""


def held_by(lost: Claim, claim: Claim) -> tuple[float, float]:
    """The times after which (the first) and until which (the last) the items ``lost`` took
    may still be leased when ``claim`` hands them over: past ``claim.now``, and at the latest
    until the last lease they may have been given ends (``lost``'s, pushed back by each
    hand-over of them whose reply was lost, or ``claim``'s own when its hand-over runs
    twice)."""
    return claim.now, max(lost.until, claim.until)


class HeardClaims(ClaimingOutbox):
    """An outbox whose claims carry a token, so that an unheard one is handed over later.

    The back end takes the items due for a claim, marked with its token (``_take``), and
    hands over the items a lost claim's token took that are still leased to it, leased
    anew to the claim that hands them over (``_taken_by``); a subclass sets
    ``_unanswered`` to an empty dict.
    """

    _unanswered: dict[str, Sent]
    """Each owner's last claim that failed, and its token: the server may have run it."""

    async def _claim_due(self, claim: Claim) -> list[OutboxItem]:
        lost = self._unanswered.pop(claim.owner, None)
        if lost is not None and lost[0].until > claim.now:
            # Nothing more: only what its first run took, if it ran.
            taken = await self._heard(lost, handing=claim)
            if taken:
                return taken
        return await self._heard((claim, secrets.token_hex(8)))

    async def _heard(self, sent: Sent, *, handing: Claim | None = None) -> list[OutboxItem]:
        """Run ``sent`` (with ``handing``: hand what it took to that claim), keeping it when
        no answer came."""
        claim, token = sent
        try:
            if handing is not None:
                return await self._taken_by(claim, token, handing)
            return await self._take(claim, token)
        except (StoreUnavailableError, asyncio.CancelledError):
            if handing is not None:
                # The hand-over may have run: the items are leased until its end, or still
                # until the lost claim's; the later of the two bounds where they may be.
                sent = claim._replace(until=max(claim.until, handing.until)), token
            self._unanswered[claim.owner] = sent
            raise

    async def _take(self, claim: Claim, token: str) -> list[OutboxItem]:
        """Lease the items due for ``claim``, each marked with ``token``."""
        raise NotImplementedError

    async def _taken_by(self, lost: Claim, token: str, claim: Claim) -> list[OutboxItem]:
        """The items ``lost`` (run with ``token``) took and still holds at ``claim.now`` (its
        owner's, marked with ``token``, leased within :func:`held_by`), leased anew until
        ``claim.until``; nothing else is taken."""
        raise NotImplementedError

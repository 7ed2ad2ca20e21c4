"""Spent links and revoked credentials, kept in the handler's store ledger.

:class:`LinkLedger` is the desk's memory of the single-use links spent and the tokens
``roomkit revoke`` ended, in the store's spend-once ledger, so that every desk process on the
store, ``roomkit mcp --http`` on it, and a desk restarted on it, honour them alike.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from roomkit.auth.principal import Principal
from roomkit.core.exceptions import StoreError

if TYPE_CHECKING:
    from roomkit.stores import SpendLedger

__all__ = [
    "KEPT_PAST_EXPIRY",
    "LINK_USED",
    "REVOKED",
    "SIGN_IN_USED",
    "LinkLedger",
    "actor_entry",
    "kept_until",
    "link_entry",
    "revoked_link_entry",
    "token_entry",
]

logger = logging.getLogger("roomkit.desk")


def link_entry(link_id: str) -> str:
    """The ledger entry of a spent (or revoked) answer or sign-in link."""
    return f"desk:link:{link_id}"


def revoked_link_entry(link_id: str) -> str:
    """The ledger entry of a revoked answer or sign-in link: kept apart from its spent entry,
    since a link spent answering still reads its request and a revoked one does not."""
    return f"desk:revoked-link:{link_id}"


def token_entry(token_id: str) -> str:
    """The ledger entry of a revoked actor token."""
    return f"desk:token:{token_id}"


def actor_entry(actor_id: str) -> str:
    """The ledger entry that revokes an actor's credentials issued until its time."""
    return f"desk:actor:{actor_id}"


KEPT_PAST_EXPIRY = 86_400.0
"""Seconds the ledger keeps a spent link or a revoked credential past its expiry: a day.

The desk reads a credential's expiry on its own clock, and the store forgets entries on its
own (a PostgreSQL store keeps the server's time): a desk whose clock runs behind the store's,
or was set back, still takes the credential after the store's clock has passed its expiry,
and must still find it spent or revoked."""


def kept_until(expires_at: float | None) -> float | None:
    """Until when the ledger keeps the entry of a credential expiring at ``expires_at``
    (``None``, a credential that never expires: for good)."""
    return None if expires_at is None else expires_at + KEPT_PAST_EXPIRY


LINK_USED = "This answer link was already used"
"""Why the desk refuses an answer link spent on any desk process."""
SIGN_IN_USED = "This sign-in link was already used: ask for a fresh one"
"""Why the desk refuses a sign-in link already traded for a token."""
REVOKED = "This token was revoked"
"""Why the desk refuses a credential that ``roomkit revoke`` ended."""


def _checks(principal: Principal, *, spent_reads: bool = False) -> dict[str, str | float]:
    """The ledger entries that refuse ``principal``: a reason, or the issue time that an
    actor's revocation must reach. With ``spent_reads``, a spent link is not refused (a
    revoked one is)."""
    checks: dict[str, str | float] = {}
    if principal.link_id is not None:
        if not spent_reads:
            used = SIGN_IN_USED if principal.sign_in else LINK_USED
            checks[link_entry(principal.link_id)] = used
        checks[revoked_link_entry(principal.link_id)] = REVOKED
    if principal.token_id is not None:
        checks[token_entry(principal.token_id)] = REVOKED
    if principal.issued_at is not None:
        checks[actor_entry(principal.actor_id)] = principal.issued_at
    return checks


def _refused(checks: dict[str, str | float], spent: dict[str, float]) -> str | None:
    for entry, refusal in checks.items():
        spent_at = spent.get(entry)
        if spent_at is None:
            continue
        if isinstance(refusal, str):
            return refusal
        if refusal <= spent_at:
            return REVOKED
    return None


class LinkLedger:
    """Spent answer links and revoked credentials, in the handler's store ledger.

    Single use is the ledger's check-and-set: :meth:`spend` says ``True`` to the first
    caller only, in whichever desk process on the store it runs; a link stays spent, across
    restarts, until :data:`KEPT_PAST_EXPIRY` after it expires. Revocations (``roomkit
    revoke``) are read from the same ledger on every authentication.

    Args:
        ledger: the handler's ledger (``handler.ledger``).
    """

    def __init__(self, ledger: SpendLedger) -> None:
        self.ledger = ledger

    async def refusal(self, principal: Principal, *, spent_reads: bool = False) -> str | None:
        """Why the ledger refuses ``principal`` (a spent link, a revocation), or ``None``.

        Args:
            principal: the credential's principal.
            spent_reads: a link already spent is not refused (an answer link reading its
                own request); a revoked link still is.

        Raises:
            StoreError: the store cannot be reached (the caller fails closed).
        """
        return (await self._read_refusals([_checks(principal, spent_reads=spent_reads)]))[0]

    async def refusals(self, principals: Sequence[Principal]) -> list[str | None]:
        """:meth:`refusal` of each principal, in order, from one read of the ledger.

        Raises:
            StoreError: the store cannot be reached (the caller fails closed).
        """
        return await self._read_refusals([_checks(principal) for principal in principals])

    async def _read_refusals(self, checks: list[dict[str, str | float]]) -> list[str | None]:
        wanted = {entry for check in checks for entry in check}
        spent = await self.ledger.read_spent(sorted(wanted)) if wanted else {}
        return [_refused(check, spent) for check in checks]

    async def spend(self, principal: Principal) -> bool:
        """Mark the principal's link used; ``False`` when it already was (or it is none)."""
        if principal.link_id is None:
            return False
        entry = link_entry(principal.link_id)
        return await self.ledger.spend_once(entry, until=kept_until(principal.expires_at))

    async def refund(self, principal: Principal) -> bool:
        """Undo :meth:`spend` for an answer that was refused before it settled anything.

        Returns ``False`` when the store cannot be reached: the link stays spent (logged),
        failing closed; ``True`` otherwise (a principal without a link has nothing to undo).
        """
        if principal.link_id is None:
            return True
        try:
            await self.ledger.refund_spent(link_entry(principal.link_id))
        except StoreError:
            logger.warning("Could not refund an answer link: the store is unreachable")
            return False
        return True

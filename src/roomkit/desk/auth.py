"""Who is calling the desk, and what they may see.

An :class:`Authenticator` turns a bearer token into a :class:`Principal`; the default,
:class:`TokenAuthenticator`, reads the desk's own signed tokens. :class:`Access` applies the
rule of who may see (and so answer) a request: the actor it names; for a request with no
actor, the participants of its room; an approval's approvers; an administrator, everything;
an answer link, its one request. Deciding an approval takes being one of its approvers.

:class:`LinkLedger` keeps the desk's memory of spent links and revoked tokens in the
handler's store ledger, so that every desk process on the store, and a desk restarted on it,
honours them alike.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from roomkit.core.exceptions import StoreError
from roomkit.desk.tokens import SIGN_IN, read_token, secret_key
from roomkit.models.pending_input import PendingInput
from roomkit.tools.human_input.stores import SpendLedger

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = [
    "Access",
    "Authenticator",
    "LinkLedger",
    "Principal",
    "TokenAuthenticator",
    "actor_entry",
    "link_entry",
    "principal_problem",
    "token_entry",
]

logger = logging.getLogger("roomkit.desk")


@dataclass(frozen=True, slots=True)
class Principal:
    """The person behind a request to the desk."""

    actor_id: str
    """Their participant id; answers are recorded as settled by it."""
    admin: bool = False
    """Sees and answers every request."""
    request_id: str | None = None
    """Set for an answer link: the one request it reads and answers."""
    link_id: str | None = None
    """An answer link's single-use nonce; the desk refuses it once spent."""
    expires_at: float | None = None
    """When the credential stops being valid (seconds since the epoch), if ever."""
    token_id: str | None = None
    """An actor token's nonce: ``roomkit revoke TOKEN`` revokes the token by it."""
    issued_at: float | None = None
    """When the credential was issued (seconds since the epoch): ``roomkit revoke --actor``
    refuses the actor's credentials issued until then. ``None`` (a credential of another
    authenticator) leaves them to that authenticator."""
    sign_in: bool = False
    """A sign-in link: good for ``POST /api/sign-in`` only, once (its ``link_id`` is
    spent), which trades it for an actor token; every other route refuses it."""


_IDS = ("actor_id", "request_id", "link_id", "token_id")


def principal_problem(principal: Principal) -> str | None:
    """What makes ``principal`` unusable by the desk, or ``None`` when it is usable.

    Its ids end up in responses, logs and the store, so each must be text UTF-8 can
    encode: an empty ``actor_id``, or an id holding a lone surrogate (``"\\ud800"``), is
    refused. The message names the field, never its value.
    """
    for name in _IDS:
        value = getattr(principal, name)
        if value is None and name != "actor_id":
            continue
        if not isinstance(value, str) or not value:
            return f"{name} is empty or not a string"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{name} is not valid text (it holds a lone surrogate)"
    return None


@runtime_checkable
class Authenticator(Protocol):
    """Turns a bearer token into a :class:`Principal`.

    ``authenticate`` raises (``DeskAuthError``, a ``PermissionError``, by convention) to
    refuse a token; the desk answers 401 and never logs the token or the error's text.
    """

    async def authenticate(self, token: str) -> Principal:
        """The principal the token speaks for."""
        ...


class TokenAuthenticator:
    """Reads the desk's HMAC-signed tokens (see :mod:`roomkit.desk.tokens`).

    Args:
        secret: the desk's secret, as the tokens were signed with it.
        clock: seconds since the epoch; ``time.time`` by default.
    """

    def __init__(self, secret: str | bytes, *, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret_key(secret)
        self.clock = clock

    async def authenticate(self, token: str) -> Principal:
        """The principal of a valid token.

        Raises:
            DeskAuthError: malformed, forged, tampered with or expired.
        """
        claims = read_token(self._secret, token, now=self.clock())
        expires = claims.get("exp")
        expires_at = None if expires is None else float(expires)
        # A token from before issue times were written counts as issued before any revocation.
        issued_at = float(claims.get("iat", 0.0))
        if claims.get("use") == SIGN_IN:
            return Principal(
                claims["sub"],
                bool(claims.get("adm", False)),
                link_id=claims["jti"],
                expires_at=expires_at,
                issued_at=issued_at,
                sign_in=True,
            )
        if "req" in claims:
            return Principal(
                claims["sub"],
                False,
                request_id=claims["req"],
                link_id=claims["jti"],
                expires_at=expires_at,
                issued_at=issued_at,
            )
        return Principal(
            claims["sub"],
            bool(claims.get("adm", False)),
            expires_at=expires_at,
            token_id=claims.get("jti"),
            issued_at=issued_at,
        )


def link_entry(link_id: str) -> str:
    """The ledger entry of a spent (or revoked) answer link."""
    return f"desk:link:{link_id}"


def token_entry(token_id: str) -> str:
    """The ledger entry of a revoked actor token."""
    return f"desk:token:{token_id}"


def actor_entry(actor_id: str) -> str:
    """The ledger entry that revokes an actor's credentials issued until its time."""
    return f"desk:actor:{actor_id}"


LINK_USED = "This answer link was already used"
"""Why the desk refuses an answer link spent on any desk process."""
SIGN_IN_USED = "This sign-in link was already used: ask for a fresh one"
"""Why the desk refuses a sign-in link already traded for a token."""
REVOKED = "This token was revoked"
"""Why the desk refuses a credential that ``roomkit revoke`` ended."""


def _checks(principal: Principal) -> dict[str, str | float]:
    """The ledger entries that refuse ``principal``: a reason, or the issue time that an
    actor's revocation must reach."""
    checks: dict[str, str | float] = {}
    if principal.link_id is not None:
        checks[link_entry(principal.link_id)] = SIGN_IN_USED if principal.sign_in else LINK_USED
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
    caller only, in whichever desk process on the store it runs; a link stays spent until it
    expires, across restarts. Revocations (``roomkit revoke``) are read from the same
    ledger on every authentication.

    Args:
        ledger: the handler's ledger (``handler.ledger``).
    """

    def __init__(self, ledger: SpendLedger) -> None:
        self.ledger = ledger

    async def refusal(self, principal: Principal) -> str | None:
        """Why the ledger refuses ``principal`` (a spent link, a revocation), or ``None``.

        Raises:
            StoreError: the store cannot be reached (the caller fails closed).
        """
        return (await self.refusals([principal]))[0]

    async def refusals(self, principals: Sequence[Principal]) -> list[str | None]:
        """:meth:`refusal` of each principal, in order, from one read of the ledger.

        Raises:
            StoreError: the store cannot be reached (the caller fails closed).
        """
        checks = [_checks(principal) for principal in principals]
        wanted = {entry for check in checks for entry in check}
        spent = await self.ledger.read_spent(sorted(wanted)) if wanted else {}
        return [_refused(check, spent) for check in checks]

    async def spend(self, principal: Principal) -> bool:
        """Mark the principal's link used; ``False`` when it already was (or it is none)."""
        if principal.link_id is None:
            return False
        entry = link_entry(principal.link_id)
        return await self.ledger.spend_once(entry, until=principal.expires_at)

    async def refund(self, principal: Principal) -> None:
        """Undo :meth:`spend` for an answer that was refused before it settled anything.

        When the store cannot be reached, the link stays spent (logged): failing closed.
        """
        if principal.link_id is None:
            return
        try:
            await self.ledger.refund_spent(link_entry(principal.link_id))
        except StoreError:
            logger.warning("Could not refund an answer link: the store is unreachable")


class Access:
    """Applies who-sees-what, reading rosters from the kit's room store."""

    def __init__(self, kit: RoomKit) -> None:
        self._kit = kit

    async def participants(self, room_id: str) -> set[str]:
        """The ids on the room's roster (empty for an unknown room)."""
        if not room_id:
            return set()
        return {participant.id for participant in await self._kit.store.list_participants(room_id)}

    async def can_see(self, principal: Principal, request: PendingInput) -> bool:
        """True when ``principal`` may read, answer and reject ``request``."""
        if principal.request_id is not None:
            return request.pending_id == principal.request_id
        if principal.admin or _listed(principal, request):
            return True
        if request.actor_id is not None:
            return request.actor_id == principal.actor_id
        return principal.actor_id in await self.participants(request.room_id)

    async def visible(
        self, principal: Principal, requests: Iterable[PendingInput]
    ) -> list[PendingInput]:
        """The requests ``principal`` may see, in order; each room's roster read once."""
        rosters: dict[str, set[str]] = {}
        seen: list[PendingInput] = []
        for request in requests:
            if (
                principal.request_id is not None
                or principal.admin
                or request.actor_id is not None
                or _listed(principal, request)
            ):
                if await self.can_see(principal, request):
                    seen.append(request)
                continue
            roster = rosters.get(request.room_id)
            if roster is None:
                roster = rosters[request.room_id] = await self.participants(request.room_id)
            if principal.actor_id in roster:
                seen.append(request)
        return seen

    async def can_see_room(self, principal: Principal, room_id: str) -> bool:
        """True when ``principal`` may follow the room's messages (participants, admins)."""
        if principal.admin:
            return True
        if principal.request_id is not None:
            return False
        return principal.actor_id in await self.participants(room_id)


def _listed(principal: Principal, request: PendingInput) -> bool:
    """Whether ``principal`` may decide ``request`` now, or is listed in its quorum (and
    follows it once they have voted)."""
    actor_id = principal.actor_id
    return actor_id in request.approvers or actor_id in request.voters

"""Who is calling the desk, and what they may see.

An :class:`Authenticator` turns a bearer token into a :class:`Principal`; the default,
:class:`TokenAuthenticator`, reads the desk's own signed tokens. :class:`Access` applies the
rule of who may see (and so answer) a request: the actor it names; for a request with no
actor, the participants of its room; an administrator, everything; an answer link, its one
request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from roomkit.desk.tokens import read_token, secret_key
from roomkit.models.pending_input import PendingInput

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = ["Access", "Authenticator", "LinkLedger", "Principal", "TokenAuthenticator"]


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
        if "req" in claims:
            return Principal(
                claims["sub"],
                False,
                request_id=claims["req"],
                link_id=claims["jti"],
                expires_at=expires_at,
            )
        return Principal(claims["sub"], bool(claims.get("adm", False)), expires_at=expires_at)


class LinkLedger:
    """The answer links already spent, kept until they expire.

    Single use is one check-and-set on the event loop: :meth:`spend` says ``True`` to the
    first caller only.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._spent: dict[str, float] = {}

    def is_spent(self, link_id: str) -> bool:
        """True when the link was used to answer or reject."""
        return link_id in self._spent

    def spend(self, principal: Principal) -> bool:
        """Mark the principal's link used; ``False`` when it already was (or it is none)."""
        link_id = principal.link_id
        if link_id is None or link_id in self._spent:
            return False
        self._forget_expired()
        self._spent[link_id] = principal.expires_at or self.clock()
        return True

    def refund(self, principal: Principal) -> None:
        """Undo :meth:`spend` for an answer that was refused before it settled anything."""
        if principal.link_id is not None:
            self._spent.pop(principal.link_id, None)

    def _forget_expired(self) -> None:
        # An expired link is refused for its expiry anyway: its nonce need not be kept.
        if len(self._spent) < 1024:
            return
        now = self.clock()
        for link_id in [key for key, expires in self._spent.items() if expires <= now]:
            del self._spent[link_id]

    def __len__(self) -> int:
        return len(self._spent)


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
        if principal.admin:
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
            if principal.request_id is not None or principal.admin or request.actor_id is not None:
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

"""The one gate: a credential, and the use it is offered for, in; a principal out.

Every surface that takes a credential asks :meth:`CredentialGate.admit` for the principal
behind it *for a named use* (:class:`Use`): the desk's REST routes, its WebSocket and its
page (an answer link's page too), ``GET /api/link`` (an answer link reading its one
request, spent or not), ``POST /api/sign-in``, ``/metrics`` off loopback, and ``roomkit mcp
--http``. A person whom another surface authenticated itself (a Slack click,
by Slack's signature and the directory) is vouched for by :meth:`CredentialGate.vouch`.

A credential is refused everywhere but its own use, with the same status everywhere (401)
and a message that says what it is for; a spent link or a revoked credential (read from the
store's ledger, so every process on the store agrees) gets 401 too (but for an answer link
spent on its request, which still reads that request), and a person's token
where only an administrator's will do, 403. Tokens and the authenticator's error text never
reach a log or a message. This module needs no web framework: the desk's FastAPI dependency
(:class:`roomkit.desk.gate.Gate`) and the MCP server's ASGI door both stand on it.
"""

from __future__ import annotations

import logging
from enum import StrEnum

from roomkit.auth.authenticator import Authenticator
from roomkit.auth.ledger import LinkLedger
from roomkit.auth.principal import CredentialKind, Principal, principal_problem
from roomkit.core.exceptions import AnswerLinkExpiredError, DeskAuthError

__all__ = [
    "EXPIRED_LINK",
    "INVALID",
    "MISSING",
    "ONLY_ANSWER_LINK",
    "CredentialGate",
    "Refused",
    "Use",
]

logger = logging.getLogger("roomkit.auth")


class Use(StrEnum):
    """What a credential is offered for."""

    DESK = "desk"
    """The desk's API, WebSocket and page: a person's token, or an answer link (which reads
    and answers its one request there, and nothing else)."""
    SESSION = "session"
    """A person's own session away from the desk's page (``roomkit mcp --http``, where the
    token's person is asked): a person's token only."""
    ADMIN = "admin"
    """What only an administrator may do (``/metrics`` off loopback): an administrator's
    token."""
    SIGN_IN = "sign-in"
    """``POST /api/sign-in``: a sign-in link only."""
    ANSWER_LINK = "answer-link"
    """``GET /api/link``: an answer link reading its one request as it stands, spent or
    not (so that a page opened again shows how the request ended); an answer link only."""


ACCEPTS: dict[Use, frozenset[CredentialKind]] = {
    Use.DESK: frozenset({CredentialKind.ACTOR, CredentialKind.ANSWER_LINK}),
    Use.SESSION: frozenset({CredentialKind.ACTOR}),
    Use.ADMIN: frozenset({CredentialKind.ACTOR}),
    Use.SIGN_IN: frozenset({CredentialKind.SIGN_IN_LINK}),
    Use.ANSWER_LINK: frozenset({CredentialKind.ANSWER_LINK}),
}
"""The kinds of credential each use takes."""

MISSING = "Missing bearer token: send a desk token (`roomkit token ACTOR`) as Authorization: Bearer"
"""Why a request without a credential is refused."""
INVALID = (
    "Invalid or expired token: a token from `roomkit token` works only when it is signed "
    "with this desk's key (run both with the same --data-dir, or the same ROOMKIT_DESK_SECRET)"
)
"""Why a malformed, forged, tampered with, expired or foreign token is refused: no more is
said of the token, only where a good one comes from (a token signed with another folder's
key is the newcomer's usual mistake)."""
EXPIRED_LINK = "This answer link has expired: sign in to the desk to answer the question there"
"""Why an answer link past its time is refused: its person is told where to answer, not
where a token comes from."""
NOT_ADMIN = "Only an administrator's token may do this (`roomkit token ACTOR --admin`)"
"""Why a person's token is refused where an administrator's is needed."""
WHAT_IT_IS_FOR = {
    CredentialKind.ACTOR: "Not a sign-in link: send the token itself with each request",
    CredentialKind.ANSWER_LINK: (
        "An answer link only answers its one request, on the desk's page: use a person's "
        "token (`roomkit token ACTOR`)"
    ),
    CredentialKind.SIGN_IN_LINK: "A sign-in link only signs in: open it in the desk's page",
}
"""What each kind of credential is for, said where it is offered for something else."""
ONLY_ANSWER_LINK = (
    "Only an answer link reads its request here: a person's token reads a request at "
    "/api/requests/{request_id}"
)
"""Why another credential than an answer link is refused for :attr:`Use.ANSWER_LINK`."""


class Refused(DeskAuthError):
    """The gate refused a credential: ``str(error)`` is safe to show; :attr:`status` is the
    HTTP status every surface answers with (401, or 403 for a person's token where an
    administrator's is needed)."""

    def __init__(self, message: str, *, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class CredentialGate:
    """Authenticates credentials for a use; the one check every surface calls.

    Args:
        authenticator: turns tokens into principals (the desk's own tokens, or the
            application's).
        ledger: the links already spent and the credentials revoked.
    """

    def __init__(self, authenticator: Authenticator, ledger: LinkLedger) -> None:
        self.authenticator = authenticator
        self.ledger = ledger

    async def admit(self, token: str | None, use: Use) -> Principal:
        """The principal behind ``token``, when the token is good for ``use``.

        Args:
            token: the bearer token, or ``None`` (or empty) when none was sent.
            use: what the token is offered for.

        Raises:
            Refused: the token is missing, invalid, spent, revoked, names an actor that is
                no actor name, or is not for ``use`` (the message is safe to show).
            StoreError: the ledger cannot be read (the surface answers 503: it fails closed).
        """
        if not token:
            raise Refused(MISSING)
        principal = await self._principal(token)
        if principal.kind not in ACCEPTS[use]:
            if use is Use.ANSWER_LINK:
                raise Refused(ONLY_ANSWER_LINK)
            raise Refused(WHAT_IT_IS_FOR[principal.kind])
        # Reading its own request, a link spent answering it still counts; a revocation of
        # the link or of its person does not.
        refusal = await self.ledger.refusal(principal, spent_reads=use is Use.ANSWER_LINK)
        if refusal is not None:
            raise Refused(refusal)
        if use is Use.ADMIN and not principal.admin:
            raise Refused(NOT_ADMIN, status=403)
        return principal

    async def vouch(self, actor_id: str) -> Principal:
        """The principal of a person another surface authenticated itself (a Slack user, by
        Slack's signature and the directory's mapping).

        Raises:
            Refused: ``actor_id`` is no actor name (:mod:`roomkit.auth.names`).
        """
        principal = Principal(actor_id)
        problem = principal_problem(principal)
        if problem is not None:
            raise Refused(f"The person names an actor the desk cannot use: {problem}")
        return principal

    async def _principal(self, token: str) -> Principal:
        """The authenticator's principal for ``token``, once it is usable."""
        try:
            principal = await self.authenticator.authenticate(token)
        except AnswerLinkExpiredError:
            raise Refused(EXPIRED_LINK) from None
        except PermissionError:
            raise Refused(INVALID) from None
        except Exception as error:
            # Fail closed; name only the error's type, since its text may quote the token.
            logger.warning("The desk's authenticator failed with %s", type(error).__name__)
            raise Refused(INVALID) from None
        if not isinstance(principal, Principal):
            logger.warning("The desk's authenticator returned %s", type(principal).__name__)
            raise Refused(INVALID)
        problem = principal_problem(principal)
        if problem is not None:
            logger.warning("The desk's authenticator returned a principal whose %s", problem)
            raise Refused(f"The token names an actor the desk cannot use: {problem}")
        return principal

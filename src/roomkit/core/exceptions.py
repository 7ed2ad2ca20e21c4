"""Every error roomkit raises, in one tree.

::

    RoomKitError
    ├── ToolRefusedError            a call refused: the model reads why (is_error, refused)
    │   └── ChannelRefusalError     refused by the channel itself (undeclared, cut arguments)
    ├── ToolFailedError             a call that ran and failed: the model reads the message
    ├── UnservedToolCallError       "not mine": a handler declines a tool name
    ├── ToolTimeoutError            also TimeoutError: a tool missed the channel's call bound
    ├── ProviderError               a model provider's call failed (the vendor's message kept)
    │   ├── ProviderAuthError           the key was refused (not retried)
    │   ├── ProviderRateLimitError      rate limited (retried with backoff)
    │   ├── ProviderOverloadedError     the vendor is overloaded / 5xx (retried with backoff)
    │   ├── ProviderTimeoutError        also TimeoutError: no answer in time (retried)
    │   ├── ProviderRequestError        the vendor refused the request as malformed (4xx)
    │   └── ProviderResponseError       the vendor's answer could not be read
    ├── HumanInputError             the human-input primitive
    │   ├── HumanInputRejectedError     also RuntimeError: a person or a hook said no
    │   ├── HumanInputTimeoutError      also TimeoutError: nobody answered in time
    │   ├── UnknownRequestError         also ValueError: no such pending id (or evicted)
    │   ├── RequestWithdrawnError       also RuntimeError: the handler gave the request up
    │   │   └── HandlerClosedError      the handler, or the channel's scope, is closed
    │   ├── InvalidAnswerError          also ValueError: the answer breaks the request's schema
    │   ├── AmbiguousAnswerError        also ValueError: a message could answer several questions
    │   ├── RequestSettledError         also RuntimeError: the question named is no longer open
    │   ├── ArgumentsChangedError       also RuntimeError: a decision on arguments since edited
    │   ├── KeyConflictError            also ValueError: a key names a request for another call
    │   ├── AsyncSettleRequiredError    also RuntimeError: a durable store (or a quorum vote)
    │   │                               settles with await
    │   └── VoteNeedsActorError         also ValueError: a vote on a quorum approval needs by=
    ├── DeskAuthError               also PermissionError: the answer desk refused a token
    │   └── AnswerLinkExpiredError      an answer link past its time
    ├── InvalidTextError            also ValueError: text no store can hold (a lone surrogate)
    ├── ArgumentsTooLargeError      also ValueError: a request's arguments past what it keeps
    │                               (too long, too deep, a number too long)
    ├── BodyRefusedError            also ValueError: a body from the network, refused unparsed
    ├── NotifyConfigError           also ValueError: a notifier's TOML file is wrong (names the key)
    ├── AuditKeyError               also ValueError: the trail cannot be signed: no audit key
    ├── RunUnderWayError            also RuntimeError: another start of the same run is under way
    ├── ChannelStateError           also RuntimeError: the channel cannot do that now
    │   ├── ChannelNotRegisteredError   not registered with a kit: call kit.register_channel()
    │   ├── ChannelClosedError          close() started: nothing new starts on the channel
    │   └── SessionNotOpenError         the session named is not open on the channel
    └── StoreError                  a store (pending requests, rooms) failed
        ├── StoreUnavailableError       also ConnectionError: the store cannot be reached
        ├── StoreClosedError            also RuntimeError: the store was closed: open() it again
        ├── CorruptRecordError          also ValueError: a stored record cannot be read
        ├── StoreFormatError            the store holds another format version of its records
        │   └── StoreOutdatedError      opened to read (create=False), and made by an earlier
        │                               version: left as it was, not brought up to date
        ├── StoreNotFoundError          also LookupError: opened to read (create=False), and no
        │                               store is there; nothing was created
        └── TurnNotOpenError            also KeyError: a step recorded for a turn the room
                                        store's journal does not hold open (ended elsewhere)

``ToolRefusedError``, ``ToolFailedError`` and ``UnservedToolCallError`` steer the tool loop;
they are signals, not bugs. Where the spec promises a standard type (``wait()`` raises
``TimeoutError``, an unknown id raises ``ValueError``, a rejection is a ``RuntimeError``) the
error subclasses both, so callers can catch either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from roomkit.models.pending_input import PendingInput

__all__ = [
    "AmbiguousAnswerError",
    "AnswerLinkExpiredError",
    "ArgumentsChangedError",
    "ArgumentsTooLargeError",
    "AsyncSettleRequiredError",
    "AuditKeyError",
    "BodyRefusedError",
    "ChannelClosedError",
    "ChannelNotRegisteredError",
    "ChannelRefusalError",
    "ChannelStateError",
    "CorruptRecordError",
    "DeskAuthError",
    "HandlerClosedError",
    "HumanInputError",
    "HumanInputRejectedError",
    "HumanInputTimeoutError",
    "InvalidAnswerError",
    "InvalidTextError",
    "KeyConflictError",
    "NotifyConfigError",
    "ProviderAuthError",
    "ProviderError",
    "ProviderOverloadedError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "ProviderTimeoutError",
    "RequestSettledError",
    "RequestWithdrawnError",
    "RoomKitError",
    "RunUnderWayError",
    "SessionNotOpenError",
    "StoreClosedError",
    "StoreError",
    "StoreFormatError",
    "StoreNotFoundError",
    "StoreOutdatedError",
    "StoreUnavailableError",
    "ToolFailedError",
    "ToolRefusedError",
    "ToolTimeoutError",
    "TurnNotOpenError",
    "UnknownRequestError",
    "UnservedToolCallError",
    "VoteNeedsActorError",
]


class RoomKitError(Exception):
    """The root of every error roomkit raises.

    Its text always encodes: a message quoting what it was given (an id holding a lone
    surrogate, ``"\\ud800"``) shows that character escaped, so that printing or logging the
    error never fails in turn.
    """

    def __str__(self) -> str:
        text = super().__str__()
        if text.isascii():
            return text
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return text


class ToolRefusedError(RoomKitError):
    """The call is refused; ``message`` is what the model reads (usually a JSON object)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ChannelRefusalError(ToolRefusedError):
    """The channel refused the call itself, before any handler ran."""


class ToolFailedError(RoomKitError):
    """The call ran and failed; ``message`` is what the model reads."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnservedToolCallError(RoomKitError):
    """A tool handler does not serve this name; the next handler in a composition is tried."""


class ToolTimeoutError(RoomKitError, TimeoutError):
    """A tool did not answer within the channel's bound for it."""

    def __init__(self, name: str, timeout: float) -> None:
        super().__init__(f"tool {name!r} did not answer within {timeout:g} s")
        self.name = name
        self.timeout = timeout


class ProviderError(RoomKitError):
    """A model provider's call failed; the message keeps the vendor's own words.

    Attributes:
        provider: the provider's name (``"anthropic"``, ``"openai"``, ...).
        status_code: the HTTP status, when there was one.
        retryable: whether trying again later may succeed.
    """

    retryable = False

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class ProviderAuthError(ProviderError):
    """The vendor refused the credentials."""


class ProviderRateLimitError(ProviderError):
    """The vendor rate-limited the call."""

    retryable = True


class ProviderOverloadedError(ProviderError):
    """The vendor is overloaded or failed on its side."""

    retryable = True


class ProviderTimeoutError(ProviderError, TimeoutError):
    """The vendor did not answer in time, or the connection failed."""

    retryable = True


class ProviderRequestError(ProviderError):
    """The vendor refused the request itself (a 4xx other than auth and rate limits)."""


class ProviderResponseError(ProviderError):
    """The vendor's answer could not be read."""


class HumanInputError(RoomKitError):
    """Base class of the human-input primitive's errors."""


class HumanInputRejectedError(HumanInputError, RuntimeError):
    """A person, or an ON_USER_INPUT_REQUIRED hook, rejected the request; the text says why."""


class HumanInputTimeoutError(HumanInputError, TimeoutError):
    """Nobody answered the request before its deadline."""


class UnknownRequestError(HumanInputError, ValueError):
    """No request has this id: it was never created here, or left the retention."""


class RequestWithdrawnError(HumanInputError, RuntimeError):
    """The handler gave the request up (closed or released) before an answer arrived."""


class HandlerClosedError(RequestWithdrawnError):
    """The handler, or the scope of the channel asked for, is closed to new requests."""


class InvalidAnswerError(HumanInputError, ValueError):
    """The answer does not match the request's answer schema, or is not text a store can
    hold (a lone surrogate); the request stays open."""


class AmbiguousAnswerError(HumanInputError, ValueError):
    """A message could answer several open questions of its sender: nothing was recorded.

    Send it again saying which one it answers (``process_inbound(..., answers=pending_id)``);
    :attr:`candidates` are the questions it could answer, oldest first.
    """

    def __init__(self, message: str, candidates: tuple[PendingInput, ...]) -> None:
        super().__init__(message)
        self.candidates = candidates
        """The open requests the message could answer, oldest first."""


class RequestSettledError(HumanInputError, RuntimeError):
    """The request a message says it answers was settled (or withdrawn) first: nothing was
    recorded. :attr:`request` is the request as it stands, or ``None`` once forgotten."""

    def __init__(self, message: str, request: PendingInput | None) -> None:
        super().__init__(message)
        self.request = request
        """The request as the store holds it now, or ``None``."""


class ArgumentsChangedError(HumanInputError, RuntimeError):
    """A decision on an approval named the digest of the arguments its person was shown,
    and the arguments have changed since (an approver's edit): nothing was recorded. Show
    :attr:`request` (the arguments as they are now) and ask again."""

    def __init__(self, message: str, request: PendingInput) -> None:
        super().__init__(message)
        self.request = request
        """The request as the store holds it now: its arguments and their digest."""


class KeyConflictError(HumanInputError, ValueError):
    """A create's ``key`` names a request made for another call (another tool, kind, or
    approval's arguments): nothing was created, and the request the key names stands.
    A key names one call: give another call a key of its own. :attr:`request` is the
    request the key names."""

    def __init__(self, message: str, request: PendingInput) -> None:
        super().__init__(message)
        self.request = request
        """The request the key names, as the store holds it."""


class AsyncSettleRequiredError(HumanInputError, RuntimeError):
    """A synchronous settle on a durable store, or on a quorum approval (whose votes name
    their approvers): use ``aresolve`` / ``areject`` / ``arelease``."""


class VoteNeedsActorError(HumanInputError, ValueError):
    """A vote on a quorum approval without ``by=``: each vote names its approver."""


class StoreError(RoomKitError):
    """A store of pending requests or rooms failed.

    A settle that raises one either wrote nothing or could not learn its outcome in time; the
    message says which. A settle retried with the same token (or ``aresolve`` with the same
    answer ``by`` the same actor) reports the recorded outcome.
    """


class StoreUnavailableError(StoreError, ConnectionError):
    """The store cannot be reached (a database locked or gone, a server down)."""


class StoreClosedError(StoreError, RuntimeError):
    """The store was closed: :meth:`open` it again (or use ``async with``) before using it."""

    @classmethod
    def of(cls, kind: str, where: str) -> StoreClosedError:
        """The error of the ``kind`` store (``"SQLite"``...) at ``where``."""
        return cls(
            f"the {kind} store at {where} is closed: call its open() (or use it in "
            f"`async with`) before using it again"
        )


class CorruptRecordError(StoreError, ValueError):
    """A stored record is not one this library wrote, or cannot be read any more."""


class StoreFormatError(StoreError):
    """The store was written in another format version than this roomkit reads and writes;
    nothing was read or written."""


class StoreOutdatedError(StoreFormatError):
    """A store opened only to read what is there (``create=False``) was made by an earlier
    version of roomkit, and bringing it up to date would write to it: nothing was read,
    created or changed. Open it once with ``create=True`` (the default; a desk on it, or an
    agent using it), which brings it up to date, then read it."""

    def __init__(self, message: str, *, found: str = "") -> None:
        super().__init__(message)
        self.found = found
        """What in the store is of an earlier version, in a few words (``"tables of
        version 7"``, ``"no table roomkit_checkpoints"``)."""


class StoreNotFoundError(StoreError, LookupError):
    """A store opened only to read what is there (``create=False``) found none: the file is
    missing, empty, or holds no roomkit tables. Nothing was created or changed in it."""


class TurnNotOpenError(StoreError, KeyError):
    """A step recorded for a turn the room store's journal does not hold open: never begun,
    or ended since (finished by another run, or ended elsewhere: its A2A task cancelled on
    another replica). A turn that meets it stops there, as the turn was ended; callers that
    catch ``KeyError`` still do."""

    def __init__(self, turn_id: str) -> None:
        super().__init__(
            f"No open turn {turn_id!r}: call begin_turn() first; a turn ended (finished, "
            "or ended elsewhere) records no more steps"
        )
        self.turn_id = turn_id
        """The turn the step was for."""

    def __str__(self) -> str:
        # A KeyError's text quotes its key; this one's is its sentence.
        return str(self.args[0])


class DeskAuthError(RoomKitError, PermissionError):
    """The answer desk refused a token: malformed, forged, tampered with, spent or expired."""


class AnswerLinkExpiredError(DeskAuthError):
    """An answer link, good otherwise, past its time: its person answers in the desk."""


class InvalidTextError(RoomKitError, ValueError):
    """Text that UTF-8 cannot encode (a lone surrogate), refused before it reaches a store.

    An answer raises :class:`InvalidAnswerError` instead; this is for the other fields
    (a reason, an actor id, a key, a tool name, the arguments).
    """


class ArgumentsTooLargeError(RoomKitError, ValueError):
    """A new request's arguments are more than a request keeps, on every store: longer as
    JSON than 56,000 characters, nested more than 24 levels deep, or holding an integer
    longer than 100 characters. Nothing was stored. ``str(error)`` says what the limit is,
    where it was passed and what to send instead, worded for the model that wrote them."""


class BodyRefusedError(RoomKitError, ValueError):
    """A body from the network refused before anything parsed it (see :mod:`roomkit.bodies`).

    ``str(error)`` says what is wrong and what is taken instead; it quotes nothing of the
    body but ASCII, so that it can be sent back as it is.

    Attributes:
        status: the HTTP status to answer with: 413 for a body over the size cap, 400 for
            one that is not JSON the surface takes.
    """

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class AuditKeyError(RoomKitError, ValueError):
    """The trail cannot be signed: the process holds no audit key (``ROOMKIT_AUDIT_KEY``, or
    ``audit.key`` in the desk's data folder, which ``roomkit audit key`` creates)."""


class NotifyConfigError(RoomKitError, ValueError):
    """A notifier's TOML file is wrong: ``str(error)`` is one line naming the file and the key
    at fault (``notify.toml: [slack] token_env: the environment variable ... is not set``).

    Attributes:
        key: where in the file (``[slack] token_env``), or ``""`` for the file as a whole.
        missing_extras: the extras the file needs that are not installed, each with the
            libraries missing (in the order the message names them); empty for any other
            mistake.
    """

    def __init__(
        self,
        message: str,
        *,
        key: str = "",
        missing_extras: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.key = key
        self.missing_extras: dict[str, frozenset[str]] = dict(missing_extras or {})


class RunUnderWayError(RoomKitError, RuntimeError):
    """A durable run's ``start`` met another start of the same run still running, before
    it kept the run's pause: nothing was run, and nobody was asked. Start it again once the
    other has kept its pause (the call then re-attaches to its requests)."""


class ChannelStateError(RoomKitError, RuntimeError):
    """The channel cannot do what was asked in the state it is in; the message says what to
    do first (plug a realtime config, unplug the one plugged, leave a conference, ...)."""


class ChannelNotRegisteredError(ChannelStateError):
    """The channel is not registered with a kit: call ``kit.register_channel(channel)``."""

    def __init__(self, channel_id: str) -> None:
        super().__init__(f"Channel {channel_id} is not registered: call kit.register_channel()")
        self.channel_id = channel_id
        """The channel asked."""


class ChannelClosedError(ChannelStateError):
    """The channel's ``close()`` started: it starts no session, plugs nothing, joins nothing."""


class SessionNotOpenError(ChannelStateError):
    """The session named is not open on the channel (ended, lost, or never started there)."""

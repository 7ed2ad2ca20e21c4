"""Standing grants: "the same again", approved ahead for a bounded scope, kept by the store.

A :class:`Grant` lets calls of one tool run without asking anyone, while they stay within
it: arguments with exactly one digest, or matching a JSON Schema that narrows the tool's;
for one actor and/or one room; until a time on the store's clock; for at most a number of
uses. It records who granted it and under what quorum, so that it never covers a call that
needs more approvers than it had.

Every store keeps its grants beside its requests (``store.grants``, a :class:`GrantStore`),
shared by every process on the store; a handler on the memory store keeps a
:class:`MemoryGrants`. :meth:`GrantStore.use` is the one check-and-set: a use is counted
only while the grant is unrevoked, unexpired and not used up, so that two processes racing
for a grant's last use never both get it.

A call a grant covers is recorded with the use it takes: a store that keeps its grants
beside its requests counts the use in the write that inserts the request it settles
(:class:`InsertsGranted`), so that no use is ever spent without the request whose
``grant_used`` entry cites it, and a create whose key names a request made already takes
no use at all. The look for a grant that covers a call reads every live grant on its tool
(:func:`every_live_grant`); only :meth:`GrantStore.list`, for display, stops at
:data:`LIST_LIMIT`.
"""

from __future__ import annotations

import builtins
import json
import math
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from roomkit.stores._checks import check_grant_text, check_revoker

if TYPE_CHECKING:
    from typing import Unpack

    from roomkit.models.pending_input import PendingInput, PendingInputStatus
    from roomkit.stores._grant_rows import grant_from_row
    from roomkit.stores.base import SettleOutcome

__all__ = [
    "COLUMNS",
    "LIST_LIMIT",
    "Grant",
    "GrantStore",
    "GrantedHistory",
    "GrantedInsert",
    "InsertsGranted",
    "InsertsUngranted",
    "KeepsGrants",
    "ListingGrants",
    "ListsEveryLive",
    "MemoryGrants",
    "SettlesGranting",
    "check_grant_id",
    "every_live_grant",
    "finite_time",
    "grant_from_row",
    "new_grant_id",
    "newest_first",
]

LIST_LIMIT = 500
"""The most grants one :meth:`GrantStore.list` returns."""

COLUMNS = "grant_id, tool, expires_at, max_uses, uses, created_at, revoked_at, revoked_by, body"
"""The columns of a grants table (SQLite, PostgreSQL), in :func:`grant_from_row` order."""

_MAX_ID_CHARS = 128


def new_grant_id() -> str:
    """A fresh grant id: ``g-`` and 24 hex digits."""
    return f"g-{secrets.token_hex(12)}"


def check_grant_id(grant_id: object) -> str:
    """``grant_id`` as a grant id: a non-empty string of at most 128 printable characters.

    Raises:
        TypeError: it is not a string.
        ValueError: it is empty, too long or holds a control character.
    """
    if not isinstance(grant_id, str):
        raise TypeError(f"a grant id is a str, got {type(grant_id).__name__}")
    if not grant_id or len(grant_id) > _MAX_ID_CHARS or not grant_id.isprintable():
        raise ValueError(
            f"a grant id is 1 to {_MAX_ID_CHARS} printable characters, got {grant_id!r}"
        )
    return grant_id


@dataclass(frozen=True, slots=True)
class Grant:
    """Approval given ahead for calls of one tool within a bounded scope.

    Build one with :func:`roomkit.policy.grants.grant` (it checks what a grant may say), or
    let a person make one while approving (``approve(grant=...)``).
    """

    grant_id: str
    """Its id, unique in the store."""
    tool: str
    """The tool whose calls it covers."""
    granted_by: tuple[str, ...]
    """Who granted it: the approver, or every approver of a quorum."""
    expires_at: float
    """When it ends, in seconds since the epoch on the store's clock."""
    digest: str | None = None
    """Covers only arguments with exactly this ``arguments_digest``."""
    schema: dict[str, Any] | None = None
    """Covers only arguments matching this JSON Schema (which narrows the tool's)."""
    actor_id: str | None = None
    """Covers only calls of this actor, when set."""
    room_id: str | None = None
    """Covers only calls in this room, when set."""
    max_uses: int | None = None
    """Covers at most this many calls (``None``: any number until it expires)."""
    uses: int = 0
    """The calls it has covered."""
    quorum: int = 1
    """How many approvals made it: it covers only calls needing no more."""
    created_at: float = 0.0
    """When it was made, on the store's clock."""
    revoked_at: float | None = None
    """When it was revoked, on the store's clock; ``None`` while it stands."""
    revoked_by: str | None = None
    """Who revoked it."""
    source: str | None = None
    """The approval request it was made on, when a person granted it while approving."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What the application keeps with it (a note, a ticket); shown, never interpreted."""

    def __post_init__(self) -> None:
        # A time that is no finite number would make a grant that never ends, or one no
        # durable store reads back: it is refused where the grant is made, and read.
        finite_time("expires_at", self.expires_at)
        finite_time("created_at", self.created_at)
        if self.revoked_at is not None:
            finite_time("revoked_at", self.revoked_at)

    def live(self, now: float) -> bool:
        """Whether it may still cover a call at ``now``: not revoked, expired or used up."""
        if self.revoked_at is not None or now >= self.expires_at:
            return False
        return self.max_uses is None or self.uses < self.max_uses

    def state(self, now: float) -> str:
        """``live``, ``revoked``, ``expired`` or ``used up`` at ``now``."""
        if self.revoked_at is not None:
            return "revoked"
        if now >= self.expires_at:
            return "expired"
        if self.max_uses is not None and self.uses >= self.max_uses:
            return "used up"
        return "live"

    def to_json(self) -> dict[str, Any]:
        """The grant as a JSON object (``granted_by`` as a list)."""
        data = asdict(self)
        data["granted_by"] = list(self.granted_by)
        return data

    def body(self) -> str:
        """The fields that never change once it is made, as canonical JSON (a store's
        ``body`` column)."""
        fixed = {
            "granted_by": list(self.granted_by),
            "digest": self.digest,
            "schema": self.schema,
            "actor_id": self.actor_id,
            "room_id": self.room_id,
            "quorum": self.quorum,
            "source": self.source,
            "extra": self.extra,
        }
        return json.dumps(fixed, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Grant:
        """A grant from :meth:`to_json`'s object."""
        fields = dict(data)
        fields["granted_by"] = tuple(fields.get("granted_by") or ())
        return cls(**fields)


@runtime_checkable
class GrantStore(Protocol):
    """A store's grants, shared by every process on the store."""

    clock: Callable[[], float]
    """The store's clock: grants expire on it."""

    async def add(self, grant: Grant) -> Grant:
        """Record ``grant`` (its ``created_at`` set to now on the store's clock); returns it
        as recorded.

        Raises:
            ValueError: a grant with its id is recorded already.
            InvalidTextError: a text of the grant holds a lone surrogate (nothing is
                written).
            StoreUnavailableError: the store cannot be reached.
        """
        ...

    async def get(self, grant_id: str) -> Grant | None:
        """The grant ``grant_id``, whatever its state; ``None`` when there is none.

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        ...

    async def list(self, *, tool: str | None = None, live: bool = False) -> list[Grant]:
        """The grants (of ``tool`` only, when given; only those still live at the store's
        now, with ``live=True``), newest first, at most :data:`LIST_LIMIT`.

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        ...

    async def revoke(self, grant_id: str, *, by: str | None = None) -> bool:
        """Revoke the grant: it covers no call from now on, in any process. ``True`` when
        this call revoked it; ``False`` when it is unknown or revoked already.

        Raises:
            InvalidTextError: ``by`` holds a lone surrogate (nothing is written).
            StoreUnavailableError: the store cannot be reached.
        """
        ...

    async def use(self, grant_id: str) -> Grant | None:
        """Count one use of the grant, in one check-and-set: only while it is unrevoked,
        unexpired (on the store's clock) and not used up. The grant with the use counted,
        or ``None`` when it covers nothing now (then nothing changed).

        Raises:
            StoreUnavailableError: the store stayed away: whether the use was counted is
                unknown (the call that needed it asks a person).
        """
        ...


@runtime_checkable
class KeepsGrants(Protocol):
    """A store that keeps standing grants beside its requests (every durable store)."""

    grants: GrantStore
    """The store's grants: one per store, shared by every handler on it."""


@runtime_checkable
class InsertsUngranted(Protocol):
    """A store that keeps its grants in the file of its requests (SQLite), and so can look
    for live grants on a request's tool in the write that inserts it: one trip, not two."""

    async def insert_ungranted(
        self, request: PendingInput, *, history: Sequence[dict[str, Any]] = ()
    ) -> tuple[PendingInput, bool] | None:
        """:meth:`~roomkit.stores.base.DurableStore.insert`, unless a live grant names the
        request's tool: then nothing is written and ``None`` comes back."""
        ...


GrantedHistory = Callable[[Grant], Sequence[dict[str, Any]]]
"""Makes the history a granted request starts with, from the grant with its use counted
(its ``grant_used`` entry cites the grant and the use)."""


class GrantedInsert(NamedTuple):
    """What :meth:`InsertsGranted.insert_granted` did."""

    record: PendingInput
    """The request as stored: the one inserted, or the one its key names."""
    created: bool
    """Whether it was inserted now (``False``: its key named a request made already)."""
    grant: Grant | None
    """The grant with this insert's use counted; ``None`` when nothing was inserted."""


@runtime_checkable
class InsertsGranted(KeepsGrants, Protocol):
    """A store that counts a grant's use in the write that inserts the request it covers,
    so that a use is never spent without the request that records it (every durable store
    of roomkit's)."""

    async def insert_granted(
        self, request: PendingInput, grant_id: str, *, history: GrantedHistory
    ) -> GrantedInsert | None:
        """In one write: when ``request.key`` names a retained request, that request,
        untouched (no use is spent); else one use of the grant ``grant_id`` counted, as
        :meth:`GrantStore.use` counts it, and ``request`` inserted with ``history(grant)``.
        ``None`` when the grant covers nothing now: then nothing was written. A ``request``
        settled already (approved by the grant, ``history`` all of its history) is stored
        so, as :meth:`~roomkit.stores.base.InsertsSettled.insert_settled` stores one, on a
        store that can.

        Raises:
            ValueError, TypeError, InvalidTextError, StoreError: as
                :meth:`~roomkit.stores.base.DurableStore.insert`; the use is not counted.
            StoreUnavailableError: the store stayed away: whether both were written is
                unknown (they were written together or not at all).
        """
        ...


@runtime_checkable
class SettlesGranting(KeepsGrants, Protocol):
    """A store that records the grant an approval makes in the settle of that approval, so
    that a process stopped anywhere leaves the approval and its grant together or neither
    (SQLite and PostgreSQL: one transaction; Redis: one script). On a quorum approval the
    settle is the vote that approves it: its :meth:`~roomkit.stores.VotingStore.vote`
    makes the grant its ballot offers (:class:`~roomkit.stores.VoteGrant`) in the same way."""

    async def settle_granting(
        self,
        grant: Grant,
        pending_id: str,
        status: PendingInputStatus,
        *,
        token: str | None = None,
        history: Sequence[dict[str, Any]] = (),
        **outcome: Unpack[SettleOutcome],
    ) -> PendingInput | None:
        """:meth:`~roomkit.stores.base.DurableStore.settle`, recording ``grant`` (of the
        store's :attr:`KeepsGrants.grants`) in the same transaction when this call wins; a
        grant with its id recorded already is left as it is.

        Raises:
            ValueError, TypeError, InvalidTextError, CorruptRecordError,
                StoreUnavailableError: as :meth:`~roomkit.stores.base.DurableStore.settle`.
        """
        ...


@runtime_checkable
class ListsEveryLive(Protocol):
    """Grants that list every live grant on a tool, with no :data:`LIST_LIMIT`."""

    async def every_live(self, tool: str) -> list[Grant]:
        """Every grant of ``tool`` live at the store's now, newest first.

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        ...


class ListingGrants:
    """A store's :meth:`~GrantStore.list` and :meth:`~ListsEveryLive.every_live`, the same
    in every store: one read of the grants newest first, with or without
    :data:`LIST_LIMIT`; the store reads them (``_newest``)."""

    __slots__ = ()

    async def list(self, *, tool: str | None = None, live: bool = False) -> list[Grant]:
        """The grants, as :meth:`GrantStore.list` lists them: at most :data:`LIST_LIMIT`.

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        return await self._newest(tool, live, LIST_LIMIT)

    async def every_live(self, tool: str) -> builtins.list[Grant]:
        """Every grant of ``tool`` live at the store's now, newest first (no limit).

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        return await self._newest(tool, True, None)

    async def _newest(
        self, tool: str | None, live: bool, limit: int | None
    ) -> builtins.list[Grant]:
        """The grants (of ``tool`` only, when given; only the live ones, with ``live``),
        newest first, at most ``limit`` of them (``None``: every one)."""
        raise NotImplementedError


async def every_live_grant(grants: GrantStore, tool: str) -> list[Grant]:
    """Every live grant on ``tool``, newest first: what the look for a grant that covers a
    call reads. Grants that cannot list them all (an application's own
    :class:`GrantStore`) give their :meth:`~GrantStore.list`.

    Raises:
        StoreUnavailableError: the store cannot be reached.
    """
    if isinstance(grants, ListsEveryLive):
        return await grants.every_live(tool)
    return await grants.list(tool=tool, live=True)


class MemoryGrants(ListingGrants):
    """The grants of a handler whose requests live in this process (the memory store).

    Each call is one step of the event loop, so :meth:`use` is a check-and-set.

    Args:
        clock: seconds since the epoch; grants expire on it.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        if not callable(clock):
            raise TypeError(f"clock must be callable, got {type(clock).__name__}")
        self.clock = clock
        self._grants: dict[str, Grant] = {}

    async def add(self, grant: Grant) -> Grant:
        check_grant_text(grant)
        if grant.grant_id in self._grants:
            raise ValueError(f"grant {grant.grant_id!r} is recorded already")
        recorded = replace(grant, created_at=self.clock())
        self._grants[grant.grant_id] = recorded
        return recorded

    async def get(self, grant_id: str) -> Grant | None:
        return self._grants.get(check_grant_id(grant_id))

    async def _newest(
        self, tool: str | None, live: bool, limit: int | None
    ) -> builtins.list[Grant]:
        now = self.clock()
        newest = newest_first(
            grant
            for grant in self._grants.values()
            if (tool is None or grant.tool == tool) and (not live or grant.live(now))
        )
        return newest if limit is None else newest[:limit]

    async def revoke(self, grant_id: str, *, by: str | None = None) -> bool:
        check_revoker(by)
        grant = self._grants.get(check_grant_id(grant_id))
        if grant is None or grant.revoked_at is not None:
            return False
        self._grants[grant_id] = replace(grant, revoked_at=self.clock(), revoked_by=by)
        return True

    async def use(self, grant_id: str) -> Grant | None:
        return self.use_now(grant_id)

    def use_now(self, grant_id: str) -> Grant | None:
        """:meth:`use`, without a step of the event loop: a handler on the memory store
        counts the use and adds the request it settles in one step."""
        grant = self._grants.get(check_grant_id(grant_id))
        if grant is None or not grant.live(self.clock()):
            return None
        used = replace(grant, uses=grant.uses + 1)
        self._grants[grant_id] = used
        return used


def newest_first(grants: Iterable[Grant]) -> list[Grant]:
    """``grants`` in the order every store lists them: newest first, then by id."""
    return sorted(grants, key=lambda grant: (-grant.created_at, grant.grant_id))


def finite_time(name: str, value: object) -> float:
    """``value`` as a finite time in seconds.

    Raises:
        TypeError: it is not a number.
        ValueError: it is NaN or infinite.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} is a time in seconds since the epoch, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite time in seconds since the epoch, got {value!r}")
    return float(value)


def __getattr__(name: str) -> Any:
    # How a store's row is read back lives apart, in the module the stores read it with.
    if name == "grant_from_row":
        from roomkit.stores._grant_rows import grant_from_row

        return grant_from_row
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

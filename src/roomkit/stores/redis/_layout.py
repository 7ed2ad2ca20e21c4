"""The names a Redis store uses on the server: its keys and its channel, under one prefix.

The scripts that write them, and a drawing of the whole layout, are in
:mod:`~roomkit.stores.redis._scripts`.
"""

from __future__ import annotations

from roomkit.stores._records import marked

__all__ = ["Layout"]


class Layout:
    """The names a store with ``prefix`` uses on the server, as
    :mod:`~roomkit.stores.redis._scripts` draws them."""

    __slots__ = (
        "anchors",
        "by_actor",
        "changes",
        "channel",
        "checkpoints",
        "dirty",
        "grant_items",
        "grants",
        "keys",
        "marks",
        "pending",
        "prefix",
        "records",
        "settled",
        "unassigned",
    )

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.records = f"{prefix}:p:"
        """What every record key starts with."""
        self.keys = f"{prefix}:k:"
        """What every idempotency key's entry starts with."""
        self.pending = f"{prefix}:pending"
        """The index of every pending id."""
        self.channel = f"{prefix}:events"
        """The channel that announces every write."""
        self.changes = f"{prefix}:changes"
        """The change log."""
        self.settled = f"{prefix}:settled"
        """The index of the newest settled ids."""
        self.unassigned = f"{prefix}:su"
        """The index of the newest settled ids of requests that name no actor."""
        self.by_actor = f"{prefix}:sa:"
        """What the index of an actor's newest settled ids starts with."""
        self.anchors = f"{prefix}:ha:"
        """What every chain's signed head key starts with."""
        self.dirty = f"{prefix}:hd"
        """The signed heads the next checkpoint takes."""
        self.checkpoints = f"{prefix}:cp"
        """The list of checkpoints."""
        self.grant_items = f"{prefix}:grants:item:"
        """What every standing grant's hash key starts with (:mod:`._grants`)."""
        self.grants = f"{prefix}:grants:all"
        """The index of every grant's id, scored by creation time."""
        self.marks = (f"{self.changes}:seq", f"{prefix}:rooms:format", self.checkpoints)
        """The keys that never expire once written, one of which is there wherever a store
        with this prefix was used: the change log's counter (every create writes it), the
        room store's format version (written when one opens), the checkpoints. With none of
        them, the database holds no roomkit store under the prefix."""

    def record(self, pending_id: str) -> str:
        """The key of a request's record."""
        return self.records + pending_id

    def chain(self, pending_id: str) -> list[str]:
        """The keys a script that appends to the request's history writes: the history, its
        signed head, and the heads to checkpoint."""
        return [f"{self.prefix}:h:{pending_id}", self.anchors + pending_id, self.dirty]

    def settle_keys(self, pending_id: str) -> list[str]:
        """The keys of :data:`SETTLE` for the request."""
        return [self.record(pending_id), self.pending, *self.chain(pending_id)]

    def grant_keys(self, grant_id: str) -> list[str]:
        """The keys a script that records the grant ``grant_id`` writes: its hash and the
        index of every grant."""
        return [self.grant_items + grant_id, self.grants]

    def room(self, room_id: str) -> str:
        """The index of a room's pending ids."""
        return f"{self.prefix}:r:{room_id}"

    def settled_for(self, actor_id: str | None) -> str:
        """The index of the newest settled ids of requests naming ``actor_id`` (or none)."""
        return self.unassigned if actor_id is None else self.by_actor + marked(actor_id)

"""A request's history entries, typed: one model per kind of entry, told apart by ``type``.

Every entry has ``type``, ``at`` (ISO-8601 UTC, ``Z`` for the offset, kept as the text it
was written as), ``actor`` and ``surface``; as read back from a store, ``seq`` (its place
in the history) and ``prev`` (the digest of the entry before it). Each kind adds its own
fields, listed on its model. An entry may carry more fields than its model names (an
application's own, recorded with ``handler.record``): they are kept, as they are.

A model stands for the JSON object the store keeps, exactly: :meth:`Entry.to_dict` gives
back the fields the entry was made or read with, and no others (a field left out stays
out, one given as ``null`` stays ``null``), so that the canonical JSON of an entry read and
written again is the same text, byte for byte, and a chain of digests over it still holds.
Values are taken as they are, never converted (``1`` is no ``true``, ``"3"`` no ``3``).
Only ``type`` and ``at`` are required: a field an entry has must have its type, and a field
its kind names may be missing (an application records what it knows).

:func:`parse_entry` reads an entry (a dict, or its stored JSON text) into its model;
:data:`HistoryEntry` is the union, discriminated by ``type``. :func:`check_fields` checks an
entry's fields as it is recorded; the types of those fields, and the check that settles most
entries without the validator, are :mod:`~roomkit.models._entry_fields`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from roomkit.models._entry_fields import Actors, ModelFields, model_fields, plainly_typed

__all__ = [
    "ENTRY_MODELS",
    "ENTRY_TYPES",
    "Created",
    "Decided",
    "Defaulted",
    "Delivered",
    "Entry",
    "Escalated",
    "Executed",
    "GrantOffered",
    "GrantUsed",
    "Granted",
    "HistoryEntry",
    "PolicyDecided",
    "Saved",
    "Settled",
    "Shown",
    "Voted",
    "check_fields",
    "parse_entry",
]


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class Entry(BaseModel):
    """What every history entry holds."""

    # Each kind's validator is built when it is first used, not when roomkit is imported.
    model_config = ConfigDict(frozen=True, extra="allow", strict=True, defer_build=True)

    type: str
    """The kind of entry: the discriminator."""
    at: str = Field(default_factory=_now)
    """When, as ISO-8601 UTC text (``2026-12-03T11:07:43.680900Z``); now by default."""
    actor: str | None = None
    """Who did it (an actor id), ``None`` for the kit itself."""
    surface: str | None = None
    """Through which surface (``desk``, ``slack``, ``cli``, ...), ``None`` when not told."""
    seq: int | None = None
    """Its place in the request's history, from 0 (the store's to assign; not stored)."""
    prev: str | None = None
    """The SHA-256 hex digest of the stored text of the entry before it (as stored)."""

    def to_dict(self) -> dict[str, Any]:
        """The entry as the JSON object it stands for: the fields it was made or read with.

        ``type``, ``at``, ``actor`` and ``surface`` are always there (``actor`` and
        ``surface`` ``None`` when not told), as the stores keep them.
        """
        value = self.model_dump(exclude_unset=True)
        value["type"], value["at"] = self.type, self.at
        value.setdefault("actor", None)
        value.setdefault("surface", None)
        return value


class Created(Entry):
    """A request was made: what was asked (the tool, its arguments and their digest), of
    whom, in which room and channel; an approval's approvers, and its tool's description
    when it has one."""

    type: Literal["created"] = "created"
    tool: str | None = None
    """The tool held or asked through."""
    digest: str | None = None
    """The digest of ``tool`` and ``arguments`` (``arguments_digest``)."""
    arguments: dict[str, Any] | None = None
    """The arguments, as they were when the request was made."""
    room: str | None = None
    """The room's id."""
    channel: str | None = None
    """The channel's id."""
    approvers: Actors | None = None
    """On an approval, who may decide it."""
    description: str | None = None
    """On an approval, the tool's description (cut to a bounded length)."""


class Shown(Entry):
    """A surface showed the request to ``actor``."""

    type: Literal["shown"] = "shown"


class Voted(Entry):
    """A vote on a quorum approval."""

    type: Literal["voted"] = "voted"
    decision: Literal["approve", "edit", "reject"] | None = None
    """What the vote was."""
    digest: str | None = None
    """The digest of the arguments the vote was cast on."""
    edited: str | None = None
    """On an edit, the digest of its replacement arguments."""
    arguments: dict[str, Any] | None = None
    """On an edit, its replacement arguments."""
    reason: str | None = None
    """On a rejection, why."""


class Decided(Entry):
    """A decision on an approval (not a quorum's vote)."""

    type: Literal["decided"] = "decided"
    decision: Literal["approve", "edit", "reject", "respond"] | None = None
    """Which decision."""
    digest: str | None = None
    """On an approval or an edit, the digest of the arguments that run."""
    arguments: dict[str, Any] | None = None
    """On an edit, the replacement arguments."""
    reason: str | None = None
    """On a rejection, why."""
    result: str | None = None
    """On a response, the answer the model reads."""


class Settled(Entry):
    """The request's outcome was recorded."""

    type: Literal["settled"] = "settled"
    status: Literal["resolved", "rejected", "timed_out"] | None = None
    """The outcome."""
    withdrawn: bool | None = None
    """``True`` when the kit gave the request up rather than a person rejecting it."""
    digest: str | None = None
    """On a quorum's outcome, the digest of the arguments it settled on."""
    approvers: Actors | None = None
    """On a quorum's outcome, who approved those arguments."""
    reason: str | None = None
    """On a quorum's rejection, why."""


class Defaulted(Entry):
    """The answer a ladder gave the model after the request timed out."""

    type: Literal["defaulted"] = "defaulted"
    answer: str | None = None
    """That answer."""


class Executed(Entry):
    """The approved call ran (or was refused at dispatch)."""

    type: Literal["executed"] = "executed"
    digest: str | None = None
    """The digest of the arguments it ran with."""
    ran: bool | None = None
    """Whether it ran."""
    is_error: bool | None = None
    """Whether its result is an error."""
    content: Any = None
    """What it returned, as the model reads it."""


class Escalated(Entry):
    """More people may answer the request."""

    type: Literal["escalated"] = "escalated"
    approvers: Actors | None = None
    """The actors added."""


class Delivered(Entry):
    """An outcome handed to the system that asked (a Temporal workflow), or refused by it."""

    type: Literal["delivered"] = "delivered"
    surface: str | None = None
    """The notification surface that delivered it."""
    update_id: str | None = None
    """The delivery's id, the same on every retry."""
    workflow_id: str | None = None
    """The workflow that asked."""
    run_id: str | None = None
    """Its run."""
    accepted: bool | None = None
    """Whether the workflow took the outcome."""
    refused: str | None = None
    """Why it refused it."""
    taken_by: str | None = None
    """How the workflow took it when not by this update: ``"timer"`` (its own timer fired and
    read the outcome from the store) or ``"create"`` (its ask re-attached to the request
    settled already); it had ended by the time the update came."""


class Saved(Entry):
    """A part of a paused run's state that an agent framework keeps beside the requests it
    raised (the OpenAI Agents SDK's ``RunState``), so any process can resume the run; or,
    holding ``output`` in place of ``state``, a part of the run's final output once a resume
    finished it, so any process can read it; or, holding ``handed``, the mark that a run
    took the request's decision (Pydantic AI: a decision stands for one run)."""

    type: Literal["saved"] = "saved"
    run: str | None = None
    """The run's key."""
    generation: int | None = None
    """Which pause of the run the state is of."""
    part: int | None = None
    """This part's place among the state's ``parts``."""
    parts: int | None = None
    """How many parts the state was cut into."""
    pending: list[str | None] | None = None
    """The ids of the requests the run paused at, one per held call: ``None`` for a call
    its rule approved without asking anyone."""
    state: str | None = None
    """This part of the state's text."""
    output: str | None = None
    """This part of the finished run's final output, as JSON text."""
    attempt: str | None = None
    """Which resume kept the output: the last one kept whole is the run's."""
    handed: bool | None = None
    """A run (``run``, when known) took the request's decision: another run under the same
    key is refused it."""


class PolicyDecided(Entry):
    """A policy decided on the call: enforced, or in shadow (recorded, not acted on).

    Its ``actor`` is ``policy:<name>``: a decision made by a policy is automatic, one made
    by a person (``decided``, ``voted``) is human.
    """

    type: Literal["policy_decided"] = "policy_decided"
    policy: str | None = None
    """The policy's name."""
    version: str | None = None
    """Which text of the policy decided (a digest of it, or the version it names)."""
    input_digest: str | None = None
    """The SHA-256 hex digest of the input the policy read (the call as JSON)."""
    decision: Literal["allow", "deny", "ask", "abstain"] | None = None
    """What it decided."""
    reason: str | None = None
    """Why, as the policy said (or the failure that decided for it)."""
    enforced: bool | None = None
    """``False`` in shadow mode: the decision was recorded, today's behaviour kept."""
    automatic: bool | None = None
    """``True``: nobody decided this, a policy did."""
    error: bool | None = None
    """``True`` when the policy failed and ``on_error`` decided."""


class GrantOffered(Entry):
    """An approver of a quorum approval offered a standing grant with their vote: the grant
    is made only if every approving vote offers the same."""

    type: Literal["grant_offered"] = "grant_offered"
    scope: dict[str, Any] | None = None
    """What the grant would cover (its tool, constraint, actor, room, expiry, uses)."""
    scope_digest: str | None = None
    """The SHA-256 hex digest of ``scope``'s canonical JSON: equal offers, equal digests."""


class Granted(Entry):
    """A standing grant was made on this approval (the approver, or the quorum, granted the
    same again)."""

    type: Literal["granted"] = "granted"
    grant: str | None = None
    """The grant's id."""
    granted_by: Actors | None = None
    """Who granted it."""
    quorum: int | None = None
    """How many approvals made it."""
    scope: dict[str, Any] | None = None
    """What it covers (its tool, constraint, actor, room, expiry, uses)."""


class GrantUsed(Entry):
    """The call ran without asking anyone: a standing grant covered it (the entry cites it)."""

    type: Literal["grant_used"] = "grant_used"
    grant: str | None = None
    """The grant's id."""
    use: int | None = None
    """Which use of the grant this was, from 1."""
    max_uses: int | None = None
    """The uses it allows (``None``: any number until it expires)."""
    expires_at: float | None = None
    """When it ends, in seconds since the epoch on the store's clock."""
    granted_by: Actors | None = None
    """Who granted it."""
    quorum: int | None = None
    """How many approvals made it."""
    source: str | None = None
    """The approval request it was made on, when a person granted it while approving."""


HistoryEntry = Annotated[
    Created
    | Shown
    | Voted
    | Decided
    | Settled
    | Defaulted
    | Executed
    | Escalated
    | Delivered
    | Saved
    | PolicyDecided
    | GrantOffered
    | Granted
    | GrantUsed,
    Field(discriminator="type"),
]
"""Any history entry: the model its ``type`` names."""

ENTRY_MODELS: Mapping[str, type[Entry]] = {
    "created": Created,
    "shown": Shown,
    "voted": Voted,
    "decided": Decided,
    "settled": Settled,
    "defaulted": Defaulted,
    "executed": Executed,
    "escalated": Escalated,
    "delivered": Delivered,
    "saved": Saved,
    "policy_decided": PolicyDecided,
    "grant_offered": GrantOffered,
    "granted": Granted,
    "grant_used": GrantUsed,
}
"""Each kind of entry's model, by its ``type``."""

ENTRY_TYPES: frozenset[str] = frozenset(ENTRY_MODELS)
"""The types of entry a history holds."""

_ENTRY: TypeAdapter[Any] = TypeAdapter(HistoryEntry, config=ConfigDict(defer_build=True))


def parse_entry(value: Mapping[str, Any] | str | bytes) -> HistoryEntry:
    """The typed entry ``value`` holds: a dict, or the JSON text a store keeps.

    Raises:
        ValueError: ``value`` is not JSON, not an object, its ``type`` is no kind of entry,
            or a field does not have its kind's type (the message names it).
    """
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise ValueError(f"a history entry is a JSON object: {error}") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"a history entry is a JSON object, got {type(value).__name__}")
    kind = value.get("type")
    if kind not in ENTRY_MODELS:
        raise ValueError(f"a history entry's type is one of {sorted(ENTRY_TYPES)}, got {kind!r}")
    try:
        entry: HistoryEntry = _ENTRY.validate_python(dict(value))
    except ValidationError as error:
        raise ValueError(f"not a {kind!r} history entry: {_first(error)}") from None
    return entry


_FIELDS: dict[type[Entry], ModelFields] = {
    model: model_fields(model) for model in ENTRY_MODELS.values()
}
"""Each model's plain fields, and all its fields, for :func:`check_fields`."""


def check_fields(model: type[Entry], value: Mapping[str, Any]) -> None:
    """Check that each field of ``value`` has the type ``model`` gives it.

    Raises:
        ValueError: one does not (the message names it and what it takes).
    """
    known = _FIELDS.get(model)
    if known is not None and plainly_typed(known, value):
        # A value of a type each plain field takes: the validator would take it too.
        return
    try:
        model.model_validate(value)
    except ValidationError as error:
        raise ValueError(f"not a {value.get('type')!r} history entry: {_first(error)}") from None


def _first(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = problem["loc"]
    if len(where) > 1 and where[0] in ENTRY_TYPES:
        where = where[1:]  # the union's tag
    return f"{'.'.join(str(part) for part in where) or 'the entry'}: {problem['msg']}"

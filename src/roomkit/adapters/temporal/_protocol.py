"""What the workflow side and the outside side of the Temporal bridge agree on.

The names of the one update handler and the activities, how a request made by a workflow
says which workflow, run and ask it belongs to, and the outcome a settle carries into the
workflow. This module imports nothing but the standard library and roomkit's plain data, so
that workflow code may import it inside Temporal's sandbox.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from roomkit.models.json_limits import MAX_KEY_CHARS
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.approvals import Decision, read_decision

__all__ = [
    "CHANNEL",
    "CREATE_ACTIVITY",
    "EXPIRE_ACTIVITY",
    "UPDATE_NAME",
    "WITHDRAW_ACTIVITY",
    "Origin",
    "decision_of",
    "elsewhere",
    "hashed_key",
    "origin_of",
    "outcome_of",
    "tool_call_id_of",
]

UPDATE_NAME = "roomkit.settle"
"""The one update handler through which every outcome of a workflow's requests arrives."""

CREATE_ACTIVITY = "roomkit.create"
"""The activity that creates (or re-attaches to) the request of one ask."""

EXPIRE_ACTIVITY = "roomkit.expire"
"""The activity that asks the store for the outcome once the workflow's timer fired."""

WITHDRAW_ACTIVITY = "roomkit.withdraw"
"""The activity that withdraws the request of an ask whose workflow was cancelled."""

CHANNEL = "temporal"
"""The ``channel_id`` of every request a workflow makes."""

_OUTCOME_LIMIT = 2 * 1024 * 1024 - 16 * 1024
"""Bytes of an outcome as JSON that Temporal carries into a workflow: its payload limit
(2 MiB, its default ``limit.blobSize.error``), less room for what wraps the outcome on the
way (the payload's metadata, and the message of the workflow task that accepts the update,
which holds the outcome again)."""

_PREFIX = "temporal:"


class Origin:
    """The workflow, its run, and the ask a request was made for, and the namespace the
    workflow runs in (``None`` for a request that does not say)."""

    __slots__ = ("namespace", "run_id", "seq", "workflow_id")

    def __init__(
        self, workflow_id: str, run_id: str, seq: int, namespace: str | None = None
    ) -> None:
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.seq = seq
        self.namespace = namespace

    def __repr__(self) -> str:
        return f"Origin({self.workflow_id!r}, {self.run_id!r}, {self.seq}, {self.namespace!r})"


def tool_call_id_of(origin: Origin) -> str:
    """The ``tool_call_id`` a workflow's request carries:
    ``temporal:<seq>:<run>@<namespace>:<workflow>`` (the workflow id last, since it may hold
    any character). The namespace is left out when it holds ``:`` or ``@``, or makes the id
    longer than a store keeps: the request then says no namespace, as one made before
    requests said it."""
    plain = f"{_PREFIX}{origin.seq}:{origin.run_id}:{origin.workflow_id}"
    namespace = origin.namespace
    if not namespace or ":" in namespace or "@" in namespace:
        return plain
    placed = f"{_PREFIX}{origin.seq}:{origin.run_id}@{namespace}:{origin.workflow_id}"
    return placed if len(placed) <= MAX_KEY_CHARS else plain


def origin_of(request: PendingInput) -> Origin | None:
    """Where ``request`` came from, when a workflow made it; ``None`` otherwise."""
    if request.channel_id != CHANNEL or not request.tool_call_id.startswith(_PREFIX):
        return None
    parts = request.tool_call_id[len(_PREFIX) :].split(":", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1] or not parts[2]:
        return None
    run_id, _, namespace = parts[1].partition("@")
    if not run_id:
        return None
    return Origin(parts[2], run_id, int(parts[0]), namespace or None)


def elsewhere(origin: Origin, namespace: str) -> bool:
    """Whether the request of ``origin`` was made in a namespace other than ``namespace``
    (one that does not say may be any namespace's: it is not)."""
    return origin.namespace is not None and origin.namespace != namespace


def hashed_key(key: str) -> str:
    """The form an ask's key takes on its request when, with its scope, it is longer than a
    store keeps: ``sha256:`` and the hex digest of it."""
    return f"sha256:{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"


def outcome_of(request: PendingInput, digest: str | None) -> dict[str, Any]:
    """The outcome of the settled ``request`` as the workflow receives it (JSON).

    ``digest`` is the digest of the arguments the workflow asked about (the request's
    ``created`` entry keeps it); the workflow refuses an outcome whose digest is not its own.

    An outcome Temporal would not carry (an answer given through the in-process API, past
    :data:`_OUTCOME_LIMIT` as JSON) would fail every workflow task that took it, and the
    workflow would never resume: it comes as a rejection instead, whose reason says so (an
    approval too large is not approved). The answer stays in the store.
    """
    origin = origin_of(request)
    outcome = {
        "pending_id": request.pending_id,
        "seq": None if origin is None else origin.seq,
        "status": request.status.value,
        "result": request.result,
        "reason": request.reject_reason,
        "withdrawn": request.withdrawn,
        "by": request.settled_by,
        "digest": digest,
        "arguments": request.arguments if request.kind == "approval" else None,
        "key": _ask_key(request.key),
    }
    # As Temporal's JSON converter writes it (ASCII: a character is a byte).
    size = len(json.dumps(outcome, separators=(",", ":")))
    if size <= _OUTCOME_LIMIT:
        return outcome
    return {
        **outcome,
        "status": PendingInputStatus.REJECTED.value,
        "result": None,
        "reason": (
            f"the outcome of request {request.pending_id} is {size} bytes as JSON, past the "
            f"{_OUTCOME_LIMIT} Temporal carries into a workflow: it stays in the "
            "store (HumanInputHandler.get_request), and the workflow takes it as refused; "
            "answer a workflow with an id or a URL of large content"
        ),
        "withdrawn": False,
        "arguments": None,
        "too_large": size,
    }


def _ask_key(key: str | None) -> str | None:
    """The key an ask made its request under, the scope a store keeps it in (a JSON array
    ``[room_id, channel_id, actor_id, key]``) taken off."""
    try:
        scoped = json.loads(key or "null")
    except ValueError:
        return key
    if isinstance(scoped, list) and scoped and isinstance(scoped[-1], str):
        return scoped[-1]
    return key


def settled(outcome: dict[str, Any]) -> bool:
    """Whether ``outcome`` (as :func:`outcome_of` makes it) is an outcome, not an open
    request."""
    return outcome.get("status") != PendingInputStatus.PENDING.value


def decision_of(result: str, arguments: dict[str, Any] | None, asked: dict[str, Any]) -> Decision:
    """The decision an approval's answer holds, as :mod:`roomkit.tools.approvals` gives it.

    An approval whose arguments an approver edited before the others approved is returned as
    the edit it amounts to. Kept in one place: the typed decision value of
    ``roomkit.tools.approvals`` is what a workflow gets back.
    """
    decision = read_decision(result, recorded=True)
    if decision.kind == "approve" and arguments is not None and arguments != asked:
        return Decision("edit", arguments)
    return decision

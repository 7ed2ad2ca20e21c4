"""A workflow's asks, and the validator and handler of the one update their outcomes come by.

An update's outcome is read in two steps. Its shape: each field the workflow reads is of
the type :func:`~roomkit.adapters.temporal._protocol.outcome_of` writes (a made-up update
that is not is refused naming the field, never taken and then failing the workflow task).
Its place: the ask it names, the request that ask made (or, while the ask's create
activity runs, a request made under the ask's own key, as a reset's run re-attaches to one;
a request of a run this one was retried or continued from is another ask's), the
arguments asked about, an ask not settled otherwise, and an answer that came before the
workflow's cancel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from roomkit._storable import unencodable_text
    from roomkit.adapters.temporal._protocol import hashed_key
    from roomkit.models.json_limits import MAX_ID_CHARS
    from roomkit.models.shown import shown
    from roomkit.tools.approvals import read_decision

__all__ = ["Ask", "Asks"]

_OUTCOMES = ("rejected", "resolved", "timed_out")
"""The statuses of a settled request: an update carrying any other is refused."""

_TEXT_FIELDS = ("result", "reason", "by", "default", "key")
"""The fields of an outcome that are text or null."""


@dataclass(slots=True)
class Ask:
    """One ask of a workflow: its place, its key, the digest of what it asked, and what came
    of it."""

    seq: int
    digest: str
    key: str
    kind: str
    pending_id: str | None = None
    outcome: dict[str, Any] | None = None
    after_cancel: bool = False
    """Made once the workflow was cancelled already (code that goes on after a cancel): its
    outcome is taken as any other's."""


class Asks:
    """A workflow's asks, and the update handler and validator they share."""

    def __init__(self) -> None:
        self.count = 0
        self.asks: dict[int, Ask] = {}

    def validate(self, outcome: Any) -> None:
        """Refuse an outcome of the wrong shape, for no ask of this workflow, for another
        request, for other arguments, for an ask already settled otherwise, or an answer
        that came after the workflow's cancel (a sync validator, as Temporal requires)."""
        if not isinstance(outcome, dict) or not isinstance(outcome.get("pending_id"), str):
            raise ValueError("a roomkit outcome is a JSON object naming its pending_id")
        pending_id = outcome["pending_id"]
        if len(pending_id) > MAX_ID_CHARS:
            # Not echoed: a refusal's message past Temporal's payload limit fails the
            # workflow task, and the run takes no update until it is retried.
            raise ValueError(
                f"a roomkit outcome's pending_id is an id of at most {MAX_ID_CHARS} "
                f"characters, got {len(pending_id):,}"
            )
        problem = unencodable_text(pending_id)
        if problem is not None:
            # Not echoed either: a refusal's message UTF-8 cannot encode reaches the caller
            # as a bare "Failure error".
            raise ValueError(
                f"a roomkit outcome's pending_id must hold valid Unicode text, but holds "
                f"{problem}, which UTF-8 cannot encode: send the id of the request it settles"
            )
        _check_shape(pending_id, outcome)
        seq = outcome.get("seq")
        ask = self.asks.get(seq) if type(seq) is int else None
        if ask is None:
            raise ValueError(f"request {shown(pending_id)} is not one this workflow made")
        if ask.pending_id is not None and ask.pending_id != pending_id:
            raise ValueError(
                f"request {shown(pending_id)} is not ask {seq} of this workflow "
                f"({shown(ask.pending_id)} is)"
            )
        key = outcome.get("key")
        if ask.pending_id is None and key not in (None, ask.key, hashed_key(ask.key)):
            # The ask's create runs: only a request made under its key is its own. One of a
            # run this run was retried or continued as new from is that run's: this run asks
            # afresh, and would drop the answer once its create returned.
            raise ValueError(
                f"request {shown(pending_id)} was made by an earlier run of this workflow (the run "
                f"was retried or continued as new): its ask {seq} asks afresh"
            )
        if outcome.get("digest") != ask.digest:
            raise ValueError(
                f"request {shown(pending_id)} does not match the arguments ask {seq} asked about "
                "(their digest differs)"
            )
        if ask.kind == "approval" and outcome["status"] == "resolved":
            _check_decision(pending_id, outcome)
        if ask.kind == "approval" and outcome.get("default") is not None:
            _check_default(pending_id, outcome["default"])
        taken = ask.outcome
        if (
            taken is None
            and not ask.after_cancel
            and not outcome.get("withdrawn")
            and workflow.cancellation_reason() is not None
        ):
            # The workflow has seen its cancel: the ask's wait ends cancelled, the answer is
            # not taken, and the delivery records why. (An update that comes in the same
            # workflow task as the cancel is applied first, and taken.) Validators do not
            # run on replay, so an update accepted before this check replays as it was.
            raise ValueError(
                f"request {shown(pending_id)}: the workflow was cancelled before it took the answer"
            )
        if taken is not None and (
            taken["pending_id"] != pending_id or taken["status"] != outcome["status"]
        ):
            raise ValueError(f"ask {seq} of this workflow has settled already")

    def settle(self, outcome: dict[str, Any]) -> dict[str, Any]:
        """Take a validated outcome (a repeat of the one taken changes nothing)."""
        ask = self.asks[outcome["seq"]]
        if ask.outcome is None:
            ask.outcome = outcome
        return {"accepted": True, "pending_id": outcome["pending_id"]}


def _check_shape(pending_id: str, outcome: dict[str, Any]) -> None:
    """Refuse an outcome whose fields are not of the types a settled request gives them.

    Raises:
        ValueError: one is not; the message names it and what it takes.
    """
    status = outcome.get("status")
    if not isinstance(status, str) or status not in _OUTCOMES:
        got = shown(status) if isinstance(status, str) else f"a {type(status).__name__}"
        raise ValueError(
            f"request {shown(pending_id)}: a roomkit outcome's status is one of "
            f"{', '.join(map(repr, _OUTCOMES))} (the request has settled), got {got}"
        )
    for field in _TEXT_FIELDS:
        value = outcome.get(field)
        if value is not None and not isinstance(value, str):
            raise ValueError(
                f"request {shown(pending_id)}: a roomkit outcome's {field} is text or null, "
                f"got a {type(value).__name__}"
            )
        problem = None if value is None else unencodable_text(value)
        if problem is not None:
            # No store keeps such text, so no settle sends it; a workflow that took it would
            # hand it on to whatever writes it out, far from the update that carried it.
            raise ValueError(
                f"request {shown(pending_id)}: a roomkit outcome's {field} must hold valid Unicode "
                f"text, but holds {problem}, which UTF-8 cannot encode: send it as UTF-8 text"
            )
    if not isinstance(outcome.get("withdrawn", False), bool):
        raise ValueError(
            f"request {shown(pending_id)}: a roomkit outcome's withdrawn is true or false, got a "
            f"{type(outcome['withdrawn']).__name__}"
        )


def _check_decision(pending_id: str, outcome: dict[str, Any]) -> None:
    """Refuse an approval's answer that holds no decision, or arguments that are no object.

    Raises:
        ValueError: it does; the message says which field.
    """
    arguments = outcome.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise ValueError(
            f"request {shown(pending_id)}: a roomkit outcome's arguments is an object of the "
            f"call's arguments or null, got a {type(arguments).__name__}"
        )
    try:
        read_decision(outcome.get("result") or "", recorded=True)
    except ValueError as error:
        raise ValueError(
            f"request {shown(pending_id)}: a roomkit outcome's result is no decision: {error}"
        ) from None


def _check_default(pending_id: str, default: str) -> None:
    """Refuse an approval's timeout whose default holds no decision (the ask's ladder holds
    one: the workflow would fail on it).

    Raises:
        ValueError: it holds none.
    """
    try:
        read_decision(default, recorded=True)
    except ValueError as error:
        raise ValueError(
            f"request {shown(pending_id)}: a roomkit outcome's default is no decision: {error}"
        ) from None

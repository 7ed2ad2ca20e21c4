"""Request histories as A2A authorization-evidence records, hash-chained.

The A2A authorization, delegation and evidence extension (``urn:a2a:ext:authorization:v1``,
a proposal) keeps a chain of evidence records: each names the agent, the task, the action
and its intent, the decision (``ALLOW``, ``DENY`` or ``ABSTAIN``) and the outcome, and carries
``record_hash = SHA-256(prev_record_hash || canonical_json(record without its hashes))``,
the first record's ``prev_record_hash`` being 64 zeros. :func:`evidence_records` writes one
record per settled request of a history export, in the order they settled, so a third party
checks the chain with the proposal's own algorithm (:func:`chain_problem` does the same).

A request's decision: an approval approved or edited is ``ALLOW``, rejected ``DENY``; a
question answered is ``ALLOW``, refused ``DENY``; a request that timed out or was withdrawn,
``ABSTAIN``. The task is the A2A task that showed the request (the ``task`` of its ``shown``
entry on the ``a2a`` surface), or the request's room when A2A did not ask.

A history written by an earlier version may hold a text with a lone surrogate (the JSON
escape ``"\\ud800"``), which canonical JSON cannot hash: its record carries U+FFFD in its
place, so that the chain holds for whoever checks it; the history itself is not changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from roomkit._storable import replaced_surrogates, unencodable_text

__all__ = [
    "GENESIS",
    "canonical_json",
    "chain_problem",
    "chained",
    "evidence_record",
    "evidence_records",
]

GENESIS = "0" * 64
"""The ``prev_record_hash`` of the first record."""
_HASHES = ("prev_record_hash", "record_hash")
_DECIDED = {"approve": "ALLOW", "edit": "ALLOW", "respond": "ALLOW", "reject": "DENY"}
_SETTLED = {"resolved": "ALLOW", "rejected": "DENY", "timed_out": "ABSTAIN"}


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 as is: the text a record's hash covers."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _hash(prev: str, record: Mapping[str, Any]) -> str:
    body = {key: value for key, value in record.items() if key not in _HASHES}
    return hashlib.sha256((prev + canonical_json(body)).encode("utf-8")).hexdigest()


def evidence_record(
    pending_id: str, entries: Sequence[Mapping[str, Any]], *, agent_id: str = "roomkit"
) -> dict[str, Any] | None:
    """The evidence record of one request (its history entries, oldest first), its hashes
    not set yet (:func:`chained` sets them), with U+FFFD in place of each lone surrogate;
    ``None`` while it is not settled."""
    created = next((e for e in entries if e.get("type") == "created"), None)
    settled = next((e for e in reversed(entries) if e.get("type") == "settled"), None)
    if created is None or settled is None:
        return None
    status = str(settled.get("status"))
    decided = [e for e in entries if e.get("type") == "decided"]
    if settled.get("withdrawn") or status == "withdrawn":
        decision = "ABSTAIN"
    elif decided:
        decision = _DECIDED.get(str(decided[-1].get("decision")), "ABSTAIN")
    else:
        decision = _SETTLED.get(status, "ABSTAIN")
    shown = next(
        (e for e in entries if e.get("type") == "shown" and e.get("surface") == "a2a"), None
    )
    task = shown.get("task") if shown is not None else None
    who = settled.get("actor")
    where = settled.get("surface")
    outcome = status + (f" by {who}" if who else "") + (f" on {where}" if where else "")
    record: dict[str, Any] = {
        "record_id": f"{pending_id}.{settled.get('seq', len(entries) - 1)}",
        "agent_id": agent_id,
        "task_id": str(task or created.get("room") or ""),
        "action_type": str(created.get("tool")),
        "intent": {
            "tool": created.get("tool"),
            "arguments": created.get("arguments"),
            "arguments_digest": created.get("digest"),
        },
        "decision": decision,
        "outcome": outcome,
        "outcome_status": status,
        "timestamp_utc": settled.get("at"),
    }
    if unencodable_text(record) is not None:
        replaced: dict[str, Any] = replaced_surrogates(record)
        return replaced
    return record


def evidence_records(
    chains: Mapping[str, Sequence[Mapping[str, Any]]], *, agent_id: str = "roomkit"
) -> list[dict[str, Any]]:
    """One hash-chained evidence record per settled request of ``chains`` (a request's id
    to its history entries, oldest first), in the order they settled."""
    return chained(
        record
        for pending_id, entries in chains.items()
        if (record := evidence_record(pending_id, entries, agent_id=agent_id)) is not None
    )


def chained(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` (:func:`evidence_record`'s) in the order they settled, hash-chained."""
    ordered = sorted(records, key=lambda r: (str(r["timestamp_utc"]), r["record_id"]))
    prev = GENESIS
    for record in ordered:
        record["prev_record_hash"] = prev
        record["record_hash"] = prev = _hash(prev, record)
    return ordered


def chain_problem(records: Iterable[Mapping[str, Any]]) -> str | None:
    """What breaks the chain, checked as the proposal checks it; ``None`` when it holds.

    The records may come from anyone: one that is no JSON object, or holds what canonical
    JSON cannot write (text with a lone surrogate, which a JSON file may carry as the
    escape ``"\\ud800"``), breaks the chain there, as a record changed after it was hashed.
    """
    prev = GENESIS
    for index, record in enumerate(records):
        if not isinstance(record, Mapping):
            return f"record {index} is no JSON object"
        if record.get("prev_record_hash") != prev:
            return f"record {index} does not follow the one before it"
        try:
            expected = _hash(prev, record)
        except (TypeError, ValueError):
            # UnicodeEncodeError (a lone surrogate) is a ValueError; a key or value JSON
            # has no form for is a TypeError or ValueError of json.dumps.
            return f"record {index} holds what canonical JSON cannot write: no hash covers it"
        if record.get("record_hash") != expected:
            return f"record {index} was changed after it was hashed"
        prev = str(record["record_hash"])
    return None

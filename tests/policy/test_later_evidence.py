"""A policy's evidence and a run's result kept as they are on the memory store, their
``policy_decided`` and ``executed`` entries made when the history is read: the same entries
(the same input digest) as a durable store writes at once, and a chain that holds."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.tools.human_input.stores.trail_places import KEYS

from roomkit import HumanInputHandler, HumanInputToolHandler, InvalidTextError, UnknownRequestError
from roomkit.models.pending_input import arguments_digest
from roomkit.policy import Allow, CedarPolicy, PolicyCall
from roomkit.policy.evidence import PolicyEvidence, input_digest
from roomkit.stores import MAX_ENTRY_CHARS, CarriedTrail, check_entry, check_trail
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import create_decided, record_run

CEDAR = """
@id("payments")
permit(principal, action == Action::"pay", resource);
"""
ARGUMENTS = {"to": "bob", "amount": 5}


def _call(arguments: dict[str, Any]) -> PolicyCall:
    return PolicyCall("pay", arguments, arguments_digest("pay", arguments), "alice", "r1", "agent")


class Because:
    """A policy that allows every call, with a reason of the test's."""

    name = "because"

    def __init__(self, reason: Any) -> None:
        self.reason = reason

    def decide(self, call: PolicyCall) -> Allow:
        return Allow(self.reason)


async def test_the_entry_read_is_the_entry_made_at_once(turn: Any) -> None:
    """The input is digested when the history is read, to the value it has when the entry
    is made as the call is recorded, and the audit trail holds."""
    human = HumanInputToolHandler({"Ask"}, policy=CedarPolicy(CEDAR))
    trail = human.handler.audit_trail
    assert isinstance(trail, CarriedTrail)
    trail.use_keys(KEYS)
    ran = await turn(human, dict(ARGUMENTS))
    assert ran.paid == [ARGUMENTS]
    assert await ran.types() == ["created", "policy_decided", "decided", "settled", "executed"]
    decided = await ran.decided()
    assert decided["input_digest"] == input_digest(_call(ARGUMENTS))
    assert check_trail(await trail.read(), KEYS, now=time.time()).problems == []


async def test_memory_and_a_durable_store_record_the_same_evidence(tmp_path: Path) -> None:
    """The evidence kept and made when read (memory) and made as it is recorded (SQLite)
    give the same entry."""
    evidence = PolicyEvidence(
        "p", "sha256:0123", _call(dict(ARGUMENTS)), "allow", "fine", True, False, time.time_ns()
    )
    entries = []
    async with SQLiteStore(tmp_path / "evidence.db") as store:
        for handler in (HumanInputHandler(), HumanInputHandler(store=store)):
            made = await create_decided(
                handler, "pay", dict(ARGUMENTS), approve(), by="policy:p", history=(evidence,)
            )
            (_, decided, *_) = await handler.history(made.pending_id)
            entries.append({key: decided[key] for key in decided if key != "prev"})
    kept, written = entries
    assert kept == written
    assert kept == {**check_entry(evidence.entry()), "seq": 1}
    assert kept["input_digest"] == input_digest(_call(ARGUMENTS))


@pytest.mark.parametrize("reason", ["d\u00e9j\u00e0 vu", "x" * 10_000, 'quote " and \\'])
async def test_a_reason_of_any_text_is_kept_as_given(turn: Any, reason: str) -> None:
    ran = await turn(HumanInputToolHandler({"Ask"}, policy=Because(reason)), dict(ARGUMENTS))
    assert ran.paid == [ARGUMENTS]
    decided = await ran.decided()
    assert (decided["reason"], decided["decision"]) == (reason, "allow")


@pytest.mark.parametrize(
    ("reason", "error"),
    [("\ud800", InvalidTextError), ("x" * (MAX_ENTRY_CHARS + 1), ValueError), (42, ValueError)],
)
async def test_evidence_no_history_takes_is_refused_as_it_is_recorded(
    reason: Any, error: type[Exception]
) -> None:
    """Evidence kept to be made later is checked when it is kept: nothing is stored."""
    handler = HumanInputHandler()
    evidence = PolicyEvidence(
        "p", None, _call(dict(ARGUMENTS)), "allow", reason, True, False, time.time_ns()
    )
    with pytest.raises(error):
        await create_decided(
            handler, "pay", dict(ARGUMENTS), approve(), by="policy:p", history=(evidence,)
        )
    assert await handler.list_settled() == []
    assert handler.statistics().active_requests == 0


@pytest.mark.parametrize("content", ['{"found": true}', "r\u00e9sultat", "x" * 10_000])
async def test_a_run_is_recorded_alike_on_memory_and_a_durable_store(
    tmp_path: Path, content: str
) -> None:
    """A run's ``executed`` entry, kept on the memory store and made when read, is the entry
    a durable store writes at once."""
    entries = []
    async with SQLiteStore(tmp_path / "runs.db") as store:
        for handler in (HumanInputHandler(), HumanInputHandler(store=store)):
            made = await create_decided(handler, "pay", dict(ARGUMENTS), approve(), by="policy:p")
            digest = made.arguments_digest
            seq = await record_run(
                handler, made.pending_id, digest, ran=True, is_error=False, content=content
            )
            history = await handler.history(made.pending_id)
            assert seq == len(history) - 1
            entries.append(
                {key: history[-1][key] for key in history[-1] if key not in ("at", "prev")}
            )
    kept, written = entries
    assert kept == written
    assert kept["type"] == "executed"
    assert (kept["content"], kept["ran"], kept["is_error"]) == (content, True, False)


@pytest.mark.parametrize(
    ("content", "error"), [("\udc80", InvalidTextError), ("x" * (MAX_ENTRY_CHARS + 1), ValueError)]
)
async def test_a_run_no_history_takes_is_refused_and_nothing_is_kept(
    content: str, error: type[Exception]
) -> None:
    handler = HumanInputHandler()
    made = await create_decided(handler, "pay", dict(ARGUMENTS), approve(), by="policy:p")
    before = await handler.history(made.pending_id)
    with pytest.raises(error):
        await record_run(handler, made.pending_id, None, ran=True, is_error=False, content=content)
    assert await handler.history(made.pending_id) == before


async def test_a_run_of_a_request_no_longer_kept_is_unknown() -> None:
    handler = HumanInputHandler()
    with pytest.raises(UnknownRequestError):
        await record_run(handler, "gone", None, ran=True, is_error=False, content="ok")

"""A call a policy let run without anyone has a chain that ``roomkit audit verify`` vouches
for: created, policy_decided, the policy's decision, executed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from engines import CASES, CEDAR

from roomkit import HumanInputHandler, HumanInputToolHandler
from roomkit.cli import main
from roomkit.models.pending_input import PendingInputStatus
from roomkit.policy import CedarPolicy
from roomkit.stores import new_entry
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import created_with, decided_at_once


async def test_an_allowed_call_has_a_chain_audit_verify_passes(
    tmp_path: Path, turn: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path / "no-data-dir"))
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    database = tmp_path / "trail.db"
    async with SQLiteStore(database) as store:
        handler = HumanInputHandler(store=store)
        human = HumanInputToolHandler({"Ask"}, handler=handler, policy=CedarPolicy(CEDAR))
        allowed = await turn(human, CASES["allow"])
        assert allowed.paid == [CASES["allow"]]
        assert allowed.asked == []
        (history,) = await allowed.histories()
        types = [entry["type"] for entry in history]
        assert types == ["created", "policy_decided", "decided", "settled", "executed"]
        decided = history[1]
        assert decided["actor"] == "policy:cedar"
        assert decided["decision"] == "allow"
        assert len(decided["input_digest"]) == 64
        assert decided["version"].startswith("sha256:")
        assert history[2]["actor"] == "policy:cedar"
        assert history[-1]["ran"] is True
        denied = await turn(human, CASES["deny"], room="r2")
        assert denied.paid == []
        (refusal,) = [
            history for history in await denied.histories() if history[1].get("decision") == "deny"
        ]
        types = [entry["type"] for entry in refusal]
        assert types == ["created", "policy_decided", "decided", "settled"]
        assert refusal[2]["decision"] == "reject"
    capsys.readouterr()  # only what the command writes is checked below
    # The command runs its own event loop: in a thread of its own.
    code = await asyncio.to_thread(main, ["audit", "verify", "--store", f"sqlite:///{database}"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "2 request histories" in out
    assert "every chain holds" in out


async def test_a_policy_decides_the_open_request_its_key_re_attaches_to(tmp_path: Path) -> None:
    """A call re-driven under its key finds its request still open (a person was asked
    before): the policy's decision now joins its history and settles it."""
    async with SQLiteStore(tmp_path / "trail.db") as store:
        handler = HumanInputHandler(store=store)
        asked = await handler.create_approval(
            "pay", {"to": "bob", "amount": 5}, approvers=["carol"], key="r1:agent:tc-1"
        )
        entry = new_entry("policy_decided", actor="policy:p", decision="allow", enforced=True)
        with created_with(entry), decided_at_once(approve(), by="policy:p", surface="policy"):
            again = await handler.create_approval(
                "pay", {"to": "bob", "amount": 5}, approvers=["policy:p"], key="r1:agent:tc-1"
            )
        assert again.pending_id == asked.pending_id
        settled = await handler.get_request(asked.pending_id)
        assert settled is not None
        assert (settled.status, settled.settled_by) == (PendingInputStatus.RESOLVED, "policy:p")
        history = await handler.history(asked.pending_id)
        assert [item["type"] for item in history] == [
            "created",
            "policy_decided",
            "decided",
            "settled",
        ]
        assert history[2]["actor"] == "policy:p"
        assert await handler.wait(asked.pending_id, timeout=None) == approve()


async def test_an_asked_calls_chain_on_a_durable_store_starts_with_the_policys_decision(
    tmp_path: Path, turn: Any
) -> None:
    """The policy's Ask is written with the request, once, ahead of the approver's decision
    (who answers the moment they are told)."""
    async with SQLiteStore(tmp_path / "asked.db") as store:
        handler = HumanInputHandler(store=store)
        human = HumanInputToolHandler({"Ask"}, handler=handler, policy=CedarPolicy(CEDAR))
        done = await turn(human, CASES["ask"], answer=approve())
        assert len(done.asked) == 1
        (history,) = await done.histories()
    types = [entry["type"] for entry in history]
    assert types[:2] == ["created", "policy_decided"]
    assert types.count("policy_decided") == 1
    assert types.index("decided") > 1
    assert history[1]["decision"] == "ask"
    assert done.paid == [CASES["ask"]]

"""A call nobody is asked about, recorded by ``create_decided``: on the memory store in one
go, with the same history, outcome and audit trail as the handler's own path gives it."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.tools.human_input.stores.trail_places import KEYS

from roomkit import HumanInputHandler, HumanInputRejectedError
from roomkit.models.pending_input import PendingInputStatus, arguments_digest
from roomkit.stores import CarriedTrail, check_trail, new_entry
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve, reject
from roomkit.tools.human_input import create_decided, created_with, decided_at_once, unannounced

ARGUMENTS = {"to": "bob", "amount": 5}
DECISIONS = {"approve": approve(), "reject": reject("over the limit")}


def _evidence() -> dict[str, Any]:
    return new_entry(
        "policy_decided", actor="policy:p", surface="policy", decision="allow", enforced=True
    )


async def _through_the_handler(handler: HumanInputHandler, kind: str) -> str:
    """The same call recorded as the handler's own path records it."""
    with (
        unannounced(),
        created_with(_evidence()),
        decided_at_once(DECISIONS[kind], by="policy:p", surface="policy"),
    ):
        request = await handler.create_approval(
            "pay",
            dict(ARGUMENTS),
            approvers=["policy:p"],
            tool_schema={"type": "object"},
            room_id="r",
            tool_call_id="tc-1",
            channel_id="agent",
            actor_id="alice",
            surface="policy",
            description="Pay someone.",
        )
    # The wait collects the settled request (the handler's cleanup of a request it made).
    with contextlib.suppress(HumanInputRejectedError):
        await handler.wait(request.pending_id, timeout=None)
    return request.pending_id


async def _in_one_go(handler: HumanInputHandler, kind: str) -> str:
    request = await create_decided(
        handler,
        "pay",
        dict(ARGUMENTS),
        DECISIONS[kind],
        by="policy:p",
        surface="policy",
        digest=arguments_digest("pay", ARGUMENTS),
        history=(_evidence(),),
        tool_schema={"type": "object"},
        room_id="r",
        tool_call_id="tc-1",
        channel_id="agent",
        actor_id="alice",
        description="Pay someone.",
    )
    return request.pending_id


def _without_times(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {key: value for key, value in entry.items() if key not in ("at", "prev")}
        for entry in history
    ]


@pytest.mark.parametrize("kind", ["approve", "reject"])
async def test_the_record_in_one_go_is_the_handlers_record(kind: str) -> None:
    handler = HumanInputHandler()
    trail = handler.audit_trail
    assert isinstance(trail, CarriedTrail)
    trail.use_keys(KEYS)
    made = await _in_one_go(handler, kind)
    told = await _through_the_handler(handler, kind)
    fast, slow = await handler.get_request(made), await handler.get_request(told)
    assert fast is not None
    assert slow is not None
    status = PendingInputStatus.RESOLVED if kind == "approve" else PendingInputStatus.REJECTED
    for request in (fast, slow):
        assert (request.status, request.settled_by, request.kind) == (
            status,
            "policy:p",
            "approval",
        )
        assert request.arguments_digest == arguments_digest("pay", ARGUMENTS)
    assert (fast.result, fast.reject_reason) == (slow.result, slow.reject_reason)
    # Both are retired, as a wait would leave them: nothing is left open.
    assert handler.statistics().active_requests == 0
    made_history, told_history = await handler.history(made), await handler.history(told)
    assert [entry["type"] for entry in made_history] == [
        "created",
        "policy_decided",
        "decided",
        "settled",
    ]
    assert _without_times(made_history) == _without_times(told_history)
    assert check_trail(await trail.read(), KEYS, now=time.time()).problems == []


@pytest.mark.parametrize(
    "arguments", [{"to": "bob", "amount": 5}, {"to": "bob", "lines": [{"amount": 5}]}]
)
async def test_the_arguments_recorded_are_those_the_call_was_made_with(
    arguments: dict[str, Any],
) -> None:
    """A tool that changes the arguments it is handed changes nothing recorded."""
    handler = HumanInputHandler()
    made = await create_decided(
        handler, "pay", json.loads(json.dumps(arguments)), approve(), by="policy:p"
    )
    assert made.arguments == arguments
    made.arguments["to"] = "mallory"
    if "lines" in made.arguments:
        made.arguments["lines"][0]["amount"] = 5000
    (created, *_) = await handler.history(made.pending_id)
    assert created["arguments"] == arguments
    assert created["digest"] == arguments_digest("pay", arguments)


async def test_a_durable_store_takes_the_handlers_path(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "decided.db") as store:
        handler = HumanInputHandler(store=store)
        made = await _in_one_go(handler, "reject")
        request = await handler.get_request(made)
        assert request is not None
        assert (request.status, request.settled_by) == (PendingInputStatus.REJECTED, "policy:p")
        history = await handler.history(made)
        assert [entry["type"] for entry in history] == [
            "created",
            "policy_decided",
            "decided",
            "settled",
        ]
        assert history[2]["reason"] == "over the limit"


async def test_an_entry_that_is_no_history_entry_is_refused_and_nothing_is_stored() -> None:
    handler = HumanInputHandler()
    with pytest.raises(ValueError, match="type is one of"):
        await create_decided(
            handler,
            "pay",
            dict(ARGUMENTS),
            approve(),
            by="policy:p",
            history=({"type": "x", "at": "t"},),
        )
    assert handler.statistics().active_requests == 0
    assert await handler.list_settled() == []


async def test_a_settle_no_history_could_keep_stores_nothing(tmp_path: Path) -> None:
    """A rejection whose reason no ``decided`` entry holds is refused before the request is
    stored: none is left pending."""
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    try:
        with pytest.raises(ValueError, match="at most 89900 characters"):
            await create_decided(
                handler, "pay", dict(ARGUMENTS), reject("\x01" * 20_000), by="policy:p"
            )
        assert await handler.list_pending() == []
        assert await handler.list_settled() == []
    finally:
        await handler.close()
        await store.close()

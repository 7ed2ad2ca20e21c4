"""An approval offered with fewer decisions refuses the others and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from roomkit.core.exceptions import InvalidAnswerError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve, edit, reject, respond
from roomkit.tools.human_input import HumanInputHandler

SCHEMA = {"type": "object", "properties": {"to": {"type": "string"}}}


@pytest.fixture(params=["memory", "sqlite"])
async def handler(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    if request.param == "memory":
        yield HumanInputHandler()
        return
    store = SQLiteStore(tmp_path / "decisions.db")
    yield HumanInputHandler(store=store)
    await store.close()


async def test_a_decision_not_offered_is_refused(handler: HumanInputHandler) -> None:
    """edit and respond on an approve/reject approval raise; the request stays open."""
    request = await handler.create_approval(
        "send",
        {"to": "bob"},
        approvers=["alice"],
        tool_schema=SCHEMA,
        decisions=["approve", "reject"],
    )
    for text in (edit({"to": "carol"}), respond("done")):
        with pytest.raises(InvalidAnswerError, match="takes approve, reject only"):
            await handler.aresolve(request.pending_id, text, by="alice")
    stored = await handler.get_request(request.pending_id)
    assert stored is not None
    assert stored.status is PendingInputStatus.PENDING
    assert stored.answer_schema == {**SCHEMA, "x-roomkit-decisions": ["approve", "reject"]}
    assert await handler.aresolve(request.pending_id, approve(), by="alice")


async def test_an_approval_takes_every_decision_by_default(handler: HumanInputHandler) -> None:
    request = await handler.create_approval("send", {"to": "bob"}, tool_schema=SCHEMA)
    assert request.answer_schema == SCHEMA
    assert await handler.aresolve(request.pending_id, respond("done by hand"))


async def test_a_rejection_is_always_taken(handler: HumanInputHandler) -> None:
    request = await handler.create_approval(
        "send", {"to": "bob"}, decisions=["approve", "edit", "reject"]
    )
    assert await handler.aresolve(request.pending_id, reject("no"))


@pytest.mark.parametrize(
    ("decisions", "error"),
    [("approve", TypeError), (["approve"], ValueError), (["approve", "reject", "ok"], ValueError)],
)
async def test_bad_decisions_are_refused_at_creation(
    handler: HumanInputHandler, decisions: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        await handler.create_approval("send", {}, decisions=decisions)  # type: ignore[arg-type]


async def test_the_desk_refuses_a_decision_not_offered_and_says_which_are() -> None:
    from tests.desk.desk_harness import World, bearer

    world = World()
    await world.room("room", "alice")
    request = await world.handler.create_approval(
        "send",
        {"to": "bob"},
        approvers=["alice"],
        room_id="room",
        tool_schema=SCHEMA,
        decisions=["approve", "reject"],
    )
    url = f"/api/requests/{request.pending_id}/answer"
    async with world.client() as client:
        view = await client.get(f"/api/requests/{request.pending_id}", headers=bearer("alice"))
        assert view.json()["answer_schema"]["x-roomkit-decisions"] == ["approve", "reject"]
        body = {"decision": "respond", "result": "done by hand"}
        refused = await client.post(url, json=body, headers=bearer("alice"))
        assert refused.status_code == 422, refused.text
        assert "approve, reject only" in refused.text
    stored = await world.handler.get_request(request.pending_id)
    assert stored is not None
    assert stored.status is PendingInputStatus.PENDING

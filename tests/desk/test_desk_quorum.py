"""Quorum approvals on the desk: every listed approver sees and votes, the view shows the
progress, each vote is pushed to the others, and ``roomkit pending approve`` votes as the
token's actor."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from desk_harness import SECRET, World, bearer, next_frame, serve, socket_for, token

from roomkit.cli import main
from roomkit.desk import issue_answer_link
from roomkit.people import Delegation, Directory, Person
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}},
    "required": ["amount"],
    "additionalProperties": False,
}


@pytest.fixture
async def world() -> World:
    world = World()
    await world.room("room", "alice", "bob", "carol", "dave")
    return world


async def hold(world: World) -> str:
    request = await world.handler.create_approval(
        "pay",
        {"amount": 900},
        approvers=["alice", "bob", "carol"],
        tool_schema=SCHEMA,
        room_id="room",
        actor_id="alice",
        quorum=2,
    )
    return request.pending_id


async def test_each_listed_approver_sees_it_and_votes(world: World) -> None:
    pending_id = await hold(world)
    async with world.client() as client:
        listed = {
            actor: [
                v["id"]
                for v in (await client.get("/api/requests", headers=bearer(actor))).json()[
                    "requests"
                ]
            ]
            for actor in ("bob", "carol", "dave")
        }
        voted = await client.post(
            f"/api/requests/{pending_id}/answer",
            json={"decision": "approve"},
            headers=bearer("bob"),
        )
        again = await client.post(
            f"/api/requests/{pending_id}/answer",
            json={"decision": "approve"},
            headers=bearer("bob"),
        )
        still = (await client.get(f"/api/requests/{pending_id}", headers=bearer("bob"))).json()
    assert listed == {"bob": [pending_id], "carol": [pending_id], "dave": []}
    assert voted.status_code == 200
    view = voted.json()
    assert (view["status"], view["quorum"], view["approved_by"]) == ("pending", 2, ["bob"])
    assert view["approvers"] == ["alice", "carol"]
    assert [vote["actor"] for vote in view["votes"]] == ["bob"]
    assert again.status_code == 403, "bob voted: he decides no more, and still sees it"
    assert "Your vote on this approval is in already" in again.json()["detail"]
    assert still["voters"] == ["alice", "bob", "carol"]


async def test_a_vote_is_pushed_to_the_other_approvers(world: World) -> None:
    pending_id = await hold(world)
    async with serve(world.app) as base, socket_for(base, "carol") as (carol, snapshot):
        assert [view["id"] for view in snapshot] == [pending_id]
        async with world.client() as client:
            await client.post(
                f"/api/requests/{pending_id}/answer",
                json={"decision": "edit", "arguments": {"amount": 500}},
                headers=bearer("bob"),
            )
        updated = (await next_frame(carol, "question_updated"))["request"]
        async with world.client() as client:
            await client.post(
                f"/api/requests/{pending_id}/answer",
                json={"decision": "approve"},
                headers=bearer("carol"),
            )
        settled = (await next_frame(carol, "question_settled"))["request"]
    assert updated["arguments"] == {"amount": 500}
    assert updated["approved_by"] == ["bob"]
    assert updated["approvers"] == ["alice", "carol"]
    assert (settled["status"], settled["settled_by"]) == ("resolved", "carol")


async def test_the_terminal_votes_as_the_tokens_actor(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_DESK_URL", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)
    pending_id = await hold(world)
    async with serve(world.app) as base:
        monkeypatch.setenv("ROOMKIT_TOKEN", token("carol"))
        code = await asyncio.to_thread(main, ["pending", "approve", pending_id, "--url", base])
        first = capsys.readouterr()
        monkeypatch.setenv("ROOMKIT_TOKEN", token("alice"))
        again = await asyncio.to_thread(main, ["pending", "approve", pending_id, "--url", base])
        second = capsys.readouterr()
    assert (code, first.err) == (0, "")
    assert first.out.strip() == f"Voted on {pending_id}: 1 of 2 approvals — waiting for alice, bob"
    assert (again, second.err) == (0, "")
    assert second.out.strip() == f"Approved {pending_id}"
    record = await world.handler.get_request(pending_id)
    assert record is not None
    assert [vote.actor for vote in record.votes] == ["carol", "alice"]


async def test_a_desk_button_on_arguments_since_edited_is_refused(world: World) -> None:
    """Carol's page showed 900; bob's edit made it 500: her Approve, which names the digest
    she was shown, gets 409 quoting the new arguments, and decides nothing."""
    pending_id = await hold(world)
    url = f"/api/requests/{pending_id}/answer"
    async with world.client() as client:
        shown = (await client.get(f"/api/requests/{pending_id}", headers=bearer("carol"))).json()
        edited = await client.post(
            url,
            json={
                "decision": "edit",
                "arguments": {"amount": 500},
                "digest": shown["arguments_digest"],
            },
            headers=bearer("bob"),
        )
        stale = await client.post(
            url,
            json={"decision": "approve", "digest": shown["arguments_digest"]},
            headers=bearer("carol"),
        )
        rejected = await client.post(
            f"/api/requests/{pending_id}/reject",
            json={"reason": "no", "digest": shown["arguments_digest"]},
            headers=bearer("carol"),
        )
        current = (await client.get(f"/api/requests/{pending_id}", headers=bearer("carol"))).json()
        fresh = await client.post(
            url,
            json={"decision": "approve", "digest": current["arguments_digest"]},
            headers=bearer("carol"),
        )
    assert edited.status_code == 200
    assert stale.status_code == 409
    assert '"amount": 500' in stale.json()["detail"]
    assert "nothing was decided" in stale.json()["detail"]
    assert rejected.status_code == 409
    assert current["status"] == "pending"
    assert [vote["actor"] for vote in current["votes"]] == ["bob"]
    assert fresh.status_code == 200
    assert (fresh.json()["status"], fresh.json()["arguments"]) == ("resolved", {"amount": 500})


async def test_an_answer_link_after_an_edit_is_refused_and_stays_usable(world: World) -> None:
    """Alice's link opened the request at 900; after bob's edit her approval is refused
    with the new arguments, and the link (not spent) decides on those."""
    pending_id = await hold(world)
    link = issue_answer_link(SECRET, pending_id, "alice", 600)
    url = f"/api/requests/{pending_id}/answer"
    async with world.client() as client:
        shown = (await client.get(f"/api/requests/{pending_id}", headers=bearer(link))).json()
        await client.post(
            url, json={"decision": "edit", "arguments": {"amount": 500}}, headers=bearer("bob")
        )
        stale = await client.post(
            url,
            json={"decision": "approve", "digest": shown["arguments_digest"]},
            headers=bearer(link),
        )
        current = (await client.get(f"/api/requests/{pending_id}", headers=bearer(link))).json()
        fresh = await client.post(
            url,
            json={"decision": "approve", "digest": current["arguments_digest"]},
            headers=bearer(link),
        )
    assert stale.status_code == 409
    assert '"amount": 500' in stale.json()["detail"]
    assert current["arguments"] == {"amount": 500}
    assert fresh.status_code == 200
    assert (fresh.json()["status"], fresh.json()["approved_by"]) == ("resolved", ["bob", "alice"])


async def test_a_digest_that_is_no_digest_or_on_a_question_is_a_422(world: World) -> None:
    pending_id = await hold(world)
    question = await world.ask({"question": "Q?"}, actor_id="alice")
    async with world.client() as client:
        malformed = await client.post(
            f"/api/requests/{pending_id}/answer",
            json={"decision": "approve", "digest": "abc"},
            headers=bearer("alice"),
        )
        answered = await client.post(
            f"/api/requests/{question}/answer",
            json={"answer": "yes", "digest": "0" * 64},
            headers=bearer("alice"),
        )
        declined = await client.post(
            f"/api/requests/{question}/reject",
            json={"digest": "0" * 64},
            headers=bearer("alice"),
        )
    assert malformed.status_code == 422
    assert malformed.json()["detail"].startswith("digest:")
    assert answered.status_code == 422
    assert "digest" in answered.json()["detail"]
    assert declined.status_code == 422
    assert "digest" in declined.json()["detail"]


async def test_a_delegate_voting_again_for_another_approver_is_told_the_vote_is_in() -> None:
    """carol stands in for alice and bob: her vote counts once, and her second is a 403
    saying so, not a 409 saying the request is still open."""
    now = datetime.now(UTC)
    leave = Delegation(to="carol", starts=now - timedelta(days=1), ends=now + timedelta(days=30))
    directory = Directory(
        {
            "alice": Person(delegations=[leave]),
            "bob": Person(delegations=[leave]),
            "carol": Person(),
        }
    )
    world = World(handler=HumanInputHandler(directory=directory))
    await world.room("room", "alice", "bob", "carol", "dave")
    request = await world.handler.create_approval(
        "pay", {"amount": 900}, approvers=["alice", "bob", "dave"], room_id="room", quorum=2
    )
    async with world.client() as client:
        first, again = [
            await client.post(
                f"/api/requests/{request.pending_id}/answer",
                json={"decision": "approve"},
                headers=bearer("carol"),
            )
            for _ in range(2)
        ]
    assert first.status_code == 200
    assert again.status_code == 403, again.json()
    assert "Your vote on this approval is in already" in again.json()["detail"]
    held = await world.handler.get_request(request.pending_id)
    assert held is not None
    assert [vote.actor for vote in held.votes] == ["carol"]


async def test_the_same_vote_sent_twice_at_once_on_sqlite_counts_once_and_says_so(
    tmp_path: Path,
) -> None:
    """Two tabs send bob's vote at the same moment: one is counted, the other is a 403
    saying the vote is in, never a 409 saying the request is still open."""
    world = World(handler=HumanInputHandler(store=SQLiteStore(tmp_path / "desk.db")))
    await world.room("room", "alice", "bob", "carol")
    async with serve(world.app) as base, httpx.AsyncClient(base_url=base) as client:
        for amount in range(3):
            request = await world.handler.create_approval(
                "pay", {"amount": amount}, approvers=["alice", "bob"], room_id="room", quorum=2
            )
            url = f"/api/requests/{request.pending_id}/answer"
            ballot = {"decision": "approve"}
            sent = await asyncio.gather(
                *(client.post(url, json=ballot, headers=bearer("bob")) for _ in range(2))
            )
            assert sorted(answer.status_code for answer in sent) == [200, 403]
            held = await world.handler.get_request(request.pending_id)
            assert held is not None
            assert [vote.actor for vote in held.votes] == ["bob"]
    await world.handler.close()

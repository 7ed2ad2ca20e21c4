"""The desk's HTTP endpoints on the memory store: list, read, answer, reject, who am I."""

from __future__ import annotations

import asyncio
import json

import pytest
from desk_harness import SECRET, World, bearer

from roomkit import HumanInputRejectedError
from roomkit.desk import issue_answer_link

MULTI = {"question": "Which toppings?", "options": ["ham", "olives", "basil"], "multiSelect": True}
QUESTIONS = {
    "questions": [
        {"question": "Size?", "options": [{"label": "S"}, {"label": "L"}], "multiSelect": False},
        {
            "question": "Extras?",
            "options": [{"label": "egg"}, {"label": "ham"}],
            "multiSelect": True,
        },
    ]
}


@pytest.fixture
async def world() -> World:
    world = World()
    await world.room("room", "alice", "bob")
    await world.room("other", "carol")
    return world


async def answer(world: World, pending_id: str, body: object, actor: str = "alice") -> tuple:
    async with world.client() as client:
        response = await client.post(
            f"/api/requests/{pending_id}/answer", json=body, headers=bearer(actor)
        )
    return response.status_code, response.json()


async def test_me_says_who_the_token_speaks_for(world: World) -> None:
    async with world.client() as client:
        alice = (await client.get("/api/me", headers=bearer("alice"))).json()
        root = (await client.get("/api/me", headers=bearer("root", admin=True))).json()
    assert alice == {"actor_id": "alice", "admin": False}
    assert root == {"actor_id": "root", "admin": True}


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic YWxpY2U6eA=="}],
    ids=["missing", "garbage", "wrong-scheme"],
)
async def test_a_request_without_a_valid_token_gets_401(world: World, headers: dict) -> None:
    async with world.client() as client:
        response = await client.get("/api/requests", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert isinstance(response.json()["detail"], str)


async def test_the_list_holds_own_and_room_questions_oldest_first(world: World) -> None:
    mine = await world.ask(actor_id="alice")
    room_wide = await world.ask(actor_id=None)
    await world.ask(actor_id="bob")
    await world.ask(room_id="other", actor_id=None)
    async with world.client() as client:
        listed = (await client.get("/api/requests", headers=bearer("alice"))).json()
    assert [view["id"] for view in listed["requests"]] == [mine, room_wide]


async def test_an_admin_lists_everything_and_can_filter_by_room(world: World) -> None:
    ids = [await world.ask(actor_id="bob"), await world.ask(room_id="other", actor_id=None)]
    async with world.client() as client:
        every = (await client.get("/api/requests", headers=bearer("root", admin=True))).json()
        other = await client.get(
            "/api/requests", params={"room_id": "other"}, headers=bearer("root", admin=True)
        )
    assert [view["id"] for view in every["requests"]] == ids
    assert [view["id"] for view in other.json()["requests"]] == ids[1:]


async def test_the_view_carries_the_contract_fields(world: World) -> None:
    pending_id = await world.ask({"question": "Colour?", "options": ["red", "blue"]})
    async with world.client() as client:
        view = (await client.get(f"/api/requests/{pending_id}", headers=bearer("alice"))).json()
    assert view["id"] == pending_id
    assert view["kind"] == "question"
    assert view["status"] == "pending"
    assert view["actor_id"] == "alice"
    assert view["room_id"] == "room"
    assert view["channel_type"] == "ai"
    assert view["created_at"].endswith("Z")
    assert {"answer_schema", "result", "reason", "withdrawn", "settled_by"} <= set(view)


async def test_unknown_foreign_and_not_yours_read_the_same_404(world: World) -> None:
    bobs = await world.ask(actor_id="bob")
    other_room = await world.ask(room_id="other", actor_id=None)
    async with world.client() as client:
        replies = [
            await client.get(f"/api/requests/{pending_id}", headers=bearer("alice"))
            for pending_id in ("f" * 32, bobs, other_room)
        ]
    assert {reply.status_code for reply in replies} == {404}
    assert len({reply.text for reply in replies}) == 1


async def test_a_single_answer_reaches_the_waiting_tool_as_text(world: World) -> None:
    pending_id = await world.ask({"question": "Colour?", "options": ["red", "blue"]})
    waiter = asyncio.create_task(world.handler.wait(pending_id))
    status, view = await answer(world, pending_id, {"answer": "blue"})
    assert status == 200
    assert (view["status"], view["result"], view["settled_by"]) == ("resolved", "blue", "alice")
    assert await waiter == "blue"


async def test_a_multi_select_answer_reaches_the_tool_as_json(world: World) -> None:
    pending_id = await world.ask(MULTI)
    status, _ = await answer(world, pending_id, {"answer": ["ham", "basil"]})
    assert status == 200
    assert json.loads(await world.handler.wait(pending_id)) == {"answer": ["ham", "basil"]}


async def test_a_questions_answer_is_checked_per_question(world: World) -> None:
    pending_id = await world.ask(QUESTIONS)
    missing = {"answers": [{"question": "Size?", "answer": "S"}]}
    assert (await answer(world, pending_id, missing))[0] == 422
    body = {
        "answers": [
            {"question": "Extras?", "answer": ["egg"]},
            {"question": "Size?", "answer": "L"},
        ]
    }
    status, _ = await answer(world, pending_id, body)
    assert status == 200
    assert json.loads(await world.handler.wait(pending_id)) == {
        "answers": [
            {"question": "Size?", "answer": "L"},
            {"question": "Extras?", "answer": ["egg"]},
        ]
    }


async def test_two_questions_with_the_same_text_take_their_answers_in_order(
    world: World,
) -> None:
    twice = {
        "questions": [
            {"question": "Which one?", "header": "Flight", "options": ["AF12", "BA7"]},
            {"question": "Which one?", "header": "Hotel", "options": ["Ritz", "Savoy"]},
        ]
    }
    pending_id = await world.ask(twice)
    body = {
        "answers": [
            {"question": "Which one?", "answer": "BA7"},
            {"question": "Which one?", "answer": "Savoy"},
        ]
    }
    status, _ = await answer(world, pending_id, body)
    assert status == 200
    answers = json.loads(await world.handler.wait(pending_id))["answers"]
    assert [item["answer"] for item in answers] == ["BA7", "Savoy"]


async def test_a_confirmation_passes_the_decision_and_reason(world: World) -> None:
    pending_id = await world.ask({"action": "Delete the files"}, tool_name="ConfirmAction")
    status, view = await answer(world, pending_id, {"confirmed": False, "reason": "not today"})
    assert (status, view["kind"]) == (200, "confirm")
    result = await world.handler.wait(pending_id)
    assert json.loads(result) == {"confirmed": False, "reason": "not today"}


async def test_a_custom_request_with_a_schema_takes_matching_json(world: World) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    pending_id = await world.ask({"form": "rooms"}, tool_name="Form", answer_schema=schema)
    status, refused = await answer(world, pending_id, {"answer": {"n": "two"}})
    assert status == 422
    assert "n" in refused["detail"]
    assert (await world.handler.get_request(pending_id)).status == "pending"
    status, _ = await answer(world, pending_id, {"answer": {"n": 2}})
    assert status == 200
    assert json.loads(await world.handler.wait(pending_id)) == {"n": 2}


async def test_an_answer_a_pattern_takes_too_long_on_gets_422(world: World) -> None:
    """Matched by re, forty "a" and a "!" against this pattern would hold the desk for hours."""
    schema = {"type": "string", "pattern": "^(a|a)+$"}
    pending_id = await world.ask({"question": "n?"}, tool_name="custom_tool", answer_schema=schema)
    status, refused = await answer(world, pending_id, {"answer": "a" * 40 + "!"})
    assert status == 422
    assert "pattern '^(a|a)+$' took too long to check against that answer" in refused["detail"]
    assert (await world.handler.get_request(pending_id)).status == "pending"
    assert (await answer(world, pending_id, {"answer": "aaa"}))[0] == 200


async def test_a_custom_request_without_a_schema_takes_text(world: World) -> None:
    pending_id = await world.ask({"anything": 1}, tool_name="Free")
    assert (await answer(world, pending_id, {"answer": {"x": 1}}))[0] == 422
    assert (await answer(world, pending_id, {"answer": "fine"}))[0] == 200
    assert await world.handler.wait(pending_id) == "fine"


@pytest.mark.parametrize(
    ("arguments", "body", "problem"),
    [
        ({"question": "C?", "options": ["red"]}, {"answer": "green"}, "not one of the options"),
        ({"question": "C?", "options": ["red"]}, {"answer": 3}, "answer"),
        (MULTI, {"answer": "ham"}, "list of option labels"),
        (MULTI, {"answer": ["ham", "ham"]}, "twice"),
        ({"question": "Name?"}, {"answer": "   "}, "empty"),
        ({"question": "Name?"}, {"confirmed": True}, "not ['confirmed']"),
        ({"question": "Name?"}, {"answer": "x", "extra": 1}, "extra"),
    ],
)
async def test_an_answer_that_does_not_fit_gets_422_and_the_request_stays_open(
    world: World, arguments: dict, body: dict, problem: str
) -> None:
    pending_id = await world.ask(arguments)
    status, refused = await answer(world, pending_id, body)
    assert status == 422
    assert problem in refused["detail"]
    assert (await world.handler.get_request(pending_id)).status == "pending"


async def test_a_settled_request_gets_409_saying_how(world: World) -> None:
    answered, rejected, withdrawn = [await world.ask() for _ in range(3)]
    await world.handler.aresolve(answered, "x", by="bob")
    await world.handler.areject(rejected, "no", by="bob")
    world.handler.release(withdrawn)
    timed_out = await world.ask()
    with pytest.raises(TimeoutError):
        await world.handler.wait(timed_out, timeout=0)
    details = [
        (await answer(world, pending_id, {"answer": "x"}))
        for pending_id in (answered, rejected, withdrawn, timed_out)
    ]
    assert [status for status, _ in details] == [409] * 4
    texts = [body["detail"] for _, body in details]
    assert "answered by bob" in texts[0]
    assert texts[1] == "Already declined by bob: no"  # as every surface words it
    assert texts[2].startswith("Withdrawn")
    assert "Timed out" in texts[3]


async def test_a_rejection_reaches_the_tool_with_its_reason(world: World) -> None:
    pending_id = await world.ask()
    waiter = asyncio.create_task(world.handler.wait(pending_id))
    async with world.client() as client:
        response = await client.post(
            f"/api/requests/{pending_id}/reject",
            json={"reason": "ask later"},
            headers=bearer("alice"),
        )
        again = await client.post(f"/api/requests/{pending_id}/reject", headers=bearer("alice"))
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["reason"]) == ("rejected", "ask later")
    assert again.status_code == 409
    with pytest.raises(HumanInputRejectedError, match="ask later"):
        await waiter


async def test_a_rejection_needs_no_body_but_caps_the_reason(world: World) -> None:
    pending_id = await world.ask()
    async with world.client() as client:
        too_long = await client.post(
            f"/api/requests/{pending_id}/reject",
            json={"reason": "x" * 1001},
            headers=bearer("alice"),
        )
        bare = await client.post(f"/api/requests/{pending_id}/reject", headers=bearer("alice"))
    assert too_long.status_code == 422
    assert "reason" in too_long.json()["detail"]
    assert bare.status_code == 200


async def test_an_answer_link_answers_its_request_once(world: World) -> None:
    pending_id = await world.ask(actor_id="bob")
    other = await world.ask(actor_id="bob")
    link = issue_answer_link(SECRET, pending_id, "bob", 60)
    async with world.client() as client:
        seen = await client.get(f"/api/requests/{pending_id}", headers=bearer(link))
        listed = await client.get("/api/requests", headers=bearer(link))
        foreign = await client.get(f"/api/requests/{other}", headers=bearer(link))
        bad = await client.post(
            f"/api/requests/{pending_id}/answer", json={"answer": 1}, headers=bearer(link)
        )
        used = await client.post(
            f"/api/requests/{pending_id}/answer", json={"answer": "ok"}, headers=bearer(link)
        )
        replay = await client.get(f"/api/requests/{pending_id}", headers=bearer(link))
    assert seen.status_code == 200
    assert [view["id"] for view in listed.json()["requests"]] == [pending_id]
    assert foreign.status_code == 404
    assert bad.status_code == 422, "a refused answer leaves the link usable"
    assert (used.status_code, used.json()["settled_by"]) == (200, "bob")
    assert replay.status_code == 401


async def test_an_answer_over_the_cap_gets_413(world: World) -> None:
    """An answer to a question is held to ``max_body``, declared or streamed (only a decision
    on an approval may be longer: ``max_answer_body``)."""
    pending_id = await world.ask()
    url = f"/api/requests/{pending_id}/answer"
    big = json.dumps({"answer": "x" * (64 * 1024)}).encode()

    async def streamed():
        for start in range(0, len(big), 4096):
            yield big[start : start + 4096]

    async with world.client() as client:
        headers = {**bearer("alice"), "Content-Type": "application/json"}
        declared = await client.post(url, content=big, headers=headers)
        chunked = await client.post(url, content=streamed(), headers=headers)
    assert declared.status_code == 413
    assert chunked.status_code == 413
    assert (await world.handler.get_request(pending_id)).status == "pending"


async def test_an_actor_past_the_rate_limit_gets_429_with_retry_after() -> None:
    from roomkit.desk import DeskLimits

    world = World(limits=DeskLimits(rate=1.0, burst=3))
    async with world.client() as client:
        codes = [(await client.get("/api/me", headers=bearer("alice"))) for _ in range(4)]
        others = await client.get("/api/me", headers=bearer("bob"))
    assert [reply.status_code for reply in codes] == [200, 200, 200, 429]
    assert int(codes[-1].headers["retry-after"]) >= 1
    assert others.status_code == 200, "the bucket is per actor"


async def test_an_administrators_batch_work_has_a_bucket_of_its_own() -> None:
    from roomkit.desk import DeskLimits

    world = World(limits=DeskLimits(rate=1.0, burst=3))
    ids = [await world.ask() for _ in range(12)]
    async with world.client() as client:
        answers = [
            await client.post(
                f"/api/requests/{pending_id}/answer",
                json={"answer": "yes"},
                headers=bearer("root", admin=True),
            )
            for pending_id in ids
        ]
    assert [reply.status_code for reply in answers] == [200] * 12
    with pytest.raises(ValueError, match="admin_rate"):
        DeskLimits(admin_rate=0)
    world = World(limits=DeskLimits(admin_rate=1.0, admin_burst=2))
    async with world.client() as client:
        codes = [
            (await client.get("/api/me", headers=bearer("root", admin=True))) for _ in range(3)
        ]
    assert [reply.status_code for reply in codes] == [200, 200, 429]

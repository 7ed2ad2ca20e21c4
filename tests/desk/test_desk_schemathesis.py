"""Schemathesis against the desk's published schema and Slack's clicks: no server errors.

A CI-sized run: 30 examples per operation of the schema, with an admin token. Half the time
a request id is swapped for one that exists (questions of every kind), so answers and
rejections reach the real checks rather than stopping at 404.

Then hostile bodies (``tests/hostile_json.py``): each operation that takes a body, and Slack's
interactions endpoint (its payloads described by a schema of their own, every one signed as
Slack signs), get a valid body with one part made an attack: nesting far past the limits, a
number too long or out of range, a lone surrogate, NUL, a key given twice. None may answer
5xx or log a fault, and the desk answers afterwards. Fixed, small runs, derandomized.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

import schemathesis
from desk_harness import World, bearer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import checks
from tests.hostile_json import every_attack, hostile_text, logged_faults
from tests.notify.slack_api import SIGNING_SECRET
from tests.servers.slack_clicks import signed

from roomkit.notify import Directory, Person

QUESTION = {"question": "Go?", "options": ["yes", "no"]}
MULTI = {"question": "Which?", "options": ["a", "b", "c"], "multiSelect": True}
QUESTIONS = {"questions": [{"question": "Q", "options": [{"label": "a"}], "multiSelect": False}]}
DIRECTORY = Directory({"alice": Person(slack_user="U0ALICE"), "bob": Person(slack_user="U0BOB")})
HOSTILE_EXAMPLES = 40
"""Hostile bodies per operation."""


def _world() -> tuple[World, list[str]]:
    world = World(chat_channel_id="chat", slack=SIGNING_SECRET, directory=DIRECTORY)

    async def seed() -> list[str]:
        await world.room("room", "alice")
        kinds = [
            ({"question": "Name?"}, "AskUserQuestion", None),
            (QUESTION, "AskUserQuestion", None),
            (MULTI, "AskUserQuestion", None),
            (QUESTIONS, "AskUserQuestion", None),
            ({"action": "Deploy"}, "ConfirmAction", None),
            ({"x": 1}, "Form", None),
            ({"x": 1}, "Form", {"type": "object", "required": ["n"]}),
        ]
        return [
            await world.ask(arguments, tool_name=tool, answer_schema=schema)
            for arguments, tool, schema in kinds * 40
        ]

    return world, asyncio.run(seed())


WORLD, IDS = _world()
ADMIN = bearer("root", admin=True)
schema = schemathesis.openapi.from_asgi("/api/openapi.json", WORLD.app)


@schema.parametrize()
@schema.given(data=st.data())
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_never_answers_with_a_server_error(
    case: schemathesis.Case, data: st.DataObject
) -> None:
    if case.path_parameters and "request_id" in case.path_parameters and data.draw(st.booleans()):
        case.path_parameters["request_id"] = data.draw(st.sampled_from(IDS))
    response = case.call(headers=ADMIN)
    assert response.status_code < 500, response.text
    # What a schema cannot say is not checked: an answer body can fit the schema and still
    # not fit its request's kind (422), and unknown query parameters are ignored.
    case.validate_response(
        response,
        headers=ADMIN,
        excluded_checks=[checks.positive_data_acceptance, checks.negative_data_rejection],
    )


def _still_serving() -> None:
    """The desk answers a plain request, and a fresh question can be answered."""
    pending_id = asyncio.run(WORLD.ask({"question": "Still there?"}, actor_id="alice"))

    async def answer() -> tuple[int, int, str]:
        async with WORLD.client() as client:
            me = await client.get("/api/me", headers=bearer("alice"))
            reply = await client.post(
                f"/api/requests/{pending_id}/answer",
                json={"answer": "yes"},
                headers=bearer("alice"),
            )
        return me.status_code, reply.status_code, reply.json()["result"]

    assert asyncio.run(answer()) == (200, 200, "yes")


BODY_OPERATIONS = [
    operation
    for operation in (result.ok() for result in schema.get_all_operations())
    if operation.body
]


def test_hostile_bodies_get_4xx_and_the_desk_serves_on() -> None:
    assert {operation.path for operation in BODY_OPERATIONS} >= {
        "/api/requests/{request_id}/answer",
        "/api/requests/{request_id}/reject",
        "/api/rooms/{room_id}/messages",
    }
    statuses: set[int] = set()
    with logged_faults() as faults:
        for operation in BODY_OPERATIONS:

            @settings(
                max_examples=HOSTILE_EXAMPLES,
                derandomize=True,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(), data=st.data())
            def attack(case: schemathesis.Case, data: st.DataObject) -> None:
                parameters = case.path_parameters or {}
                if "request_id" in parameters and data.draw(st.booleans()):
                    parameters["request_id"] = data.draw(st.sampled_from(IDS))
                if "room_id" in parameters and data.draw(st.booleans()):
                    parameters["room_id"] = "room"
                body = case.body if isinstance(case.body, dict) else {}
                text = hostile_text(data, body)
                headers = {**ADMIN, "Content-Type": "application/json"}
                response = case.call(headers=headers, data=text.encode())
                assert response.status_code < 500, (text[:200], response.text)
                statuses.add(response.status_code)
                if response.status_code >= 400:
                    assert isinstance(response.json()["detail"], str), response.text

            attack()
    assert faults.lines() == []
    assert 400 in statuses
    _still_serving()


# -- Slack's clicks ------------------------------------------------------------------------

ACTION_IDS = [
    "roomkit:approve",
    "roomkit:reject",
    "roomkit:confirm:yes",
    "roomkit:confirm:no",
    "roomkit:choose:0",
    "roomkit:choose:1",
    "roomkit:choose:99999",
    "roomkit:open",
    "roomkit:unknown",
    "other:approve",
]
SLACK_PAYLOAD: dict[str, Any] = {
    "type": "object",
    "required": ["type", "user", "actions"],
    "additionalProperties": False,
    "properties": {
        "type": {"enum": ["block_actions", "view_closed", "message_action"]},
        "user": {
            "type": "object",
            "required": ["id"],
            "additionalProperties": False,
            "properties": {
                "id": {"anyOf": [{"enum": ["U0ALICE", "U0BOB"]}, {"type": "string"}]},
                "username": {"type": "string"},
            },
        },
        "actions": {
            "type": "array",
            "maxItems": 2,
            "items": {
                "type": "object",
                "required": ["action_id"],
                "additionalProperties": False,
                "properties": {
                    "action_id": {"anyOf": [{"enum": ACTION_IDS}, {"type": "string"}]},
                    "value": {"type": "string"},
                    "block_id": {"type": "string"},
                },
            },
        },
        "team": {"type": "object", "properties": {"id": {"type": "string"}}},
        "trigger_id": {"type": "string"},
    },
}
SLACK = schemathesis.openapi.from_dict(
    {
        "openapi": "3.0.3",
        "info": {"title": "Slack's clicks on the desk", "version": "1"},
        "paths": {
            "/api/slack/interactions": {
                "post": {
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": SLACK_PAYLOAD}},
                    },
                    "responses": {"default": {"description": "What came of the click"}},
                }
            }
        },
    }
)


def test_hostile_slack_payloads_get_4xx_and_the_desk_serves_on() -> None:
    """Each payload goes as Slack sends it: in a form's ``payload`` field, signed."""
    operation = SLACK["/api/slack/interactions"]["POST"]
    statuses: set[int] = set()

    @settings(
        max_examples=3 * HOSTILE_EXAMPLES,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(), data=st.data())
    def click(case: schemathesis.Case, data: st.DataObject) -> None:
        payload = dict(case.body)
        # Half the clicks are a known person's on a roomkit button of a real request, so
        # that they reach the settling rather than stop at "ignored".
        if data.draw(st.booleans()):
            payload["type"] = "block_actions"
            payload["user"] = {"id": data.draw(st.sampled_from(["U0ALICE", "U0BOB", "U0NEW"]))}
            payload["actions"] = [
                {
                    "action_id": data.draw(st.sampled_from(ACTION_IDS)),
                    "value": data.draw(st.sampled_from(IDS)),
                }
            ]
        hostile = data.draw(st.booleans())
        text = hostile_text(data, payload) if hostile else json.dumps(payload)
        form = urlencode({"payload": text}).encode()
        response = case.call(app=WORLD.app, data=form, headers=signed(form))
        assert response.status_code < 500, (text[:200], response.text)
        statuses.add(response.status_code)
        if response.status_code >= 400:
            assert isinstance(response.json()["detail"], str), response.text

    with logged_faults() as faults:
        click()
    assert faults.lines() == []
    assert {200, 400} <= statuses
    _still_serving()


def test_every_attack_in_every_part_of_a_click_gets_4xx_or_is_taken() -> None:
    """Beside the random run, a sweep: each attack in each part of a real click, in turn."""
    pending_id = asyncio.run(WORLD.ask(QUESTION, actor_id="alice"))
    click = {
        "type": "block_actions",
        "user": {"id": "U0ALICE"},
        "actions": [{"action_id": "roomkit:choose:1", "value": pending_id}],
    }
    statuses: list[int] = []

    async def sweep() -> None:
        async with WORLD.client() as client:
            for text in every_attack(click):
                form = urlencode({"payload": text}).encode()
                response = await client.post(
                    "/api/slack/interactions", content=form, headers=signed(form)
                )
                assert response.status_code < 500, (text[:200], response.text)
                statuses.append(response.status_code)

    with logged_faults() as faults:
        asyncio.run(sweep())
    assert faults.lines() == []
    assert len(statuses) > 150
    assert asyncio.run(WORLD.handler.get_request(pending_id)).status == "pending"
    _still_serving()


def test_every_attack_in_every_part_of_an_answer_gets_4xx_or_is_taken() -> None:
    """Each attack in each part of an answer to each kind of question, in turn."""
    bodies = [
        (QUESTION, {"answer": "yes"}),
        (MULTI, {"answer": ["a", "b"]}),
        (QUESTIONS, {"answers": [{"question": "Q", "answer": "a"}]}),
    ]
    statuses: list[int] = []

    async def sweep() -> None:
        async with WORLD.client() as client:
            for arguments, body in bodies:
                for text in every_attack(body):
                    pending_id = await WORLD.ask(arguments, actor_id="alice")
                    response = await client.post(
                        f"/api/requests/{pending_id}/answer",
                        content=text.encode(),
                        headers={**bearer("alice"), "Content-Type": "application/json"},
                    )
                    assert response.status_code < 500, (text[:200], response.text)
                    assert isinstance(
                        response.json()["detail" if response.status_code >= 400 else "id"], str
                    )
                    statuses.append(response.status_code)

    with logged_faults() as faults:
        asyncio.run(sweep())
    assert faults.lines() == []
    assert {400, 422} <= set(statuses)
    _still_serving()

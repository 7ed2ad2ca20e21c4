"""Schemathesis against the desk's published schema, with an admin token: no server errors.

A CI-sized run: 30 examples per operation. Half the time a request id is swapped for one
that exists (questions of every kind), so answers and rejections reach the real checks
rather than stopping at 404.
"""

from __future__ import annotations

import asyncio

import schemathesis
from desk_harness import World, bearer
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import checks

QUESTION = {"question": "Go?", "options": ["yes", "no"]}
MULTI = {"question": "Which?", "options": ["a", "b", "c"], "multiSelect": True}
QUESTIONS = {"questions": [{"question": "Q", "options": [{"label": "a"}], "multiSelect": False}]}


def _world() -> tuple[World, list[str]]:
    world = World()

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

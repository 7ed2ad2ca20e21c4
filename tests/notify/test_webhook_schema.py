"""The webhook events validate against the JSON Schema their reference page publishes."""

from __future__ import annotations

import json
import typing

import jsonschema
from tests.doc_pages import page_blocks
from tests.notify.receiver import Receiver

from roomkit.notify import Directory, NoticeType, Notifier, Person, Webhook
from roomkit.tools.approvals import approve, edit
from roomkit.tools.human_input import HumanInputHandler

PAGE = "docs/reference/webhooks.md"


def published_schema() -> dict[str, typing.Any]:
    (text,) = page_blocks(PAGE, "json")
    schema: dict[str, typing.Any] = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def test_the_schema_names_every_notice_type() -> None:
    types = published_schema()["properties"]["type"]["enum"]
    assert sorted(types) == sorted(typing.get_args(NoticeType))


async def test_real_events_of_a_question_and_a_quorum_approval_match_the_schema() -> None:
    validator = jsonschema.Draft202012Validator(published_schema())
    handler = HumanInputHandler()
    people = Directory({name: Person(email=f"{name}@example.com") for name in ("ann", "bob")})
    async with Receiver() as receiver:
        notifier = Notifier(
            handler,
            [Webhook(receiver.url, receiver.secret)],
            directory=people,
            desk_url="https://desk.example.com",
            link_secret="the-webhook-schema-test-secret",
        )
        async with notifier:
            asked = await handler.create(
                "AskUserQuestion", {"question": "Ship it?"}, actor_id="ann", room_id="r1"
            )
            await receiver.wait_for(1)
            assert await handler.aresolve(asked.pending_id, '{"answer": "yes"}', by="ann")
            await receiver.wait_for(2)
            held = await handler.create_approval(
                "pay", {"amount": 9}, approvers=["ann", "bob", "cy"], quorum=2
            )
            await receiver.wait_for(3)
            assert await handler.aresolve(held.pending_id, edit({"amount": 5}), by="bob")
            await receiver.wait_for(4)
            assert await handler.aresolve(held.pending_id, approve(), by="ann")
            deliveries = await receiver.wait_for(5)
            await notifier.wait_idle()
    bodies = [body for _, body in deliveries]
    assert [body["type"] for body in bodies] == [
        "question_pending",
        "question_settled",
        "question_pending",
        "question_edited",
        "question_settled",
    ]
    assert bodies[0]["answer_urls"], "an open request's approvers get answer links"
    for body in bodies:
        errors = [error.message for error in validator.iter_errors(body)]
        assert errors == [], (body["type"], errors)

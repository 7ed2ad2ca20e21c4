"""Answers typed by a Pydantic model, on every store: its schema in, its instance out."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, Field, field_validator
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit import InvalidAnswerError
from roomkit.tools.approvals import Approve, Decision, Edit, edit


class Address(BaseModel):
    city: str
    postcode: str = Field(pattern=r"^[0-9]{5}$")


class Shipping(BaseModel):
    method: str = Field(json_schema_extra={"enum": ["post", "courier"]})
    to: Address
    gift: bool = False


async def test_a_model_is_the_schema_and_the_wait_returns_it(make_handler: HandlerFactory) -> None:
    asked = await make_handler().create("Ship", {"order": 7}, answer_schema=Shipping)
    request = await make_handler().get_request(asked.pending_id)
    assert request is not None
    assert request.answer_schema == Shipping.model_json_schema()
    desk = make_handler()
    with pytest.raises(InvalidAnswerError, match="postcode"):
        await desk.aresolve(
            asked.pending_id, '{"method": "post", "to": {"city": "Lyon", "postcode": "x"}}'
        )
    with pytest.raises(InvalidAnswerError, match="method"):
        await desk.aresolve(
            asked.pending_id, '{"method": "ship", "to": {"city": "Lyon", "postcode": "69001"}}'
        )
    answer = Shipping(method="courier", to=Address(city="Lyon", postcode="69001"), gift=True)
    assert await desk.aresolve(asked.pending_id, answer, by="ann")
    got = await make_handler().wait_for(asked.pending_id, Shipping, timeout=5)
    assert type(got) is Shipping
    assert got == answer


async def test_a_typed_wait_on_a_free_text_request_says_what_to_do(
    make_handler: HandlerFactory,
) -> None:
    asked = await make_handler().create("Ship", {"order": 8})
    assert await make_handler().aresolve(asked.pending_id, "by post, please", by="ann")
    waiting = make_handler()
    with pytest.raises(InvalidAnswerError, match=r"not a Shipping .*answer_schema=Shipping"):
        await waiting.wait_for(asked.pending_id, Shipping, timeout=5)
    record = await make_handler().get_request(asked.pending_id)
    assert record is not None
    assert record.result == "by post, please"


async def test_a_model_that_checks_more_than_its_schema_fails_only_the_typed_wait(
    make_handler: HandlerFactory,
) -> None:
    class Even(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def even(cls, value: int) -> int:
            if value % 2:
                raise ValueError("n must be even")
            return value

    asked = await make_handler().create("Count", {}, answer_schema=Even)
    assert await make_handler().aresolve(asked.pending_id, '{"n": 3}')
    with pytest.raises(InvalidAnswerError, match="n must be even"):
        await make_handler().wait_for(asked.pending_id, Even, timeout=5)


async def test_a_typed_wait_reads_an_approval_as_its_decision(
    make_handler: HandlerFactory,
) -> None:
    held = await make_handler().create_approval(
        "pay", {"amount": 1}, approvers=["ann"], tool_schema={"type": "object"}
    )
    waiting = asyncio.ensure_future(make_handler().wait_for(held.pending_id, Decision, timeout=5))
    assert await make_handler().aresolve(held.pending_id, edit({"amount": 2}), by="ann")
    decision = await waiting
    assert type(decision) is Edit
    assert decision.arguments == {"amount": 2}
    with pytest.raises(InvalidAnswerError, match="not a Approve"):
        await make_handler().wait_for(held.pending_id, Approve, timeout=5)


async def test_a_typed_wait_takes_model_classes_only(make_handler: HandlerFactory) -> None:
    asked = await make_handler().create("Ask", {})
    assert await make_handler().aresolve(asked.pending_id, "{}")
    with pytest.raises(TypeError, match="Pydantic model class"):
        await make_handler().wait_for(asked.pending_id, dict, timeout=5)

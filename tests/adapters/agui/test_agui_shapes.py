"""Each kind of request as an interrupt, and the payload each takes back: a confirmation, a
question with an answer schema, an approval refused or cancelled; the deadline as
``expiresAt``; a revoked token."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from ag_ui.core import EventType
from agui_front import SECRET, Front, ask, bearer, confirm, interrupts, send, texts

from roomkit import AITool
from roomkit.desk.auth import token_entry
from roomkit.desk.tokens import issue_token, token_claims
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.mock import MockAIProvider

DONE = AIResponse(content="Done.")
SHADE = {
    "type": "object",
    "properties": {"shade": {"type": "integer", "minimum": 1}},
    "required": ["shade"],
    "additionalProperties": False,
}


async def test_a_confirmation_is_a_confirmation_interrupt_answered_by_its_body() -> None:
    front = Front([confirm(), DONE])
    try:
        [interrupt] = interrupts(await front.run("Tidy up"))
        assert (interrupt.reason, interrupt.tool_call_id) == ("confirmation", "tc-confirm")
        assert interrupt.message == "Delete the draft."
        assert interrupt.response_schema["required"] == ["confirmed"]
        assert interrupt.metadata["roomkit"]["kind"] == "confirm"
        payload = {"confirmed": False, "reason": "keep it"}
        resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": payload}]
        events = await front.run(resume=resume)
        assert texts(events) == ["Done."]
        request = await front.handler.get_request(interrupt.id)
        assert request is not None
        assert request.result is not None
        assert (json.loads(request.result), request.settled_by) == (payload, "alice")
    finally:
        await front.close()


SURVEY = AITool(
    name="Survey",
    description="Ask the user several things.",
    parameters={
        "type": "object",
        "properties": {"questions": {"type": "array", "items": {"type": "string"}}},
    },
)


async def test_a_custom_tool_asking_questions_as_text_is_an_interrupt() -> None:
    """A host's own tool whose ``questions`` are text, not question objects, is a custom
    request: the run ends with its interrupt, showing the call."""
    call = MockAIProvider.tool_call("Survey", {"questions": ["Colour?", "Size?"]}, id="tc-s")
    front = Front([call, DONE], human_tools=[SURVEY])
    try:
        [interrupt] = interrupts(await front.run("Ask me"))
        assert (interrupt.reason, interrupt.tool_call_id) == ("input_required", "tc-s")
        assert interrupt.message == 'Survey({"questions": ["Colour?", "Size?"]})'
        resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "ok"}}]
        assert texts(await front.run(resume=resume)) == ["Done."]
    finally:
        await front.close()


async def test_a_question_with_an_answer_schema_takes_the_answer_as_the_schema_has_it() -> None:
    front = Front([ask(), DONE], answer_schemas={"AskUserQuestion": SHADE})
    try:
        [interrupt] = interrupts(await front.run("Paint it"))
        assert interrupt.response_schema == SHADE
        wrong = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"shade": "3"}}]
        refused = await front.run(resume=wrong)
        assert (refused[-1].type, refused[-1].code) == (EventType.RUN_ERROR, "invalid_payload")
        right = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"shade": 3}}]
        assert texts(await front.run(resume=right)) == ["Done."]
        request = await front.handler.get_request(interrupt.id)
        assert request is not None
        assert request.result == '{"shade":3}'
    finally:
        await front.close()


async def test_an_approval_refused_or_cancelled_never_runs() -> None:
    for entry in (
        {"status": "resolved", "payload": {"approved": False, "reason": "not bob"}},
        {"status": "cancelled", "payload": {"reason": "not bob"}},
    ):
        front = Front([send(), AIResponse(content="Not sent.")])
        try:
            [interrupt] = interrupts(await front.run("Mail bob"))
            events = await front.run(resume=[{"interruptId": interrupt.id, **entry}])
            assert texts(events) == ["Not sent."]
            request = await front.handler.get_request(interrupt.id)
            assert request is not None
            assert (request.status, request.reject_reason) == ("rejected", "not bob")
            assert request.settled_by == "alice"
            assert not request.withdrawn
            assert front.outbox.sent == []
        finally:
            await front.close()


async def test_expires_at_is_the_requests_deadline() -> None:
    front = Front([ask(), DONE])
    try:
        [interrupt] = interrupts(await front.run("Paint it"))
        [request] = await front.handler.list_pending(room_id="t1")
        assert interrupt.expires_at is not None
        expires = datetime.fromisoformat(interrupt.expires_at)
        # The deadline is set when the turn starts waiting, 300 s (the default) after.
        assert request.created_at + timedelta(seconds=299) < expires
        assert expires < datetime.now(expires.tzinfo) + timedelta(seconds=301)
    finally:
        await front.close()


async def test_a_revoked_token_is_refused() -> None:
    front = Front([ask(), DONE])
    try:
        token = issue_token(SECRET, "alice")
        await front.handler.ledger.record_spent(
            token_entry(token_claims(SECRET, token)["jti"]), until=None
        )
        async with front.client() as client:
            body = {"threadId": "t1", "runId": "r", "messages": []}
            revoked = await client.post(
                "/agui", json=body, headers={"Authorization": f"Bearer {token}"}
            )
            fresh = await client.get("/agui/capabilities", headers=bearer("alice"))
        assert revoked.status_code == 401
        assert fresh.status_code == 200
        assert await front.handler.list_pending() == []
    finally:
        await front.close()

"""A workflow asks a person, the desk answers, the workflow resumes once: one ask, two
asks in one workflow, two workflows at once, and the mistakes a workflow author can make
(deadlines and ladders are in the time-skipping tests)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import uuid
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.converter import DataConverter, PayloadCodec
from temporalio.worker import Replayer, Worker
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.history import result_or_task_failure, updates_taken
from tests.adapters.temporal.workflows import (
    Approve,
    Ask,
    AskAsValue,
    AskTwice,
    Imports,
    Outside,
)

import roomkit.adapters.temporal as adapter
from roomkit.adapters.temporal import ask_person, update_id_of
from roomkit.adapters.temporal._checks import (
    SCHEMA_NODES_CHECKED,
    check_answer_schema,
    check_approver_count,
)
from roomkit.tools.human_input.checks import answer_schema_of

HISTORIES = Path(__file__).parent / "histories"


async def test_a_workflow_asks_and_the_desk_answers(world: World) -> None:
    async with running(world.worker(Ask), world.notifier()):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        answered = await world.answer(pending_id, "alice", {"answer": "Hotel Lisboa"})
        result = await handle.result()
    assert answered.status_code == 200, answered.text
    assert result == {"answer": "Hotel Lisboa"}
    assert await updates_taken(handle) == [update_id_of(pending_id)]
    history = await world.desk_handler.history(pending_id)
    delivered = [entry for entry in history if entry["type"] == "delivered"]
    assert [(e["accepted"], e["workflow_id"]) for e in delivered] == [(True, handle.id)]
    shown = [entry["surface"] for entry in history if entry["type"] == "shown"]
    assert "temporal" not in shown, "the surface tells the workflow, it shows no one"
    request = await world.desk_handler.get_request(pending_id)
    assert request is not None
    assert request.tool_call_id.endswith(f":{handle.id}")
    assert request.tool_call_id.startswith("temporal:1:")


async def test_two_asks_in_one_workflow_and_two_workflows_never_cross(world: World) -> None:
    async with running(world.worker(Ask, AskTwice), world.notifier()):
        twice = await world.start(AskTwice)
        one = await world.start(Ask, {"arguments": {"question": "Which train?"}})
        two = await world.start(Ask, {"arguments": {"question": "Which car?"}})
        opened = {}
        for _ in range(3):
            pending_id = await world.created.next()
            request = await world.desk_handler.get_request(pending_id)
            assert request is not None
            opened[request.arguments["question"]] = pending_id
        for question in ("Which car?", "First?", "Which train?"):
            await world.answer(opened[question], "alice", {"answer": f"for {question}"})
        second = await world.created.next()
        await world.answer(second, "alice", {"answer": "for Second?"})
        results = await asyncio.gather(twice.result(), one.result(), two.result())
    assert results == [
        {"answers": ["for First?", "for Second?"]},
        {"answer": "for Which train?"},
        {"answer": "for Which car?"},
    ]
    assert second not in opened.values()


SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
"""For what the store plays no part in."""


@SQLITE_ONLY
async def test_arguments_that_are_not_json_are_refused_in_the_workflow(world: World) -> None:
    async with running(world.worker(Outside)):
        result = await (await world.start(Outside)).result()
    assert result["error"] == "TypeError"
    assert "must be JSON" in result["message"]


@SQLITE_ONLY
@pytest.mark.parametrize(("workflow", "field"), [(Ask, "answer_schema"), (Approve, "tool_schema")])
async def test_a_schema_that_is_not_json_is_refused_under_its_own_name(
    world: World, workflow: type, field: str
) -> None:
    async with running(world.worker(workflow)):
        handle = await world.start(workflow, {"schema_not_json": True})
        result = await handle.result()
    assert result["error"] == "TypeError", result
    assert f"(): {field} must be JSON" in result["message"]
    await nothing_asked(world, handle)


@SQLITE_ONLY
@pytest.mark.parametrize(("workflow", "field"), [(Ask, "answer_schema"), (Approve, "tool_schema")])
async def test_a_schema_no_store_keeps_is_refused_in_the_workflow_under_its_own_name(
    world: World, workflow: type, field: str
) -> None:
    """The create activity refused it, after a trip, as the request's ``answer_schema``."""
    async with running(world.worker(workflow)):
        handle = await world.start(workflow, {"schema_lone": True})
        result = await handle.result()
    assert result["error"] == "InvalidTextError", result
    assert f"(): {field} must hold valid Unicode text" in result["message"]
    assert "lone surrogate (U+DC80)" in result["message"]
    await nothing_asked(world, handle)


REFUSED_IN_THE_WORKFLOW = [
    ({"tool": "choose\ud800"}, "InvalidTextError", "tool_name must be valid Unicode text"),
    ({"arguments": {"q": "\udc00"}}, "InvalidTextError", "arguments must be valid Unicode"),
    ({"actor": "al\ud800"}, "InvalidTextError", "actor must be valid Unicode text"),
    ({"actor": 5}, "ValueError", "actor is an id (a str) or None, got 5"),
    ({"room_id": ["room"]}, "ValueError", "room_id is an id (a str) or None"),
    ({"approvers": ["b\ud800"]}, "InvalidTextError", "approvers must be valid Unicode"),
    # Past what a request holds on every store: the create activity refused it after a trip.
    ({"actor": "a" * 257}, "ValueError", "(): actor is 257 characters, over the 256 an id"),
    ({"room_id": "r" * 300}, "ValueError", "(): room_id is 300 characters, over the 256"),
    ({"approvers": ["b" * 257]}, "ValueError", "(): an approver is 257 characters, over"),
    ({"long": 100_000}, "ValueError", "(): the arguments are 100,015 characters as JSON"),
    # Past Temporal's payload limit: its workflow task failed, again and again.
    ({"long": 3_000_000}, "ValueError", "(): the arguments are at least 3,000,005 characters"),
    # Written out path by path, for ever, before anything was asked.
    ({"shared": 40}, "ValueError", "(): the arguments are at least 224,0"),
    # Past the recursion limit of json: the workflow task failed, again and again.
    ({"deep": 3_000}, "ValueError", "(): the arguments nest objects and lists more than 24"),
    ({"deep": 25}, "ValueError", "more than 24 levels deep (level 25 at 'tree[0][0]"),
    ({"digits": 5_000}, "ValueError", "an integer 5,000 characters long at 'n'"),
    # The expire activity failed to record the default, and was retried for ever.
    ({"default": "Hotel \udc80"}, "InvalidTextError", "ladder.on_expiry must be valid"),
    ({"escalate": [[1, "b\udc80"]]}, "InvalidTextError", "escalate(after=1, to=...) must be"),
    # An AttributeError: the workflow task failed, again and again.
    ({"ladder_raw": {"steps": []}}, "TypeError", "(): ladder is a Ladder(...) of remind()"),
    ({"activity_timeouts_raw": 5}, "TypeError", "(): activity_timeouts must be an Activity"),
]


@SQLITE_ONLY
@pytest.mark.parametrize(("spec", "error", "message"), REFUSED_IN_THE_WORKFLOW)
async def test_what_no_store_keeps_is_refused_in_the_workflow_with_its_field_named(
    world: World, spec: dict[str, object], error: str, message: str
) -> None:
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, spec)
        result = await handle.result()
    assert result["error"] == error, result
    assert message in result["message"]
    await nothing_asked(world, handle)


QUOTED_SHORT = [
    ({"room_id": ["r" * 1_000_000]}, "(): room_id is an id (a str) or None, got ['rrr"),
    ({"approvers": "b" * 1_000_000}, "(): approvers is a list of actor ids, got 'bbb"),
    ({"tool": ["c" * 1_000_000]}, "(): tool_name must be a non-empty string, got ['ccc"),
]


@SQLITE_ONLY
@pytest.mark.parametrize(("spec", "message"), QUOTED_SHORT)
async def test_a_huge_value_refused_in_the_workflow_is_quoted_cut_short(
    world: World, spec: dict[str, object], message: str
) -> None:
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, spec)
        result = await handle.result()
    assert result["error"] == "ValueError", result
    assert message in result["message"]
    assert "..." in result["message"]
    assert len(result["message"]) < 300, len(result["message"])


async def nothing_asked(world: World, handle: WorkflowHandle) -> None:
    scheduled = [
        event
        async for event in handle.fetch_history_events()
        if event.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled == [], "refused before the create activity"
    assert await world.desk_handler.list_pending() == []


PAST_THE_PAYLOAD_LIMIT = [
    (Ask, {"schema_long": 3_000_000}, "answer_schema is 3000034 bytes as JSON"),
    (Approve, {"schema_long": 3_000_000}, "tool_schema is 3000034 bytes as JSON"),
    (Ask, {"approvers_many": 150_000}, "approvers is 2550001 bytes as JSON"),
]


@SQLITE_ONLY
@pytest.mark.parametrize(("workflow", "spec", "message"), PAST_THE_PAYLOAD_LIMIT)
async def test_an_ask_temporal_cannot_carry_to_its_activity_is_refused_naming_its_field(
    world: World, workflow: type, spec: dict[str, object], message: str
) -> None:
    """Else the workflow task fails on Temporal's payload limit, again and again."""
    async with running(world.worker(workflow)):
        handle = await world.start(workflow, spec)
        result = await result_or_task_failure(handle)
    assert result["error"] == "ValueError", result
    assert message in result["message"]
    assert "past Temporal's payload limit of 2097152" in result["message"]
    assert "measured before any payload codec" in result["message"]
    await nothing_asked(world, handle)


TOO_MANY_APPROVERS = [
    (Approve, {"approvers_many": 101}, "request_approval(): approvers name 101 actor ids"),
    # The question's actor is asked too: with 100 others, 101.
    (Ask, {"approvers_many": 100}, "ask_person(): approvers and the actor name 101 actor ids"),
]


@SQLITE_ONLY
@pytest.mark.parametrize(("workflow", "spec", "message"), TOO_MANY_APPROVERS)
async def test_more_approvers_than_a_request_lists_are_refused_in_the_workflow(
    world: World, workflow: type, spec: dict[str, object], message: str
) -> None:
    """Else the create activity refuses them, after a trip (a question is left asked)."""
    async with running(world.worker(workflow)):
        handle = await world.start(workflow, spec)
        result = await handle.result()
    assert result["error"] == "ValueError", result
    assert result["message"].startswith(message)
    assert "over the 100 approvers a request may list on every store" in result["message"]
    await nothing_asked(world, handle)


DANGLING = {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}
"""A schema with a ``$ref`` that resolves to nothing in it."""


def refusal(schema: object) -> str:
    """What ``answer_schema_of`` says of ``schema``, as ``create()`` refuses it."""
    with pytest.raises((TypeError, ValueError)) as refused:
        answer_schema_of(schema)
    return str(refused.value)


JSON_ONLY = (
    "pass a JSON Schema dict (e.g. {'type': 'string'}; for a Pydantic model, "
    "Model.model_json_schema(): a workflow passes JSON, never a model class)"
)
"""What a workflow is told to pass instead: a model class is no JSON, so no answer."""

SCHEMAS_REFUSED = [
    (
        Ask,
        DANGLING,
        "ValueError",
        "ask_person(): answer_schema holds a $ref that resolves to nothing in it "
        f"('#/nowhere'; a $ref is looked up inside the schema only, e.g. '#/$defs/Name' for "
        f"a definition under its $defs): {JSON_ONLY}",
    ),
    (Ask, {"type": 5}, "ValueError", "ask_person(): answer_schema is no valid JSON Schema"),
    (
        Ask,
        ["string"],
        "TypeError",
        f"ask_person(): answer_schema must be a JSON Schema dict, got ['string']: {JSON_ONLY}",
    ),
    (
        Approve,
        DANGLING,
        "ValueError",
        "request_approval(): tool_schema is refused: Tool 'book': parameters schema has an "
        "unresolvable $ref '#/nowhere'",
    ),
    (
        Approve,
        {"type": "string"},
        "ValueError",
        "request_approval(): tool_schema is refused: Tool 'book': parameters must describe "
        'an object of arguments ("type": "object"), got "type": "string"',
    ),
    (Approve, "object", "TypeError", "request_approval(): tool_schema must be a JSON Schema"),
]


@SQLITE_ONLY
@pytest.mark.parametrize(("workflow", "schema", "error", "message"), SCHEMAS_REFUSED)
async def test_a_schema_no_answer_could_be_checked_against_is_refused_in_the_workflow(
    world: World, workflow: type, schema: object, error: str, message: str
) -> None:
    """Else the create activity refuses it, after a trip to a worker."""
    async with running(world.worker(workflow)):
        handle = await world.start(workflow, {"schema": schema})
        result = await handle.result()
    await nothing_asked(world, handle)
    assert result["error"] == error, result
    assert result["message"].startswith(message), result


@SQLITE_ONLY
async def test_a_schema_too_large_to_check_in_the_workflow_is_refused_by_the_activity_at_once(
    world: World,
) -> None:
    """Checking it would run the workflow task past Temporal's deadlock detection; the
    create activity refuses it instead, with no second attempt."""
    schema = {**DANGLING, "allOf": [{}] * SCHEMA_NODES_CHECKED}
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, {"schema": schema})
        result = await handle.result()
    assert result == {"error": "ValueError", "message": refusal(schema)}
    assert create_attempts(await handle.fetch_history()) == [(1, True)]
    assert await world.desk_handler.list_pending() == []


def create_attempts(history: WorkflowHistory) -> list[tuple[int, bool]]:
    """Each attempt of the workflow's activities that failed: its number, and whether it
    was marked non-retryable."""
    attempts: dict[int, int] = {}
    failed = []
    for event in history.events:
        if event.HasField("activity_task_started_event_attributes"):
            started = event.activity_task_started_event_attributes
            attempts[started.scheduled_event_id] = started.attempt
        elif event.HasField("activity_task_failed_event_attributes"):
            failure = event.activity_task_failed_event_attributes
            retry = failure.failure.application_failure_info.non_retryable
            failed.append((attempts[failure.scheduled_event_id], retry))
    return failed


@pytest.mark.parametrize(
    ("name", "workflow"), [("answer-schema-refused", Ask), ("tool-schema-refused", Approve)]
)
async def test_a_history_whose_schema_the_create_activity_refused_replays(
    name: str, workflow: type
) -> None:
    """Recorded before the workflow checked the schema (``{"schema": DANGLING}``): its
    create activity ran once and refused it, not retried, and the ask replays as it was
    made."""
    history = WorkflowHistory.from_json(name, (HISTORIES / f"{name}.json").read_text())
    assert create_attempts(history) == [(1, True)]
    replayed = await Replayer(workflows=[workflow]).replay_workflow(history)
    assert replayed.replay_failure is None


@SQLITE_ONLY
@pytest.mark.parametrize("workflow", [Ask, Approve])
@pytest.mark.parametrize("years", [101, 40_000], ids=["past-a-century", "past-any-timer"])
async def test_a_grace_past_a_century_is_refused_in_the_workflow(
    world: World, workflow: type, years: int
) -> None:
    """Else the ask is made and the workflow waits past the deadline for that long, or
    (past what Temporal's timers hold) its task fails, again and again."""
    grace = years * 365 * 86_400
    async with running(world.worker(workflow)):
        handle = await world.start(workflow, {"grace": grace})
        result = await result_or_task_failure(handle)
    assert result["error"] == "ValueError", result
    assert result["message"].endswith(
        f"(): grace is {grace:,} seconds, over the 3,153,600,000 (a century) a workflow's "
        "timer may run past the deadline: pass a grace of minutes (the default is 60 seconds)"
    )
    await nothing_asked(world, handle)


class Zlib(PayloadCodec):
    """A compressing payload codec, as an application may configure on its client."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(
                metadata={"encoding": b"binary/zlib"}, data=zlib.compress(p.SerializeToString())
            )
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        decoded = []
        for payload in payloads:
            if payload.metadata.get("encoding") != b"binary/zlib":
                decoded.append(payload)
                continue
            original = Payload()
            original.ParseFromString(zlib.decompress(payload.data))
            decoded.append(original)
        return decoded


@SQLITE_ONLY
async def test_a_compressing_codec_lets_no_larger_ask_through_and_the_error_says_so(
    world: World,
) -> None:
    """The check measures what the payload converter writes, before the codec: an input
    that zlib would shrink far under the limit is refused all the same, and told why."""
    converter = dataclasses.replace(DataConverter.default, payload_codec=Zlib())
    client = await Client.connect(
        world.client.service_client.config.target_host, data_converter=converter
    )
    worker = Worker(
        client,
        task_queue=world.task_queue,
        workflows=[Ask],
        activities=adapter.activities(world.worker_handler),
    )
    async with running(worker):
        handle = await client.start_workflow(
            Ask.run,
            {"schema_long": 3_000_000},
            id=f"wf-{uuid.uuid4().hex[:8]}",
            task_queue=world.task_queue,
        )
        result = await result_or_task_failure(handle)
    assert result["error"] == "ValueError", result
    assert "activity's input 3000" in result["message"]
    assert "measured before any payload codec: compression does not count" in result["message"]
    await nothing_asked(world, handle)
    first = await anext(handle.fetch_history_events())
    [sent] = first.workflow_execution_started_event_attributes.input.payloads
    assert sent.metadata["encoding"] == b"binary/zlib", "the codec is in use"
    assert sent.ByteSize() < 100_000, "what is sent is far under the limit"


@SQLITE_ONLY
async def test_an_ask_just_under_temporals_payload_limit_is_asked(world: World) -> None:
    spec = {"schema_long": 2_090_000, "timeout": 1, "grace": 0.1}
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, spec)
        pending_id = await world.created.next()
        result = await result_or_task_failure(handle)
    assert result["error"] == "HumanInputTimeoutError", "asked, and nobody answered"
    request = await world.desk_handler.get_request(pending_id)
    assert request is not None
    assert request.answer_schema == {"type": "string", "description": "s" * 2_090_000}


@SQLITE_ONLY
async def test_a_workflow_file_imports_the_workers_own_adapter_not_a_fresh_copy(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not yet read on the package: the sandbox's import is the first.
    for name in ("ask_person", "TemporalUpdates"):
        monkeypatch.delitem(vars(adapter), name, raising=False)
    async with running(world.worker(Imports)):
        result = await (await world.start(Imports)).result()
    # The worker's own modules, as its sys.modules holds them (the sandbox keeps its own).
    asking = sys.modules["roomkit.adapters.temporal._workflow"]
    updates = sys.modules["roomkit.adapters.temporal.updates"]
    assert result == {
        "ask_person": id(asking.ask_person),
        "TemporalUpdates": id(updates.TemporalUpdates),
    }


async def test_ask_person_outside_a_workflow_says_where_it_runs() -> None:
    with pytest.raises(RuntimeError, match="runs in workflow code"):
        await ask_person("choose", {"question": "Which hotel?"})


def test_a_questions_actor_among_its_approvers_is_counted_once() -> None:
    """The create activity lists each person once: 100 approvers, the actor among them."""
    approvers = [f"person-{n:07d}" for n in range(100)]
    check_approver_count("ask_person", "question", approvers[0], approvers)
    with pytest.raises(ValueError, match="approvers and the actor name 101 actor ids"):
        check_approver_count("ask_person", "question", "alice", approvers)
    check_approver_count("request_approval", "approval", "alice", approvers)


@pytest.mark.parametrize("schema", [DANGLING, {"type": 5}, ["string"], "string"])
def test_a_question_schema_refused_in_a_workflow_asks_for_json_not_a_model_class(
    schema: object,
) -> None:
    """A workflow's arguments are JSON: a Pydantic model class cannot be passed there."""
    with pytest.raises((TypeError, ValueError)) as refused:
        check_answer_schema("ask_person", "question", "choose", schema)
    message = str(refused.value)
    assert message.startswith("ask_person(): answer_schema "), message
    assert message.endswith(JSON_ONLY), message
    assert "or a Pydantic model class" not in message
    assert "BaseModel subclass" not in message


def test_a_schema_the_workflow_checks_ends_where_checking_it_would_take_long() -> None:
    """One object, list or boolean past the bound is left to the create activity."""
    within = {"allOf": [True] * (SCHEMA_NODES_CHECKED - 4), "properties": {"a": {"$ref": "#/x"}}}
    with pytest.raises(ValueError, match="holds a \\$ref that resolves to nothing"):
        check_answer_schema("ask_person", "question", "choose", within)
    past = {**within, "allOf": [True] * (SCHEMA_NODES_CHECKED - 3)}
    check_answer_schema("ask_person", "question", "choose", past)


@SQLITE_ONLY
async def test_a_workflow_whose_instances_are_not_hashable_asks(world: World) -> None:
    """A workflow that is a dataclass compares by value and has no hash: its asks are kept
    by the instance itself, not looked up by its hash."""
    async with running(world.worker(AskAsValue), world.notifier()):
        handle = await world.start(AskAsValue)
        pending_id = await world.created.next()
        await world.answer(pending_id, "alice", {"answer": "Hotel A"})
        result = await result_or_task_failure(handle)
    assert result == {"answer": "Hotel A"}

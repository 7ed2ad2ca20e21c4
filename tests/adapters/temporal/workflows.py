"""The workflows the Temporal tests run (a worker in another process imports them too)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from roomkit.adapters.temporal import (
        ActivityTimeouts,
        TemporalUpdates,
        ask_person,
        request_approval,
    )
    from roomkit.core.exceptions import HumanInputRejectedError
    from roomkit.tools.human_input.ladder import Ladder, default, escalate

_FAILURES = (HumanInputRejectedError, TimeoutError, RuntimeError, TypeError, ValueError)


def _failed(error: Exception) -> dict[str, Any]:
    return {"error": type(error).__name__, "message": str(error)}


def _schema(spec: dict[str, Any]) -> Any:
    """The schema of the ask: as the spec gives it (what is no schema too), or made here."""
    if "schema" in spec:
        return spec["schema"]
    if spec.get("schema_not_json"):
        return {"type": "string", "maxLength": timedelta(seconds=1)}
    if spec.get("schema_lone"):  # made here: a workflow's start carries no lone surrogate
        return {"type": "object", "description": "Hotel \udc80"}
    if "schema_long" not in spec:
        return None
    # Made here: past what a workflow's start takes.
    return {"type": "string", "description": "s" * spec["schema_long"]}


def _many(count: int) -> list[str]:
    """``count`` approvers, made here: past what a workflow's start takes."""
    return [f"person-{n:07d}" for n in range(count)]


def _options(spec: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {
        "timeout": timedelta(seconds=spec.get("timeout", 120)),
        "room_id": "room",
    }
    if "room_id" in spec:
        options["room_id"] = spec["room_id"]
    if "grace" in spec:
        options["grace"] = timedelta(seconds=spec["grace"])
    if "default" in spec or "escalate" in spec:
        steps = [escalate(after, to) for after, to in spec.get("escalate", ())]
        on_expiry = default(spec["default"]) if "default" in spec else None
        options["ladder"] = Ladder(*steps, on_expiry=on_expiry)
    if "ladder_raw" in spec:  # what is no Ladder at all
        options["ladder"] = spec["ladder_raw"]
    if "heartbeat" in spec:
        heartbeat = timedelta(seconds=spec["heartbeat"])
        options["activity_timeouts"] = ActivityTimeouts(heartbeat=heartbeat)
    if "unpolled" in spec:
        unpolled = timedelta(seconds=spec["unpolled"])
        options["activity_timeouts"] = ActivityTimeouts(unpolled=unpolled)
    if "activity_timeouts_raw" in spec:  # what is no ActivityTimeouts at all
        options["activity_timeouts"] = spec["activity_timeouts_raw"]
    return options


@workflow.defn
class Ask:
    """Asks once; returns the answer, or the error it met."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        arguments = spec.get("arguments", {"question": "Which hotel?"})
        approvers = spec.get("approvers")
        # Made here: past what a workflow's start takes.
        if "long" in spec:
            arguments = {"question": "x" * spec["long"]}
        if "shared" in spec:  # a list shared down that many levels: JSON past any limit
            shared: list[Any] = [1]
            for _ in range(spec["shared"]):
                shared = [shared, shared]
            arguments = {"tree": shared}
        if "deep" in spec:
            nested: Any = "leaf"
            for _ in range(spec["deep"] - 1):
                nested = [nested]
            arguments = {"tree": nested}
        if "digits" in spec:
            arguments = {"n": 10 ** (spec["digits"] - 1)}
        if "approvers_many" in spec:
            approvers = _many(spec["approvers_many"])
        try:
            answer = await ask_person(
                spec.get("tool", "choose"),
                arguments,
                actor=spec.get("actor", "alice"),
                approvers=approvers,
                answer_schema=_schema(spec),
                **_options(spec),
            )
        except _FAILURES as error:
            return _failed(error)
        return {"answer": answer}


@workflow.defn
class AskTwice:
    """Asks two questions in turn; returns both answers."""

    @workflow.run
    async def run(self) -> dict[str, Any]:
        first = await ask_person("choose", {"question": "First?"}, actor="alice", room_id="room")
        second = await ask_person("choose", {"question": "Second?"}, actor="alice", room_id="room")
        return {"answers": [first, second]}


@workflow.defn
class AskAtOnce:
    """Asks ``count`` questions at once; returns their answers."""

    @workflow.run
    async def run(self, count: int) -> dict[str, Any]:
        asks = [
            ask_person("choose", {"question": f"Which {n}?"}, actor="alice", room_id="room")
            for n in range(count)
        ]
        return {"answers": list(await asyncio.gather(*asks))}


@workflow.defn
class Approve:
    """Holds a call for approval; returns the decision, or the error it met."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        try:
            decision = await request_approval(
                "book",
                spec.get("arguments", {"trip": "Lisbon", "amount": 900}),
                approvers=(
                    _many(spec["approvers_many"])
                    if "approvers_many" in spec
                    else spec.get("approvers", ["alice", "bob", "carol"])
                ),
                quorum=spec.get("quorum"),
                tool_schema=_schema(spec),
                **_options(spec),
            )
        except _FAILURES as error:
            return _failed(error)
        return {"decision": decision.kind, "arguments": decision.arguments, "text": decision.text}


@workflow.defn
class Outside:
    """Calls ask_person with arguments that are not JSON."""

    @workflow.run
    async def run(self) -> dict[str, Any]:
        try:
            await ask_person("choose", {"when": timedelta(seconds=1)}, actor="alice")
        except _FAILURES as error:
            return _failed(error)
        return {}


@workflow.defn
class Conversation:
    """A room's conversation: each message is an update; the workflow runs until told to
    stop, asking a person about each message."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.done = False

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: self.done)
        return self.heard

    @workflow.update
    async def message(self, text: str) -> str:
        if text == "bye":
            self.done = True
            return "bye"
        answer = await ask_person("reply", {"message": text}, actor="alice", room_id="room")
        self.heard.append(answer)
        return answer


@workflow.defn
class Imports:
    """The identities of the adapter's names as this file imported them in the sandbox:
    the worker's own objects when passed through, else copies loaded for this workflow."""

    @workflow.run
    async def run(self) -> dict[str, int]:
        return {"ask_person": id(ask_person), "TemporalUpdates": id(TemporalUpdates)}


@workflow.defn(name="Transfer")
class TransferBefore:
    """A workflow as first deployed: it asks about a transfer to Bob."""

    @workflow.run
    async def run(self) -> dict[str, Any]:
        return await _transfer({"amount": 10, "to": "Bob"})


@workflow.defn(name="Transfer")
class TransferAfter:
    """The same workflow as deployed later, after a reset: it asks about another transfer."""

    @workflow.run
    async def run(self) -> dict[str, Any]:
        return await _transfer({"amount": 10_000, "to": "Mallory"})


async def _transfer(arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        answer = await ask_person("transfer", arguments, actor="alice", room_id="room")
    except _FAILURES as error:
        return _failed(error)
    return {"answer": answer}


@workflow.defn
class AskThenFail:
    """On its first attempt, asks and fails while the person is asked (told to by the signal
    ``fail``); a retry asks the same question afresh and returns the answer."""

    def __init__(self) -> None:
        self.failing = False
        self.asked: asyncio.Future[str] | None = None

    @workflow.run
    async def run(self) -> dict[str, Any]:
        asking = ask_person("choose", {"question": "Which hotel?"}, actor="alice", room_id="room")
        if workflow.info().attempt > 1:
            return {"answer": await asking}
        self.asked = asyncio.ensure_future(asking)  # left open when the run fails
        await workflow.wait_condition(lambda: self.failing)
        raise ApplicationError("a later step failed")

    @workflow.signal
    def fail(self) -> None:
        self.failing = True


@workflow.defn
class ContinueWhileAsking:
    """Asks, and continues as new while the person is asked (told to by the signal
    ``next``); the new run asks the same question afresh and returns the answer."""

    def __init__(self) -> None:
        self.going_on = False
        self.asked: asyncio.Future[str] | None = None

    @workflow.run
    async def run(self, continued: bool) -> dict[str, Any]:
        asking = ask_person("choose", {"question": "Which hotel?"}, actor="alice", room_id="room")
        if continued:
            return {"answer": await asking}
        self.asked = asyncio.ensure_future(asking)  # left open when the run continues
        await workflow.wait_condition(lambda: self.going_on)
        workflow.continue_as_new(True)

    @workflow.signal
    def next(self) -> None:
        self.going_on = True


@workflow.defn
class ContinueThenAsk:
    """Continues as new ``count`` times without asking, then asks once and returns the
    answer."""

    @workflow.run
    async def run(self, count: int) -> dict[str, Any]:
        if count > 0:
            workflow.continue_as_new(count - 1)
        answer = await ask_person("choose", {"question": "Which hotel?"}, actor="alice")
        return {"answer": answer}


@workflow.defn
@dataclass
class AskAsValue:
    """A workflow whose instances compare by value (a dataclass), so none is hashable; asks
    once and returns the answer."""

    asked: str = ""

    @workflow.run
    async def run(self) -> dict[str, Any]:
        self.asked = "Which hotel?"
        answer = await ask_person("choose", {"question": self.asked}, actor="alice", room_id="room")
        return {"answer": answer}

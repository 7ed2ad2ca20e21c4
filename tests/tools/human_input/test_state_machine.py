"""A state machine over HumanInputHandler, checked against a model of the spec.

Rules create requests (attached or detached, on a few channels), register notification
callbacks that allow, deny or fail, settle requests from outside (resolve, reject, release),
close the handler globally or per channel, start and cancel waits, and move the virtual
clock past deadlines. The model predicts every return value and every outcome; after each
step the handler must agree with it:

- exactly one outcome per request: the first successful settle wins and never changes;
- every finished wait saw that outcome, and a later wait replays it (or, once evicted from
  the bounded retention, raises UnknownRequestError);
- the retention never exceeds its bound and evicts the oldest settle first (timeouts of
  one instant may be recorded in either order);
- at teardown, once every request has been waited on or released, nothing is left: no
  pending request, no notification task, no live deadline and no armed timer.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from roomkit.core.exceptions import (
    HandlerClosedError,
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInput, PendingInputEvent, PendingInputStatus
from roomkit.testing import advance, virtual_runner
from roomkit.tools.human_input import HumanInputHandler, MemoryStore

Outcome = tuple[str, str]

RELEASED = "Released before an answer arrived"
HANDLER_CLOSED = "Human input handler closed"
DENIED = "Denied by ON_USER_INPUT_REQUIRED hook"
APP = "<app>"
CHANNELS = ["", "a", "b"]
TICKS = 8

texts = st.text(alphabet="xyz ", max_size=4)
timeouts = st.sampled_from([None, 0, 1, 2.5, 10])


def observed(request: PendingInput) -> Outcome | None:
    """The outcome a request's fields record, or None while it is pending."""
    status = request.status
    if status is PendingInputStatus.PENDING:
        return None
    if status is PendingInputStatus.RESOLVED:
        return ("answer", request.result or "")
    if status is PendingInputStatus.TIMED_OUT:
        return ("timeout", "")
    kind = "withdrawn" if request.withdrawn else "rejected"
    return (kind, request.reject_reason or "Request rejected")


async def outcome_of(wait: asyncio.Future[str] | asyncio.Task[str]) -> Outcome:
    try:
        return ("answer", await wait)
    except HumanInputRejectedError as error:
        return ("rejected", str(error))
    except RequestWithdrawnError as error:
        return ("withdrawn", str(error))
    except HumanInputTimeoutError:
        return ("timeout", "")
    except UnknownRequestError:
        return ("unknown", "")


async def drain() -> None:
    """Let woken waiters and notification tasks run to completion (no time passes)."""
    for _ in range(TICKS):
        await asyncio.sleep(0)


class Callback:
    """A notification callback with a fixed verdict; it records whom it was asked about."""

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.seen: list[str] = []

    async def __call__(self, event: PendingInputEvent) -> bool | None:
        self.seen.append(event.pending_id)
        if self.verdict == "raise":
            raise RuntimeError("notification failed")
        return {"allow": True, "none": None, "deny": False}[self.verdict]


@dataclass
class Tracked:
    """The model of one request."""

    request: PendingInput
    channel: str
    active: bool = True
    outcome: Outcome | None = None
    deadline: float | None = None
    order: int = 0


@dataclass
class Waiting:
    """A wait() running in its own task."""

    pending_id: str
    task: asyncio.Task[Outcome]
    cancelled: bool = False


@dataclass
class Model:
    """What the handler should hold: the spec's rules, applied by hand."""

    retention: int
    now: float = 0.0
    closed: bool = False
    closed_channels: set[str] = field(default_factory=set)
    callbacks: dict[str, Callback] = field(default_factory=dict)
    app: Callback | None = None
    registrations: dict[str, int] = field(default_factory=dict)
    issued: dict[str, int] = field(default_factory=dict)
    requests: dict[str, Tracked] = field(default_factory=dict)
    retained: list[str] = field(default_factory=list)
    ties: dict[str, float] = field(default_factory=dict)
    """Requests that timed out at the same instant, by group: their order is not specified."""

    def route(self, channel: str) -> Callback | None:
        if channel in self.callbacks:
            return self.callbacks[channel]
        if not channel and len(self.callbacks) == 1:
            return next(iter(self.callbacks.values()))
        return self.app

    def settle(self, pending_id: str, outcome: Outcome) -> None:
        tracked = self.requests[pending_id]
        assert tracked.outcome is None
        tracked.outcome = outcome
        if self.retention:
            self.retained.append(pending_id)
            del self.retained[: -self.retention]

    def active(self) -> list[Tracked]:
        return [t for t in self.requests.values() if t.active]


class HumanInputMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.runner = virtual_runner()
        self.handler: HumanInputHandler | None = None
        self.store = MemoryStore()
        self.model = Model(retention=0)
        self.waits: list[Waiting] = []
        self.arms = itertools.count()

    # -- plumbing ------------------------------------------------------------------------------

    @property
    def live(self) -> HumanInputHandler:
        assert self.handler is not None
        return self.handler

    def step(self) -> None:
        """Let the loop catch up, then apply the timeouts that fired to the model."""
        self.runner.run(drain())
        self.expire_due()
        for waiting in self.waits:
            if waiting.task.done() and not waiting.cancelled:
                # A wait that returned (or raised the outcome) retired its request.
                self.model.requests[waiting.pending_id].active = False

    def expire_due(self) -> None:
        model = self.model
        due = sorted(
            (t for t in model.active() if t.outcome is None and t.deadline is not None),
            key=lambda t: (t.deadline, t.order),
        )
        expired = [t for t in due if t.deadline is not None and t.deadline <= model.now]
        for tracked in expired:
            model.settle(tracked.request.pending_id, ("timeout", ""))
            tracked.active = False
            if sum(t.deadline == tracked.deadline for t in expired) > 1:
                model.ties[tracked.request.pending_id] = tracked.deadline

    def start_waiting(self, tracked: Tracked, timeout: float | None) -> None:
        pending_id = tracked.request.pending_id
        loop = self.runner.get_loop()
        task = loop.create_task(outcome_of(self.live.wait(pending_id, timeout=timeout)))
        self.waits.append(Waiting(pending_id, task))
        if tracked.outcome is not None:
            # Already settled: the wait collects the outcome and retires the request.
            tracked.active = False
        elif timeout is not None:
            when = self.model.now + timeout
            if tracked.deadline is None or when < tracked.deadline:
                tracked.deadline = when
                tracked.order = next(self.arms)

    def withdraw_scope(self, channel: str | None, reason: str) -> None:
        for tracked in self.model.active():
            if channel is not None and tracked.channel != channel:
                continue
            if tracked.outcome is None:
                self.model.settle(tracked.request.pending_id, ("withdrawn", reason))
            tracked.active = False

    def collect_finished_waits(self) -> None:
        for waiting in [w for w in self.waits if w.task.done()]:
            self.waits.remove(waiting)
            tracked = self.model.requests[waiting.pending_id]
            if waiting.cancelled:
                assert waiting.task.cancelled()
                continue
            assert waiting.task.result() == tracked.outcome, waiting.pending_id
            assert tracked.outcome is not None

    # -- rules ---------------------------------------------------------------------------------

    @initialize(retention=st.sampled_from([0, 1, 2, 3, 128]))
    def start(self, retention: int) -> None:
        # The handler's own store, to read its retention oldest first.
        self.store = MemoryStore(retention=retention)
        self.handler = HumanInputHandler(store=self.store)
        self.model = Model(retention=retention)

    @rule(
        target=ids,
        channel=st.sampled_from(CHANNELS),
        detached=st.booleans(),
        then_wait=st.booleans(),
        timeout=timeouts,
    )
    def create(
        self, channel: str, detached: bool, then_wait: bool, timeout: float | None
    ) -> object:
        """Open a request; the usual caller then waits on it at once."""
        handler, model = self.live, self.model
        make = handler.create_detached if detached else handler.create
        refused = model.closed or channel in model.closed_channels
        try:
            request = self.runner.run(make("Ask", {"channel": channel}, channel_id=channel))
        except HandlerClosedError:
            assert refused
            return multiple()
        assert not refused
        assert request.detached is detached
        pending_id = request.pending_id
        tracked = model.requests[pending_id] = Tracked(request, channel)
        callback = model.route(channel)
        self.step()
        for candidate in (*model.callbacks.values(), model.app):
            if candidate is not None:
                assert (pending_id in candidate.seen) == (candidate is callback)
        if callback is not None and callback.verdict == "deny":
            model.settle(pending_id, ("rejected", DENIED))
        if then_wait:
            self.start_waiting(tracked, timeout)
            self.step()
        return pending_id

    @rule(
        channel=st.sampled_from([*CHANNELS, APP]),
        verdict=st.sampled_from(["allow", "none", "deny", "raise"]),
    )
    def register(self, channel: str, verdict: str) -> None:
        handler, model = self.live, self.model
        callback = Callback(verdict)
        if channel == APP:
            handler.on_input_required = callback
            model.app = callback
            return
        try:
            token = handler.set_on_input_required(channel, callback)
        except HandlerClosedError:
            assert model.closed
            return
        assert not model.closed
        model.issued[channel] = model.issued.get(channel, 0) + 1
        assert token == model.issued[channel]
        model.registrations[channel] = token
        model.callbacks[channel] = callback
        model.closed_channels.discard(channel)

    @rule(pending_id=ids, answer=texts)
    def resolve(self, pending_id: str, answer: str) -> None:
        tracked = self.model.requests[pending_id]
        expected = tracked.active and tracked.outcome is None
        assert self.live.resolve(pending_id, answer) is expected
        if expected:
            self.model.settle(pending_id, ("answer", answer))
        self.step()

    @rule(pending_id=ids, reason=texts)
    def reject(self, pending_id: str, reason: str) -> None:
        tracked = self.model.requests[pending_id]
        expected = tracked.active and tracked.outcome is None
        assert self.live.reject(pending_id, reason) is expected
        if expected:
            self.model.settle(pending_id, ("rejected", reason or "Request rejected"))
        self.step()

    @rule(pending_id=ids)
    def release(self, pending_id: str) -> None:
        tracked = self.model.requests[pending_id]
        assert self.live.release(pending_id) is tracked.active
        if tracked.active and tracked.outcome is None:
            self.model.settle(pending_id, ("withdrawn", RELEASED))
        tracked.active = False
        self.step()

    @precondition(lambda self: not self.model.closed and len(self.model.active()) >= 2)
    @rule()
    def close_everything(self) -> None:
        self.runner.run(self.live.close())
        model = self.model
        model.closed = True
        model.callbacks.clear()
        model.registrations.clear()
        self.withdraw_scope(None, HANDLER_CLOSED)
        self.step()

    @precondition(lambda self: bool(self.model.active()))
    @rule(channel=st.sampled_from(CHANNELS), token=st.sampled_from(["none", "current", "stale"]))
    def close_channel(self, channel: str, token: str) -> None:
        model = self.model
        current = model.registrations.get(channel)
        registration = {
            "none": None,
            "current": current,
            "stale": (current or 0) - 1,
        }[token]
        self.runner.run(self.live.close(channel_id=channel, registration=registration))
        if registration is not None and registration != current:
            self.step()
            return
        model.closed_channels.add(channel)
        model.callbacks.pop(channel, None)
        model.registrations.pop(channel, None)
        self.withdraw_scope(channel, HANDLER_CLOSED)
        self.step()

    @rule(pending_id=ids, timeout=timeouts)
    def wait(self, pending_id: str, timeout: float | None) -> None:
        model = self.model
        tracked = model.requests[pending_id]
        if tracked.active:
            self.start_waiting(tracked, timeout)
            self.step()
            return
        replay = self.runner.run(outcome_of(self.live.wait(pending_id, timeout=timeout)))
        if pending_id in model.retained:
            assert replay == tracked.outcome
        else:
            assert replay == ("unknown", "")

    @precondition(lambda self: any(not w.task.done() for w in self.waits))
    @rule(data=st.data(), timeout=timeouts)
    def wait_again(self, data: st.DataObject, timeout: float | None) -> None:
        """A second waiter joins a request someone already waits on."""
        waiting = data.draw(st.sampled_from([w for w in self.waits if not w.task.done()]))
        self.start_waiting(self.model.requests[waiting.pending_id], timeout)
        self.step()

    @precondition(lambda self: any(not w.task.done() for w in self.waits))
    @rule(data=st.data())
    def cancel_a_wait(self, data: st.DataObject) -> None:
        waiting = data.draw(st.sampled_from([w for w in self.waits if not w.task.done()]))
        tracked = self.model.requests[waiting.pending_id]
        assert tracked.active
        assert tracked.outcome is None
        waiting.task.cancel()
        waiting.cancelled = True
        self.model.settle(waiting.pending_id, ("withdrawn", RELEASED))
        tracked.active = False
        self.step()

    @rule(seconds=st.sampled_from([0.5, 1, 2.5, 4, 10]))
    def advance_the_clock(self, seconds: float) -> None:
        self.runner.run(asyncio.sleep(seconds))
        self.model.now += seconds
        self.step()

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def agrees_with_the_model(self) -> None:
        if self.handler is None:
            return
        handler, model = self.handler, self.model
        self.collect_finished_waits()
        assert self.runner.get_loop().time() == model.now
        assert list(handler.pending) == [t.request.pending_id for t in model.active()]
        for tracked in model.requests.values():
            assert observed(tracked.request) == tracked.outcome, tracked.request.pending_id
        settled = self.store.list_settled(limit=200) if model.retention else []
        retained = [request.pending_id for request in reversed(settled)]
        assert len(retained) <= model.retention
        assert len(retained) == len(model.retained)
        for actual, expected in zip(retained, model.retained, strict=True):
            tie = model.ties.get(actual)
            assert actual == expected or (tie is not None and tie == model.ties.get(expected))
        # Timeouts of one instant may be recorded in any order: follow the handler's.
        model.retained = retained

    def teardown(self) -> None:
        try:
            if self.handler is not None:
                self.runner.run(self.finish())
                handler = self.handler
                assert handler.pending == {}
                figures = handler.statistics()
                assert figures.running_notifications == 0
                assert figures.armed_deadlines == 0
                assert figures.deadline_timers == 0
        finally:
            self.runner.close()

    async def finish(self) -> None:
        """Wait on or release every request still active, then let every deadline pass."""
        handler = self.live
        closing: list[tuple[PendingInput, asyncio.Task[Outcome]]] = []
        for pending_id, request in handler.pending.items():
            if request.detached:
                handler.release(pending_id)
            else:
                wait = asyncio.create_task(outcome_of(handler.wait(pending_id, timeout=1)))
                closing.append((request, wait))
        await advance(100)
        for request, wait in closing:
            assert wait.done()
            assert wait.result() == observed(request)
        for waiting in self.waits:
            assert waiting.task.done()
            if not waiting.cancelled:
                request = self.model.requests[waiting.pending_id].request
                assert waiting.task.result() == observed(request)


TestHumanInputMachine = HumanInputMachine.TestCase

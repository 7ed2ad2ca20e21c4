"""The handler's state machine on every store, checked against a model on the real clock.

Three handlers share one store: two askers (``one``, ``two``) and a desk. On SQLite and
Redis each has its own store object, as separate processes would; on the memory store they
are one handler. Rules create requests (with or without a key, so that a create on the same
channel may re-attach: a key names a request only within its channel), start waits
(forever, or with a short real timeout), answer and reject from any handler or from all of
them at once, release, and close (or re-open) a channel of one asker. After every step the
store must agree with the model:

- each request has exactly one outcome, and it never changes: a settle told ``True`` is the
  outcome, a second settle is told ``False`` and changes nothing;
- every finished wait saw that outcome (or, on a durable store, was cut by its own handler
  closing the request's channel);
- ``list_pending`` lists exactly the requests the model holds open.

Deadlines run on the real clock, so the model does not predict a timeout: a request with a
deadline may time out at any step, and the model learns that from the store, which must then
show a timeout and nothing else. At teardown every open request gets a short deadline, and
every wait ever started must finish soon after it.

Each example runs on a loop of its own, with a fresh SQLite file or Redis prefix; on
Postgres the examples take one schema in turn, emptied before each.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)
from tests.postgres_server import PostgresServer
from tests.servers.schemas import emptied
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit.core.exceptions import (
    HandlerClosedError,
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInput, PendingInputEvent, PendingInputStatus
from roomkit.stores import PendingChange, PendingChangeKind
from roomkit.tools.human_input import HumanInputHandler

T = TypeVar("T")

Outcome = tuple[str, str, str | None]
"""What a request ended with: kind, answer or reason, and who settled it."""
Seen = tuple[str, str]
"""What a wait ended with: kind and answer or reason."""

RELEASED = "Released before an answer arrived"
HANDLER_CLOSED = "Human input handler closed"
TIMEOUT: Outcome = ("timeout", "", None)
CLOSED: Seen = ("closed", "")

ASKERS = ("one", "two")
EVERYONE = (*ASKERS, "desk")
CHANNELS = ("a", "b", "c")
KEYS = (None, "k0", "k1", "k2")
TIMEOUTS = (None, None, 0.05, 0)

STEP_BOUND = 20.0
"""Seconds any one step may take before it counts as hung."""
SETTLE_BOUND = 10.0
"""Seconds every wait has, at teardown, to end once its request has a short deadline."""

texts = st.text(alphabet="xyz ", max_size=3)

QUICK = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
DURABLE = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def observed(request: PendingInput) -> Outcome | None:
    """The outcome a stored record shows, or ``None`` while it is pending."""
    status = request.status
    if status is PendingInputStatus.PENDING:
        return None
    if status is PendingInputStatus.RESOLVED:
        return ("answer", request.result or "", request.settled_by)
    if status is PendingInputStatus.TIMED_OUT:
        return TIMEOUT
    kind = "withdrawn" if request.withdrawn else "rejected"
    return (kind, request.reject_reason or "Request rejected", request.settled_by)


async def seen_by(wait: Awaitable[str]) -> Seen:
    """What a wait ended with, as a value."""
    try:
        return ("answer", await wait)
    except HumanInputRejectedError as error:
        return ("rejected", str(error))
    except HandlerClosedError:
        # Checked before its base class: the wait was cut, the request may still be open.
        return CLOSED
    except RequestWithdrawnError as error:
        return ("withdrawn", str(error))
    except HumanInputTimeoutError:
        return ("timeout", "")
    except UnknownRequestError:
        return ("unknown", "")


async def announced(event: PendingInputEvent) -> None:
    """A channel owner's notification callback: it lets every request through."""


@dataclass
class Tracked:
    """The model of one request."""

    pending_id: str
    channel: str
    key: str | None
    creator: str
    outcome: Outcome | None = None
    armed: bool = False
    """A wait gave it a deadline: it may time out at any step from now on."""


@dataclass
class Waiting:
    """A wait() running in its own task."""

    pending_id: str
    handler: str
    task: asyncio.Task[Seen]
    may_close: bool = False
    """Its handler closed the request's channel: the wait may end cut, not settled."""


@dataclass
class Model:
    """What the store should hold."""

    requests: dict[str, Tracked] = field(default_factory=dict)
    keys: dict[tuple[str, str], str] = field(default_factory=dict)
    """The request each key names, by channel and key: a key is scoped to its owner."""
    closed: dict[str, set[str]] = field(default_factory=dict)
    """The closed channels of each handler (by identity)."""

    def open_ids(self) -> set[str]:
        return {t.pending_id for t in self.requests.values() if t.outcome is None}


class StoreMachine(RuleBasedStateMachine):
    """Three handlers on one store, driven on a loop owned by the machine."""

    ids = Bundle("ids")

    def __init__(self, kind: str, redis_url: str = "", schema: str = "") -> None:
        super().__init__()
        self.kind = kind
        self.schema = schema
        self.durable = kind != "memory"
        self.loop = asyncio.new_event_loop()
        self.workdir = Path(tempfile.mkdtemp(prefix="roomkit-state-"))
        self.stores: list[Any] = []
        self.handlers: dict[str, HumanInputHandler] = {}
        self.model = Model()
        self.waits: list[Waiting] = []
        self.asked = 0
        try:
            self.run(self.open_handlers(redis_url))
        except BaseException:
            self.shut()
            raise
        for name in EVERYONE:
            self.model.closed.setdefault(self.identity(name), set())

    # -- plumbing ------------------------------------------------------------------------------

    def run(self, step: Awaitable[T]) -> T:
        """Run ``step`` on the machine's loop; a step that hangs fails the example."""

        async def bounded() -> T:
            async with asyncio.timeout(STEP_BOUND):
                return await step

        return self.loop.run_until_complete(bounded())

    async def open_handlers(self, redis_url: str) -> None:
        if not self.durable:
            shared = HumanInputHandler()
            self.handlers = dict.fromkeys(EVERYONE, shared)
            return
        prefix = f"sm{os.urandom(6).hex()}"
        if self.kind == "postgres":
            prefix = await emptied(redis_url, self.schema)
        for name in EVERYONE:
            store = self.new_store(redis_url, prefix)
            self.stores.append(store)
            # One at a time: stores opening a new SQLite file at once can find it locked.
            await store.open()
            handler = HumanInputHandler(store=store)
            self.handlers[name] = handler
            await self.feed_live(handler)

    def new_store(self, redis_url: str, prefix: str) -> Any:
        if self.kind == "sqlite":
            from roomkit.stores.sqlite import SQLiteStore

            return SQLiteStore(self.workdir / "pending.db", backstop_interval=0.02)
        if self.kind == "postgres":
            from roomkit.stores.postgres import PostgresStore

            return PostgresStore(redis_url, schema=prefix, backstop_interval=0.05)
        from roomkit.stores.redis import RedisStore

        return RedisStore(redis_url, prefix=prefix, backstop_interval=0.05)

    async def feed_live(self, handler: HumanInputHandler) -> None:
        """Start the handler's change feed; on Redis, return once it is subscribed.

        The Redis feed says RESYNC when its subscription goes live. Waiting for it keeps a
        close at teardown from landing while the feed is still connecting.
        """
        live = asyncio.Event()

        def listen(change: PendingChange) -> None:
            if change.kind is PendingChangeKind.RESYNC:
                live.set()

        handler.subscribe(listen)
        if self.kind in ("redis", "postgres"):
            await live.wait()

    def identity(self, name: str) -> str:
        """Handlers that are one object share one identity (the memory store)."""
        return name if self.durable else "shared"

    def tracked(self, pending_id: str) -> Tracked:
        return self.model.requests[pending_id]

    def start_waiting(self, name: str, tracked: Tracked, timeout: float | None) -> None:
        who = self.identity(name)
        wait = self.handlers[name].wait(tracked.pending_id, timeout=timeout)
        task = self.loop.create_task(seen_by(wait))
        may_close = self.durable and tracked.channel in self.model.closed[who]
        self.waits.append(Waiting(tracked.pending_id, who, task, may_close))
        if timeout is not None and tracked.outcome is None:
            tracked.armed = True

    def settled(self, tracked: Tracked, won: bool, outcome: Outcome) -> None:
        """Apply the result of a settle that wanted ``outcome``."""
        if tracked.outcome is not None:
            # Only the recorded answer, sent again by the one who gave it, is told it won.
            again = outcome[0] == "answer" and outcome[2] is not None and outcome == tracked.outcome
            assert won == again, f"{tracked.pending_id} settled again: told {won}"
        elif won:
            tracked.outcome = outcome
        else:
            # Only the deadline beats a settle on a request the model holds open.
            assert tracked.armed, f"a settle of open {tracked.pending_id} lost"
            self.learn(tracked, {TIMEOUT})

    def withdrawn(self, tracked: Tracked, reason: str) -> None:
        """The handler withdrew the request if it was open (or the deadline got there first)."""
        if tracked.outcome is not None:
            return
        outcome: Outcome = ("withdrawn", reason, None)
        if tracked.armed:
            self.learn(tracked, {outcome, TIMEOUT})
        else:
            tracked.outcome = outcome

    def learn(self, tracked: Tracked, allowed: set[Outcome]) -> None:
        """Read the outcome from the store; it must be one of ``allowed``."""
        outcome = self.run(self.read(tracked.pending_id))
        assert outcome in allowed, (tracked.pending_id, outcome)
        tracked.outcome = outcome

    async def read(self, pending_id: str) -> Outcome | None:
        record = await self.handlers["desk"].get_request(pending_id)
        assert record is not None, pending_id
        return observed(record)

    # -- rules ---------------------------------------------------------------------------------

    @rule(
        target=ids,
        asker=st.sampled_from(ASKERS),
        channel=st.sampled_from(CHANNELS),
        key=st.sampled_from(KEYS),
        then_wait=st.booleans(),
        timeout=st.sampled_from(TIMEOUTS),
    )
    def create(
        self, asker: str, channel: str, key: str | None, then_wait: bool, timeout: float | None
    ) -> object:
        """Open a request (a key known on the channel re-attaches to its request); often wait
        on it at once."""
        model = self.model
        refused = channel in model.closed[self.identity(asker)]
        self.asked += 1
        make = self.handlers[asker].create
        try:
            request = self.run(make("Ask", {"n": self.asked}, channel_id=channel, key=key))
        except HandlerClosedError:
            assert refused
            return multiple()
        assert not refused
        pending_id = request.pending_id
        known = model.keys.get((channel, key)) if key is not None else None
        if known is not None:
            assert pending_id == known
            tracked = self.tracked(known)
        else:
            assert pending_id not in model.requests
            tracked = Tracked(pending_id, channel, key, self.identity(asker))
            model.requests[pending_id] = tracked
            if key is not None:
                model.keys[channel, key] = pending_id
        if then_wait:
            self.start_waiting(asker, tracked, timeout)
        return pending_id

    @rule(
        pending_id=ids,
        waiter=st.sampled_from(EVERYONE),
        timeout=st.sampled_from(TIMEOUTS),
    )
    def wait(self, pending_id: str, waiter: str, timeout: float | None) -> None:
        """Wait from any handler, on a request open or settled."""
        self.start_waiting(waiter, self.tracked(pending_id), timeout)

    @rule(pending_id=ids, answerer=st.sampled_from(EVERYONE), answer=texts)
    def resolve(self, pending_id: str, answerer: str, answer: str) -> None:
        handler = self.handlers[answerer]
        won = self.run(handler.aresolve(pending_id, answer, by=answerer))
        self.settled(self.tracked(pending_id), won, ("answer", answer, answerer))

    @rule(pending_id=ids, answerer=st.sampled_from(EVERYONE), reason=texts)
    def reject(self, pending_id: str, answerer: str, reason: str) -> None:
        handler = self.handlers[answerer]
        won = self.run(handler.areject(pending_id, reason, by=answerer))
        outcome: Outcome = ("rejected", reason or "Request rejected", answerer)
        self.settled(self.tracked(pending_id), won, outcome)

    @rule(pending_id=ids, answers=st.lists(texts, min_size=len(EVERYONE), max_size=len(EVERYONE)))
    def race(self, pending_id: str, answers: list[str]) -> None:
        """Every handler answers at once: the store's check-and-set lets one win."""

        async def everyone() -> list[bool]:
            return await asyncio.gather(
                *(
                    self.handlers[name].aresolve(pending_id, answer, by=name)
                    for name, answer in zip(EVERYONE, answers, strict=True)
                )
            )

        won = self.run(everyone())
        assert won.count(True) <= 1, won
        tracked = self.tracked(pending_id)
        if True in won:
            winner = won.index(True)
            self.settled(tracked, True, ("answer", answers[winner], EVERYONE[winner]))
        else:
            self.settled(tracked, False, TIMEOUT)

    @rule(pending_id=ids, releaser=st.sampled_from(EVERYONE))
    def release(self, pending_id: str, releaser: str) -> None:
        tracked = self.tracked(pending_id)
        withdrew = self.run(self.handlers[releaser].arelease(pending_id))
        # On every store, True only for the release that withdrew the request while open.
        self.settled(tracked, withdrew, ("withdrawn", RELEASED, None))

    @rule(asker=st.sampled_from(ASKERS), channel=st.sampled_from(CHANNELS))
    def close_channel(self, asker: str, channel: str) -> None:
        """Close one channel of one asker: its own unkeyed requests there are withdrawn."""
        who = self.identity(asker)
        running = [w for w in self.waits if not w.task.done()]
        self.run(self.handlers[asker].close(channel_id=channel))
        self.model.closed[who].add(channel)
        for tracked in self.model.requests.values():
            if tracked.channel != channel:
                continue
            # A durable store keeps a keyed request open for whoever re-attaches to it, and
            # each process withdraws only what it created; memory has one process.
            if not self.durable or (tracked.key is None and tracked.creator == who):
                self.withdrawn(tracked, HANDLER_CLOSED)
        for waiting in running:
            if waiting.handler == who and self.tracked(waiting.pending_id).channel == channel:
                waiting.may_close = self.durable

    @rule(asker=st.sampled_from(ASKERS), channel=st.sampled_from(CHANNELS))
    def reopen_channel(self, asker: str, channel: str) -> None:
        """A new owner registers for the channel: creates there are accepted again."""
        self.handlers[asker].set_on_input_required(channel, announced)
        self.model.closed[self.identity(asker)].discard(channel)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def agrees_with_the_store(self) -> None:
        self.check()

    def check(self) -> None:
        model = self.model
        finished = [w for w in self.waits if w.task.done()]
        outcomes, listed = self.run(self.snapshot())
        for pending_id, tracked in model.requests.items():
            outcome = outcomes[pending_id]
            if tracked.outcome is not None:
                assert outcome == tracked.outcome, pending_id
            elif outcome is not None:
                # Nothing the model did settled it: only its deadline may have.
                assert tracked.armed, (pending_id, outcome)
                assert outcome == TIMEOUT, (pending_id, outcome)
                tracked.outcome = outcome
        # The list is read after the records: a deadline may have passed in between.
        assert len(listed) == len(set(listed))
        open_ids = model.open_ids()
        assert set(listed) <= open_ids
        for pending_id in open_ids - set(listed):
            assert self.tracked(pending_id).armed, pending_id
        for waiting in finished:
            self.waits.remove(waiting)
            seen = waiting.task.result()
            if seen == CLOSED:
                assert waiting.may_close, waiting.pending_id
                continue
            tracked = self.tracked(waiting.pending_id)
            assert tracked.outcome is not None, (waiting.pending_id, seen)
            assert seen == tracked.outcome[:2], waiting.pending_id

    async def snapshot(self) -> tuple[dict[str, Outcome | None], list[str]]:
        """Every request's outcome, then the pending list, as the desk reads them.

        Outcomes are taken as they are read: the memory store hands out its live records.
        """
        desk = self.handlers["desk"]
        outcomes: dict[str, Outcome | None] = {}
        for pending_id in self.model.requests:
            record = await desk.get_request(pending_id)
            assert record is not None, pending_id
            outcomes[pending_id] = observed(record)
        listed = [request.pending_id for request in await desk.list_pending()]
        return outcomes, listed

    # -- teardown ------------------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            self.finish()
        finally:
            self.shut()

    def finish(self) -> None:
        """Give every open request a short deadline: then every wait must end, and soon."""
        for tracked in self.model.requests.values():
            if tracked.outcome is None:
                self.start_waiting("desk", tracked, 0.05)
        tasks = [w.task for w in self.waits]
        if tasks:
            _, hung = self.run(asyncio.wait(tasks, timeout=SETTLE_BOUND))
            assert not hung, f"{len(hung)} waits did not end after their requests' deadline"
        self.check()
        assert self.model.open_ids() == set()

    def shut(self) -> None:
        """Close the handlers, the stores and the loop; remove the example's files."""
        loop = self.loop
        try:
            self.run(self.close_all())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()
            shutil.rmtree(self.workdir, ignore_errors=True)

    async def close_all(self) -> None:
        cut = [w.task for w in self.waits if not w.task.done()]
        for task in cut:
            task.cancel()
        await asyncio.gather(*cut, return_exceptions=True)
        for handler in dict.fromkeys(self.handlers.values()):
            await handler.close()
        for store in self.stores:
            await store.close()


def test_the_memory_store_keeps_one_outcome_per_request() -> None:
    run_state_machine_as_test(lambda: StoreMachine("memory"), settings=QUICK)


def test_the_sqlite_store_keeps_one_outcome_per_request() -> None:
    run_state_machine_as_test(lambda: StoreMachine("sqlite"), settings=DURABLE)


def test_the_redis_store_keeps_one_outcome_per_request(redis_server: RedisServer) -> None:
    run_state_machine_as_test(lambda: StoreMachine("redis", redis_server.url), settings=DURABLE)


def test_the_postgres_store_keeps_one_outcome_per_request(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    run_state_machine_as_test(
        lambda: StoreMachine("postgres", postgres_server.dsn, postgres_schema), settings=DURABLE
    )

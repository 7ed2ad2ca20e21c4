"""Approvals as a state machine on every store: decisions, edits, expiry and digests.

Two handlers share one store (see :mod:`machine_kit`). Rules hold calls for approval (some
with a deadline already passed, which may expire them at any step), decide them from either
handler with every kind of decision, good and bad, add approvers, and collect outcomes with
``wait()``. After every step each request must agree with the model:

- a bad decision (no decision at all, an unknown one, an edit breaking the tool's schema)
  raises :class:`InvalidAnswerError` and changes nothing;
- the first valid decision is the outcome, for good: a later one is told ``False`` (the same
  decision again by the same person excepted, which is told ``True``) and changes nothing;
- the record's digest is that of the arguments held; its history starts with ``created``
  and holds at most one ``decided`` entry, whose digest is that of the arguments that would
  run (the edit's, for an edit);
- the approvers are the ones given, plus those added while the request was open;
- a request shown while open, by either handler's trail and as often as may be, has one
  ``shown`` entry per surface, naming the first to see it there.

Quorum approvals have a machine of their own (``test_quorum_state_machine``).

Every request's history is a whole chain after every step, as ``roomkit audit verify``
checks it: each entry's ``prev`` is the digest of the entry before (the first's, of the id).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, invariant, rule
from hypothesis.stateful import run_state_machine_as_test as run_machine
from tests.postgres_server import PostgresServer
from tests.tools.human_input.durable.machine_kit import HANDLERS, StoreMachine
from tests.tools.human_input.durable.store_fixtures import chain_breaks
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    InvalidAnswerError,
)
from roomkit.models.pending_input import PendingInputStatus, arguments_digest
from roomkit.tools.approvals import approve, edit, reject, respond

TOOL = "transfer"
SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}
PEOPLE = ("alice", "bob")
SURFACES = ("desk", "websocket")

numbers = st.integers(min_value=0, max_value=3)
words = st.text(alphabet="xy ", max_size=3)
good = st.one_of(
    st.just(approve()),
    numbers.map(lambda n: edit({"n": n})),
    words.map(reject),
    words.map(respond),
)
bad = st.sampled_from(
    [
        "yes",
        "",
        '{"decision": "maybe"}',
        '{"decision": "approve", "reason": "x"}',
        edit({"n": "lots"}),
        edit({"m": 1}),
        '["approve"]',
    ]
)

QUICK = settings(max_examples=60, stateful_step_count=25, deadline=None)
DURABLE = settings(
    max_examples=20,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@dataclass
class Held:
    """The model of one approval."""

    pending_id: str
    arguments: dict[str, Any]
    approvers: list[str]
    expired_at_birth: bool
    decision: str | None = None
    by: str | None = None
    timed_out: bool = False
    decided: list[str] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)
    """The actor each surface showed the request to first, while it was open."""

    @property
    def settled(self) -> bool:
        return self.decision is not None or self.timed_out


class ApprovalMachine(StoreMachine):
    held = Bundle("held")

    def __init__(self, kind: str, url: str = "", schema: str = "") -> None:
        self.model: dict[str, Held] = {}
        self.made = 0
        super().__init__(kind, url, schema)

    def learn_expiry(self, held: Held) -> None:
        """A request expired at birth may have timed out: the store says."""
        record = self.run(self.handlers["desk"].get_request(held.pending_id))
        assert record is not None
        if record.status is PendingInputStatus.TIMED_OUT:
            assert held.expired_at_birth
            assert held.decision is None
            held.timed_out = True

    # -- rules ---------------------------------------------------------------------------------

    @rule(target=held, n=numbers, approvers=st.lists(st.sampled_from(PEOPLE), unique=True))
    def hold(self, n: int, approvers: list[str]) -> Held:
        """Hold a call for approval; one in four has a deadline already passed."""
        self.made += 1
        expired = self.made % 4 == 0
        request = self.run(
            self.handlers["agent"].create_approval(
                TOOL,
                {"n": n},
                approvers=approvers,
                tool_schema=SCHEMA,
                timeout=0 if expired else None,
            )
        )
        tracked = Held(request.pending_id, {"n": n}, list(approvers), expired)
        self.model[request.pending_id] = tracked
        return tracked

    @rule(held=held, decision=good, by=st.sampled_from(PEOPLE), where=st.sampled_from(HANDLERS))
    def decide(self, held: Held, decision: str, by: str, where: str) -> None:
        won = self.run(self.handlers[where].aresolve(held.pending_id, decision, by=by))
        if held.expired_at_birth and not held.settled:
            self.learn_expiry(held)
        if held.timed_out:
            assert not won
            return
        if held.decision is None:
            if not won:
                self.learn_expiry(held)
                assert held.timed_out
                return
            held.decision, held.by = decision, by
            return
        resolved = not decision.startswith('{"decision":"reject"')
        again = resolved and decision == held.decision and by == held.by
        assert won == again, (held, decision, by, won)

    @rule(held=held, text=bad, where=st.sampled_from(HANDLERS))
    def decide_badly(self, held: Held, text: str, where: str) -> None:
        before = self.run(self.handlers["desk"].get_request(held.pending_id))
        assert before is not None
        try:
            self.run(self.handlers[where].aresolve(held.pending_id, text, by="alice"))
        except InvalidAnswerError:
            pass
        else:
            raise AssertionError(f"{text!r} was taken as a decision")
        after = self.run(self.handlers["desk"].get_request(held.pending_id))
        assert after is not None
        assert (after.status, after.result) == (before.status, before.result)

    @rule(held=held, people=st.lists(st.sampled_from([*PEOPLE, "carol"]), min_size=1))
    def escalate(self, held: Held, people: list[str]) -> None:
        added = self.run(self.handlers["desk"].add_approvers(held.pending_id, people, by="ops"))
        if held.expired_at_birth and not held.settled:
            self.learn_expiry(held)
        if added:
            assert not held.settled
            held.approvers = list(dict.fromkeys([*held.approvers, *people]))
        else:
            assert held.settled or held.expired_at_birth
            if not held.settled:
                self.learn_expiry(held)

    @rule(
        held=held,
        surface=st.sampled_from(SURFACES),
        by=st.sampled_from(PEOPLE),
        where=st.sampled_from(HANDLERS),
    )
    def show(self, held: Held, surface: str, by: str, where: str) -> None:
        """A surface of either process shows the request to ``by``, if it is still open."""
        record = self.run(self.handlers[where].get_request(held.pending_id))
        assert record is not None
        if record.status is not PendingInputStatus.PENDING:
            return
        written = self.run(self.trails[where].record([held.pending_id], surface, by))
        assert written == int(surface not in held.shown)
        held.shown.setdefault(surface, by)

    @rule(held=held)
    def collect(self, held: Held) -> None:
        """Once settled, a wait replays the outcome."""
        if not held.settled:
            return
        try:
            outcome = self.run(self.handlers["agent"].wait(held.pending_id, timeout=5))
        except HumanInputTimeoutError:
            outcome = "timed out"
        except HumanInputRejectedError as rejected:
            outcome = reject("" if str(rejected) == "Request rejected" else str(rejected))
        assert outcome == ("timed out" if held.timed_out else held.decision)

    # -- what must hold after every step -----------------------------------------------------

    @invariant()
    def records_and_histories_agree(self) -> None:
        desk = self.handlers["desk"]
        for held in self.model.values():
            record = self.run(desk.get_request(held.pending_id))
            assert record is not None
            assert record.kind == "approval"
            assert record.arguments == held.arguments
            assert record.arguments_digest == arguments_digest(TOOL, held.arguments)
            assert list(record.approvers) == held.approvers
            if record.status is PendingInputStatus.TIMED_OUT:
                assert held.expired_at_birth
                assert held.decision is None
                held.timed_out = True
            history = self.run(desk.history(held.pending_id))
            assert history[0]["type"] == "created"
            shown = {e["surface"]: e["actor"] for e in history if e["type"] == "shown"}
            assert shown == held.shown
            assert len(shown) == sum(1 for entry in history if entry["type"] == "shown")
            decided = [entry for entry in history if entry["type"] == "decided"]
            settled = [entry for entry in history if entry["type"] == "settled"]
            # The outcome and its entry are one write: one settled entry once it settled.
            if record.status is PendingInputStatus.PENDING:
                assert settled == []
            else:
                assert [entry["status"] for entry in settled] == [record.status.value]
                assert settled[0]["actor"] == record.settled_by
            if held.decision is None:
                assert decided == []
                assert record.status in (PendingInputStatus.PENDING, PendingInputStatus.TIMED_OUT)
                continue
            assert len(decided) == 1
            entry = decided[0]
            assert entry["actor"] == held.by
            if entry["decision"] == "edit":
                assert entry["digest"] == arguments_digest(TOOL, entry["arguments"])
                assert record.result == held.decision
            elif entry["decision"] == "approve":
                assert entry["digest"] == record.arguments_digest
            elif entry["decision"] == "reject":
                assert record.status is PendingInputStatus.REJECTED
                assert held.decision == reject(record.reject_reason or "")

    @invariant()
    def every_chain_is_whole(self) -> None:
        """Each request's stored entries verify as ``roomkit audit verify`` checks them."""
        ids = list(self.model)
        breaks = self.run(chain_breaks(self.handlers["desk"], ids))
        assert breaks == dict.fromkeys(ids), breaks


def test_approvals_on_the_memory_store() -> None:
    run_machine(lambda: ApprovalMachine("memory"), settings=QUICK)


def test_approvals_on_the_sqlite_store() -> None:
    run_machine(lambda: ApprovalMachine("sqlite"), settings=DURABLE)


def test_approvals_on_the_redis_store(redis_server: RedisServer) -> None:
    run_machine(lambda: ApprovalMachine("redis", redis_server.url), settings=DURABLE)


def test_approvals_on_the_postgres_store(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    run_machine(
        lambda: ApprovalMachine("postgres", postgres_server.dsn, postgres_schema),
        settings=DURABLE,
    )

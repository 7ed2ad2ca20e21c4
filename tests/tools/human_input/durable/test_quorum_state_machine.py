"""Quorum approvals as a state machine on every store: votes, edits, edits back, stale votes.

Two handlers share one store (see :mod:`machine_kit`). Rules hold calls for two or three of
alice, bob, carol and dave (with or without a veto, some with a deadline already passed,
which expires them at their first vote), and vote on them from either handler, good and
bad: approvals, edits, rejections, edits back to the arguments the last edit replaced (often
by someone who approved those before: one person, two approvals of the same arguments), and
votes naming the digest their voter was shown, current or since edited. After every step
each request must agree with a model of the rules:

- a vote counts (``True``) only from a listed approver who has not voted on the current
  arguments, while the request is open; anything else is ``False`` and changes nothing, and
  a bad vote (no ``by=``, ``respond``, an edit breaking the schema) raises;
- a vote naming the digest of arguments since edited raises :class:`ArgumentsChangedError`
  and changes nothing;
- an edit replaces the arguments, and only the approvals of the current arguments count,
  each person once: arguments edited back keep the approvals they had, never one person's
  twice;
- the request settles once: approved when as many distinct people as the quorum approved
  the arguments as they stand, rejected at the first rejection with a veto, or once
  approval is out of reach; a vote past the deadline loses to it;
- the record's votes, arguments and approvers are the model's; its history holds one
  ``voted`` entry a vote that counted, and one ``settled`` entry once settled, which names
  the distinct people who approved the arguments that run;
- every history is a whole chain, as ``roomkit audit verify`` checks it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, initialize, invariant, rule
from hypothesis.stateful import run_state_machine_as_test as run_machine
from tests.postgres_server import PostgresServer
from tests.tools.human_input.durable.machine_kit import HANDLERS, StoreMachine
from tests.tools.human_input.durable.store_fixtures import chain_breaks
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit.core.exceptions import (
    ArgumentsChangedError,
    InvalidAnswerError,
    VoteNeedsActorError,
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
numbers = st.integers(min_value=0, max_value=3)
words = st.text(alphabet="xy ", max_size=3)
BAD_VOTES = ("yes", edit({"n": "lots"}), edit({"m": 1}), respond("done"))

QUICK = settings(max_examples=200, stateful_step_count=25, deadline=None)
DURABLE = settings(
    max_examples=20,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

VOTERS = ("alice", "bob", "carol", "dave")
quorums_of = st.sampled_from([2, 3])
ballots = st.one_of(
    st.just(approve()),
    st.just(approve()),
    numbers.map(lambda n: edit({"n": n})),
    words.map(reject),
)


@dataclass
class Ballots:
    """The model of one quorum approval: two or three of alice, bob, carol and dave."""

    pending_id: str
    arguments: dict[str, Any]
    quorum: int
    veto: bool
    expired_at_birth: bool
    votes: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    """(actor, decision, digest voted on, digest approved) per vote that counted."""
    status: PendingInputStatus = PendingInputStatus.PENDING
    earlier: list[dict[str, Any]] = field(default_factory=list)
    """The arguments each edit replaced, oldest first."""

    @property
    def digest(self) -> str:
        return arguments_digest(TOOL, self.arguments)

    def voted(self, actor: str) -> bool:
        return any(a == actor and self.digest in (on, yes) for a, _, on, yes in self.votes)

    def approved_by(self) -> set[str]:
        """The people who approved the arguments as they stand (each one once)."""
        return {actor for actor, _, _, yes in self.votes if yes == self.digest}

    def approvers(self) -> list[str]:
        return [actor for actor in VOTERS if not self.voted(actor)]

    def stale_digest(self) -> str:
        """A digest its voter may have been shown before, which the arguments no longer have."""
        for arguments in reversed(self.earlier):
            if arguments != self.arguments:
                return arguments_digest(TOOL, arguments)
        return arguments_digest(TOOL, {"n": 99})

    def cast(self, actor: str, decision: str) -> None:
        """Record a vote that counted, and settle as the rules say."""
        kind = json.loads(decision)["decision"]
        on = self.digest
        if kind == "edit":
            self.earlier.append(self.arguments)
            self.arguments = json.loads(decision)["arguments"]
        approves = None if kind == "reject" else self.digest
        self.votes.append((actor, kind, on, approves))
        approvals = len(self.approved_by())
        if approvals >= self.quorum:
            self.status = PendingInputStatus.RESOLVED
        elif (kind == "reject" and self.veto) or approvals + len(self.approvers()) < self.quorum:
            self.status = PendingInputStatus.REJECTED


class QuorumMachine(StoreMachine):
    quorums = Bundle("quorums")

    def __init__(self, kind: str, url: str = "", schema: str = "") -> None:
        self.made = 0
        self.ballots: dict[str, Ballots] = {}
        super().__init__(kind, url, schema)

    @initialize(target=quorums, quorum=quorums_of, veto=st.booleans())
    def hold_the_first(self, quorum: int, veto: bool) -> Ballots:
        """Every run starts with a call held for a quorum: most steps vote on it."""
        return self.hold_for_a_quorum(quorum, veto)

    @rule(target=quorums, quorum=quorums_of, veto=st.booleans())
    def hold_for_a_quorum(self, quorum: int, veto: bool) -> Ballots:
        """Hold a call for a quorum; one in four has a deadline already passed."""
        self.made += 1
        expired = self.made % 4 == 0
        request = self.run(
            self.handlers["agent"].create_approval(
                TOOL,
                {"n": 0},
                approvers=VOTERS,
                tool_schema=SCHEMA,
                quorum=quorum,
                veto=veto,
                timeout=0 if expired else None,
            )
        )
        tracked = Ballots(request.pending_id, {"n": 0}, quorum, veto, expired)
        self.ballots[request.pending_id] = tracked
        return tracked

    def learn_quorum_expiry(self, ballots: Ballots) -> None:
        record = self.run(self.handlers["desk"].get_request(ballots.pending_id))
        assert record is not None
        if record.status is PendingInputStatus.TIMED_OUT:
            assert ballots.expired_at_birth
            assert ballots.status is PendingInputStatus.PENDING
            ballots.status = PendingInputStatus.TIMED_OUT

    @rule(
        ballots=quorums,
        decision=ballots,
        by=st.sampled_from([*VOTERS, "mallory"]),
        where=st.sampled_from(HANDLERS),
        shown=st.sampled_from(["none", "current", "current", "stale"]),
    )
    def vote(self, ballots: Ballots, decision: str, by: str, where: str, shown: str) -> None:
        """A vote: the application's own (no digest), or a person's naming the digest of
        the arguments they were shown, current or since edited."""
        digest = {"none": None, "current": ballots.digest, "stale": ballots.stale_digest()}
        self.cast_vote(ballots, decision, by, where, digest[shown])

    @rule(ballots=quorums, by=st.sampled_from(VOTERS), where=st.sampled_from(HANDLERS))
    def approve_as_shown(self, ballots: Ballots, by: str, where: str) -> None:
        """An approver approves the arguments they were shown, as they stand."""
        self.cast_vote(ballots, approve(), by, where, ballots.digest)

    @rule(ballots=quorums, n=numbers, by=st.sampled_from(VOTERS), where=st.sampled_from(HANDLERS))
    def edit_as_shown(self, ballots: Ballots, n: int, by: str, where: str) -> None:
        """An approver edits the arguments they were shown, as they stand."""
        self.cast_vote(ballots, edit({"n": n}), by, where, ballots.digest)

    @rule(
        ballots=quorums,
        by=st.sampled_from([None, None, *VOTERS]),
        where=st.sampled_from(HANDLERS),
    )
    def edit_back(self, ballots: Ballots, by: str | None, where: str) -> None:
        """An edit back to the arguments the last edit replaced: by one of the approvers, or
        (``None``) by the first who approved those arguments before, if anyone did."""
        if not ballots.earlier:
            return
        back = ballots.earlier[-1]
        if by is None:
            digest = arguments_digest(TOOL, back)
            before = [actor for actor, _, _, yes in ballots.votes if yes == digest]
            by = before[0] if before else VOTERS[0]
        self.cast_vote(ballots, edit(back), by, where, ballots.digest)

    def cast_vote(
        self, ballots: Ballots, decision: str, by: str, where: str, shown: str | None
    ) -> None:
        handler = self.handlers[where]
        open_ = ballots.status is PendingInputStatus.PENDING
        live = open_ and not ballots.expired_at_birth and by in VOTERS
        if live and shown is not None and shown != ballots.digest:
            # Refused, whoever votes and however: the voter is shown the arguments as they are.
            with pytest.raises(ArgumentsChangedError) as changed:
                self.run(handler.aresolve(ballots.pending_id, decision, by=by, digest=shown))
            assert changed.value.request.arguments == ballots.arguments
            return
        counted = self.run(handler.aresolve(ballots.pending_id, decision, by=by, digest=shown))
        if open_ and ballots.expired_at_birth:
            # Its deadline has passed: the vote loses to it, and the timeout is recorded.
            assert not counted
            self.learn_quorum_expiry(ballots)
            assert ballots.status is PendingInputStatus.TIMED_OUT
            return
        expected = open_ and by in VOTERS and not ballots.voted(by)
        assert counted == expected, (ballots, decision, by, counted)
        if counted:
            ballots.cast(by, decision)

    @rule(
        ballots=quorums, text=st.sampled_from([*BAD_VOTES, None]), where=st.sampled_from(HANDLERS)
    )
    def vote_badly(self, ballots: Ballots, text: str | None, where: str) -> None:
        handler = self.handlers[where]
        before = self.run(self.handlers["desk"].get_request(ballots.pending_id))
        assert before is not None
        expected: type[Exception] = InvalidAnswerError if text is not None else VoteNeedsActorError
        try:
            if text is None:
                self.run(handler.aresolve(ballots.pending_id, approve()))
            else:
                self.run(handler.aresolve(ballots.pending_id, text, by="alice"))
        except expected:
            pass
        else:
            raise AssertionError(f"{text!r} was taken as a vote")
        after = self.run(self.handlers["desk"].get_request(ballots.pending_id))
        assert after is not None
        assert (after.votes, after.arguments) == (before.votes, before.arguments)

    # -- what must hold after every step -----------------------------------------------------

    @invariant()
    def quorums_agree(self) -> None:
        desk = self.handlers["desk"]
        for ballots in self.ballots.values():
            record = self.run(desk.get_request(ballots.pending_id))
            assert record is not None
            if record.status is PendingInputStatus.TIMED_OUT:
                assert ballots.expired_at_birth
                assert ballots.status in (PendingInputStatus.PENDING, PendingInputStatus.TIMED_OUT)
                ballots.status = PendingInputStatus.TIMED_OUT
            assert record.status is ballots.status, (record, ballots)
            assert record.arguments == ballots.arguments
            assert record.arguments_digest == ballots.digest
            assert [(v.actor, v.decision) for v in record.votes] == [
                (actor, kind) for actor, kind, _, _ in ballots.votes
            ]
            if record.status is PendingInputStatus.PENDING:
                assert list(record.approvers) == ballots.approvers()
            history = self.run(desk.history(ballots.pending_id))
            if record.status is PendingInputStatus.RESOLVED:
                # Two distinct people, each of whom approved exactly the arguments that run.
                approvers = history[-1]["approvers"]
                assert len(set(approvers)) == len(approvers) >= ballots.quorum, history[-1]
                assert set(approvers) == ballots.approved_by()
            kinds = [entry["type"] for entry in history]
            assert kinds.count("voted") == len(ballots.votes)
            settled_by_vote = ballots.status in (
                PendingInputStatus.RESOLVED,
                PendingInputStatus.REJECTED,
            )
            # A timeout writes its settled entry too.
            settled = int(record.status is not PendingInputStatus.PENDING)
            assert kinds.count("settled") == settled
            if settled_by_vote:
                assert kinds[-1] == "settled"
                assert record.settled_by == ballots.votes[-1][0]

    @invariant()
    def every_chain_is_whole(self) -> None:
        """Each request's stored entries verify as ``roomkit audit verify`` checks them."""
        ids = list(self.ballots)
        breaks = self.run(chain_breaks(self.handlers["desk"], ids))
        assert breaks == dict.fromkeys(ids), breaks


def test_quorums_on_the_memory_store() -> None:
    run_machine(lambda: QuorumMachine("memory"), settings=QUICK)


def test_quorums_on_the_sqlite_store() -> None:
    run_machine(lambda: QuorumMachine("sqlite"), settings=DURABLE)


def test_quorums_on_the_redis_store(redis_server: RedisServer) -> None:
    run_machine(lambda: QuorumMachine("redis", redis_server.url), settings=DURABLE)


def test_quorums_on_the_postgres_store(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    run_machine(
        lambda: QuorumMachine("postgres", postgres_server.dsn, postgres_schema), settings=DURABLE
    )

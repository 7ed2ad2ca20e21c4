"""The Redis store's votes: one script records a vote, settles when it decides, and chains.

:class:`Voting` reads the record and its history's head, judges the vote in Python
(:func:`~roomkit.stores._quorum.judge`) and sends what the judgement
writes to :data:`VOTE`, a compare-and-set: the script writes only while the record is
pending with the votes, the deadline, the approvers and voters (an escalation changes them)
the store read, and while the history's head is the one it read (``head_moved`` of
:mod:`~roomkit.stores.redis._history`); else it says so and writes
nothing, and the vote is read and judged again. Two votes racing from two processes take
turns; the second is judged against the first. When the vote settles the request, the
script goes on with the settle script itself
(:data:`~roomkit.stores.redis._scripts.SETTLE`, same keys and arguments), which appends the
vote's entries as a settle's own: the vote, its history entries and the outcome are one
script on the server, and the settle's bookkeeping is written once. A vote that approves
the request and offers a grant (:func:`~roomkit.stores._quorum.offered_grant`) reads the
history with the record, makes the grant from it and runs :data:`VOTE_GRANTING`, which
records the grant with the settle, as
:data:`~roomkit.stores.redis._settling.SETTLE_GRANTING` does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from redis.commands.core import AsyncScript

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome
from roomkit.stores._history import deadline_entry, first_prev, link_digest, read_entry
from roomkit.stores._quorum import Ballot, Judgement, judge, offered_grant
from roomkit.stores._records import decode, encode_hash
from roomkit.stores.grants import Grant
from roomkit.stores.redis._changes import NOTE_CHANGE
from roomkit.stores.redis._grants import RedisGrants, grant_args
from roomkit.stores.redis._history import HEAD_MOVED
from roomkit.stores.redis._link import guard, text
from roomkit.stores.redis._part import ChainPart
from roomkit.stores.redis._scripts import SETTLE, settle_args, unpack
from roomkit.stores.redis._settling import SETTLE_GRANTING

__all__ = ["VOTE", "VOTE_GRANTING", "Voting"]

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT
_RETRY = "retry"

_RECORD = """
-- KEYS: record, pending index, history list, signed head, heads to checkpoint
-- ARGV: the settle's (SETTLE's, status 'pending' when the vote does not settle, its entries
--   the vote's), then from 21 + k: the votes, the deadline, the approvers and the voters as
--   read; the new votes, approvers, arguments and digest.
local k = tonumber(ARGV[17])
local v = 21 + k
local seen = redis.call('HMGET', KEYS[1], 'format', 'status', 'votes', 'deadline', 'approvers',
                        'voters')
if seen[1] ~= ARGV[13] or seen[2] ~= 'pending' or (seen[3] or '') ~= ARGV[v]
    or (seen[4] or '') ~= ARGV[v + 1] or (seen[5] or '') ~= ARGV[v + 2]
    or (seen[6] or '') ~= ARGV[v + 3] then
  return 'retry'
end
local moved = head_moved(KEYS[3], tonumber(ARGV[16]))
if moved then
  return moved
end
redis.call('HSET', KEYS[1], 'votes', ARGV[v + 4], 'approvers', ARGV[v + 5],
           'arguments', ARGV[v + 6], 'arguments_digest', ARGV[v + 7])
if ARGV[2] == 'pending' then
  redis.call('RPUSH', KEYS[3], unpack(ARGV, 20, 19 + k))
  anchor(KEYS[4], KEYS[5], ARGV[18])
  note_change(ARGV[12] .. 'changes', ARGV[1])
  redis.call('PUBLISH', ARGV[11], 'voted ' .. ARGV[1])
  return cjson.encode(redis.call('HGETALL', KEYS[1]))
end
"""

VOTE = HEAD_MOVED + NOTE_CHANGE + _RECORD + SETTLE
"""The vote's compare-and-set, followed (when the vote settles) by the settle."""

VOTE_GRANTING = HEAD_MOVED + NOTE_CHANGE + _RECORD + SETTLE_GRANTING
""":data:`VOTE` of a vote that approves the request, its keys and arguments ending with
those of the grant it makes (as :data:`~roomkit.stores.redis._settling.SETTLE_GRANTING`'s
do): the settle records the grant."""


@dataclass(slots=True, eq=False)
class Voting(ChainPart):
    """The votes of one store: its client, its layout and the vote script (the history of a
    request a vote settles is kept for the store's audit retention)."""

    _script: AsyncScript = field(init=False)
    _granting: AsyncScript = field(init=False)

    def __post_init__(self) -> None:
        self._script = self.client.register_script(VOTE)
        self._granting = self.client.register_script(VOTE_GRANTING)

    async def cast(
        self,
        pending_id: str,
        ballot: Ballot,
        clock: Callable[[], float],
        keep: float,
        expire: Callable[[Judgement], Awaitable[object]],
    ) -> Judgement:
        """Judge and record ``ballot``, again until the record and its history are as read.

        ``clock`` is the store's; ``keep`` the retention a settle gives the record;
        ``expire`` records the timeout of a vote that met a passed deadline.
        """
        keys = self.layout.settle_keys(pending_id)
        while True:
            pipe = self.client.pipeline(transaction=True)
            pipe.hgetall(keys[0]).llen(keys[2]).lindex(keys[2], -1)  # type: ignore[attr-defined]
            if ballot.grant is not None:  # the history the grant is made from
                pipe.lrange(keys[2], 0, -1)
            async with guard(self.where, pending_id, within=self.within):
                read = await pipe.execute()
            now = clock()
            current = decode(read[0], hashed=True) if read[0] else None
            judgement = judge(current, ballot, now, datetime.fromtimestamp(now, UTC))
            if not judgement.write or judgement.record is None:
                return judgement
            if judgement.record.status is _TIMED_OUT:
                await expire(judgement)
                return judgement
            script, sent = self._script, keys
            made = _made(judgement, ballot, read[3:])
            if made is not None:
                judgement = replace(judgement, entries=(*judgement.entries, made[1]))
                script, sent = self._granting, keys + self.layout.grant_keys(made[0].grant_id)
            args = self._arguments(judgement, read[:3], now, keep, ballot)
            if made is not None:
                args += grant_args(made[0])
            async with guard(self.where, pending_id, within=self.within):
                reply = await script(keys=sent, args=args)
            if not isinstance(reply, list) and text(reply) != _RETRY:
                record = decode(unpack(reply), hashed=True)
                return Judgement(True, record, True, judgement.entries)

    def _arguments(
        self, judgement: Judgement, read: Sequence[Any], now: float, keep: float, ballot: Ballot
    ) -> list[Any]:
        """The arguments of :data:`VOTE`, from ``read`` (the record's hash, the history's
        length and its head, as one transaction read them)."""
        after = judgement.record
        assert after is not None
        fields, length, head = read
        pending_id = after.pending_id
        guess = (int(length), first_prev(pending_id) if head is None else link_digest(head))
        # The deadline's entry goes too: a vote judged in time never leaves the settle LATE.
        lines, _, signed = self.heads.link(pending_id, judgement.entries, guess)
        (late,), _, late_signed = self.heads.link(pending_id, (deadline_entry(),), guess)
        settle = settle_args(
            self.layout,
            after.pending_id,
            after.status,
            Outcome(after.result, after.reject_reason, False, after.settled_by),
            now=now,
            retention_seconds=keep,
            token=ballot.token,
            history=(int(length), lines, late),
            audit_ms=self.audit_ms,
            heads=(signed, late_signed),
        )
        written = encode_hash(after)
        return [
            *settle,
            *(_field(fields, name) for name in ("votes", "deadline", "approvers", "voters")),
            *(written[name] for name in ("votes", "approvers", "arguments", "arguments_digest")),
        ]


def _made(
    judgement: Judgement, ballot: Ballot, read: Sequence[Any]
) -> tuple[Grant, dict[str, Any]] | None:
    """The grant ``ballot`` offers, made from the history lines ``read`` (as the vote's
    read took them) and the vote's own entries when ``judgement`` approves the request, with
    its ``granted`` entry; ``None`` when it makes none here."""
    offer = offered_grant(judgement, ballot)
    approved: PendingInput | None = judgement.record
    if offer is None or approved is None or not isinstance(offer.grants, RedisGrants):
        return None  # none offered, or another store's grants: added after the vote
    pending_id = approved.pending_id
    try:
        history = [read_entry(line, seq, pending_id=pending_id) for seq, line in enumerate(read[0])]
    except CorruptRecordError:
        return None  # the caller reads the history after the vote, and reports what it finds
    return offer.make(approved, [*history, *judgement.entries])


def _field(fields: Mapping[Any, Any], name: str) -> str:
    """A field of a hash as read (``""`` when missing), to compare with what is stored."""
    value = fields.get(name.encode(), fields.get(name))
    return "" if value is None else text(value)

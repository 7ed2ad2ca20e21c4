"""The Redis store's votes: one script records a vote, settles when it decides, and chains.

The store reads the record and its history's head, judges the vote in Python
(:func:`~roomkit.tools.human_input.stores._quorum.judge`) and sends what the judgement
writes to :data:`VOTE`, a compare-and-set: the script writes only while the record is
pending with the votes, the deadline, the approvers and voters (an escalation changes them)
and the history length the store read, and says ``retry`` otherwise, so that the store
reads again and judges again. Two votes racing from two processes take turns; the second
is judged against the first. When the vote settles the
request, the script goes on with the settle script itself (:data:`~roomkit.tools.human_input.
stores._redis_scripts.SETTLE`, same keys and arguments), so the vote, its history entries and
the outcome are one script on the server, and the settle's bookkeeping is written once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from roomkit.core.redis_link import text
from roomkit.models.pending_input import PendingInput
from roomkit.tools.human_input.stores._history import chain_text
from roomkit.tools.human_input.stores._quorum import Ballot, Judgement
from roomkit.tools.human_input.stores._records import encode_hash
from roomkit.tools.human_input.stores._redis_history import history_key
from roomkit.tools.human_input.stores._redis_scripts import SETTLE, Layout, settle_args
from roomkit.tools.human_input.stores.base import PendingChangeKind

__all__ = ["RETRY", "VOTE", "change_kind", "vote_args", "vote_call", "vote_keys"]

RETRY = "retry"
"""What :data:`VOTE` returns when the record or its history moved since it was read."""

_RECORD = """
-- KEYS: record, pending index, history list
-- ARGV 1-14: the settle's (status 'pending' when the vote does not settle); then the votes,
--   the deadline, the history length, the approvers and the voters as read; the new votes,
--   approvers, arguments and digest; the number of history lines, and the lines.
local seen = redis.call('HMGET', KEYS[1], 'format', 'status', 'votes', 'deadline', 'approvers',
                        'voters')
if seen[1] ~= ARGV[13] or seen[2] ~= 'pending' or (seen[3] or '') ~= ARGV[15]
    or (seen[4] or '') ~= ARGV[16] or redis.call('LLEN', KEYS[3]) ~= tonumber(ARGV[17])
    or (seen[5] or '') ~= ARGV[18] or (seen[6] or '') ~= ARGV[19] then
  return 'retry'
end
redis.call('HSET', KEYS[1], 'votes', ARGV[20], 'approvers', ARGV[21], 'arguments', ARGV[22],
           'arguments_digest', ARGV[23])
for i = 1, tonumber(ARGV[24]) do
  redis.call('RPUSH', KEYS[3], ARGV[24 + i])
end
if ARGV[2] == 'pending' then
  redis.call('PUBLISH', ARGV[11], 'voted ' .. ARGV[1])
  return cjson.encode(redis.call('HGETALL', KEYS[1]))
end
"""

VOTE = _RECORD + SETTLE
"""The vote's compare-and-set, followed (when the vote settles) by the settle."""


def vote_args(
    settle: list[Any],
    seen: tuple[str, str, int, str, str],
    after: PendingInput,
    entries: tuple[dict[str, Any], ...],
    head: bytes | str | None,
) -> list[Any]:
    """The arguments of :data:`VOTE`: ``settle``'s (from ``settle_args``), then what the
    store read (``seen``: the votes and the deadline as stored, the history's length, the
    approvers and the voters as stored) and
    what the vote writes: the record ``after`` it, and ``entries`` chained after ``head``."""
    fields = encode_hash(after)
    lines: list[str] = []
    for entry in entries:
        head = chain_text(entry, after.pending_id, head)
        lines.append(head)
    return [
        *settle,
        *seen,
        fields["votes"],
        fields["approvers"],
        fields["arguments"],
        fields["arguments_digest"],
        len(lines),
        *lines,
    ]


def vote_keys(layout: Layout, prefix: str, pending_id: str) -> list[str]:
    """The keys of :data:`VOTE`: the record, the pending index, the history list."""
    return [layout.record(pending_id), layout.pending, history_key(prefix, pending_id)]


def vote_call(
    layout: Layout,
    judgement: Judgement,
    read: Sequence[Any],
    now: float,
    keep: float,
    ballot: Ballot,
) -> list[Any]:
    """The arguments of :data:`VOTE` for ``judgement``, made from ``read`` (the record's
    hash, the history's length and its head, as one transaction read them) at ``now``;
    ``keep`` is the retention a settle gives the record."""
    after = judgement.record
    assert after is not None
    fields, length, head = read
    settle = settle_args(
        layout,
        after.pending_id,
        after.status,
        result=after.result,
        reason=after.reject_reason,
        withdrawn=False,
        settled_by=after.settled_by,
        now=now,
        retention_seconds=keep,
        token=ballot.token,
    )
    seen = (
        _field(fields, "votes"),
        _field(fields, "deadline"),
        int(length),
        _field(fields, "approvers"),
        _field(fields, "voters"),
    )
    return vote_args(settle, seen, after, judgement.entries, head)


def change_kind(voted: bool) -> PendingChangeKind:
    """The change a vote makes: ``VOTED`` while the request stays open, else ``SETTLED``."""
    return PendingChangeKind.VOTED if voted else PendingChangeKind.SETTLED


def _field(fields: Mapping[Any, Any], name: str) -> str:
    """A field of a hash as read (``""`` when missing), to compare with what is stored."""
    value = fields.get(name.encode(), fields.get(name))
    return "" if value is None else text(value)

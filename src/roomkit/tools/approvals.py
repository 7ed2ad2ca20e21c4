"""Approvals: hold an ordinary tool until a person approves, edits, rejects or answers.

:class:`Approval` is the rule for one tool (who decides, how long they have, what expiry
means, and ``when=`` a call needs a person at all); ``HumanInputToolHandler(approvals=...)``
maps tool names to rules. A decision is a typed :class:`Decision` (:class:`Approve`,
:class:`Edit`, :class:`Reject` or :class:`Respond`), which the builders make:
:func:`approve`, :func:`edit` (the full replacement arguments), :func:`reject` (with a
reason) and :func:`respond` (a person's answer that the model reads instead of the tool's
result)::

    await human.handler.aresolve(pending_id, approve(), by="alice")
    await human.handler.aresolve(pending_id, Edit({"to": "carol@example.com"}), by="alice")

A decision is its own JSON text (a ``str``: ``approve() == '{"decision":"approve"}'``), so
the same JSON sent as text, from a page, a webhook or another process, is a decision too:
:func:`read_decision` reads one back, typed (the handler and the tool loop both call it).

``Approval(approvers=Quorum(2, of=["alice", "bob", "carol"]))`` needs two of the three: each
``aresolve(..., by=actor)`` is a vote, and the call runs once two approve the same
arguments. Any rejection vetoes it, unless ``veto=False`` (then it is rejected once approval
can no longer be reached); an edit replaces the arguments and restarts the count.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from roomkit._storable import replaced_surrogates, unencodable_text
from roomkit.core.exceptions import InvalidAnswerError
from roomkit.models.clock import check_deadline
from roomkit.models.decisions import Approve, Decision, DecisionKind, Edit, Reject, Respond
from roomkit.tools._actor_ids import actor_ids
from roomkit.tools._policies import check_policy

if TYPE_CHECKING:
    from roomkit.policy.decisions import Policy

__all__ = [
    "Approval",
    "Approve",
    "Decision",
    "DecisionKind",
    "Edit",
    "Quorum",
    "Reject",
    "Respond",
    "approve",
    "edit",
    "needs_person",
    "read_decision",
    "reject",
    "respond",
]

logger = logging.getLogger("roomkit.tools.approvals")

Predicate = Callable[[str, dict[str, Any]], bool | Awaitable[bool]]
"""``when(name, arguments)``: whether this call needs a person (plain or async)."""

_FIELDS: dict[str, set[str]] = {
    "approve": {"decision"},
    "edit": {"decision", "arguments"},
    "reject": {"decision", "reason"},
    "respond": {"decision", "result"},
}


def approve() -> Approve:
    """The decision that lets the held call run as shown."""
    return Approve()


def edit(arguments: dict[str, Any]) -> Edit:
    """The decision that runs the held call with ``arguments`` instead (all of them).

    Raises:
        TypeError: ``arguments`` is not a dict, or not JSON.
        ValueError: ``arguments`` are more than a request keeps (``create()`` would refuse
            them); the message says what and where.
    """
    return Edit(arguments)


def reject(reason: str = "") -> Reject:
    """The decision that refuses the held call; the model reads ``reason``."""
    return Reject(reason)


def respond(result: str) -> Respond:
    """The decision that answers in the tool's place: the model reads ``result``."""
    return Respond(result)


_EXPECTED = (
    "approve(), edit(arguments), reject(reason) or respond(result) from "
    'roomkit.tools.approvals, e.g. \'{"decision": "approve"}\''
)


def read_decision(text: str, *, recorded: bool = False) -> Decision:
    """The decision ``text`` holds (``text`` itself when it is a :class:`Decision`).

    Args:
        recorded: ``text`` is a decision a store holds, read back. A store written by an
            earlier version may keep a reason or result whose JSON holds a lone surrogate
            (``"\\ud800"``), which no decision takes any more: it reads with U+FFFD, the
            replacement character, in the surrogate's place, and a warning names it.

    Raises:
        InvalidAnswerError: ``text`` is not the JSON one of the builders makes; the message
            says what was wrong and what to send.
    """
    if isinstance(text, Decision):
        return text
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise InvalidAnswerError(f"an approval takes a decision: send {_EXPECTED}") from None
    if not isinstance(value, dict) or not isinstance(value.get("decision"), str):
        raise InvalidAnswerError(f"an approval takes a decision object: send {_EXPECTED}")
    kind = value["decision"]
    expected = _FIELDS.get(kind)
    if expected is None:
        raise InvalidAnswerError(
            f"unknown decision {kind[:40]!r}: an approval takes approve, edit, reject or respond"
        )
    if set(value) != expected:
        raise InvalidAnswerError(
            f"a {kind!r} decision takes the fields {sorted(expected)}, got {sorted(value)}"
        )
    if kind == "edit":
        if not isinstance(value["arguments"], dict):
            raise InvalidAnswerError("an edit takes 'arguments': an object of every argument")
        try:
            return Edit(value["arguments"])
        except ValueError as error:  # more than a request keeps: no decision it could take
            raise InvalidAnswerError(str(error)) from None
    if kind in ("reject", "respond"):
        key = "reason" if kind == "reject" else "result"
        if not isinstance(value[key], str):
            raise InvalidAnswerError(f"a {kind!r} decision takes {key!r} as a string")
        unreadable = unencodable_text(value[key])
        if unreadable is not None and recorded:
            # Recorded before such text was refused: its outcome stands, shown readable.
            logger.warning(
                "A recorded %r decision's %r holds %s: read with U+FFFD in its place",
                kind,
                key,
                unreadable,
            )
            value[key] = replaced_surrogates(value[key])
        elif unreadable is not None:  # text no store keeps: no decision it could take
            raise InvalidAnswerError(
                f"a {kind!r} decision's {key!r} must be valid Unicode text, but holds "
                f"{unreadable}: send it as UTF-8 text"
            )
        return Reject(value[key]) if kind == "reject" else Respond(value[key])
    return Approve()


@dataclass(frozen=True, slots=True)
class Quorum:
    """``n`` distinct approvers among ``of`` must approve the same arguments.

    Args:
        n: how many approvals it takes, from 1 to ``len(of)``.
        of: the actor ids who may vote (each once on each version of the arguments), in
            the order given; a ``set`` or ``frozenset`` has none, so its ids are sorted.

    Raises:
        ValueError, TypeError: ``n`` is not a count ``of`` can reach, or ``of`` holds
            something else than non-empty actor ids, an id longer than
            :data:`~roomkit.models.json_limits.MAX_ID_CHARS` (256) characters, or more
            than :data:`~roomkit.models.json_limits.MAX_APPROVERS` (100) ids.
    """

    n: int
    of: tuple[str, ...]

    def __init__(self, n: int, *, of: Iterable[str]) -> None:
        if isinstance(of, str):
            raise TypeError(f"Quorum of= is a list of actor ids: pass [{of!r}], not a string")
        voters = _approvers(of, "Quorum of=")
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"Quorum n is a count of approvals, got {type(n).__name__}")
        if not 1 <= n <= len(voters):
            raise ValueError(
                f"Quorum needs from 1 to {len(voters)} approvals of {list(voters)}, got {n}"
            )
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "of", voters)


def _approvers(value: str | Iterable[str] | None, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else value
    return actor_ids(names, name=name, single="Approval approvers must be non-empty actor ids")


@dataclass(frozen=True, slots=True)
class Approval:
    """How one tool is held for a person's decision.

    Args:
        approvers: who may decide (any one of them): an actor id or a list of them, or a
            :class:`Quorum` of them who must approve together. By default the turn's
            actor, or with none, the room's participants. The order given is the order
            the request's history and notices show; a ``set`` or ``frozenset`` has none
            (it differs from one process to the next), so its ids are sorted.
        timeout: seconds the approvers have; the human-input handler's ``timeout`` when
            ``None``.
        on_expiry: what a call nobody decided in time comes to: ``"deny"`` (the default:
            it never runs, and the model reads that nobody approved in time) or
            ``"approve"`` (it runs as shown).
        when: ``when(name, arguments)``, a plain or async function saying whether this call
            needs a person; every call does when ``None``. One that raises means "ask".
        veto: with a :class:`Quorum`, whether any one rejection rejects the call (the
            default); ``False`` rejects it once the quorum can no longer be reached.
        policy: a :class:`~roomkit.policy.Policy` deciding each call to this tool (allow,
            deny, ask or abstain; see :mod:`roomkit.policy`); this rule applies where it
            asks without terms of its own or abstains.

    Raises:
        ValueError, TypeError: an argument is not one the rule takes (the message says so):
            among them ``approvers`` holding an id longer than
            :data:`~roomkit.models.json_limits.MAX_ID_CHARS` (256) characters, or more than
            :data:`~roomkit.models.json_limits.MAX_APPROVERS` (100) ids.
    """

    approvers: tuple[str, ...] = field(default=())
    timeout: float | None = None
    on_expiry: Literal["deny", "approve"] = "deny"
    when: Predicate | None = None
    quorum: Quorum | None = None
    veto: bool = True
    policy: Policy | None = None

    def __init__(
        self,
        *,
        approvers: str | Iterable[str] | Quorum | None = None,
        timeout: float | None = None,
        on_expiry: Literal["deny", "approve"] = "deny",
        when: Predicate | None = None,
        veto: bool = True,
        policy: Policy | None = None,
    ) -> None:
        check_deadline("Approval timeout", timeout)
        if on_expiry not in ("deny", "approve"):
            raise ValueError(f"Approval on_expiry must be 'deny' or 'approve', got {on_expiry!r}")
        if when is not None and not callable(when):
            raise TypeError(f"Approval when= must be a function (name, arguments), got {when!r}")
        if not isinstance(veto, bool):
            raise TypeError(f"Approval veto= is True or False, got {veto!r}")
        if policy is not None:
            check_policy(policy, "Approval policy=")
        object.__setattr__(self, "policy", policy)
        quorum = approvers if isinstance(approvers, Quorum) else None
        object.__setattr__(self, "quorum", quorum)
        object.__setattr__(self, "veto", veto)
        listed = quorum.of if quorum is not None else _approvers(approvers, "Approval approvers")  # type: ignore[arg-type]
        object.__setattr__(self, "approvers", listed)
        object.__setattr__(self, "timeout", None if timeout is None else float(timeout))
        object.__setattr__(self, "on_expiry", on_expiry)
        object.__setattr__(self, "when", when)


async def needs_person(rule: Approval, name: str, arguments: dict[str, Any]) -> bool:
    """Whether ``rule`` holds this call for a person; a ``when=`` that raises says yes."""
    when = rule.when
    if when is None:
        return True
    try:
        verdict = when(name, arguments)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception:
        logger.exception("Approval when= for %s raised: asking a person", name)
        return True
    return bool(verdict)

"""Cedar, in process (the ``cedarpy`` package): a call is an authorization request.

The call becomes the principal ``User::"<actor>"``, or ``Anonymous::""`` when nobody is known
(no actor, or an empty one): a type no actor's name gives, so a policy on ``principal is
Anonymous`` never applies to a person, and one on ``User::"anonymous"`` applies to the person
who signs in as ``anonymous``, never to a call for nobody. The action is ``Action::"<tool>"``,
the resource ``Tool::"<tool>"`` and the context ``{"arguments": ..., "room": ..., "channel":
..., "digest": ...}`` (``room`` and ``channel`` ``""`` when unknown), its values as Cedar
holds them (:mod:`roomkit.policy._cedar_values`: a ``null`` left out, a fraction a
``decimal``, an integer beyond 64 bits a string). The context is handed to Cedar only for a
call a policy reading ``context`` may apply to (by its action): Cedar decides any other alike
without it.

Such a call, under entities given once (not a function of the call), is decided by its
principal and action alone, and Cedar's evaluation has nothing else to read (no clock, no
randomness): its decision is remembered per actor and tool, so the same actor calling the
same tool again costs a lookup. The memory holds at most :data:`REMEMBERED` decisions and
starts over when full; a policy's text and entities never change once it is built.

Cedar allows or denies; one policy set gives the four decisions:

- allowed: :class:`Allow`;
- denied, and every determining policy is annotated ``@id("ask:...")``: :class:`Ask` (the
  policies may say ``@approvers("alice, bob")``, ``@quorum("2")``, ``@timeout("600")``,
  checked when the policy is built; a term one leaves out is the tool's rule's). Cedar has
  no order among policies: of several that apply, the call needs each one's approval, so
  the ask combines them as the fallback below does (:mod:`roomkit.policy._strictest`), and
  the ruling combines them again under the tool's rule; the reason names them as written;
- denied by any other policy: :class:`Deny`, its reason the policies' ``@id`` and
  ``@reason("...")``;
- denied with no determining policy (none applied): :class:`Abstain`.

A request Cedar could not evaluate at all (an error and no determining policy) is a failure
of the back end, and so is one allowed (or asked) while a ``forbid`` policy erred, which Cedar
skips (an amount beyond 64 bits is a string, ``>`` on it an error): it may refuse the call, or,
an ``ask:`` one, ask others on its terms. So is one the entities function raises on:
``on_error`` decides, and ``"ask"`` holds the call under one ask at least as strict as every
``ask:`` policy that may apply to the tool (:mod:`roomkit.policy._strictest`): their approvers
(a policy naming none, the tool's rule's), with a quorum no approval meets without meeting
each policy's own; the default approver, the call's own actor, only when none names anyone.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Unpack

from roomkit.policy._base import (
    PolicyBase,
    PolicyError,
    PolicyFailed,
    PolicyOptions,
    check_ids,
    load_json,
    load_text,
)
from roomkit.policy._cedar_values import cedar_value
from roomkit.policy._strictest import each
from roomkit.policy.decisions import Abstain, Allow, Ask, Deny, PolicyCall, PolicyDecision

__all__ = ["CedarPolicy"]

Entities = Sequence[dict[str, Any]] | Callable[[PolicyCall], Sequence[dict[str, Any]]]
"""Cedar's entities (JSON entity objects), or a function giving them per call."""

_NOBODY: dict[str, str] = {"type": "Anonymous", "id": ""}
"""The principal of a call for nobody known (``Anonymous::""``): no actor is of this type."""

REMEMBERED = 4096
"""How many decisions on calls decided without their context a policy remembers."""


class CedarPolicy(PolicyBase):
    """A Cedar policy set deciding each call (see the module for the mapping).

    Args:
        policies: the policy set's text, or a ``.cedar`` file's path.
        entities: the entities the policies read: a list of Cedar JSON entities, a ``.json``
            file's path holding one, or a function of the :class:`PolicyCall` giving them.
            The policy's ``version`` digests the list with the text (not a function's).
        **options: ``name``, ``shadow`` and ``on_error`` (:class:`PolicyOptions`).

    Raises:
        PolicyError: the policies do not parse (the message names the file and the line),
            an ``ask:`` policy names terms no ask can meet (the message names its ``@id``),
            or a file cannot be read.
        ImportError: the ``cedar`` extra is not installed.
    """

    engine = ("cedar", "cedarpy", "cedar")

    def __init__(
        self,
        policies: str | Path,
        entities: Entities | str | Path | None = None,
        **options: Unpack[PolicyOptions],
    ) -> None:
        super().__init__(**options)
        cedarpy = self.module
        text, origin = load_text(policies, ".cedar")
        try:
            self._policies = cedarpy.PolicySet.from_str(text)
            shape = cedarpy.policies_to_json_str(text)
        except ValueError as error:
            line = _failing_line(cedarpy, text)
            raise PolicyError(
                f"{origin}:{line}: the Cedar policies do not parse: {error}"
            ) from None
        found = json.loads(shape).get("staticPolicies", {})
        self._annotations: dict[str, dict[str, str]] = {
            key: dict(policy.get("annotations") or {}) for key, policy in found.items()
        }
        for note in self._annotations.values():
            problem = _ask_problem(note) if note.get("id", "").startswith("ask:") else None
            if problem is not None:
                raise PolicyError(f'{origin}: the Cedar policy @id("{note["id"]}") {problem}')
        self._effects: dict[str, str] = {
            key: str(policy.get("effect")) for key, policy in found.items()
        }
        self._context = _context_readers(found.values())
        self._asks = _scoped_asks(found, self._annotations)
        loaded = load_json(entities, "Cedar entities") if entities is not None else []
        if callable(loaded):
            self._entities: Callable[[PolicyCall], Sequence[dict[str, Any]]] | None = loaded
            self._parsed = None
            self._versioned(text)
        elif isinstance(loaded, list):
            self._entities = None
            # Parsed once: a call then hands Cedar the graph, not its JSON to read again.
            try:
                listed = json.dumps(loaded, sort_keys=True)
                self._parsed = cedarpy.Entities.from_json_str(listed)
            except (TypeError, ValueError) as error:
                raise PolicyError(f"the Cedar entities cannot be read: {error}") from None
            # They decide as the text does (the group a permit names): they are versioned
            # with it, so that an entry's version changes when either does.
            self._versioned(*((text, listed) if loaded else (text,)))
        else:
            raise PolicyError("Cedar entities are a list of JSON entities, or a function")
        self._decided: dict[tuple[str | None, str], PolicyDecision] = {}
        """The decisions on calls decided without their context, by actor and tool."""

    def decide(self, call: PolicyCall) -> PolicyDecision:
        """Cedar's answer on ``call``, as one of the four decisions.

        Raises:
            PolicyFailed: Cedar could not evaluate the call, or the entities function failed
                on it (its fallback: the ``ask:`` policies that may apply to the tool).
            InvalidTextError: the call's ``actor`` or ``tool`` holds text UTF-8 cannot
                encode (a lone surrogate), which no entity id can be; the message names it.
        """
        check_ids(call, "a Cedar call", "no entity id can be")
        readers = self._context
        if readers.every or call.tool in readers.tools:
            return self._evaluate(call, context=True)
        if self._entities is not None:
            return self._evaluate(call, context=False)
        # ``None`` for nobody: never the same key as any actor's, ``anonymous`` included.
        key = (call.actor or None, call.tool)
        decided = self._decided.get(key)
        if decided is None:
            decided = self._evaluate(call, context=False)
            if len(self._decided) >= REMEMBERED:
                self._decided.clear()
            self._decided[key] = decided
        return decided

    def _evaluate(self, call: PolicyCall, *, context: bool) -> PolicyDecision:
        """Cedar's answer on ``call``, its context handed over when ``context`` is true.

        Raises:
            PolicyFailed: Cedar could not evaluate the call (its fallback: the ``ask:``
                policies that may apply to the tool).
        """
        # Entity ids as type and id: Cedar builds them without parsing (and takes any text).
        request: dict[str, Any] = {
            "principal": {"type": "User", "id": call.actor} if call.actor else dict(_NOBODY),
            "action": {"type": "Action", "id": call.tool},
            "resource": {"type": "Tool", "id": call.tool},
        }
        if context:
            try:
                arguments = cedar_value(dict(call.arguments))
            except RecursionError:
                # Nested past Python's stack, as past Cedar's own limit: a call it cannot
                # read, asked of the approvers the policies name.
                raise PolicyFailed(
                    "Cedar could not evaluate the call: its arguments nest too deep to read",
                    fallback=self._fallback(call.tool),
                ) from None
            request["context"] = {
                "arguments": arguments,
                "room": cedar_value(call.room or ""),
                "channel": cedar_value(call.channel or ""),
                "digest": call.digest,
            }
        given = self._entities
        try:
            entities = self._parsed if given is None else list(given(call))
        except Exception as error:
            # The call's own actor, the default approver, is no one to ask when the function
            # fails on them (an actor it does not know): the approvers the policies name are.
            raise PolicyFailed(
                f"the Cedar entities function failed on the call ({type(error).__name__}: {error})",
                fallback=self._fallback(call.tool),
            ) from None
        result = self.module.is_authorized(request, self._policies, entities)
        diagnostics = result.diagnostics
        # In the order they are written: Cedar hands them in an order of its own, which
        # differs from one process to the next, and the reason names them as written.
        reasons = sorted(diagnostics.reasons, key=_written)
        errors = "; ".join(str(error) for error in diagnostics.errors)
        if not reasons and errors:
            raise PolicyFailed(
                f"Cedar could not evaluate the call: {errors}", fallback=self._fallback(call.tool)
            )
        if not reasons:
            return Abstain("no Cedar policy applied")
        notes = [self._annotations.get(reason, {}) for reason in reasons]
        ids = [note.get("id", reason) for note, reason in zip(notes, reasons, strict=True)]
        asked = not result.allowed and all(found.startswith("ask:") for found in ids)
        if errors and (result.allowed or asked) and self._forbid_erred(diagnostics.errors):
            # Cedar skips a policy that errs: a forbid whose condition meets a value of
            # another type (an amount beyond 64 bits is a string) would let the call through,
            # or an ask: one leave it to another ask's approvers, never its own.
            raise PolicyFailed(
                f"Cedar could not evaluate a forbid policy on the call, which may refuse it "
                f"or ask others about it: {errors}",
                fallback=self._fallback(call.tool),
            )
        if result.allowed:
            return Allow(self._named(reasons))
        if asked:
            return _ask(notes, self._named(reasons))
        return Deny(self._named(reasons))

    def _forbid_erred(self, errors: Iterable[object]) -> bool:
        """Whether one of ``errors`` is of a ``forbid`` policy (an error naming no known
        policy counts as one): an ``ask:`` one too, whose approvers would be asked."""
        for error in errors:
            found = _ERRED.search(str(error))
            key = found.group(1) if found is not None else ""
            if self._effects.get(key, "forbid") == "forbid":
                return True
        return False

    def _fallback(self, tool: str) -> tuple[Ask, ...]:
        """The asks of the ``ask:`` policies that may apply to ``tool``, each on its own
        terms: a call Cedar could not decide is held under terms as strict as each."""
        return tuple(ask for action, ask in self._asks if action is None or action == tool)

    def _named(self, reasons: list[str]) -> str:
        """The determining policies: each one's ``@id`` and ``@reason`` when it has them."""
        parts = []
        for reason in reasons:
            note = self._annotations.get(reason, {})
            label = note.get("id", reason)
            parts.append(f"{label}: {note['reason']}" if "reason" in note else label)
        return "; ".join(parts)


class _Readers(NamedTuple):
    """Which calls a policy reading ``context`` may apply to."""

    every: bool
    """Some such policy may apply to any action (no action, or ``action in ...``)."""
    tools: frozenset[str]
    """The actions (tools) such policies name with ``action == Action::"..."``."""


def _context_readers(policies: Iterable[dict[str, Any]]) -> _Readers:
    """Where the policies (as Cedar's JSON) read ``context``: a call no such policy may
    apply to is decided alike without it, as Cedar checks a policy's scope first (``&&``
    stops at the first false), so Cedar need not build the context of that call."""
    every = False
    tools: set[str] = set()
    for policy in policies:
        if '{"Var": "context"}' not in json.dumps(policy.get("conditions")):
            continue
        action = policy.get("action") or {}
        entity = action.get("entity") or {}
        if action.get("op") == "==" and entity.get("type") == "Action":
            tools.add(str(entity.get("id")))
        elif action.get("op") != "==":
            every = True  # any action, or one an entity hierarchy may put in a group
    return _Readers(every, frozenset(tools))


def _scoped_asks(
    policies: dict[str, dict[str, Any]], notes: dict[str, dict[str, str]]
) -> list[tuple[str | None, Ask]]:
    """The ask of each ``ask:`` policy (as Cedar's JSON, by its key), on its own terms, with
    the action (tool) it is scoped to (``None``: any action, or a group of them)."""
    scoped: list[tuple[str | None, Ask]] = []
    # In the order written, which the approvers asked keep (Cedar's own order differs).
    for key, policy in sorted(policies.items(), key=lambda item: _written(item[0])):
        note = notes[key]
        if not note.get("id", "").startswith("ask:"):
            continue
        action = policy.get("action") or {}
        entity = action.get("entity") or {}
        one = action.get("op") == "==" and entity.get("type") == "Action"
        scoped.append((str(entity.get("id")) if one else None, _own(note, note["id"])))
    return scoped


def _approvers(note: str) -> list[str]:
    """The names an ``@approvers("alice, bob")`` annotation lists."""
    return [name.strip() for name in note.split(",") if name.strip()]


def _ask_problem(note: dict[str, str]) -> str | None:
    """What is wrong with the terms an ``ask:`` policy's annotations name; ``None`` when
    ``Ask`` takes them."""
    approvers = _approvers(note["approvers"]) if "approvers" in note else None
    if approvers == []:
        return f'has @approvers("{note["approvers"]}"), which names nobody'
    try:
        quorum = int(note["quorum"]) if "quorum" in note else None
    except ValueError:
        return f'has @quorum("{note["quorum"]}"): a quorum is a whole number ("2")'
    try:
        timeout = float(note["timeout"]) if "timeout" in note else None
    except ValueError:
        return f'has @timeout("{note["timeout"]}"): a timeout is a number of seconds ("600")'
    try:
        Ask(approvers=approvers, quorum=quorum, timeout=timeout)
    except (TypeError, ValueError) as error:
        return f"asks on terms that cannot be met: {error}"
    named = len(dict.fromkeys(approvers)) if approvers is not None else None
    if quorum is not None and named is not None and quorum > named:
        # One named twice approves once: "dave, dave" is one approver.
        return f"asks a quorum of {quorum} of {named} approvers: name more"
    return None


def _ask(notes: list[dict[str, str]], reason: str) -> Ask:
    """The ask of a call the ``ask:`` policies of ``notes`` (their annotations, in the order
    written) apply to: one alone asks on its own terms; several, on terms meeting each one's
    (:func:`~roomkit.policy._strictest.each`), since Cedar counts every policy that applies.
    """
    return each([_own(note, note["id"]) for note in notes], reason)


def _own(note: dict[str, str], reason: str) -> Ask:
    """The ask of one ``ask:`` policy, on its own terms: one it leaves out is the rule's."""
    return Ask(
        approvers=_approvers(note["approvers"]) if "approvers" in note else None,
        quorum=int(note["quorum"]) if "quorum" in note else None,
        timeout=float(note["timeout"]) if "timeout" in note else None,
        reason=reason,
    )


def _written(policy_id: str) -> tuple[int, str]:
    """Where the policy ``policy_id`` is written in the policy set's text: Cedar numbers
    them in that order (``policy0``, ``policy1``, ...)."""
    found = _POLICY_ID.fullmatch(policy_id)
    return (int(found.group(1)) if found is not None else sys.maxsize, policy_id)


_POLICY_ID = re.compile(r"policy(\d+)")
"""How Cedar names the policies of a set parsed from text."""

_ERRED = re.compile(r"error while evaluating policy `([^`]*)`")
"""How cedarpy names the policy whose evaluation erred."""

_STATEMENT_END = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|;')


def _failing_line(cedarpy: Any, text: str) -> int:
    """The line where the first statement that does not parse on its own starts."""
    start = 0
    for match in _STATEMENT_END.finditer(text):
        if match.group() != ";":
            continue
        statement = text[start : match.end()]
        try:
            cedarpy.PolicySet.from_str(statement)
        except ValueError:
            return _first_line(text, start)
        start = match.end()
    if text[start:].strip():
        return _first_line(text, start)
    return 1


def _first_line(text: str, start: int) -> int:
    """The line of the first non-blank character at or after ``start`` (from 1)."""
    offset = start + len(text[start:]) - len(text[start:].lstrip())
    return text.count("\n", 0, offset) + 1

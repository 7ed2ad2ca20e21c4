"""What an ask of a workflow is checked for before anything is scheduled.

An ask roomkit will not make is refused in the workflow, where the workflow's code can catch
it, naming the field at fault: arguments longer, deeper or with a longer number than a
request keeps, arguments or a schema that are not JSON, approvers that are no list of actor
ids or more of them than a request lists, a schema no answer (no edit) could be checked
against, a deadline that is no positive ``timedelta``, a grace past a century, a ladder that
is no ``Ladder``, what no store keeps (a ladder's default and a schema included), an input
of the create activity past Temporal's payload limit.
Each check runs in workflow code, deterministically; the workflow decides, by its patches,
which of them an ask replayed from an older history ran.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payloads

from roomkit.adapters.temporal._timeouts import ActivityTimeouts
from roomkit.core.exceptions import InvalidTextError
from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.models.json_limits import (
    MAX_APPROVERS,
    MAX_ID_CHARS,
    arguments_problem,
    circular_at,
    size_problem,
)
from roomkit.models.shown import shown
from roomkit.tools.human_input.checks import (
    check_ladder_text,
    check_request_text,
    check_text,
)
from roomkit.tools.human_input.ladder import Ladder
from roomkit.tools.validation import (
    answer_schema_problem,
    check_tool_schema,
    unencodable_text,
)

__all__ = [
    "PAYLOAD_LIMIT",
    "SCHEMA_NODES_CHECKED",
    "Spec",
    "approvers_of",
    "check_answer_schema",
    "check_approver_count",
    "check_arguments",
    "check_fields",
    "check_grace",
    "check_input",
    "check_json",
    "check_ladder",
    "check_schema_text",
    "seconds_of",
]

PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Bytes of one command's payloads Temporal takes (its default ``limit.blobSize.error``): a
workflow task scheduling an activity with a larger input fails, and is retried, for ever.

:func:`check_input` holds an ask's input to it as the workflow's payload converter writes
it, before any payload codec: a codec (compression, encryption) runs in the worker, outside
workflow code, asynchronously and not always deterministically (an encryption's nonce), so
the workflow cannot run it to measure. A compressing codec therefore lets no larger input
through, and an encrypting one adds its own bytes on top of what is measured."""

SCHEMA_NODES_CHECKED = 1_000
"""The most objects, lists and booleans a schema may hold for the workflow to check it
(:func:`check_answer_schema`): jsonschema spends up to a quarter of a millisecond on each,
and a workflow task that runs two seconds without yielding fails (Temporal's deadlock
detection), and is retried, again and again. Schemas people answer are far smaller; a larger
one is checked by the create activity, which refuses it at once, after a trip to a worker."""

_SMALLER = "pass what identifies large content (an id, a URL), not the content"
_ADVICE = {"approvers": "name fewer approvers", "ladder": "keep the ladder's default short"}


@dataclass(frozen=True, slots=True)
class Spec:
    """What an ask asks of the people besides the call: who, where, by when, in what form."""

    actor: str | None
    approvers: list[str] | None
    room_id: str | None
    timeout: timedelta
    answer_schema: dict[str, Any] | None
    quorum: int | None
    ladder: Ladder | None
    grace: timedelta | None
    timeouts: ActivityTimeouts | None


def check_json(call: str, name: str, value: Any) -> None:
    """Refuse ``value`` unless it is JSON.

    Raises:
        TypeError: it is not.
    """
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{call}(): {name} must be JSON (dicts, lists, strings, numbers, booleans, None) "
            f"so the request can be stored and shown: {error}"
        ) from None


def check_fields(call: str, tool_name: str, arguments: dict[str, Any], spec: Spec) -> None:
    """Refuse what the store would refuse after a round trip, or what Temporal would not
    carry to it at all (arguments past its payload limit fail the workflow task, again and
    again): named, in the workflow, before anything is asked.

    Raises:
        ValueError: an actor or room that is no text, an id longer than a request holds
            (:data:`~roomkit.models.json_limits.MAX_ID_CHARS`), arguments longer than a
            request keeps.
        InvalidTextError: text UTF-8 cannot encode.
    """
    for name, value in (("actor", spec.actor), ("room_id", spec.room_id)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{call}(): {name} is an id (a str) or None, got {shown(value)}")
        if value is not None:
            check_text(name, value)
            _check_length(call, name, value)
    check_request_text(tool_name, arguments, "", "", "", None)
    for approver in spec.approvers if isinstance(spec.approvers, list) else ():
        if isinstance(approver, str):
            check_text("approvers", approver)
            _check_length(call, "an approver", approver)
    # Measured without writing them out: a value shared by many paths is written once for
    # each, for as long as that takes.
    problem = size_problem(arguments)
    if problem is not None:
        raise ValueError(f"{call}(): {problem}")


def _check_length(call: str, name: str, value: str) -> None:
    """Refuse an id longer than a request may hold on every store."""
    if len(value) > MAX_ID_CHARS:
        raise ValueError(
            f"{call}(): {name} is {len(value):,} characters, over the {MAX_ID_CHARS} an id "
            "may have on every store: pass a shorter one"
        )


def check_arguments(call: str, arguments: dict[str, Any]) -> None:
    """Refuse arguments ``create()`` refuses for what they would be as JSON, before anything
    writes them (:func:`check_json` would, for as long as a value shared by many paths takes,
    or until the recursion limit): longer than a request keeps, nested deeper, or holding an
    integer longer than a number in a request may be.

    Raises:
        ValueError: they are; the message says what, and where.
    """
    if circular_at(arguments) is not None:
        return  # no JSON at all: check_json says so
    problem = arguments_problem(arguments)
    if problem is not None:
        raise ValueError(f"{call}(): {problem}")


def approvers_of(call: str, approvers: Any) -> list[str]:
    """``approvers`` as a list of actor ids (a string is one id, not a list of letters).

    Raises:
        ValueError: it is no list of actor ids.
    """
    if approvers is None:
        return []
    if isinstance(approvers, str | bytes | Mapping) or not isinstance(approvers, Iterable):
        raise ValueError(f"{call}(): approvers is a list of actor ids, got {shown(approvers)}")
    chosen = list(approvers)
    # Their types, then the empty id, each looked at in one pass of C: in a workflow's
    # sandbox every isinstance() is a call of Python's, too slow for a long list.
    if not all(issubclass(kind, str) for kind in set(map(type, chosen))) or "" in chosen:
        raise ValueError(f"{call}(): approvers is a list of actor ids, got {shown(chosen)}")
    return chosen


def check_approver_count(call: str, kind: str, actor: Any, approvers: list[str]) -> None:
    """Refuse more people than a request lists as its approvers on every store: the
    approvers of an approval; on a question, the approvers and its actor, whom the create
    activity lists first (each once).

    Raises:
        ValueError: there are more than
            :data:`~roomkit.models.json_limits.MAX_APPROVERS`; the message says how many.
    """
    named, listed = "approvers", dict.fromkeys(approvers)
    if kind == "question" and isinstance(actor, str) and approvers:
        named, listed = "approvers and the actor", dict.fromkeys([actor, *approvers])
    if len(listed) <= MAX_APPROVERS:
        return
    raise ValueError(
        f"{call}(): {named} name {len(listed):,} actor ids, over the {MAX_APPROVERS} "
        "approvers a request may list on every store: name a role or an on-call schedule of "
        "the directory ('role:ops') for a large group"
    )


def check_ladder(call: str, ladder: Any) -> None:
    """Refuse a ladder the create or expire activity could not record: no
    :class:`~roomkit.tools.human_input.ladder.Ladder`, or a default answer or an escalation's
    actor UTF-8 cannot encode (the expire activity, failing to record the default, would be
    retried for ever and the workflow never resume).

    Raises:
        TypeError: ``ladder`` is neither a ``Ladder`` nor ``None``.
        InvalidTextError: its default or an escalation's actor holds text UTF-8 cannot encode.
    """
    if ladder is None:
        return
    if not isinstance(ladder, Ladder):
        raise TypeError(
            f"{call}(): ladder is a Ladder(...) of remind() and escalate() steps, or None, "
            f"got {type(ladder).__name__}"
        )
    check_ladder_text(ladder)


def check_schema_text(call: str, name: str, schema: Any) -> None:
    """Refuse a schema holding text UTF-8 cannot encode, under the name ``call`` gives it
    (``name``): the create activity, which stores it as the request's ``answer_schema``,
    would refuse it under that name, after a trip.

    Raises:
        InvalidTextError: it holds a lone surrogate; the message says where.
    """
    problem = unencodable_text(schema)
    if problem is not None:
        raise InvalidTextError(
            f"{call}(): {name} must hold valid Unicode text, but holds {problem}, which "
            "UTF-8 cannot encode: send it as UTF-8 text"
        )


def check_answer_schema(call: str, kind: str, tool_name: str, schema: Any) -> None:
    """Refuse a schema the create activity would refuse, after a trip: a question's
    ``answer_schema`` as ``create_detached`` checks it (``answer_schema_of``), an
    approval's ``tool_schema`` as ``create_approval`` does (the tool's arguments, which an
    edit must match). Both are checked against the schema alone, with no network: a
    ``$ref`` is looked up inside it. A schema past :data:`SCHEMA_NODES_CHECKED` is left to
    the create activity, which refuses it as surely (at once, not retried). A workflow
    passes JSON only, so the messages ask for a JSON Schema dict (a Pydantic model's
    ``model_json_schema()``), never a model class.

    Raises:
        TypeError: the schema is no dict.
        ValueError: it is no valid JSON Schema, holds a ``$ref`` that resolves to nothing in
            it, or (``tool_schema``) describes no object of arguments.
    """
    if schema is None or _nodes_past(schema, SCHEMA_NODES_CHECKED):
        return
    if kind == "question":
        _check_question_schema(call, schema)
        return
    if not isinstance(schema, dict):
        raise TypeError(
            f"{call}(): tool_schema must be a JSON Schema dict of the tool's arguments, got "
            f"{type(schema).__name__}: pass e.g. {{'type': 'object', 'properties': {{...}}}}"
        )
    try:
        check_tool_schema(tool_name, schema)
    except ValueError as error:
        raise ValueError(f"{call}(): tool_schema is refused: {error}") from None


def _check_question_schema(call: str, schema: Any) -> None:
    """Refuse a question's ``answer_schema`` no answer could be checked against, as
    ``answer_schema_of`` does, saying to pass what a workflow can: a JSON Schema dict.

    Raises:
        TypeError: the schema is no dict.
        ValueError: it is no valid JSON Schema, or holds a ``$ref`` that resolves to
            nothing in it.
    """
    advice = (
        "pass a JSON Schema dict (e.g. {'type': 'string'}; for a Pydantic model, "
        "Model.model_json_schema(): a workflow passes JSON, never a model class)"
    )
    if not isinstance(schema, dict):
        raise TypeError(
            f"{call}(): answer_schema must be a JSON Schema dict, got {shown(schema)}: {advice}"
        )
    problem = answer_schema_problem(schema)
    if problem is not None:
        raise ValueError(f"{call}(): answer_schema {problem}: {advice}")


def _nodes_past(value: Any, limit: int) -> bool:
    """Whether ``value`` (JSON) holds more than ``limit`` objects, lists and booleans, each
    of which jsonschema may check as a schema; counted no further than ``limit``."""
    pending, count = [value], 0
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif not isinstance(item, bool):
            continue
        count += 1
        if count > limit:
            return True
    return False


def seconds_of(call: str, name: str, value: timedelta) -> float:
    """``value`` in seconds.

    Raises:
        ValueError: it is no positive ``timedelta``.
    """
    if not isinstance(value, timedelta) or value <= timedelta(0):
        raise ValueError(f"{call}(): {name} must be a positive timedelta, got {shown(value)}")
    return value.total_seconds()


def check_grace(call: str, grace: timedelta) -> None:
    """Refuse a ``grace`` longer than the longest deadline a request may have: the
    workflow's timer runs the deadline and the grace, and one past what Temporal's timers
    hold fails the workflow task, again and again.

    Raises:
        ValueError: it is longer than
            :data:`~roomkit.models.clock.LONGEST_TIMEOUT` (a century); the message says
            how long.
    """
    if isinstance(grace, timedelta) and grace.total_seconds() > LONGEST_TIMEOUT:
        raise ValueError(
            f"{call}(): grace is {grace.total_seconds():,.0f} seconds, over the "
            f"{LONGEST_TIMEOUT:,.0f} (a century) a workflow's timer may run past the "
            "deadline: pass a grace of minutes (the default is 60 seconds)"
        )


def check_input(call: str, request: Mapping[str, Any], *, schema: str) -> None:
    """Refuse an ask whose create activity's input (``request``) Temporal would not carry:
    its payload, as the workflow's payload converter writes it (before any payload codec,
    see :data:`PAYLOAD_LIMIT`), past :data:`PAYLOAD_LIMIT`. ``schema`` is what ``call``
    names the request's ``answer_schema``.

    Raises:
        ValueError: it is too large; the message names its largest field.
    """
    size = Payloads(payloads=workflow.payload_converter().to_payloads([request])).ByteSize()
    if size <= PAYLOAD_LIMIT:
        return
    # Each field as Temporal's JSON converter writes it (ASCII: a character is a byte).
    sizes = {field: len(json.dumps(item, separators=(",", ":"))) for field, item in request.items()}
    largest = max(sizes, key=sizes.__getitem__)
    name = schema if largest == "answer_schema" else largest
    raise ValueError(
        f"{call}(): {name} is {sizes[largest]} bytes as JSON, which makes the create "
        f"activity's input {size} bytes (measured before any payload codec: compression "
        f"does not count), past Temporal's payload limit of {PAYLOAD_LIMIT}: "
        f"{_ADVICE.get(largest, _SMALLER)}"
    )

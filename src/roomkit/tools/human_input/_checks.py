"""Input checks and outcome texts shared by the handler's memory and durable paths.

Every text that reaches a store is checked where it enters (``create``, ``resolve``,
``reject`` and their async forms): text that UTF-8 cannot encode (a lone surrogate) is
refused there, with the field named, instead of failing inside a store, where it would take
other callers' writes down with it. How large a new request's arguments may be is
:mod:`._argument_size`'s.
"""

from __future__ import annotations

import json
import re
from typing import Any

from roomkit._storable import non_json_at, storable_as_is
from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    InvalidAnswerError,
    InvalidTextError,
    RequestWithdrawnError,
)
from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.models.json_limits import (
    MAX_ARGUMENTS_DEPTH,
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_NUMBER_CHARS,
    MAX_SCOPED_KEY_BYTES,
)
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.shown import shown
from roomkit.tools.human_input._argument_size import holding_itself
from roomkit.tools.human_input.ladder import Escalate, Ladder
from roomkit.tools.validation import (
    answer_schema_problem,
    circular_at,
    non_finite_at,
    unencodable_text,
    validate_answer_text,
)

__all__ = [
    "MAX_ARGUMENTS_DEPTH",
    "MAX_NUMBER_CHARS",
    "check_answer",
    "check_arguments_json",
    "check_by",
    "check_digest",
    "check_id_lengths",
    "check_ladder_text",
    "check_options",
    "check_request_fields",
    "check_request_text",
    "check_schema",
    "check_surface",
    "check_text",
    "check_timeout",
    "fits",
    "outcome",
    "owned_key",
    "scoped_key_bytes",
]

DEFAULT_REJECTION = "Request rejected"

_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED
_TIMED_OUT = PendingInputStatus.TIMED_OUT
_DIGEST = re.compile(r"[0-9a-f]{64}")


def check_digest(digest: object) -> None:
    """Raise unless ``digest`` reads as an arguments digest (64 lowercase hex digits).

    Raises:
        TypeError: it is not a string.
        ValueError: it is a string of another form.
    """
    if not isinstance(digest, str):
        raise TypeError(f"digest must be the arguments' digest as text, got {digest!r}")
    if _DIGEST.fullmatch(digest) is None:
        shown = digest if len(digest) <= 80 else digest[:77] + "..."
        raise ValueError(
            "digest is the SHA-256 hex digest of the arguments shown (the request's "
            f"arguments_digest, 64 lowercase hex digits), got {shown!r}"
        )


def check_text(
    name: str,
    value: object,
    *,
    invalid: type[ValueError] = InvalidTextError,
    hint: str | None = None,
) -> None:
    """Raise unless ``value`` is text a store can hold.

    Callers skip the call for plain ASCII text (``type(value) is str and value.isascii()``).
    ``hint`` is said, in brackets, when ``value`` is not a ``str``: what to give instead
    where the field has a way (an answer: structured answers as JSON text).

    Raises:
        TypeError: ``value`` is not a ``str``.
        InvalidTextError: it holds a lone surrogate (``invalid`` says which error to raise).
    """
    if not isinstance(value, str):
        shown = f" ({hint})" if hint else ""
        raise TypeError(f"{name} must be a str{shown}, got {type(value).__name__}")
    problem = unencodable_text(value)
    if problem is not None:
        raise invalid(_unencodable(name, problem))


def check_ladder_text(ladder: Ladder) -> None:
    """Raise unless what ``ladder`` puts in a store is text a store can hold: each
    escalation's person (recorded with the request) and its default answer (recorded in the
    history when the question expires, long after it was asked).

    Run where a ladder is given (``HumanInputToolHandler(ladder=...)``, an adapter's
    ``ladder=``, a Temporal ask), not by ``default()`` or ``Ladder()``: a workflow builds its
    ladders in workflow code, and an older history replays them as they were made.

    Raises:
        TypeError: the default or an escalation's person is not a ``str``.
        InvalidTextError: it holds a lone surrogate; the message names ``ladder.on_expiry``
            or the escalation.
    """
    for step in ladder.steps:
        if isinstance(step, Escalate) and not (type(step.to) is str and step.to.isascii()):
            check_text(f"ladder escalate(after={step.after:g}, to=...)", step.to)
    if ladder.on_expiry is not None:
        text = ladder.on_expiry.text
        if not (type(text) is str and text.isascii()):
            check_text("ladder.on_expiry", text)


def check_request_text(
    tool_name: object,
    arguments: dict[str, Any],
    room_id: str,
    tool_call_id: str,
    channel_id: str,
    actor_id: str | None,
) -> None:
    """Raise unless every text of a new request is text a store can hold.

    How large the arguments are is
    :func:`~roomkit.tools.human_input.checks.check_arguments_size`'s to say; ``create`` asks it
    first, before the checks here read every value of them.

    Raises:
        TypeError: ``tool_name``, ``room_id``, ``tool_call_id`` or ``channel_id`` is not a
            ``str``, or ``actor_id`` is neither a ``str`` nor ``None``; or ``arguments``
            hold what JSON cannot write (bytes, a set, an object, a key that is not a
            ``str``); the message names where.
        InvalidTextError: a field, or a string anywhere in ``arguments``, holds a lone
            surrogate; the message names it.
        ValueError: a field is longer than its bound (:func:`check_id_lengths`; the
            message names it, its length and the limit); or ``arguments`` hold NaN or an
            infinity (no JSON number), or hold themselves; the message names where.
    """
    if check_request_fields(tool_name, room_id, tool_call_id, channel_id, actor_id):
        # The common case, a flat object of ASCII texts, without a call.
        for key, text in arguments.items():
            if not (type(text) is str and text.isascii() and type(key) is str and key.isascii()):
                break
        else:
            return
    if not storable_as_is(arguments):
        check_arguments_json(arguments)


def check_request_fields(
    tool_name: object, room_id: str, tool_call_id: str, channel_id: str, actor_id: str | None
) -> bool:
    """Raise unless each field of a new request (all but its arguments) is text a store can
    hold, within its bound; whether they are all ASCII.

    Raises:
        TypeError: a field is not a ``str`` (``actor_id`` may be ``None``).
        InvalidTextError: a field holds a lone surrogate; the message names it.
        ValueError: a field is longer than its bound (:func:`check_id_lengths`).
    """
    try:
        # The fields joined: one test of them all, in a few steps.
        plain = (
            type(tool_name) is str
            and (tool_name + room_id + tool_call_id + channel_id + (actor_id or "")).isascii()
        )
    except TypeError:  # a field that is not a str: each is looked at below
        plain = False
    if plain:
        check_id_lengths(tool_name, room_id, tool_call_id, channel_id, actor_id)
        return True
    if not isinstance(tool_name, str):
        raise TypeError(f"tool_name must be a str, got {type(tool_name).__name__}")
    check_text("tool_name", tool_name)
    for name, value in (
        ("room_id", room_id),
        ("tool_call_id", tool_call_id),
        ("channel_id", channel_id),
        ("actor_id", actor_id),
    ):
        if value is None and name == "actor_id":
            continue
        if not isinstance(value, str):
            shown = "a str or None" if name == "actor_id" else 'a str ("" when there is none)'
            raise TypeError(f"{name} must be {shown}, got {type(value).__name__}")
        check_text(name, value)
    check_id_lengths(tool_name, room_id, tool_call_id, channel_id, actor_id)
    return False


def check_arguments_json(arguments: dict[str, Any]) -> None:
    """Raise unless ``arguments`` are JSON a store can hold: each check reads every value.

    Raises:
        ValueError: they hold themselves, or NaN or an infinity; the message says where.
        TypeError: they hold what JSON cannot write; the message says where.
        InvalidTextError: a string in them holds a lone surrogate; the message says where.
    """
    loop = circular_at(arguments)
    if loop is not None:
        raise ValueError(holding_itself(loop))
    alien = non_json_at(arguments)
    if alien is not None:
        # The memory store would keep it as given, a durable store refuse it or change it
        # (a key 1 comes back "1"): every store refuses it here, before anything is kept.
        raise TypeError(
            f"arguments must be JSON, but hold {alien}: pass only dicts with str keys, "
            "lists, strs, numbers, booleans and None (bytes or an object as text, a set "
            "as a list)"
        )
    problem = unencodable_text(arguments)
    if problem is not None:
        raise InvalidTextError(_unencodable("arguments", problem))
    number = non_finite_at(arguments)
    if number is not None:
        # JSON has no such number: a person would be shown null, or nothing, for it.
        raise ValueError(
            f"arguments hold {number}, a number JSON cannot carry: send a finite number, "
            "or the value as text"
        )


_IDS = (
    ("tool_name", MAX_ID_CHARS),
    ("room_id", MAX_ID_CHARS),
    ("tool_call_id", MAX_KEY_CHARS),
    ("channel_id", MAX_ID_CHARS),
    ("actor_id", MAX_ID_CHARS),
)
"""Each id of a new request, with the most characters it may have: a call id, made by a
model or an adapter (a Temporal workflow's holds the workflow's id), as many as a key."""


def check_id_lengths(
    tool_name: object, room_id: str, tool_call_id: str, channel_id: str, actor_id: str | None
) -> None:
    """Raise unless each of a new request's ids is within its bound:
    :data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters, and
    :data:`~roomkit.models.json_limits.MAX_KEY_CHARS` for ``tool_call_id`` (what is no
    text is left to :func:`check_request_text`).

    The maker skips the call when the ids together are no longer than ``MAX_ID_CHARS``.

    Raises:
        ValueError: an id is longer; the message names it, its length and the limit.
    """
    for (name, limit), value in zip(
        _IDS, (tool_name, room_id, tool_call_id, channel_id, actor_id), strict=True
    ):
        if isinstance(value, str) and len(value) > limit:
            raise ValueError(_too_long(name, len(value), limit))


def check_surface(surface: object) -> None:
    """Raise unless ``surface`` is ``None`` or a name a settle may record in a request's
    history: text of at most :data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters.

    Raises:
        TypeError: ``surface`` is not a ``str``.
        ValueError: it is longer; the message names it, its length and the limit.
        InvalidTextError: it holds text UTF-8 cannot encode (a lone surrogate).
    """
    if surface is None or (
        type(surface) is str and len(surface) <= MAX_ID_CHARS and surface.isascii()
    ):
        return  # the common case: a short name, or none
    _check_name(
        "surface",
        surface,
        'a surface may have on every store: name where the answer came from in a word ("desk", '
        '"slack", "cli")',
    )


def check_by(by: object, *, name: str = "by") -> None:
    """Raise unless ``by`` is ``None`` or an actor id a settle may record as who decided:
    text of at most :data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters. ``name``
    is what messages call it (a history entry's ``actor``).

    Raises:
        TypeError: ``by`` is not a ``str``.
        ValueError: it is longer; the message names it, its length and the limit.
        InvalidTextError: it holds text UTF-8 cannot encode (a lone surrogate).
    """
    if by is None or (type(by) is str and len(by) <= MAX_ID_CHARS and by.isascii()):
        return  # the common case: a short actor id, or none
    _check_name(name, by, "an actor id may have on every store: give the actor's id")


def _check_name(name: str, value: object, advice: str) -> None:
    check_text(name, value)
    assert isinstance(value, str)
    if len(value) > MAX_ID_CHARS:
        raise ValueError(
            f"{name} is {len(value):,} characters, over the {MAX_ID_CHARS:,} {advice}; "
            "nothing was stored"
        )


def _too_long(name: str, length: int, limit: int) -> str:
    return (
        f"{name} is {length:,} characters, over the {limit:,} a request's {name} may have "
        f"on every store: pass a shorter one (an id, or the digest of a long name); "
        "nothing was stored"
    )


def _unencodable(name: str, problem: str) -> str:
    return (
        f"{name} must be valid Unicode text, but holds {problem}, which UTF-8 cannot "
        "encode: send it as UTF-8 text"
    )


def check_timeout(timeout: object) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
    if not 0 <= timeout <= LONGEST_TIMEOUT:
        raise ValueError(
            f"timeout must be a number of seconds from 0 to {LONGEST_TIMEOUT:.0f} (a century; "
            f"None waits forever), got {timeout}"
        )


def check_options(
    request: PendingInput,
    key: str | None,
    answer_schema: dict[str, Any] | None,
    timeout: float | None,
) -> None:
    """Check a create's optional arguments, then record the key (within its owner's scope:
    :func:`owned_key`) and the schema on ``request`` (checked already, by
    :func:`~roomkit.tools.human_input._typed_answers.answer_schema_of`)."""
    check_timeout(timeout)
    if key is not None:
        if type(key) is not str or not key.isascii():
            check_text("key", key)
        if len(key) > MAX_KEY_CHARS:
            raise ValueError(_too_long("key", len(key), MAX_KEY_CHARS))
    if key is None:
        request.key = None
    else:
        owned = owned_key(request, key)
        # At most 4 bytes a character (6 for an escape, which is ASCII): the common case
        # is settled by its length alone.
        if 4 * len(owned) > MAX_SCOPED_KEY_BYTES and _scoped_bytes(owned) > MAX_SCOPED_KEY_BYTES:
            raise ValueError(_scope_too_long(request, key, owned))
        request.key = owned
    request.answer_schema = answer_schema


def owned_key(request: PendingInput, key: str) -> str:
    """``key`` as the store keeps it: within the scope of whoever makes ``request``.

    A key names a request only for its owner: the same room, the same channel (an AI
    channel, the MCP door) and the same actor. Another actor's call with the same key, or
    another channel's, makes a request of its own and never re-attaches to theirs: a key
    is no secret (an AI channel's is ``room:channel:tool-call-id``). The scope and the key
    are one JSON array, so that no two scopes run together.
    """
    return _scoped(request.room_id, request.channel_id, request.actor_id, key)


def scoped_key_bytes(room_id: str, channel_id: str, actor_id: str | None, key: str) -> int:
    """The bytes ``key`` takes with its owner's scope as every store keeps it: a create
    refuses a key past :data:`~roomkit.models.json_limits.MAX_SCOPED_KEY_BYTES`."""
    return _scoped_bytes(_scoped(room_id, channel_id, actor_id, key))


def _scoped(room_id: str, channel_id: str, actor_id: str | None, key: str) -> str:
    scope = [room_id, channel_id, actor_id, key]
    return json.dumps(scope, ensure_ascii=False, separators=(",", ":"))


def _scoped_bytes(owned: str) -> int:
    return len(owned) if owned.isascii() else len(owned.encode("utf-8"))


def _scope_too_long(request: PendingInput, key: str, owned: str) -> str:
    parts = ", ".join(
        f"{name} {len(value or ''):,}"
        for name, value in (
            ("room_id", request.room_id),
            ("channel_id", request.channel_id),
            ("actor_id", request.actor_id),
            ("key", key),
        )
    )
    return (
        f"key with its scope ({parts} characters) is {_scoped_bytes(owned):,} bytes as a "
        "store keeps it (UTF-8 JSON), over the "
        f"{MAX_SCOPED_KEY_BYTES:,} a store's index of keys holds: pass a shorter key (the "
        "digest of a long one), or shorter ids; nothing was stored"
    )


def check_schema(schema: object, name: str = "answer_schema") -> None:
    """Raise unless ``schema`` is a JSON Schema dict an answer can be checked against.

    ``name`` is the argument as the caller gave it, which the messages start with.

    Raises:
        TypeError: ``schema`` is no dict.
        ValueError: it is no valid JSON Schema, or holds a ``$ref`` that resolves to nothing
            in it (which would fail the person's answer instead).
    """
    if not isinstance(schema, dict):
        raise TypeError(
            f"{name} must be a JSON Schema dict or a Pydantic model class, got "
            f"{shown(schema)}: pass e.g. {{'type': 'string'}}, or a BaseModel subclass"
        )
    problem = answer_schema_problem(schema)
    if problem is not None:
        raise ValueError(
            f"{name} {problem}: pass a JSON Schema dict (e.g. {{'type': 'string'}}) or a "
            "Pydantic model class"
        )


def check_answer(request: PendingInput, result: str) -> None:
    """Raise :class:`InvalidAnswerError` unless ``result`` matches the answer schema.

    A person's text is text: when the schema takes ``result`` as a string, it is the answer
    (``42`` typed as free text is the text ``42``). Otherwise ``result`` is read as JSON.
    """
    assert request.answer_schema is not None
    problem = validate_answer_text(request.answer_schema, result)
    if problem is not None:
        raise InvalidAnswerError(
            f"Invalid answer for pending request {request.pending_id}: {problem}"
        )


def fits(request: PendingInput, result: str) -> bool:
    """Whether ``result`` matches the answer schema of ``request``, which has one."""
    assert request.answer_schema is not None
    return validate_answer_text(request.answer_schema, result) is None


def outcome(request: PendingInput) -> str:
    """The settled request's outcome: its answer, or the error it stands for."""
    status = request.status
    if status is _RESOLVED:
        return request.result or ""
    if status is _REJECTED:
        reason = request.reject_reason or DEFAULT_REJECTION
        if request.withdrawn:
            raise RequestWithdrawnError(reason)
        raise HumanInputRejectedError(reason)
    if status is _TIMED_OUT:
        raise HumanInputTimeoutError(
            f"Nobody answered pending request {request.pending_id} before its deadline"
        )
    raise RuntimeError(f"Unexpected pending status: {status!r}")  # pragma: no cover

"""What travels over the desk's HTTP and WebSocket API: the request view and the bodies.

The models are pydantic, so the OpenAPI schema documents every body the desk reads and
writes. A request's ``kind`` says how a page shows it and which answer body it takes:

- ``question``: ``{"question": str, "options"?: [str], "multiSelect"?: bool}``;
- ``questions``: ``{"questions": [{"question", "header"?, "options": [{"label",
  "description"?}], "multiSelect"}]}``;
- ``confirm``: a ``ConfirmAction`` call, or arguments ``{"action": str, "details"?: any}``;
- ``custom``: anything else (answered as text, or per the request's ``answer_schema``);
- ``approval``: a held tool (``tool_name``, ``arguments``; ``answer_schema`` is the tool's
  JSON Schema), answered with a decision: ``{"decision": "approve"}``, ``{"decision":
  "edit", "arguments": {...}}``, ``{"decision": "reject", "reason": str}`` or
  ``{"decision": "respond", "result": str}``, each with an optional ``"digest"``: the
  ``arguments_digest`` of the arguments the person was shown, which the desk refuses (409,
  nothing decided) once an edit has changed them. The page always sends it.

Every text of a body must be text UTF-8 can encode: a lone surrogate (which the JSON escape
``"\\ud800"`` can carry) is refused with a 422 naming where it is, before anything is read.
A store written by an earlier version, which let such texts through, may still hold one (in
a request's arguments, a vote's reason, a history entry): the desk shows it with U+FFFD in
its place (:func:`shown_texts`) and changes nothing stored.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue
from pydantic_core import PydanticCustomError

from roomkit._storable import replaced_surrogates, unencodable_text
from roomkit.models.kinds import Kind, kind_of, option_labels, request_kind
from roomkit.models.pending_input import PendingInput
from roomkit.stores import approved_by

__all__ = [
    "AnswerBody",
    "ErrorBody",
    "HistoryList",
    "HistoryView",
    "Kind",
    "MeView",
    "QuestionAnswer",
    "RejectBody",
    "RequestList",
    "RequestView",
    "error_responses",
    "kind_of",
    "option_labels",
    "request_kind",
    "shown_texts",
    "view_of",
]

logger = logging.getLogger("roomkit.desk")

MAX_REASON_CHARS = 1000

_T = TypeVar("_T")


def _encodable(value: _T) -> _T:
    """``value`` when every text in it encodes; else a validation error naming where."""
    problem = unencodable_text(value)
    if problem is not None:
        raise PydanticCustomError(
            "unencodable_text",
            "must be valid Unicode text, but holds {problem}: send it as UTF-8 text",
            {"problem": problem},
        )
    return value


Text = Annotated[str, BeforeValidator(_encodable)]
"""A string that UTF-8 can encode."""


Status = Literal["pending", "resolved", "rejected", "timed_out"]

Digest = Annotated[
    str,
    Field(
        pattern=r"^[0-9a-f]{64}$",
        description="On an approval, the arguments_digest of the arguments the person was "
        "shown: the decision is refused (409) when an edit has changed them since.",
    ),
]


class RequestView(BaseModel):
    """A request for human input, as the desk shows it."""

    id: str
    tool_name: str
    arguments: dict[str, Any]
    room_id: str
    channel_id: str
    channel_type: str
    actor_id: str | None
    created_at: datetime
    status: Status
    kind: Kind
    answer_schema: dict[str, Any] | None
    result: str | None
    reason: str | None = Field(description="Why it was rejected or withdrawn.")
    withdrawn: bool = Field(description="The system gave it up (closed or released).")
    settled_by: str | None = Field(description="Who answered or rejected it.")
    arguments_digest: str | None = Field(
        default=None, description="On an approval, the SHA-256 digest of the arguments shown."
    )
    approvers: list[str] = Field(
        default_factory=list, description="On an approval, who may decide it now."
    )
    quorum: int | None = Field(
        default=None, description="On a quorum approval, how many approvals it takes."
    )
    voters: list[str] = Field(
        default_factory=list, description="On a quorum approval, every listed approver."
    )
    approved_by: list[str] = Field(
        default_factory=list,
        description="On a quorum approval, who approved the arguments shown, in order.",
    )
    votes: list[dict[str, Any]] = Field(
        default_factory=list,
        description="On a quorum approval, every vote: actor, decision, at, digest "
        "(edited, reason).",
    )
    routing: str | None = Field(
        default=None,
        description="Who decides while an approver is away, as the one who asked reads it "
        "('Alice is away until 12 Dec; Carol is deciding'), on an open request.",
    )
    deciding: list[str] = Field(
        default_factory=list,
        description="On an open request the handler's directory routes, everyone who may "
        "decide it now: its approvers of record, their delegates, a role's members, "
        "whoever is on call.",
    )


class RequestList(BaseModel):
    """The open questions the caller may answer, oldest first."""

    requests: list[RequestView]


class HistoryList(BaseModel):
    """The caller's recently settled requests, newest first: the answer, or why not."""

    requests: list[RequestView]


class MeView(BaseModel):
    """Who the token speaks for."""

    actor_id: str
    admin: bool


class SessionView(BaseModel):
    """The token a sign-in link was traded for."""

    token: str
    """An actor token for the person the link named, to send with each request."""
    actor_id: str
    admin: bool
    expires_at: float
    """When the token stops being valid (seconds since the epoch)."""


class ErrorBody(BaseModel):
    """An error: ``detail`` says what went wrong."""

    detail: str


def error_responses(described: Mapping[int, str], *codes: int) -> dict[int | str, dict[str, Any]]:
    """A route's error responses for OpenAPI: an :class:`ErrorBody` under each of ``codes``.

    Args:
        described: what each status code means on the routes of one router.
        codes: the codes this route answers with.
    """
    return {code: {"model": ErrorBody, "description": described[code]} for code in codes}


class QuestionAnswer(BaseModel):
    """The answer to one question of a ``questions`` request."""

    model_config = ConfigDict(extra="forbid", strict=True)

    question: Text = Field(max_length=10_000)
    answer: Annotated[str | list[str], BeforeValidator(_encodable)]


class AnswerBody(BaseModel):
    """An answer; which fields apply depends on the request's kind.

    - question: ``answer`` (a list of option labels when ``multiSelect``);
    - questions: ``answers``, one per question;
    - confirm: ``confirmed``, and an optional ``reason``;
    - custom: ``answer``, any JSON matching ``answer_schema``, or text when there is none;
    - approval: ``decision``, with ``arguments`` (edit), ``reason`` (reject) or ``result``
      (respond), and ``digest``, the digest of the arguments shown; an approve may carry a
      ``grant`` (the same again within bounds: :mod:`roomkit.desk.grants`).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    answer: Annotated[JsonValue, BeforeValidator(_encodable)] = None
    answers: list[QuestionAnswer] | None = None
    confirmed: bool | None = None
    reason: Text | None = Field(default=None, max_length=MAX_REASON_CHARS)
    decision: Literal["approve", "edit", "reject", "respond"] | None = None
    arguments: Annotated[dict[str, JsonValue], BeforeValidator(_encodable)] | None = None
    result: Text | None = Field(default=None, max_length=100_000)
    digest: Digest | None = None
    grant: dict[str, JsonValue] | None = None


class HistoryView(BaseModel):
    """A request's history, oldest first: each entry's ``type``, ``at``, ``actor``,
    ``surface``, ``seq`` and its type's own fields."""

    entries: list[dict[str, Any]]


class RejectBody(BaseModel):
    """A refusal; the model reads ``reason``. On an approval, ``digest`` is the digest of
    the arguments shown."""

    model_config = ConfigDict(extra="forbid", strict=True)

    reason: Text = Field(default="", max_length=MAX_REASON_CHARS)
    digest: Digest | None = None


def shown_texts(value: _T, what: str) -> _T:
    """``value`` (``what``, read from the store: ``"the history of request <id>"``) as the
    desk shows it: as it is, or, when a text in it holds a lone surrogate, which no JSON
    response can carry, a copy with U+FFFD in place of each, and a warning naming ``what``."""
    problem = unencodable_text(value)
    if problem is None:
        return value
    logger.warning(
        "%s holds %s (stored by an earlier version): the desk shows U+FFFD in its place",
        what[:1].upper() + what[1:],
        problem,
        extra={"event": "unencodable_text"},
    )
    replaced: _T = replaced_surrogates(value)
    return replaced


def view_of(request: PendingInput) -> dict[str, Any]:
    """The request as a JSON-ready :class:`RequestView` dict."""
    view: dict[str, Any] = {
        "id": request.pending_id,
        "tool_name": request.tool_name,
        "arguments": request.arguments,
        "room_id": request.room_id,
        "channel_id": request.channel_id,
        "channel_type": str(request.channel_type),
        "actor_id": request.actor_id,
        # As pydantic writes it, so HTTP and WebSocket views read alike.
        "created_at": request.created_at.isoformat().replace("+00:00", "Z"),
        "status": str(request.status),
        "kind": str(request_kind(request)),
        "answer_schema": request.answer_schema,
        "result": request.result,
        "reason": request.reject_reason,
        "withdrawn": request.withdrawn,
        "settled_by": request.settled_by,
        "arguments_digest": request.arguments_digest,
        "approvers": list(request.approvers),
        "quorum": request.quorum,
        "voters": list(request.voters),
        "approved_by": approved_by(request),
        "votes": [
            {
                "actor": vote.actor,
                "decision": vote.decision,
                "at": vote.at.isoformat().replace("+00:00", "Z"),
                "digest": vote.digest,
                "edited": vote.edited,
                "reason": vote.reason,
            }
            for vote in request.votes
        ],
    }
    return shown_texts(view, f"the record of request {request.pending_id}")

"""From an answer body to the text the model reads, checked against the request's kind.

An approval's body is a decision (``{"decision": "approve"}``, ...), passed on as the JSON
the builders of :mod:`roomkit.tools.approvals` write; the handler checks an edit, and the
body's ``digest`` (the arguments the person was shown) against the arguments as they stand.

A question answered with one string passes that string; every other answer passes the
compact JSON of the body. A custom request with an answer schema passes the answer itself:
a string the schema takes is passed as it is (a person's free text is text, even when it
reads ``42`` or ``true``), anything else as its JSON, which is what the schema describes.
Whatever breaks the request's shape or its schema raises :class:`InvalidAnswerError` with a
message naming the problem; the handler checks the answer schema again.
"""

from __future__ import annotations

import json
from typing import Any

from roomkit._forms import example_body, quorum_progress, quoted
from roomkit.core.exceptions import InvalidAnswerError
from roomkit.desk.shapes import AnswerBody, Kind, QuestionAnswer, kind_of, option_labels
from roomkit.models.pending_input import PendingInput
from roomkit.notify.wording import ended_words
from roomkit.tools import approvals
from roomkit.tools.validation import validate_answer

__all__ = ["answer_text", "quorum_progress", "settled_detail", "voted", "voted_for"]

_FIELDS = {
    Kind.QUESTION: {"answer"},
    Kind.QUESTIONS: {"answers"},
    Kind.CONFIRM: {"confirmed", "reason"},
    Kind.CUSTOM: {"answer"},
    Kind.APPROVAL: {"decision", "arguments", "reason", "result", "digest"},
}
_DECISION_FIELDS = {
    "approve": {"decision"},
    "edit": {"decision", "arguments"},
    "reject": {"decision", "reason"},
    "respond": {"decision", "result"},
}
_DECISION_EXAMPLE = '{"decision": "approve"}'


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def answer_text(request: PendingInput, body: AnswerBody) -> str:
    """The answer as the model reads it.

    Raises:
        InvalidAnswerError: the body does not fit the request's kind; the message says how,
            and shows a body that fits.
    """
    if request.kind == "approval":
        return _decision_text(body)
    try:
        return _shaped_text(request, body)
    except InvalidAnswerError as error:
        kind = kind_of(request.tool_name, request.arguments)
        example = example_body(kind, request.arguments, answer_schema=request.answer_schema)
        raise InvalidAnswerError(f"{error}; for example: {example}") from None


def _decision_text(body: AnswerBody) -> str:
    """The decision a body on an approval holds, as the builders write it (the handler
    checks an edit against the tool's schema)."""
    given = body.model_fields_set - {"digest", "grant"}
    if body.decision is None:
        raise InvalidAnswerError(
            "an approval takes a 'decision': approve, edit, reject or respond; "
            f"for example: {_DECISION_EXAMPLE}"
        )
    expected = _DECISION_FIELDS[body.decision]
    if given != expected:
        raise InvalidAnswerError(
            f"a {body.decision!r} decision takes {sorted(expected)}, not {sorted(given)}"
        )
    if body.grant is not None and body.decision != "approve":
        raise InvalidAnswerError("a 'grant' goes with an approve decision only")
    if body.decision == "edit":
        if body.arguments is None:
            raise InvalidAnswerError("an edit takes 'arguments': every argument, as an object")
        try:
            return approvals.edit(dict(body.arguments))
        except ValueError as past:
            # Within the body's cap, yet more than a request keeps: too long or too deep.
            raise InvalidAnswerError(str(past)) from None
    if body.decision == "reject":
        return approvals.reject(body.reason or "")
    if body.decision == "respond":
        if body.result is None:
            raise InvalidAnswerError("a respond decision takes 'result': the answer, as text")
        return approvals.respond(body.result)
    return approvals.approve()


def _shaped_text(request: PendingInput, body: AnswerBody) -> str:
    kind = kind_of(request.tool_name, request.arguments)
    given = body.model_fields_set
    extra = given - _FIELDS[kind]
    if extra:
        raise InvalidAnswerError(
            f"a {kind} request takes {sorted(_FIELDS[kind])}, not {sorted(extra)}"
        )
    if kind is Kind.QUESTIONS:
        answers = _question_set(request.arguments["questions"], body.answers)
        return _compact({"answers": answers})
    if kind is Kind.CONFIRM:
        if body.confirmed is None:
            raise InvalidAnswerError("a confirm request takes 'confirmed': true or false")
        reply: dict[str, Any] = {"confirmed": body.confirmed}
        if body.reason:
            reply["reason"] = body.reason
        return _compact(reply)
    if "answer" not in given:
        raise InvalidAnswerError(f"a {kind} request takes 'answer'")
    if kind is Kind.QUESTION:
        answer = _choice(request.arguments, body.answer, "answer")
        return answer if isinstance(answer, str) else _compact({"answer": answer})
    if request.answer_schema is not None:
        return _schema_answer(request, body.answer)
    if not isinstance(body.answer, str):
        raise InvalidAnswerError("answer must be text: this request has no answer schema")
    return body.answer


def _schema_answer(request: PendingInput, answer: Any) -> str:
    """The answer to a request with a schema: checked as the JSON it was sent as."""
    assert request.answer_schema is not None
    problem = validate_answer(request.answer_schema, answer)
    if problem is not None:
        raise InvalidAnswerError(
            f"Invalid answer for pending request {request.pending_id}: {problem}"
        )
    return answer if isinstance(answer, str) else _compact(answer)


def _choice(question: dict[str, Any], answer: object, where: str) -> str | list[str]:
    """Check one question's answer: a label (or list of labels) among its options."""
    # No options, or an empty list of them (as a model may send): any text answers it, as
    # the page and the CLI offer.
    labels = option_labels(question.get("options")) or None
    multi = question.get("multiSelect") is True
    if multi and labels is not None:
        if not isinstance(answer, list) or not all(isinstance(item, str) for item in answer):
            raise InvalidAnswerError(f"{where} must be a list of option labels (multiSelect)")
        if not answer:
            raise InvalidAnswerError(f"{where} must pick at least one option")
        if len(set(answer)) != len(answer):
            raise InvalidAnswerError(f"{where} picks an option twice")
        unknown = [item for item in answer if item not in labels]
        if unknown:
            raise InvalidAnswerError(f"{where}: {quoted(unknown[0])} is not one of the options")
        return list(answer)
    if not isinstance(answer, str):
        raise InvalidAnswerError(f"{where} must be a string")
    if labels is not None and answer not in labels:
        raise InvalidAnswerError(f"{where}: {quoted(answer)} is not one of the options")
    if not answer.strip():
        raise InvalidAnswerError(f"{where} is empty")
    return answer


def _question_set(
    questions: list[dict[str, Any]], answers: list[QuestionAnswer] | None
) -> list[dict[str, Any]]:
    """One answer per question, in the questions' order.

    Answers name their question by its text; two questions with the same text take their
    answers in the order given (the first such answer is the first such question's).
    """
    if answers is None:
        raise InvalidAnswerError("a questions request takes 'answers', one per question")
    waiting: dict[str, list[int]] = {}
    for index, question in enumerate(questions):
        waiting.setdefault(question["question"], []).append(index)
    given: dict[int, QuestionAnswer] = {}
    for item in answers:
        places = waiting.get(item.question)
        if places is None:
            raise InvalidAnswerError(f"{quoted(item.question)} is not one of the questions")
        if not places:
            raise InvalidAnswerError(f"question {quoted(item.question)} is answered twice")
        given[places.pop(0)] = item
    missing = [q["question"] for index, q in enumerate(questions) if index not in given]
    if missing:
        raise InvalidAnswerError(f"question {quoted(missing[0])} has no answer")
    return [
        {
            "question": question["question"],
            "answer": _choice(question, given[index].answer, f"answers[{index}].answer"),
        }
        for index, question in enumerate(questions)
    ]


def settled_detail(request: PendingInput | None) -> str:
    """Why a request can no longer be answered, for a 409: how it ended, worded as every
    surface words it (``Already approved by bob``, ``Already declined by alice: not now``;
    see :func:`~roomkit.notify.wording.ended_words`)."""
    if request is None:
        return "This request is no longer open"
    status = str(request.status)
    if status == "timed_out":
        return "Timed out: nobody answered before the deadline"
    if request.withdrawn:
        return f"Withdrawn: {request.reject_reason or 'the request was given up'}"
    if status in ("resolved", "rejected"):
        ended = ended_words(request, by=request.settled_by)
        return f"Already {ended[:1].lower()}{ended[1:]}"
    return "This request is still open"


def voted(actor_id: str, request: PendingInput) -> bool:
    """Whether ``actor_id`` has a vote in on ``request`` (a quorum approval): a vote sent
    again, a retry or a second tab or device, is in and counts once."""
    return any(vote.actor == actor_id for vote in request.votes)


def voted_for(actor_id: str, request: PendingInput) -> str | None:
    """Who cast ``actor_id``'s vote on ``request`` standing in for them (their delegate),
    if someone did."""
    for vote in request.votes:
        if vote.on_behalf_of == actor_id and vote.actor != actor_id:
            return vote.actor
    return None

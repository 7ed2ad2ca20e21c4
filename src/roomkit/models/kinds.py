"""The kind of a request, read from its tool and arguments, and what a chat text answers.

A request's kind says how a page shows it and what answer it takes (the desk's
``roomkit.desk.shapes`` documents the shapes). A message typed in a room answers a request
only when its kind takes text: a question without options or a custom request without an
answer schema take any text; a single-choice question takes exactly one of its option labels;
a multiple choice, a list of questions, a confirmation and an approval are answered on their
card only.
"""

from __future__ import annotations

from enum import StrEnum, unique
from typing import Any

from roomkit.models.pending_input import PendingInput

__all__ = ["Kind", "kind_of", "option_labels", "request_kind", "text_answer"]


@unique
class Kind(StrEnum):
    """How a request is shown and answered."""

    QUESTION = "question"
    QUESTIONS = "questions"
    CONFIRM = "confirm"
    CUSTOM = "custom"
    APPROVAL = "approval"
    """A held tool waiting for a decision (approve, edit, reject, respond)."""


def option_labels(options: object) -> list[str] | None:
    """The labels of a question's options (strings or ``{"label"}`` objects), or ``None``."""
    if not isinstance(options, list):
        return None
    labels: list[str] = []
    for option in options:
        label = option.get("label") if isinstance(option, dict) else option
        if not isinstance(label, str):
            return None
        labels.append(label)
    return labels


def _is_question(item: object, *, options_required: bool) -> bool:
    if not isinstance(item, dict) or not isinstance(item.get("question"), str):
        return False
    has_options = "options" in item or options_required
    if has_options and option_labels(item.get("options")) is None:
        return False
    return isinstance(item.get("multiSelect", False), bool)


def kind_of(tool_name: str, arguments: dict[str, Any]) -> Kind:
    """The kind of a request, from its tool and the shape of its arguments."""
    questions = arguments.get("questions")
    if (
        isinstance(questions, list)
        and questions
        and all(_is_question(item, options_required=True) for item in questions)
    ):
        return Kind.QUESTIONS
    if _is_question(arguments, options_required=False):
        return Kind.QUESTION
    if isinstance(arguments.get("action"), str) and (
        tool_name == "ConfirmAction" or set(arguments) <= {"action", "details"}
    ):
        return Kind.CONFIRM
    return Kind.CUSTOM


def request_kind(request: PendingInput) -> Kind:
    """The kind of ``request``: ``APPROVAL`` for an approval, else its question's shape."""
    if request.kind == "approval":
        return Kind.APPROVAL
    return kind_of(request.tool_name, request.arguments)


def text_answer(request: PendingInput, text: str) -> str | None:
    """The answer ``text`` gives ``request`` when typed in its room, or ``None`` if it
    answers it not (see the module docstring); surrounding blanks do not count."""
    said = text.strip()
    if not said or request.kind == "approval":
        return None
    kind = kind_of(request.tool_name, request.arguments)
    if kind is Kind.CUSTOM:
        return said if request.answer_schema is None else None
    if kind is not Kind.QUESTION:
        return None
    labels = option_labels(request.arguments.get("options"))
    if not labels:
        return said
    if request.arguments.get("multiSelect") is True:
        return None
    return said if said in labels else None

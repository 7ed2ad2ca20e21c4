"""What an answer to a request looks like, and answers typed the way people type them.

The desk's shape errors show :func:`example_body`, a body that fits the request. The
``roomkit pending`` commands show :func:`answer_hint` and :func:`typed_example` (what to
type after ``roomkit pending answer ID``), and :func:`typed_body` turns what was typed into
the body: an option's label or its 1-based number (an exact label wins over a number),
several of them as a JSON list or separated by commas, and for a list of questions a JSON
list with one answer per question. Numbers are a terminal's convenience; the desk's API
takes labels. :func:`quorum_progress` words how far a quorum approval has come, for the page,
Slack and the terminal alike.
Both quote what the person sent with :func:`quoted`, cut short.

It lives beside the desk rather than in it (``roomkit.desk.forms`` re-exports it), so that
the terminal client loads no part of the desk.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from roomkit.models.kinds import Kind, option_labels

__all__ = [
    "answer_hint",
    "example_body",
    "quorum_progress",
    "quoted",
    "takes_choices",
    "typed_body",
    "typed_example",
]

_TEXT = "your answer"
"""What an example shows where the person writes free text."""
_BODY_KEYS = {"answer", "answers", "confirmed"}


def _questions(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    questions = arguments.get("questions")
    return (
        [item for item in questions if isinstance(item, dict)]
        if isinstance(questions, list)
        else []
    )


def _labels(question: dict[str, Any]) -> list[str]:
    return option_labels(question.get("options")) or []


def _multi(question: dict[str, Any]) -> bool:
    return question.get("multiSelect") is True


def _example_choice(question: dict[str, Any]) -> str | list[str]:
    labels = _labels(question)
    if not labels:
        return _TEXT
    return labels[:2] if _multi(question) else labels[0]


def _typed_choice(question: dict[str, Any]) -> str | list[str]:
    """:func:`_example_choice` as a terminal shows it: a label holding a control character
    (an escape sequence the terminal would run) goes by its number, which answers as well."""
    labels = _labels(question)
    if not labels:
        return _TEXT
    typed = [label if label.isprintable() else str(n) for n, label in enumerate(labels, 1)]
    return typed[:2] if _multi(question) else typed[0]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def example_body(
    kind: str, arguments: dict[str, Any], *, answer_schema: dict[str, Any] | None = None
) -> str:
    """A JSON answer body that fits a request of ``kind`` with these ``arguments``."""
    if kind == Kind.QUESTIONS:
        answers = [
            {"question": question.get("question"), "answer": _example_choice(question)}
            for question in _questions(arguments)
        ]
        return _json({"answers": answers})
    if kind == Kind.QUESTION:
        return _json({"answer": _example_choice(arguments)})
    if kind == Kind.CONFIRM:
        return '{"confirmed": true} or {"confirmed": false, "reason": "why not"}'
    if answer_schema is not None:
        return '{"answer": <JSON matching the answer schema>}'
    return _json({"answer": _TEXT})


def takes_choices(kind: str, arguments: dict[str, Any]) -> bool:
    """Whether the request is answered by picking options: :func:`typed_body` reads it."""
    return kind == Kind.QUESTIONS or (kind == Kind.QUESTION and bool(_labels(arguments)))


def answer_hint(kind: str, arguments: dict[str, Any], *, has_schema: bool = False) -> str:
    """How to answer the request from a terminal, in one sentence."""
    if kind == Kind.QUESTIONS:
        count = len(_questions(arguments))
        return (
            f"Answer the {count} questions with a JSON list, one answer per question: an "
            "option's label or number (a list of them where several may be picked)."
        )
    if kind == Kind.QUESTION and _labels(arguments):
        if _multi(arguments):
            return (
                "Pick one or more options by label or number, as a JSON list or separated "
                "by commas."
            )
        return "Pick one option by its label or its number."
    if kind == Kind.CONFIRM:
        return "Answer yes or no."
    if has_schema:
        return "Answer with JSON matching the answer schema."
    return "Answer with your text."


def typed_example(kind: str, arguments: dict[str, Any], *, has_schema: bool = False) -> str:
    """What to type after ``roomkit pending answer ID``, quoted for a shell."""
    if kind == Kind.QUESTIONS:
        return shlex.quote(_json([_typed_choice(q) for q in _questions(arguments)]))
    if kind == Kind.QUESTION:
        choice = _typed_choice(arguments)
        return shlex.quote(_json(choice) if isinstance(choice, list) else choice)
    if kind == Kind.CONFIRM:
        return "yes"
    if has_schema:
        return shlex.quote('{"answer": ...}')
    return shlex.quote(_TEXT)


def typed_body(kind: str, arguments: dict[str, Any], text: str) -> dict[str, Any]:
    """The answer body for ``text`` typed to a request that :func:`takes_choices`.

    A JSON body (``{"answer": ...}``, ``{"answers": [...]}``) is sent as it is.

    Raises:
        ValueError: the text does not fit the request; the message shows what would.
    """
    parsed = _parsed(text)
    if isinstance(parsed, dict) and parsed.keys() & _BODY_KEYS:
        return parsed
    if kind == Kind.QUESTION:
        return {"answer": _answer_one(arguments, text, "")}
    questions = _questions(arguments)
    if not isinstance(parsed, list):
        if len(questions) != 1:
            raise ValueError(_count_problem(arguments, f"got {quoted(text)}"))
        parsed = [text]
    if len(parsed) != len(questions):
        raise ValueError(_count_problem(arguments, f"got {len(parsed)}"))
    answers = []
    for index, (question, item) in enumerate(zip(questions, parsed, strict=True), start=1):
        where = f"answer {index} ({quoted(str(question.get('question', '')))}): "
        answers.append(
            {"question": question.get("question"), "answer": _answer_one(question, item, where)}
        )
    return {"answers": answers}


def _count_problem(arguments: dict[str, Any], got: str) -> str:
    count = len(_questions(arguments))
    example = typed_example(Kind.QUESTIONS, arguments)
    return (
        f"this request asks {count} questions: answer with a JSON list of {count} answers, "
        f"one per question ({got}), e.g. {example}"
    )


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _answer_one(question: dict[str, Any], typed: Any, where: str) -> str | list[str]:
    """One question's answer: a label for one choice, a list of labels for several."""
    labels = _labels(question)
    if not labels:
        if not isinstance(typed, str):
            raise ValueError(f"{where}this question takes text, e.g. {shlex.quote(_TEXT)}")
        return typed
    if isinstance(typed, str) and typed in labels:
        return [typed] if _multi(question) else typed
    items = _parsed(typed) if isinstance(typed, str) else typed
    if _multi(question):
        if isinstance(items, str):
            items = [part for part in items.split(",") if part.strip()]
        elif not isinstance(items, list):
            items = [items]
        if not items:
            raise ValueError(f"{where}pick at least one option, e.g. {_choices_example(labels)}")
        return [_pick(labels, item, where) for item in items]
    if isinstance(items, list):
        raise ValueError(
            f"{where}this question takes one option, e.g. {shlex.quote(labels[0])} or 1"
        )
    return _pick(labels, items, where)


def _pick(labels: list[str], item: Any, where: str) -> str:
    """The option ``item`` names: its exact label first, then its 1-based number."""
    number: int | None = None
    if isinstance(item, str):
        if item in labels:
            return item
        word = item.strip()
        same = [label for label in labels if label.casefold() == word.casefold()]
        if len(same) == 1:
            return same[0]
        if word.isascii() and word.isdigit():
            number = int(word)
    elif isinstance(item, int) and not isinstance(item, bool):
        number = item
    choices = f"type a label or its number, 1-{len(labels)}: {_listed(labels)}"
    if number is not None:
        if 1 <= number <= len(labels):
            return labels[number - 1]
        raise ValueError(f"{where}there is no option {number}: {choices}")
    shown = quoted(item) if isinstance(item, str) else _json(item)
    raise ValueError(f"{where}{shown} is not one of the options: {choices}")


def _listed(labels: list[str]) -> str:
    return ", ".join(f"{number}) {label}" for number, label in enumerate(labels, start=1))


def _choices_example(labels: list[str]) -> str:
    return shlex.quote(_json(labels[:2]))


def quoted(text: str) -> str:
    """A short quote of what the person sent, for an error message."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def quorum_progress(approved: int, quorum: int, waiting: Sequence[str]) -> str:
    """How far a quorum approval has come: ``1 of 2 approvals — waiting for bob, carol``
    (the page's card says it alike)."""
    line = f"{approved} of {quorum} approval{'' if quorum == 1 else 's'}"
    return f"{line} — waiting for {', '.join(waiting)}" if waiting else line

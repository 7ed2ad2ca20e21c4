"""What a call of ``AskUserQuestion`` must hold beyond its JSON Schema: a question to ask,
and options a person can tell apart.

The schema cannot say "``question`` or ``questions``" without a top-level ``anyOf``, which
some model providers refuse in a tool's parameters; and ``uniqueItems`` on a list of option
objects tells ``{"label": "A"}`` from ``{"label": "A", "description": "..."}``. So every door
that checks a model's call against the tool's schema (a channel's checks, a BEFORE_TOOL_USE
rewrite, the MCP server) checks these rules after it, with :func:`question_problem`.

The rules hold for a tool named ``AskUserQuestion`` whose schema declares ``question`` or
``questions`` (the standard definition, the spec's, Claude Code's): a tool of that name with
arguments of its own is left to its schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roomkit.models.kinds import option_labels

__all__ = ["ASK_TOOL", "question_problem"]

ASK_TOOL = "AskUserQuestion"


def question_problem(
    name: str, parameters: Mapping[str, Any], arguments: Mapping[str, Any]
) -> str | None:
    """What keeps the call ``name(arguments)``, valid against ``parameters``, from making a
    question a person can answer, worded for the model; ``None`` when nothing does.

    ``AskUserQuestion`` needs a ``question``, or ``questions`` with at least one question;
    within one question, no two options share a label.
    """
    if name != ASK_TOOL:
        return None
    declared = parameters.get("properties")
    if not isinstance(declared, Mapping):
        return None
    takes_one, takes_many = "question" in declared, "questions" in declared
    if not (takes_one or takes_many):
        return None
    questions = arguments.get("questions")
    many = questions if isinstance(questions, list) else []
    if not isinstance(arguments.get("question"), str) and not many:
        return _no_question(takes_one, takes_many)
    repeated = _repeated_label(arguments.get("options"))
    if repeated is not None:
        return _twice("options", repeated)
    for index, item in enumerate(many):
        repeated = _repeated_label(item.get("options") if isinstance(item, Mapping) else None)
        if repeated is not None:
            return _twice(f"questions[{index}].options", repeated)
    return None


def _no_question(takes_one: bool, takes_many: bool) -> str:
    if takes_one and takes_many:
        return (
            "missing required argument 'question' or 'questions': send the question to ask "
            "as 'question', or a list of at least one question as 'questions'"
        )
    if takes_one:
        return "missing required argument 'question': send the question to ask"
    return "missing required argument 'questions': send a list of at least one question"


def _repeated_label(options: object) -> str | None:
    """The first label given twice among ``options``, or ``None``."""
    labels = option_labels(options)
    if labels is None or len(labels) < 2:
        return None
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            return label
        seen.add(label)
    return None


def _twice(where: str, label: str) -> str:
    shown = label if len(label) <= 60 else label[:57] + "..."
    return (
        f"argument {where!r}: the label {shown!r} is given twice; give each option a label "
        "of its own, so the person and the answer can tell them apart"
    )

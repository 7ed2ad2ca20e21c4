"""The standard human-input tools: ``AskUserQuestion`` and ``ConfirmAction``.

Their JSON Schemas cover every question shape the desk shows, and the answer comes back in
the shape the desk records it:

- ``{"question": "..."}`` (the one required field): the answer is the text typed;
- with ``options``: the chosen label; with ``"multiSelect": true`` too,
  ``{"answer": ["label", ...]}``;
- ``{"questions": [...]}`` (each with options):
  ``{"answers": [{"question": "...", "answer": "label" or ["label", ...]}, ...]}``;
- ``ConfirmAction``: ``{"confirmed": true}`` or ``{"confirmed": false, "reason": "..."}``.

Hand them to a model as ``AITool(**ASK_USER_QUESTION)``, or serve them all at once with
:data:`HUMAN_INPUT_TOOLS`.

The schemas stay free of a top-level ``anyOf``, which some model providers refuse: what
they cannot say (``question`` or ``questions`` must be there; one question's options have
labels of their own) every door checks after the schema, and refuses with what to send.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ASK_USER_QUESTION", "CONFIRM_ACTION", "HUMAN_INPUT_TOOLS"]

_OPTION = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "minLength": 1, "description": "The choice, as shown."},
        "description": {"type": "string", "description": "What the choice means."},
    },
    "required": ["label"],
    "additionalProperties": False,
}

ASK_USER_QUESTION: dict[str, Any] = {
    "name": "AskUserQuestion",
    "description": (
        "Ask the user and wait for the answer. Either one `question` (free text, or with "
        "`options` to pick from, several at once when `multiSelect` is true), or a list of "
        "`questions`, each with options, answered together."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "description": "One question."},
            "options": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 2,
                "maxItems": 10,
                "uniqueItems": True,
                "description": "Choices for `question`; the answer is one of them.",
            },
            "multiSelect": {
                "type": "boolean",
                "description": "With `options`: the user may pick several.",
            },
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": 4,
                "description": "Several questions with options, answered in one go.",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "minLength": 1},
                        "header": {
                            "type": "string",
                            "maxLength": 30,
                            "description": "A short label for the question.",
                        },
                        "options": {
                            "type": "array",
                            "items": _OPTION,
                            "minItems": 2,
                            "maxItems": 6,
                        },
                        "multiSelect": {"type": "boolean"},
                    },
                    "required": ["question", "options", "multiSelect"],
                    "additionalProperties": False,
                },
            },
        },
        "minProperties": 1,
        "additionalProperties": False,
    },
}

CONFIRM_ACTION: dict[str, Any] = {
    "name": "ConfirmAction",
    "description": (
        "Ask the user to confirm an action before doing it; the answer says whether they "
        'confirmed: {"confirmed": true} or {"confirmed": false, "reason": "..."}.'
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "minLength": 1,
                "description": "What will be done, in one sentence.",
            },
            "details": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Facts to check before confirming, as label -> value.",
            },
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}

HUMAN_INPUT_TOOLS: tuple[dict[str, Any], ...] = (ASK_USER_QUESTION, CONFIRM_ACTION)
"""Both tools, in the order a server lists them."""

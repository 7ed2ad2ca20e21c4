"""Answers typed by a Pydantic model: the model's JSON Schema in, a validated instance out.

``create(..., answer_schema=Model)`` (and ``HumanInputToolHandler(answer_schemas=...)``)
take a Pydantic model class where they take a JSON Schema: the request keeps
``Model.model_json_schema()``, which is what the desk, the wire and every process check an
answer against (a request holds JSON, never a class). ``aresolve`` takes an instance of a
model as the answer (its JSON); ``wait_for(pending_id, Model)`` waits as ``wait`` does and
returns the answer validated into ``Model``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from roomkit.core.exceptions import InvalidAnswerError
from roomkit.models.decisions import Decision
from roomkit.tools.approvals import read_decision
from roomkit.tools.human_input._checks import check_text

__all__ = ["AnswerSchema", "T", "answer_text", "schema_of", "typed_answer"]

AnswerSchema = dict[str, Any] | type[BaseModel]
"""A JSON Schema, or a Pydantic model class standing for its own."""

T = TypeVar("T")


def schema_of(schema: object) -> Any:
    """The JSON Schema ``schema`` stands for: a model class's, or ``schema`` as given (which
    the caller checks)."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return schema


def answer_text(answer: object) -> str:
    """The answer given (to ``resolve`` or ``aresolve``) as the text a request records: a
    model instance as its JSON, a typed decision as its JSON text, text as it is.

    Raises:
        TypeError: ``answer`` is neither text nor a model instance.
        InvalidAnswerError: it holds text UTF-8 cannot encode (a lone surrogate).
    """
    if isinstance(answer, BaseModel):
        answer = answer.model_dump_json()
    check_text(
        "result", answer, invalid=InvalidAnswerError, hint="send structured answers as JSON text"
    )
    return str(answer)  # a typed decision, a str, as its plain text


def typed_answer(pending_id: str, text: str, model: type[T]) -> T:
    """The answer ``text`` of the request ``pending_id`` as ``model``: a Pydantic model
    class, or a :class:`~roomkit.models.decisions.Decision` class (an approval's decision).

    Raises:
        TypeError: ``model`` is neither.
        InvalidAnswerError: the answer does not validate as ``model``. A request created
            with ``answer_schema=model`` never fails so (its answer was checked against the
            model's schema before it was recorded), unless the model validates more than
            its schema says; one created with another schema, or none, may: the answer
            stands, recorded, and only this reading of it fails.
    """
    if isinstance(model, type) and issubclass(model, Decision):
        decision = read_decision(text)
        if not isinstance(decision, model):
            raise InvalidAnswerError(
                f"The answer of pending request {pending_id} is {decision!r}, not a "
                f"{model.__name__}"
            )
        return decision
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(
            f"wait_for() takes a Pydantic model class (or a Decision class), got {model!r}"
        )
    try:
        return model.model_validate_json(text)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "the answer"
        raise InvalidAnswerError(
            f"The answer of pending request {pending_id} is not a {model.__name__} "
            f"({where}: {problem['msg']}); it stands as recorded. Create the request with "
            f"answer_schema={model.__name__} so that answers are checked against it before "
            "they are accepted"
        ) from None

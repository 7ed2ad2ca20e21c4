"""Answers typed by a Pydantic model: the model's JSON Schema in, a validated instance out.

``create(..., answer_schema=Model)`` (and ``HumanInputToolHandler(answer_schemas=...)``)
take a Pydantic model class where they take a JSON Schema: the request keeps
``Model.model_json_schema()``, which is what the desk, the wire and every process check an
answer against (a request holds JSON, never a class). ``aresolve`` takes an instance of a
model as the answer (its JSON); ``wait_for(pending_id, Model)`` waits as ``wait`` does and
returns the answer validated into ``Model``.

Whatever stands for an answer schema is checked once, where it is given
(:func:`answer_schema_of`): ``create`` and ``create_detached``, the tool handler's
``answer_schemas``, and an adapter's question (a LangGraph interrupt's ``response_schema``),
so that a schema no answer could be checked against is refused before anything is stored.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError

from roomkit.core.exceptions import InvalidAnswerError
from roomkit.models.decisions import Decision
from roomkit.models.shown import shown
from roomkit.tools.approvals import read_decision
from roomkit.tools.human_input._checks import check_schema, check_text

__all__ = ["AnswerSchema", "T", "answer_schema_of", "answer_text", "typed_answer"]

AnswerSchema = dict[str, Any] | type[BaseModel]
"""A JSON Schema, or a Pydantic model class standing for its own."""

T = TypeVar("T")


def answer_schema_of(
    schema: object, *, name: str = "answer_schema", types: bool = False
) -> dict[str, Any]:
    """The JSON Schema ``schema`` stands for, checked: ``schema`` itself when it is a dict, a
    Pydantic model class's ``model_json_schema()``; with ``types`` (as a LangGraph
    ``response_schema`` may be), the JSON Schema pydantic gives any Python type.

    ``name`` is the argument as the caller gave it, which the messages start with.

    Raises:
        TypeError: ``schema`` is none of those; the message says what to pass.
        ValueError: the JSON Schema is no valid one, or holds a ``$ref`` that resolves to
            nothing in it.
    """
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        schema = _model_schema(schema, name)
    elif types and not isinstance(schema, dict):
        schema = _type_schema(schema, name)
    check_schema(schema, name)
    assert isinstance(schema, dict)
    return schema


def _model_schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The JSON Schema of ``model``.

    Raises:
        TypeError: a field of it has a type JSON Schema cannot describe (a callable, say).
    """
    try:
        return model.model_json_schema()
    except PydanticUserError as error:
        raise TypeError(
            f"{name} {model.__name__} has no JSON Schema ({_first_sentence(error)}): give its "
            "fields types JSON can carry, or pass a JSON Schema dict"
        ) from None


def _type_schema(schema: object, name: str) -> dict[str, Any]:
    """The JSON Schema pydantic gives the Python type ``schema``.

    Raises:
        TypeError: pydantic describes no such type (``5``, a class it does not know).
    """
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(schema)  # type: ignore[arg-type]
        return adapter.json_schema()
    except PydanticUserError as error:
        raise TypeError(
            f"{name} must be a JSON Schema dict or a Python type pydantic can describe (a "
            f"BaseModel, TypedDict or dataclass, str, list[str], ...), got {shown(schema)} "
            f"({_first_sentence(error)})"
        ) from None


def _first_sentence(error: Exception) -> str:
    """The first sentence of pydantic's ``error``: what it could not describe, without its
    advice on configuring pydantic."""
    return str(error).splitlines()[0].split(". ")[0].rstrip(".")


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
        decision = read_decision(text, recorded=True)
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

"""LangGraph interrupts as pauses, and verdicts as the values that resume them.

Three shapes of interrupt value are read: langchain's per-call ``ToolApprovalRequest``
(``{"type": "tool_approval", "tool_call_id", "name", "args", "description"}``, its allowed
decisions and the tool's argument schema in the interrupt's ``response_schema``); langchain's
batched ``HITLRequest`` (``action_requests`` with ``review_configs``, answered by position
with ``{"decisions": [...]}``); anything else is a question, shown as its text or its fields,
answered with the person's JSON as the interrupt's ``response_schema`` has it. The graph's
tool nodes give the tools' argument schemas and, with its ``HumanInTheLoopMiddleware``, the
names of the tools it may hold.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from roomkit.adapters._keys import pause_key
from roomkit.adapters._pauses import Pause, Verdict, question_arguments
from roomkit.adapters._shapes import call_arguments
from roomkit.core.exceptions import HumanInputRejectedError, HumanInputTimeoutError
from roomkit.models.shown import shown
from roomkit.tools.human_input.checks import answer_schema_of

__all__ = [
    "QUESTION_NAME",
    "decision_value",
    "pauses_of",
    "resume_value",
    "tool_names",
    "tool_schemas",
]

QUESTION_NAME = "langgraph.interrupt"
"""The name a question of a graph is shown under."""

_ALL = ("approve", "edit", "reject", "respond")


def tool_schemas(graph: Any) -> dict[str, dict[str, Any]]:
    """The argument schemas of the tools that the tool nodes of ``graph`` (and of its
    subgraphs) run, by tool name: a batched request carries none, and an edit must match
    its tool's, as the model's calls do (the tool's ``tool_call_schema``)."""
    graphs = [graph, *(sub for _, sub in _subgraphs(graph))]
    found: dict[str, dict[str, Any]] = {}
    for each in graphs:
        for node in (getattr(each, "nodes", None) or {}).values():
            tools = getattr(getattr(node, "bound", None), "tools_by_name", None)
            if not isinstance(tools, Mapping):
                continue
            for name, tool in tools.items():
                schema = getattr(tool, "tool_call_schema", None)
                if isinstance(schema, type) and issubclass(schema, BaseModel):
                    found.setdefault(str(name), schema.model_json_schema())
                elif isinstance(schema, dict):
                    found.setdefault(str(name), dict(schema))
    return found


def tool_names(graph: Any) -> frozenset[str] | None:
    """The names of the tools whose calls ``graph`` (or a subgraph) may hold for approval:
    those its tool nodes run and its ``HumanInTheLoopMiddleware`` interrupts on; ``None``
    when it holds no such middleware, as an approval is then some node's own interrupt, of
    a name no graph tells."""
    # A graph holding the middleware was built with its module imported.
    found = sys.modules.get("langchain.agents.middleware.human_in_the_loop")
    middleware = getattr(found, "HumanInTheLoopMiddleware", None)
    if not isinstance(middleware, type):
        return None
    names: set[str] = set()
    held = False
    for each in [graph, *(sub for _, sub in _subgraphs(graph))]:
        for node in (getattr(each, "nodes", None) or {}).values():
            bound = getattr(node, "bound", None)
            tools = getattr(bound, "tools_by_name", None)
            if isinstance(tools, Mapping):
                names.update(str(name) for name in tools)
            # The middleware's after_model node runs its bound method.
            owner = getattr(getattr(bound, "func", None), "__self__", None)
            if isinstance(owner, middleware):
                held = True
                names.update(str(name) for name in getattr(owner, "interrupt_on", {}))
    return frozenset(names) if held else None


def _subgraphs(graph: Any) -> list[tuple[str, Any]]:
    """The subgraphs of ``graph``, at every depth (none when it tells none)."""
    listing = getattr(graph, "get_subgraphs", None)
    return list(listing(recurse=True)) if callable(listing) else []


def pauses_of(
    thread_id: str, interrupt: Any, schemas: Mapping[str, dict[str, Any]] | None = None
) -> list[Pause]:
    """The pauses one interrupt of ``thread_id`` holds (several for a batched request);
    ``schemas`` (:func:`tool_schemas`) gives a tool's argument schema where the interrupt
    gives none.

    Each is keyed ``lg:{thread_id}:{interrupt id}`` (then ``:{position}`` for each call of a
    batched request), its parts escaped (:func:`~roomkit.adapters._keys.pause_key`): the
    thread id is the user's, and may hold ``:``.
    """
    schemas = schemas or {}
    value, schema = interrupt.value, interrupt.response_schema
    key = pause_key("lg", thread_id, str(interrupt.id))
    if isinstance(value, dict) and value.get("type") == "tool_approval":
        name, args, description = _held(thread_id, interrupt, value, "the tool_approval value")
        allowed, tool_schema = _per_call(schema)
        return [
            Pause(
                key,
                "approval",
                name,
                args,
                tool_call_id=str(value.get("tool_call_id", "")),
                tool_schema=tool_schema or schemas.get(name),
                decisions=_known(name, allowed),
                description=description,
            )
        ]
    if isinstance(value, dict) and isinstance(value.get("action_requests"), list):
        configs = _configs(thread_id, interrupt, value.get("review_configs"))
        pauses = []
        for position, action in enumerate(value["action_requests"]):
            what = f"action_requests[{position}]"
            name, args, description = _held(thread_id, interrupt, action, what)
            allowed = configs.get(name, {}).get("allowed_decisions")
            pauses.append(
                Pause(
                    pause_key("lg", thread_id, str(interrupt.id), str(position)),
                    "approval",
                    name,
                    args,
                    tool_schema=schemas.get(name),
                    decisions=_known(name, allowed),
                    description=description,
                )
            )
        return pauses
    answer_schema = None if schema is None else _answer_schema(thread_id, interrupt, schema)
    return [
        Pause(
            key, "question", QUESTION_NAME, question_arguments(value), answer_schema=answer_schema
        )
    ]


def _held(
    thread_id: str, interrupt: Any, action: object, what: str
) -> tuple[str, dict[str, Any], str | None]:
    """The tool name, arguments and description of a held call as langchain gives one (its
    arguments as JSON text when they hold a number JSON cannot carry, which langchain's
    parser reads from a model's JSON).

    Raises:
        ValueError: ``action`` is not of that shape (a hand-made interrupt's, say); nobody
            is asked, and the message says where the thread stays.
    """
    if isinstance(action, dict):
        name, args, description = action.get("name"), action.get("args"), action.get("description")
        args = {} if args is None else args
        if (
            isinstance(name, str)
            and name
            and isinstance(args, dict)
            and (description is None or isinstance(description, str))
        ):
            return name, call_arguments(dict(args), args), description or None
    raise ValueError(
        f"{what} of interrupt {shown(interrupt.id)} on thread {shown(thread_id)} is no held call "
        "roomkit can ask about: it takes a dict with a non-empty str name, the call's arguments as "
        f"an object under args and a str description or none, got {shown(action)}; "
        f"{_STAYS}"
    )


def _configs(thread_id: str, interrupt: Any, configs: object) -> dict[Any, dict[str, Any]]:
    """A batched request's review configs, by the name of the tool each is for.

    Raises:
        ValueError: they are not a list of dicts; nobody is asked.
    """
    if configs is None:
        return {}
    if isinstance(configs, list) and all(isinstance(config, dict) for config in configs):
        return {config.get("action_name"): config for config in configs}
    raise ValueError(
        f"review_configs of interrupt {shown(interrupt.id)} on thread {shown(thread_id)} are no "
        "list of dicts ({'action_name': ..., 'allowed_decisions': [...]}), got "
        f"{shown(configs)}; "
        f"{_STAYS}"
    )


def resume_value(
    thread: str, interrupt: Any, pauses: Sequence[Pause], verdicts: Sequence[Verdict]
) -> Any:
    """What resumes ``interrupt`` of ``thread`` once its pauses have ``verdicts``.

    A question nobody answered in time resumes with the ladder's default answer, when the
    ladder has one.

    Raises:
        HumanInputTimeoutError: a question nobody answered in time, with no default (a
            graph's question has no refusal to carry; the thread stays paused).
        HumanInputRejectedError: a question a person refused to answer.
        Either message names the thread and how to go on.
    """
    value = interrupt.value
    if isinstance(value, dict) and isinstance(value.get("action_requests"), list):
        return {"decisions": [decision_value(p, v) for p, v in zip(pauses, verdicts, strict=True)]}
    (pause,), (verdict,) = pauses, verdicts
    if pause.kind == "approval":
        return decision_value(pause, verdict)
    # The graph reads an answer only: the thread stays where it stopped until its code
    # resumes it some other way.
    stays = (
        f"thread {shown(thread)} stays paused at interrupt {shown(interrupt.id)}: resume it with "
        "Command(resume=...) yourself, or run the thread anew"
    )
    if verdict.kind == "expired":
        raise HumanInputTimeoutError(
            f"nobody answered the graph's question in time ({verdict.text}); {stays}"
        )
    if verdict.kind == "refused":
        reason = verdict.text or "no reason given"
        raise HumanInputRejectedError(f"the graph's question was refused ({reason}); {stays}")
    return verdict.answer


def decision_value(pause: Pause, verdict: Verdict) -> dict[str, Any]:
    """The langchain decision of an approval's verdict (an expiry is a rejection saying so)."""
    if verdict.kind == "approve":
        return {"type": "approve"}
    if verdict.kind == "edit":
        return {
            "type": "edit",
            "edited_action": {"name": pause.tool_name, "args": verdict.arguments},
        }
    if verdict.kind == "respond":
        return {"type": "respond", "message": verdict.text}
    return {"type": "reject", "message": verdict.text} if verdict.text else {"type": "reject"}


_STAYS = (
    "nobody was asked, and the thread stays stopped at this interrupt (Command(resume=...) "
    "answers it outside roomkit)"
)


def _known(name: str, allowed: object) -> tuple[str, ...] | None:
    """The decisions named in ``allowed`` that roomkit takes (``None``: all of them).

    Raises:
        ValueError: ``allowed`` leaves out ``reject``. A roomkit approval can always end
            refused (a person's rejection, an expiry, a withdrawal), which the graph would
            not take; the approval of ``name`` is not asked.
    """
    if not isinstance(allowed, list):
        return None
    if "reject" not in allowed:
        raise ValueError(
            f"the graph's approval of {shown(name)} allows {shown(allowed)} without "
            '"reject", but a roomkit approval can always end refused (by a person, an expiry '
            'or a withdrawal), which LangGraph would not take: add "reject" to its '
            "allowed_decisions in HumanInTheLoopMiddleware(interrupt_on=...); nobody was "
            "asked, and the thread stays stopped at this interrupt (Command(resume=...) "
            "answers it outside roomkit)"
        )
    return tuple(kind for kind in _ALL if kind in allowed)


def _per_call(schema: object) -> tuple[list[str] | None, dict[str, Any] | None]:
    """The allowed decisions and the edit's argument schema of a per-call approval."""
    if not isinstance(schema, dict):
        return None, None
    defs = schema.get("$defs") or {}
    branches = [_resolve(defs, branch) for branch in schema.get("oneOf") or [schema]]
    allowed: list[str] = []
    tool_schema: dict[str, Any] | None = None
    for branch in branches:
        kind = (branch.get("properties") or {}).get("type", {}).get("const")
        if isinstance(kind, str):
            allowed.append(kind)
        if kind == "edit":
            action = _resolve(defs, branch["properties"].get("edited_action") or {})
            args = _resolve(defs, (action.get("properties") or {}).get("args") or {})
            tool_schema = {**args, "$defs": defs} if defs else dict(args)
    return allowed or None, tool_schema


def _resolve(defs: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node``, or the definition its local ``$ref`` names."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(found, dict):
            return found
    return node


def _answer_schema(thread_id: str, interrupt: Any, schema: object) -> dict[str, Any]:
    """A question's ``response_schema`` as the JSON Schema its answer is checked against (a
    Python type's own: LangGraph takes types too).

    Raises:
        TypeError: it is neither a dict nor a type pydantic describes; nobody is asked.
        ValueError: it is no valid JSON Schema, or holds a ``$ref`` that resolves to nothing
            in it; nobody is asked.
    """
    name = f"the response_schema of interrupt {shown(interrupt.id)} on thread {shown(thread_id)}"
    try:
        return answer_schema_of(schema, name=name, types=True)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{error}; {_STAYS}") from None

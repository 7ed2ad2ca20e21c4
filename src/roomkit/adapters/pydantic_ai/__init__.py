"""Pydantic AI's deferred tool calls answered through roomkit.

Needs the ``pydantic-ai`` extra
(``pip install -e '.[pydantic-ai]'`` in roomkit's checkout). A tool that
needs approval becomes a roomkit approval offering approve, edit and reject (a Pydantic AI
approval has no slot for a response); a call deferred as a ``'question'`` becomes a roomkit
question. Pass :func:`deferred_handler` to ``HandleDeferredToolCalls(handler=...)``: with
``wait=True`` the run waits in this process while people answer; with ``wait=False`` the
run ends with its ``DeferredToolRequests`` (each call's ``metadata`` names its request), and
:func:`results_for` builds the ``DeferredToolResults`` of the next run once they are settled
(or :func:`resume` runs the next run with them, once, taken over when a resumer dies).
Who answered goes in ``answered_by``, as the handler verified them. Calls deferred for
another reason (``'external'``) are left to the application.
"""

from __future__ import annotations

from roomkit._extras import requires_extra
from roomkit.models.shown import shown

with requires_extra("roomkit.adapters.pydantic_ai", "pydantic-ai"):
    from pydantic_ai.tools import (
        DeferredToolRequests,
        DeferredToolResults,
        ToolApproved,
        ToolDenied,
    )

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Unpack

from roomkit.adapters._asking import all_at_once, asking, one_stop
from roomkit.adapters._keys import call_id_of, pause_key
from roomkit.adapters._pauses import Asker, Pause, Verdict
from roomkit.adapters._shapes import call_arguments
from roomkit.adapters._unmatched import warn_unmatched
from roomkit.adapters.options import AskOptions
from roomkit.adapters.pydantic_ai._handed import check_unhanded, hand, take
from roomkit.adapters.pydantic_ai._resume_checks import check_given, check_tools
from roomkit.adapters.pydantic_ai._tools import tool_names
from roomkit.core.exceptions import KeyConflictError
from roomkit.tools import texts
from roomkit.tools.human_input import HumanInputHandler

__all__ = [
    "CHANNEL",
    "METADATA_KEY",
    "ResumeOptions",
    "deferred_handler",
    "results_for",
    "resume",
]

CHANNEL = "pydantic-ai"
"""The channel id a run's requests are raised under."""
METADATA_KEY = "roomkit"
"""The key of a deferred call's ``metadata`` that names its request (``pending_id``, ``key``)."""

Handler = Callable[[Any, DeferredToolRequests], Awaitable[DeferredToolResults | None]]


class ResumeOptions(AskOptions, total=False):
    """:class:`~roomkit.adapters.options.AskOptions`, and the keywords of ``agent.run``
    that :func:`resume` passes on (any other is passed on too, for ``agent.run`` to judge;
    ``timeout`` is the person's deadline, not the run's)."""

    deps: Any
    """The run's dependencies."""
    model: Any
    """The model to run with instead of the agent's."""
    model_settings: Any
    """The model's settings for this run."""
    usage_limits: Any
    """The run's ``UsageLimits``."""
    usage: Any
    """The ``RunUsage`` to go on counting from."""
    instructions: Any
    """Instructions added for this run."""
    output_type: Any
    """The output type of this run instead of the agent's."""
    metadata: Any
    """Metadata kept with the run."""
    toolsets: Any
    """Toolsets added for this run."""
    event_stream_handler: Any
    """Receives the run's events as they stream."""
    deferred_tool_results: Any
    """The ``DeferredToolResults`` of the calls the run deferred that roomkit does not ask
    about (``'external'``), joined to those roomkit builds; it may name none of roomkit's."""


_DECISIONS = ("approve", "edit", "reject")

_CHECKED_RUNS = 1024
"""How many runs a deferred handler remembers having checked its approvals against (then it
starts over): a run's tools are checked once, on its first deferred calls."""


def deferred_handler(
    handler: HumanInputHandler,
    *,
    wait: bool = True,
    **options: Unpack[AskOptions],
) -> Handler:
    """The handler of ``HandleDeferredToolCalls(handler=...)`` that asks people through roomkit.

    Args:
        handler: the human-input handler whose people answer.
        wait: wait in this process for the answers (``True``), or open the requests and let
            the run end with its ``DeferredToolRequests`` (``False``).
        options: who is asked and how (:class:`~roomkit.adapters.options.AskOptions`:
            ``approvals``, ``timeout``, ``actor``, ``room``, ``ladder``; the model reads a
            question's ladder default marked as a default).

    The run's requests are keyed by its ``run_id`` and each call's id: a run started again
    under its ``run_id`` re-attaches to those it opened. A decision is taken by one run
    (:mod:`roomkit.adapters.pydantic_ai._handed`): the run raises ``KeyConflictError`` when
    a call of it meets a request whose decision another run under the same ``run_id`` took.

    Raises:
        TypeError: an option is not one of ``AskOptions``, or ``wait`` is no bool (a
            string such as ``"no"`` would be taken as true, and the run would wait).
    """
    if not isinstance(wait, bool):
        raise TypeError(
            f"pydantic_ai.deferred_handler(): wait is True or False, got {shown(wait)}: "
            "pass wait=False to end the run with its requests"
        )
    asker, _ = asking(handler, CHANNEL, options, where="pydantic_ai.deferred_handler()")
    checked: set[str] = set()  # the runs whose tools were held up against the approvals

    async def handle(ctx: Any, requests: DeferredToolRequests) -> DeferredToolResults | None:
        run = str(getattr(ctx, "run_id", None) or "")
        if asker.rules and run not in checked:
            if len(checked) >= _CHECKED_RUNS:
                checked.clear()
            checked.add(run)
            warn_unmatched(asker.rules, tool_names(ctx), where="pydantic_ai.deferred_handler()")
        pauses = _pauses(ctx, requests, run)
        if wait:
            verdicts = await all_at_once([_ask_once(asker, pause, run) for _, pause in pauses])
            return _results(
                requests, [(p, pause, v) for (p, pause), v in zip(pauses, verdicts, strict=True)]
            )
        # A call its rule leaves to no one (``when=``) runs now, as when waiting; the others
        # end the run, each naming its request.
        exempt: list[tuple[Any, Pause, Verdict]] = []
        async with one_stop(handler) as opened:
            for part, pause in pauses:
                if pause.kind == "approval" and not await asker.needs_person(pause):
                    exempt.append((part, pause, Verdict("approve")))
                    continue
                request = await asker.open(pause)
                opened.append(request)
                await check_unhanded(handler, request, run)
                requests.metadata.setdefault(part.tool_call_id, {})[METADATA_KEY] = {
                    "pending_id": request.pending_id,
                    "key": pause.key,
                }
        return _results(requests, exempt) if exempt else None

    return handle


async def results_for(
    requests: DeferredToolRequests,
    *,
    handler: HumanInputHandler,
    **options: Unpack[AskOptions],
) -> DeferredToolResults | None:
    """The ``DeferredToolResults`` of ``requests`` once their roomkit requests are settled.

    Waits for the settles (a person answering in any process sharing the store, or the
    deadline). One caller gets the results, once for good: keep them until the next run
    has taken them; another caller, at the same time or later, gets ``None`` (nothing to
    do: the run is continued). :func:`resume` runs the next run itself, and hands the
    results out again when a resumer dies before its run is done. Pass the same options
    as :func:`deferred_handler`.

    Raises:
        ValueError: ``requests`` holds no call that :func:`deferred_handler` opened.
        KeyConflictError: its metadata names a request made for another call (a client
            changed it); nothing is handed out.
        TypeError: an option is not one of ``AskOptions``, or ``requests`` is no
            ``DeferredToolRequests``.
    """
    asker, _ = asking(handler, CHANNEL, options, where="pydantic_ai.results_for()")
    opened = _marked(requests)
    claim, decided = await _decided(asker, opened)
    # Handed out once for good: the caller's next run is the resume.
    if not await asker.resumes.claim(claim):
        return None
    await hand(handler, [pending_id for *_, pending_id in opened])
    return _results(requests, decided)


async def resume(
    agent: Any,
    requests: DeferredToolRequests,
    message_history: Sequence[Any],
    *,
    handler: HumanInputHandler,
    **options: Unpack[ResumeOptions],
) -> Any:
    """Continue the run that ended with ``requests`` once they are settled, once.

    Waits for the settles as :func:`results_for` does, then runs
    ``agent.run(message_history=..., deferred_tool_results=...)`` and returns its result.
    A resumer holds the resume while it runs (a second, at the same time or later, gets
    ``None``); one that dies before its run is done lets another take it over once its
    lease of five minutes, on the store's clock, has lapsed.

    Args:
        agent: the agent of the run.
        requests: the run's ``DeferredToolRequests`` (its output).
        message_history: the run's messages (``result.all_messages()``).
        handler: the human-input handler whose people answer.
        options: the :class:`~roomkit.adapters.options.AskOptions` that
            :func:`deferred_handler` took; the others are passed to ``agent.run``
            (``deps``, ``usage_limits``, ...).

    Returns:
        The next run's result, or ``None`` when another resumer continued the run.

    Raises:
        ValueError: ``requests`` holds no call that :func:`deferred_handler` opened, or
            ``agent`` has not the tool of a call a person approved (named; nothing is run,
            and the decisions stay); or a call roomkit does not ask about (``'external'``)
            has no result in ``deferred_tool_results``, or that names a call roomkit asks
            about (said before waiting).
        KeyConflictError: as :func:`results_for`.
        TypeError: ``requests`` is no ``DeferredToolRequests``, or
            ``deferred_tool_results`` no ``DeferredToolResults``.
    """
    asker, passed = asking(handler, CHANNEL, options, where="pydantic_ai.resume()", passes_on=True)
    given = passed.pop("deferred_tool_results", None)
    opened = _marked(requests)
    check_given(requests, opened, given)
    claim, decided = await _decided(asker, opened)
    check_tools(agent, passed.get("toolsets"), decided)
    results = _results(requests, decided)
    if given is not None:
        results.update(given)  # the application's calls: none of roomkit's (checked)

    async def go_on() -> Any:
        await hand(handler, [pending_id for *_, pending_id in opened])
        return await agent.run(
            message_history=list(message_history), deferred_tool_results=results, **passed
        )

    return await asker.resumes.resume_once(claim, go_on)


async def _ask_once(asker: Asker, pause: Pause, run: str) -> Verdict:
    """Ask about ``pause`` of the run ``run`` and wait for the verdict, which the run takes:
    a request whose verdict a run took already is refused."""
    if not await asker.needs_person(pause):
        return Verdict("approve")
    request = await asker.open(pause)
    await check_unhanded(asker.handler, request, run)
    verdict = await asker.await_id(request.pending_id, pause)
    await take(asker.handler, request, run)
    return verdict


def _marked(requests: DeferredToolRequests) -> list[tuple[Any, Pause, str]]:
    """The calls of ``requests`` whose metadata names their request: each with its pause
    and its request's pending id.

    Raises:
        TypeError: ``requests`` is no ``DeferredToolRequests``.
        ValueError: ``requests`` holds no call that :func:`deferred_handler` opened.
    """
    if not isinstance(requests, DeferredToolRequests):
        raise TypeError(
            "requests must be the DeferredToolRequests a run ended with (result.output of a "
            "run whose handler is deferred_handler(handler, wait=False), its output_type "
            f"taking DeferredToolRequests), got {type(requests).__name__}"
        )
    opened = []
    for part in [*requests.approvals, *requests.calls]:
        # The metadata may have travelled through a client: an entry of another shape names
        # no request.
        found = requests.metadata.get(part.tool_call_id)
        mark = found.get(METADATA_KEY) if isinstance(found, dict) else None
        if isinstance(mark, dict) and isinstance(mark.get("pending_id"), str):
            pause = _pause(None, requests, part, str(mark.get("key", "")))
            if pause is not None:
                opened.append((part, pause, mark["pending_id"]))
    if not opened:
        raise ValueError(
            "these DeferredToolRequests hold no call roomkit asked about: end the run with "
            "deferred_handler(handler, wait=False) so that each call's metadata names its request"
        )
    return opened


async def _decided(
    asker: Asker, opened: list[tuple[Any, Pause, str]]
) -> tuple[str, list[tuple[Any, Pause, Verdict]]]:
    """The claim naming the resume of the calls ``opened`` (:func:`_marked`), and each
    call's verdict once settled.

    Raises:
        KeyConflictError: a call's request was made for another call.
    """
    for part, _, pending_id in opened:
        await _check_call(asker.handler, pending_id, part)
    # Waits that own no request: a caller cut while people decide withdraws nothing.
    verdicts = await all_at_once([asker.watch(pid, pause) for _, pause, pid in opened])
    # Claimed by the requests themselves, which the store vouches for, not by the keys the
    # metadata names: a key changed there would make a claim of its own.
    pending_ids = sorted(pid for _, _, pid in opened)
    claim = "pa:" + json.dumps(pending_ids, separators=(",", ":"))
    return claim, [(p, pause, v) for (p, pause, _), v in zip(opened, verdicts, strict=True)]


async def _check_call(handler: HumanInputHandler, pending_id: str, part: Any) -> None:
    """Raise unless the request ``pending_id`` (if the store holds it) was made for the
    call ``part``: another call's, of the same tool and arguments, would lend it its
    decision.

    Raises:
        KeyConflictError: it was made for another call.
    """
    request = await handler.get_request(pending_id)
    if request is not None and request.tool_call_id != call_id_of(part.tool_call_id):
        raise KeyConflictError(
            f"request {pending_id} was made for the call {shown(request.tool_call_id)} of "
            f"{shown(request.tool_name)}, not for the call {shown(part.tool_call_id)} it is named "
            "for: "
            "its decision stands for its own call only; end the run again to ask about "
            "this one",
            request,
        )


def _pauses(ctx: Any, requests: DeferredToolRequests, run: str) -> list[tuple[Any, Pause]]:
    """The approvals and questions of ``requests``, as pauses of the run ``run``: each keyed
    by the run id and its tool call id, both escaped (a caller's ``run_id`` may hold ``:``,
    and so may a model's call id)."""
    found = []
    for part in [*requests.approvals, *requests.calls]:
        pause = _pause(ctx, requests, part, pause_key("pa", run, part.tool_call_id))
        if pause is not None:
            found.append((part, pause))
    return found


def _pause(ctx: Any, requests: DeferredToolRequests, part: Any, key: str) -> Pause | None:
    """The pause of one deferred call; ``None`` for an external call (not a person's)."""
    kind = requests.kind(part.tool_call_id)
    arguments = call_arguments(part.args_as_dict(), part.args)
    if kind == "approval":
        return Pause(
            key,
            "approval",
            part.tool_name,
            arguments,
            tool_call_id=part.tool_call_id,
            tool_schema=_tool_schema(ctx, part.tool_name),
            decisions=_DECISIONS,
        )
    if kind == "question":
        return Pause(key, "question", part.tool_name, arguments, tool_call_id=part.tool_call_id)
    return None


def _results(
    requests: DeferredToolRequests, decided: list[tuple[Any, Pause, Verdict]]
) -> DeferredToolResults:
    """The results of the calls ``decided``, with who answered each."""
    approved: dict[str, bool | ToolApproved | ToolDenied] = {}
    answers: dict[str, Any] = {}
    answered_by: dict[str, str] = {}
    for part, pause, verdict in decided:
        call_id = part.tool_call_id
        if verdict.by is not None:
            answered_by[call_id] = verdict.by
        if pause.kind == "question":
            answers[call_id] = _question_result(verdict)
        elif verdict.kind == "approve":
            approved[call_id] = ToolApproved()
        elif verdict.kind == "edit":
            approved[call_id] = ToolApproved(override_args=verdict.arguments)
        else:
            approved[call_id] = ToolDenied(verdict.text) if verdict.text else ToolDenied()
    return requests.build_results(approvals=approved, calls=answers, answered_by=answered_by)


def _question_result(verdict: Verdict) -> Any:
    """What the model reads of a question's verdict: the answer; a default or an expiry as
    its own text; a refusal said to be one, never its reason alone (which would read as the
    person's answer)."""
    if verdict.kind == "answer":
        return verdict.answer
    if verdict.kind == "refused":
        return texts.human_input_rejected(verdict.text)
    return verdict.text


def _tool_schema(ctx: Any, name: str) -> dict[str, Any] | None:
    """The JSON Schema of the tool ``name`` in the run (an edit must match it)."""
    tools = getattr(getattr(ctx, "tool_manager", None), "tools", None) or {}
    tool = tools.get(name)
    definition = getattr(tool, "tool_def", None)
    schema = getattr(definition, "parameters_json_schema", None)
    return dict(schema) if isinstance(schema, dict) else None

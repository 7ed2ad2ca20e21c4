"""The OpenAI Agents SDK's tool approvals answered through roomkit: inline (:func:`run`) or
durable (:func:`start`, then :func:`resume` once the requests are settled).

Needs the ``openai-agents`` extra
(``pip install -e '.[openai-agents]'`` in roomkit's checkout). Each
``ToolApprovalItem`` of a paused run becomes a roomkit approval keyed by the run's key and
the call id (each escaped, so that no two runs' keys meet), offering approve and reject
only (the SDK carries no edit and no response): a rejection's reason, or the expiry's own
text, is what the model reads. In durable mode the run's ``RunState`` is kept in roomkit's
store beside the requests (the SDK asks for the snapshot to stay on the server), so
:func:`resume` needs only the agent and the run's key. A run that a resume finishes keeps
its final output there too: :func:`final_output` reads it, in any process.
"""

from __future__ import annotations

from roomkit._extras import requires_extra

with requires_extra("roomkit.adapters.openai_agents", "openai-agents"):
    from agents import Agent, Runner, RunResult, RunState

import json
from typing import Any, Unpack

from pydantic_core import to_jsonable_python

from roomkit.adapters._asking import all_at_once, asking
from roomkit.adapters._keys import checked_name, pause_key
from roomkit.adapters._pauses import Asker, Pause, Verdict
from roomkit.adapters._resumes import LEASE
from roomkit.adapters._shapes import call_arguments
from roomkit.adapters._unmatched import warn_unmatched
from roomkit.adapters.openai_agents._calls import called, field
from roomkit.adapters.openai_agents._keeping import Draft, Load, keep_pause
from roomkit.adapters.openai_agents._saved import Paused, SavedRuns
from roomkit.adapters.openai_agents._tools import missing_tools, tool_names
from roomkit.adapters.options import AskOptions
from roomkit.core.exceptions import RunUnderWayError
from roomkit.models.shown import shown
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["CHANNEL", "RunOptions", "final_output", "resume", "run", "start"]

CHANNEL = "openai-agents"
"""The channel id a run's requests are raised under."""


class RunOptions(AskOptions, total=False):
    """:class:`~roomkit.adapters.options.AskOptions`, and the keywords of ``Runner.run``
    that :func:`run`, :func:`start` and :func:`resume` pass on (any other is passed on
    too, for ``Runner.run`` to judge)."""

    context: Any
    """The run's context object."""
    max_turns: int | None
    """The most turns the run takes."""
    hooks: Any
    """The run's ``RunHooks``."""
    run_config: Any
    """The run's ``RunConfig``."""
    error_handlers: Any
    """The run's ``RunErrorHandlers``."""
    previous_response_id: str | None
    """The Responses API's id of the previous response."""
    auto_previous_response_id: bool
    """Chain the Responses API's responses by their ids."""
    conversation_id: str | None
    """The Conversations API's id of the conversation."""
    session: Any
    """The run's ``Session`` (its memory of earlier turns)."""


_DECISIONS = ("approve", "reject")


async def run(
    agent: Agent[Any],
    input: Any,
    *,
    handler: HumanInputHandler,
    run_key: str,
    **options: Unpack[RunOptions],
) -> RunResult:
    """Run ``agent`` to its end, asking people through ``handler`` at each approval.

    Args:
        agent: the agent to run.
        input: the run's input.
        handler: the human-input handler whose people answer.
        run_key: names the run: the requests' keys are ``oa:{run_key}:{call_id}``, each
            part with ``%`` and ``:`` escaped as ``%25`` and ``%3A``.
        options: who is asked and how (:class:`~roomkit.adapters.options.AskOptions`:
            ``approvals``, ``timeout``, ``actor``, ``room``, ``ladder``); the others are
            passed to ``Runner.run`` (``context``, ``max_turns``, ...).

    Returns:
        The SDK's ``RunResult`` of the finished run.

    Raises:
        ValueError: ``run_key`` is no non-empty string, or holds text no store can keep
            (``InvalidTextError``); checked before the model runs.
    """
    asker, passed = asking(handler, CHANNEL, options, where="openai_agents.run()", passes_on=True)
    key = _checked(run_key, "openai_agents.run()")
    warn_unmatched(asker.rules, tool_names(agent), where="openai_agents.run()")
    result = await Runner.run(agent, input, **passed)
    while result.interruptions:
        state = result.to_state()
        items = state.get_interruptions()
        pauses = [_pause(key, item) for item in items]
        verdicts = await all_at_once([asker.ask(pause, who=False) for pause in pauses])
        for item, verdict in zip(items, verdicts, strict=True):
            _apply(state, item, verdict)
        result = await Runner.run(agent, state, **passed)
    return result


async def start(
    agent: Agent[Any],
    input: Any,
    *,
    handler: HumanInputHandler,
    run_key: str,
    **options: Unpack[RunOptions],
) -> list[str]:
    """Run ``agent`` until it finishes or pauses for approvals; the pending ids it opened.

    The paused run's ``RunState`` is kept in roomkit's store under ``run_key``;
    :func:`resume` continues it, in any process, once the requests are settled. An empty
    list: the run finished without pausing (nothing is kept, and :func:`final_output` has
    nothing to read: a run that may finish at once is best run with :func:`run`, which
    returns its result). Arguments as :func:`run`.

    A run already kept under ``run_key`` (a ``start`` run again after a crash, as a retried
    job does) is not run again with ``input``: its requests are re-attached to, nobody is
    asked twice, and it goes on as :func:`resume` would. So is a pause whose start was
    killed while it opened the pause's requests: those it lacks are opened from the state
    that start's model reached.

    Two starts of one run at the same moment run the model once: the other raises
    :class:`~roomkit.core.exceptions.RunUnderWayError` while the first has not kept its
    pause, and re-attaches to its requests once it has.

    Raises:
        ValueError: the run started under ``run_key`` has finished (a new run takes a new
            ``run_key``); ``run_key`` is not one (as :func:`run` checks it, before the model
            runs).
        RunUnderWayError: another start of the run is running and has not kept its pause
            yet (nothing was run).
        UnknownRequestError: the run paused under ``run_key``, and its kept state went past
            the store's retention (nothing was run; a new run takes a new ``run_key``).
    """
    asker, passed = asking(handler, CHANNEL, options, where="openai_agents.start()", passes_on=True)
    saved = SavedRuns(asker, _checked(run_key, "openai_agents.start()"))
    warn_unmatched(asker.rules, tool_names(agent), where="openai_agents.start()")
    # Read first: the ledger remembers a finished run for good, past the store's
    # retention of the requests its output was kept beside.
    if await saved.finished():
        raise ValueError(
            f"the run started under run_key {shown(run_key)} has finished (final_output() "
            "reads its output while the store keeps it): a run_key names one run, so start "
            "a new run under a new run_key"
        )
    paused = await saved.latest()
    if paused is None:
        # One start runs the model at a time: two would mint call ids of their own and ask
        # people about the same calls twice.
        if await asker.resumes.claim(saved.starting(), lease=LEASE):
            return await _first_pause(agent, input, asker, saved, passed)
        paused = await saved.latest()
        if paused is None:
            raise RunUnderWayError(
                f"another start() of the run {shown(run_key)} is running and has not kept its "
                "pause yet: nothing was run and nobody was asked; start() it again once "
                "that one returned (it then re-attaches to the run's requests), or, if "
                f"that one died, once its claim lapses ({LEASE:.0f} seconds after it began)"
            )
    # Started already (a start run again after a crash, say): the model is not asked
    # again, which would mint new call ids and ask people about the same calls twice.
    return await _go_on(agent, asker, saved, paused, passed)


async def _first_pause(
    agent: Agent[Any], input: Any, asker: Asker, saved: SavedRuns, passed: dict[str, Any]
) -> list[str]:
    """Run ``agent`` up to its first pause and keep it, holding the start's claim; the ids
    :func:`start` returns.

    A start that kept its pause leaves its claim to lapse: a later start finds the pause
    first. One that kept nothing (the run finished, or failed) gives it back, for the run
    to be started again.
    """

    async def first() -> list[str]:
        result = await Runner.run(agent, input, **passed)
        return await _pause_or_finish(agent, asker, saved, result, 0, passed)

    try:
        # Renewed while the model runs: a first turn longer than the lease is not run
        # again by another start.
        ids = await asker.resumes.holding([saved.starting()], first)
    except BaseException:
        await asker.resumes.unclaim(saved.starting())
        raise
    if not ids:
        await asker.resumes.unclaim(saved.starting())
    return ids


async def resume(
    agent: Agent[Any],
    run_key: str,
    *,
    handler: HumanInputHandler,
    **options: Unpack[RunOptions],
) -> list[str]:
    """Continue the run ``run_key`` once its requests are settled; what :func:`start` returns.

    While a request is open this changes nothing and returns the ids still pending. When
    all are settled, one resumer continues the run (another, at the same time or later,
    finds nothing to do and returns ``[]``), up to its next approvals. A run that finishes
    keeps its final output under ``run_key``: :func:`final_output` reads it, whichever
    resumer finished it. Pass the same options as :func:`start`.

    Raises:
        ValueError: no run was started under ``run_key``, or its kept state does not load
            on ``agent`` (another agent than the one :func:`start` ran), or ``agent`` no longer
            has a tool a person approved a call of (named; nothing is changed and the
            decisions stay); ``run_key`` is not one (as :func:`run` checks it).
        UnknownRequestError: the run's kept state went past the store's retention (the
            request it was kept on was settled longer ago than the store keeps requests).
    """
    asker, passed = asking(
        handler, CHANNEL, options, where="openai_agents.resume()", passes_on=True
    )
    saved = SavedRuns(asker, _checked(run_key, "openai_agents.resume()"))
    if await saved.finished():
        return []  # nothing to do, whoever finished it
    paused = await saved.latest()
    if paused is None:
        raise ValueError(
            f"no run paused under run_key {shown(run_key)} with actor {shown(asker.actor)} and "
            f"room {shown(asker.room)} in this handler's store: pass resume() the handler on the "
            "store start() kept the run in, and the actor and room given to start() (they scope "
            "the run); a run never started is started with start()"
        )
    return await _go_on(agent, asker, saved, paused, passed)


async def _go_on(
    agent: Agent[Any],
    asker: Asker,
    saved: SavedRuns,
    paused: Paused,
    passed: dict[str, Any],
) -> list[str]:
    """Continue the run kept as ``paused`` once its requests are settled, as :func:`resume`
    says; the ids still pending, or those of its next pause, or ``[]``."""
    generation = paused.generation
    state = await _state(agent, saved.key, paused.text)
    items = state.get_interruptions()
    pauses = [_pause(saved.key, item) for item in items]
    pending_ids = paused.pending
    if pending_ids is None:
        # Its writer marked it and stopped before opening all its requests (or opens them
        # still): they are opened from the state it decided, those opened re-attached to.
        draft = Draft(paused.text, paused.asked, pauses)
        pending_ids = await keep_pause(saved, generation, draft, _loader(agent, saved), marked=True)
    # A call its rule left to no one has no request: it is approved.
    verdicts = [
        Verdict("approve") if pending_id is None else await asker.settled(pending_id, pause)
        for pending_id, pause in zip(pending_ids, pauses, strict=True)
    ]
    still = [pid for pid, verdict in zip(pending_ids, verdicts, strict=True) if verdict is None]
    if still:
        return [pid for pid in still if pid is not None]
    approved = [item for item, v in zip(items, verdicts, strict=True) if v and v.kind == "approve"]
    lacking = missing_tools(approved, passed.get("run_config"))
    if lacking:
        # The SDK would end the run on it after the claim was taken: said before anything
        # is claimed or consumed, the settled requests stay for the right agent to resume.
        raise ValueError(
            f"the run kept under run_key {shown(saved.key)} was approved to call "
            f"{', '.join(map(shown, lacking))}, which agent {shown(getattr(agent, 'name', agent))} "
            "no longer has: resume it with an agent that has the tool (as start() ran it); "
            "nothing was changed and the decisions stay"
        )
    for item, verdict in zip(items, verdicts, strict=True):
        assert verdict is not None
        _apply(state, item, verdict)

    async def go_on() -> list[str]:
        # The next pause is marked within the claim's lease: a resumer that dies before it
        # is leaves the claim to lapse, and the run to resume again from this pause; one
        # that dies after leaves its draft, which the next resume keeps.
        result = await Runner.run(agent, state, **passed)
        return await _pause_or_finish(agent, asker, saved, result, generation + 1, passed)

    ids = await asker.resumes.resume_once(saved.claim(generation), go_on)
    return [] if ids is None else ids


async def _state(agent: Agent[Any], key: str, text: str) -> RunState[Any]:
    """The state kept as ``text`` under the run ``key``, loaded on ``agent``.

    Raises:
        ValueError: it does not load on ``agent``.
    """
    try:
        return await RunState.from_string(agent, text)
    except Exception as error:
        raise ValueError(
            f"the run kept under run_key {shown(key)} does not load on agent "
            f"{shown(getattr(agent, 'name', agent))} ({type(error).__name__}: {error}): resume it "
            "with the agent start() ran (the same name, tools and handoffs) and the same "
            "openai-agents version; nothing was changed"
        ) from error


def _loader(agent: Agent[Any], saved: SavedRuns) -> Load:
    """The approvals of a state of the run ``saved`` keeps, loaded on ``agent``."""

    async def load(text: str) -> list[Pause]:
        state = await _state(agent, saved.key, text)
        return [_pause(saved.key, item) for item in state.get_interruptions()]

    return load


async def final_output(
    run_key: str, *, handler: HumanInputHandler, **options: Unpack[AskOptions]
) -> Any:
    """The final output of the run ``run_key``, which a :func:`resume` finished.

    The output is kept as JSON in roomkit's store beside the run's requests, so any
    process on the store reads it: text comes back as the ``str`` the run ended with, a
    structured output (a Pydantic model, a dataclass) as its JSON form (validate it with
    the agent's ``output_type`` to get the object back).

    Args:
        run_key: the key the run was started under.
        handler: the human-input handler on the run's store.
        options: the ``actor`` and ``room`` given to :func:`start` (they scope the run's
            requests, where the output is kept); the other options are not needed.

    Returns:
        The run's ``final_output``, as JSON gives it back.

    Raises:
        ValueError: no run under ``run_key`` (with that actor and room) finished on a
            resume: none was started, it still waits at a pause (settle its requests and
            :func:`resume` it), or :func:`start` finished it without pausing (which keeps
            nothing).
        UnknownRequestError: the run finished, and its output went past the store's
            retention (the run stays finished: :func:`start` refuses its ``run_key``).
        TypeError: an option is not one of ``AskOptions``.
    """
    asker, _ = asking(handler, CHANNEL, options, where="openai_agents.final_output()")
    saved = SavedRuns(asker, _checked(run_key, "openai_agents.final_output()"))
    kept = await saved.output()
    if kept is not None:
        return json.loads(kept)
    if await saved.latest() is not None:
        raise ValueError(
            f"the run {shown(run_key)} has not finished: it waits at a pause; resume() it once "
            "its requests are settled"
        )
    raise ValueError(
        f"no run under run_key {shown(run_key)} finished on a resume: start() it and resume() it, "
        "and pass final_output() the actor and room given to start() (a run start() "
        "finishes without pausing keeps no output: run() returns it)"
    )


async def _pause_or_finish(
    agent: Agent[Any],
    asker: Asker,
    saved: SavedRuns,
    result: RunResult,
    generation: int,
    passed: dict[str, Any],
) -> list[str]:
    """Open the requests of ``result``'s approvals and keep its state; ``[]`` when done
    (then, on a resume, ``generation`` above 0, the run's final output is kept).

    An approval its rule leaves to no one (``Approval(when=...)``) gets no request: it is
    approved, at once when no other call of the pause is asked about (the run goes on),
    else on resume beside the others' verdicts, as when waiting inline.
    """
    while result.interruptions:
        state = result.to_state()
        items = state.get_interruptions()
        pauses = [_pause(saved.key, item) for item in items]
        asked = [await asker.needs_person(pause) for pause in pauses]
        if any(asked):
            draft = Draft(state.to_string(), asked, pauses)
            pending = await keep_pause(saved, generation, draft, _loader(agent, saved))
            return [pending_id for pending_id in pending if pending_id is not None]
        for item in items:
            state.approve(item)
        result = await Runner.run(agent, state, **passed)
    if generation > 0:
        # Finished on a resume: the output goes beside the pause the run was resumed from.
        output = to_jsonable_python(result.final_output, fallback=str)
        await saved.finish(generation - 1, json.dumps(output))
    return []


def _checked(run_key: str, where: str) -> str:
    """``run_key``, once it can name a run's requests.

    Raises:
        ValueError: it is no non-empty string.
        InvalidTextError: it holds a lone surrogate, which no store can keep.
    """
    if not isinstance(run_key, str) or not run_key:
        raise ValueError(f"run_key must be a non-empty string naming the run, got {shown(run_key)}")
    return checked_name("run_key", run_key, where=where)


def _pause(run_key: str, item: Any) -> Pause:
    """The approval of one ``ToolApprovalItem``."""
    raw = item.raw_item
    call_id = str(field(raw, "call_id") or field(raw, "id") or "")
    parsed = _arguments(called(raw))
    tool = next(
        (t for t in getattr(item.agent, "tools", []) if getattr(t, "name", None) == item.tool_name),
        None,
    )
    schema = getattr(tool, "params_json_schema", None)
    return Pause(
        pause_key("oa", run_key, call_id),
        "approval",
        str(item.tool_name),
        parsed,
        tool_call_id=call_id,
        tool_schema=dict(schema) if isinstance(schema, dict) else None,
        decisions=_DECISIONS,
        description=getattr(tool, "description", None) or None,
    )


def _arguments(arguments: Any) -> dict[str, Any]:
    """A call's arguments as the person reads them: the object the model wrote; else what it
    wrote under ``arguments``, parsed when it is JSON, as its text when it is not (or holds
    what only Python reads as JSON: NaN or an infinity, which no request could keep)."""
    if not isinstance(arguments, str):
        found = dict(arguments or {})
        return call_arguments(found, found)
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return call_arguments(parsed if isinstance(parsed, dict) else {"arguments": parsed}, arguments)


def _apply(state: RunState[Any], item: Any, verdict: Verdict) -> None:
    """Put ``verdict`` on ``state``: approve, or reject with the text the model reads."""
    if verdict.kind == "approve":
        state.approve(item)
    else:
        state.reject(item, rejection_message=verdict.text or None)

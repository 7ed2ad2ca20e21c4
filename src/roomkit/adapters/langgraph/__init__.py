"""LangGraph's interrupts answered through roomkit: inline (:func:`run`) or durable
(:func:`start`, then :func:`resume` once the requests are settled).

Needs the ``langgraph`` extra
(``pip install -e '.[langgraph]'`` in roomkit's checkout); the graph must be
compiled with a checkpointer. Each interrupt becomes a request keyed by the thread id and the
interrupt's own deterministic id (each escaped, so that no two threads' keys meet), so that
running the boundary again after a crash re-attaches to the request instead of asking twice.
A langchain ``HumanInTheLoopMiddleware`` approval (per call or batched) becomes a roomkit
approval offering only its allowed decisions; any other interrupt is a question whose answer
schema is the interrupt's ``response_schema``.
"""

from __future__ import annotations

from roomkit._extras import requires_extra

with requires_extra("roomkit.adapters.langgraph", "langgraph"):
    import langgraph.types as _types
    from langgraph.errors import is_invalid_resume

import functools
from collections.abc import Mapping
from typing import Any, Unpack

from pydantic import ValidationError

from roomkit.adapters._asking import all_at_once, asking, one_stop
from roomkit.adapters._keys import checked_name, pause_key
from roomkit.adapters._pauses import Asker, Pause, Verdict
from roomkit.adapters._resumes import LEASE
from roomkit.adapters._unmatched import warn_unmatched
from roomkit.adapters.langgraph._mapping import pauses_of, resume_value, tool_names, tool_schemas
from roomkit.adapters.langgraph._moving import alone, continued, cut, moving
from roomkit.adapters.langgraph._scope import check_scope, keep_scope, kept_here
from roomkit.adapters.options import AskOptions
from roomkit.core.exceptions import InvalidAnswerError, RunUnderWayError
from roomkit.models.shown import shown
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["CHANNEL", "resume", "run", "start"]

CHANNEL = "langgraph"
"""The channel id a graph's requests are raised under."""


async def run(
    graph: Any,
    input: Any,
    config: Mapping[str, Any],
    *,
    handler: HumanInputHandler,
    **options: Unpack[AskOptions],
) -> Any:
    """Run ``graph`` to its end, asking people through ``handler`` at each interrupt.

    Args:
        graph: a compiled graph with a checkpointer.
        input: the graph's input.
        config: the run's config; ``config["configurable"]["thread_id"]`` names the thread.
        handler: the human-input handler whose people answer.
        options: who is asked and how (:class:`~roomkit.adapters.options.AskOptions`:
            ``approvals``, ``timeout``, ``actor``, ``room``, ``ladder``).

    Returns:
        The graph's final output value.

    Raises:
        HumanInputTimeoutError, HumanInputRejectedError: a question expired (with no
            ladder default) or was refused (the thread stays paused at it).
        InvalidAnswerError: the graph's ``response_schema`` (a Python type) refused an
            answer its JSON Schema let through (the thread stays paused at it).
        TypeError: an option is not one of ``AskOptions``, or ``config`` is no dict
            (nor its ``configurable``).
        ValueError: ``config`` names no thread, or one no store can keep
            (``InvalidTextError``), or the graph has no checkpointer; checked before the
            graph runs.
    """
    asker, _ = asking(handler, CHANNEL, options, where="langgraph.run()")
    thread, schemas = _thread(config, "langgraph.run()"), tool_schemas(graph)
    warn_unmatched(asker.rules, tool_names(graph), where="langgraph.run()")
    await _kept_state(graph, config, "langgraph.run()")  # before anyone is asked
    out = await graph.ainvoke(input, config, version="v2")
    while out.interrupts:
        asked = [(i, pauses_of(thread, i, schemas)) for i in out.interrupts]
        # Every pause of this stop is asked at once: people answer them in any order.
        verdicts = await all_at_once(
            [asker.ask(p, who=False) for _, pauses in asked for p in pauses]
        )
        answers: dict[str, Any] = {}
        for interrupt, pauses in asked:
            mine, verdicts = verdicts[: len(pauses)], verdicts[len(pauses) :]
            answers[interrupt.id] = resume_value(thread, interrupt, pauses, mine)
        out = await _resumed(graph, answers, config, thread)
    return out.value


async def start(
    graph: Any,
    input: Any,
    config: Mapping[str, Any],
    *,
    handler: HumanInputHandler,
    **options: Unpack[AskOptions],
) -> list[str]:
    """Run ``graph`` until it finishes or stops at interrupts; the pending ids it opened.

    The checkpointer keeps the thread where it stopped; :func:`resume` continues it, in
    any process, once the requests are settled. An empty list: the graph finished (or
    every pause was decided at once, e.g. by a rule's ``when=``). Arguments as :func:`run`.

    A thread already stopped at interrupts (a ``start`` run again after a crash) is not
    run again with ``input``: its requests are re-attached to, and nobody is asked twice.
    Two starts of one thread at the same moment run the graph once: the other raises
    :class:`~roomkit.core.exceptions.RunUnderWayError` while the first runs, and
    re-attaches to its requests once it stopped.

    The thread's ``actor`` and ``room`` are kept in the handler's store, and on a durable
    store the checkpoints that it and :func:`resume` write carry ``roomkit_scope_kept:
    True`` in their metadata: a resume under others, or on a handler over another store, is
    refused (a thread started on the memory store, resumed on a new one, asks again).

    Raises:
        TypeError, ValueError: as :func:`run`, before the graph runs; ValueError too when
            the thread was started under another ``actor`` or ``room``, or on a handler
            over another store (as :func:`resume`).
        RunUnderWayError: another start of the thread is taking it or running the graph
            (nothing was run).
    """
    asker, _ = asking(handler, CHANNEL, options, where="langgraph.start()")
    thread = _thread(config, "langgraph.start()")  # before the graph runs: its requests name it
    warn_unmatched(asker.rules, tool_names(graph), where="langgraph.start()")
    state = await _kept_state(graph, config, "langgraph.start()")
    await keep_scope(asker, thread, state, "langgraph.start()")
    config = kept_here(config, asker)
    if not state.interrupts:
        seen = state.config.get("configurable", {}).get("checkpoint_id")
        ran = await alone(asker.resumes, thread, lambda: _first_run(graph, input, config, seen))
        if not ran and not (await graph.aget_state(config)).interrupts:
            raise RunUnderWayError(
                f"another start() of thread {shown(thread)} is running the graph: "
                "nothing was run and nobody was asked; start() it again once that one "
                "returned (it then re-attaches to the thread's requests), or, if that one "
                f"died, once its claim lapses ({LEASE:.0f} seconds after it began)"
            )
    return await _settle_or_open(graph, config, asker)


async def _first_run(graph: Any, input: Any, config: Mapping[str, Any], seen: Any) -> None:
    """``graph`` run with ``input`` on the thread, unless the thread moved on since it was
    seen at checkpoint ``seen`` (another start ran it meanwhile)."""
    state = await graph.aget_state(config)
    if state.config.get("configurable", {}).get("checkpoint_id") == seen:
        await graph.ainvoke(input, config, version="v2")


async def resume(
    graph: Any,
    config: Mapping[str, Any],
    *,
    handler: HumanInputHandler,
    **options: Unpack[AskOptions],
) -> list[str]:
    """Continue the thread once its requests are settled; what :func:`start` returns.

    While a request is open this changes nothing and returns the ids still pending. When
    all are settled, one resumer continues the thread (a second, at the same time or later,
    finds nothing to do and returns ``[]``), up to its next interrupts. Pass the same
    options as :func:`start`, and a handler on the same store.

    Raises:
        ValueError: the graph's checkpointer holds no such thread (none was started), or
            :func:`start` started it under another ``actor`` or ``room``, or on a handler
            over another store (nothing is opened); as :func:`run`, the config or the graph
            cannot pause a thread.
        TypeError: as :func:`run`.
        InvalidAnswerError: the graph's ``response_schema`` (a Python type) refused an
            answer its JSON Schema let through (the thread stays paused at it).
        HumanInputTimeoutError, HumanInputRejectedError: as :func:`run`.
    """
    asker, _ = asking(handler, CHANNEL, options, where="langgraph.resume()")
    thread = _thread(config, "langgraph.resume()")
    state = await _kept_state(graph, config, "langgraph.resume()")
    if not (state.config.get("configurable") or {}).get("checkpoint_id"):
        raise ValueError(
            f"the graph's checkpointer holds no thread {shown(thread)}: start it with "
            "start(), and resume it with the same thread_id on the same checkpointer"
        )
    if await check_scope(asker, thread, state, "langgraph.resume()"):
        config = kept_here(config, asker)
    return await _settle_or_open(graph, config, asker)


async def _settle_or_open(graph: Any, config: Mapping[str, Any], asker: Asker) -> list[str]:
    """Resume the thread while its interrupts are settled; the ids of those still open."""
    thread, schemas = _thread(config, "langgraph"), tool_schemas(graph)
    while True:
        state = await graph.aget_state(config)
        checkpoint = str(state.config["configurable"].get("checkpoint_id"))
        if await cut(asker.resumes, state, thread):
            go_on = functools.partial(continued, graph, config, checkpoint)
            if await moving(asker.resumes, thread, (), go_on) is None:
                return []
            continue
        if not state.interrupts:
            return []
        asked = [(i, pauses_of(thread, i, schemas)) for i in state.interrupts]
        looked: list[tuple[Any, list[Pause], list[Verdict | None]]] = []
        async with one_stop(asker.handler) as opened:
            for interrupt, pauses in asked:
                verdicts = [await asker.look(pause, opened) for pause in pauses]
                looked.append((interrupt, pauses, verdicts))
        if any(verdict is None for _, _, verdicts in looked for verdict in verdicts):
            return await _open_ids(asker, looked)
        answers = {
            interrupt.id: resume_value(thread, interrupt, pauses, verdicts)  # type: ignore[arg-type]
            for interrupt, pauses, verdicts in looked
        }
        # One claim per interrupt, under the checkpoint the thread stopped at: a resumer
        # inside the step holds every interrupt it answers, though the thread already hides
        # those of its finished tasks from another resumer; and a node's next interrupt,
        # raised at the same checkpoint once its first is answered, is claimed anew.
        claims = [pause_key("lg", thread, checkpoint, str(each)) for each in answers]
        resume = functools.partial(_resumed, graph, answers, config, thread)
        out = await moving(asker.resumes, thread, claims, resume)
        if out is None:
            return []


async def _resumed(
    graph: Any, answers: dict[str, Any], config: Mapping[str, Any], thread: str
) -> Any:
    """The graph resumed with ``answers`` (by interrupt id), up to its next stop.

    Raises:
        InvalidAnswerError: the graph's ``response_schema`` (a Python type) refused an
            answer that its JSON Schema, which the desk checks, let through (a validator of
            the type's own); the thread stays paused, and the message says how to go on.
    """
    try:
        return await graph.ainvoke(_types.Command(resume=answers), config, version="v2")
    except Exception as error:
        if not is_invalid_resume(error):
            raise
        raise InvalidAnswerError(
            f"the graph refused an answer to its question on thread {shown(thread)}: its "
            f"response_schema's own validation failed ({_problems(error)}), which the "
            "JSON Schema the person's answer was checked against cannot express; the thread "
            "stays paused at the question: resume it with Command(resume=...) yourself, or "
            "run the thread anew (state in the type's JSON Schema what it takes, so that "
            "the desk refuses such an answer)"
        ) from error


def _problems(error: Exception) -> str:
    """What a resume's validation error found, in one line."""
    if isinstance(error, ValidationError):
        found = [
            f"{'.'.join(str(part) for part in problem['loc']) or 'answer'}: {problem['msg']}"
            for problem in error.errors()[:3]
        ]
        return "; ".join(found)
    return str(error).splitlines()[0] if str(error) else type(error).__name__


async def _open_ids(
    asker: Asker, looked: list[tuple[Any, list[Pause], list[Verdict | None]]]
) -> list[str]:
    """The pending ids of the pauses without a verdict yet."""
    ids = []
    for _, pauses, verdicts in looked:
        for pause, verdict in zip(pauses, verdicts, strict=True):
            if verdict is None:
                ids.append((await asker.open(pause)).pending_id)
    return ids


def _thread(config: Mapping[str, Any], where: str) -> str:
    """The thread id of ``config`` (``where`` names the entry point in a message).

    Raises:
        TypeError: ``config`` is no dict, or its ``configurable`` is none.
        ValueError: it names no thread (interrupts need a checkpointed thread).
        InvalidTextError: it holds text no store can keep (the requests' keys name it).
    """
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(config, Mapping) or not isinstance(configurable, Mapping | None):
        got = config if not isinstance(config, Mapping) else configurable
        raise TypeError(
            f'{where}: config must be a dict naming the thread, {{"configurable": '
            f'{{"thread_id": "..."}}}}, got {type(got).__name__} {shown(got)} where '
            "a dict was due (nothing was run)"
        )
    thread = (configurable or {}).get("thread_id")
    if thread is None or thread == "":
        raise ValueError(
            'config must name the thread: {"configurable": {"thread_id": "..."}} '
            "(a graph pauses at interrupts only on a checkpointed thread)"
        )
    return checked_name("thread_id", str(thread), where=where)


async def _kept_state(graph: Any, config: Mapping[str, Any], where: str) -> Any:
    """The state the graph's checkpointer keeps of the thread ``config`` names.

    Raises:
        ValueError: the graph has no checkpointer: an interrupt's thread could not be
            resumed (checked before the graph runs, and before anyone is asked).
    """
    try:
        return await graph.aget_state(config)
    except ValueError as error:
        if getattr(graph, "checkpointer", None) is not None:
            raise
        raise ValueError(
            f"{where}: the graph has no checkpointer ({error}): compile it with one, "
            "graph.compile(checkpointer=InMemorySaver()) (AsyncSqliteSaver or "
            "AsyncPostgresSaver to survive a restart), as a paused thread is resumed from "
            "what it keeps (nothing was run)"
        ) from error

"""The turns an AG-UI run starts: the client's unanswered user messages the thread does not
hold yet.

A front end sends the whole conversation on every run; a run starts one turn for each user
message after the last answer the client shows (an assistant, tool, reasoning or activity
message) that the room has not recorded, in order, and at most ``Thread.max_new_messages``
of them. The user
messages before that answer are answered in the client's own eyes: a room that does not hold
them (a memory store after a restart, a thread moved to another server, a client seeding a
conversation) runs none of them again, and records none of them either (the room holds what
its agent ran; the client's copy of the agent's words is not the agent's). A run sending
more is refused whole (``RUN_ERROR`` with the code ``too_many_messages``) before its resume
settles anything, and starts none of its turns: the endpoint's rate limit counts requests,
and one request must not run the agent (and the model behind it) thousands of times. So is
a run one of whose new user messages holds no text but blank (``empty_message``): the text
is the turn's prompt, and the model must not run on none. A run with no new user message (a
resume alone) starts no turn and is taken.

The same run can reach two server processes on one store at the same moment (a retry, two
tabs): each reads the thread before either records the message. Each message is claimed in
the handler's ledger just before it runs (:mod:`roomkit.adapters._message_claims`): a run
that loses the claim starts no turn for it, nor for the messages after it, and follows the
thread as it follows a turn running elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ag_ui.core import RunAgentInput

from roomkit.adapters._feed import RECENT, TurnFailure, run_turns
from roomkit.adapters._message_claims import MessageClaims
from roomkit.adapters.agui._events import message_id_of
from roomkit.adapters.agui._interrupts import RunRefused, named
from roomkit.auth.principal import Principal
from roomkit.core.framework import RoomKit
from roomkit.models.room import InboundMessage, RoomEvent, TextContent

if TYPE_CHECKING:
    from roomkit.adapters.agui._run import Thread

__all__ = ["MAX_NEW_MESSAGES", "check_new_messages", "start_turns"]

logger = logging.getLogger("roomkit.adapters.agui")

MAX_NEW_MESSAGES = 8
"""The user messages one run may start by default: a chat client sends one a run, a few
after it was offline."""

ANSWERS = frozenset({"assistant", "tool", "reasoning", "activity"})
"""The roles of the messages that answer the user messages before them in a client's list:
the agent's words, its tools' results, its reasoning and its activities."""


async def check_new_messages(
    thread: Thread, principal: Principal, thread_id: str, run: RunAgentInput
) -> None:
    """Refuse ``run`` when it holds more new user messages than one run may start, or a
    new one without text.

    Read before the resume settles anything; :func:`start_turns` checks again under the
    thread's admission lock.

    Raises:
        RunRefused: too many (``too_many_messages``); one holds no text (``empty_message``).
    """
    unanswered = [m for m in _unanswered(run.messages) if m.role == "user"]
    few = len({m.id for m in unanswered}) <= thread.max_new_messages
    if few and all(_text_of(m).strip() for m in unanswered):
        return
    # Only the messages the room does not hold start a turn: only they are refused.
    history = await thread.kit.store.recent_events(thread_id, RECENT)
    new, _ = await _unstarted(thread, principal.actor_id, thread_id, run, history)
    _startable(thread, new)


async def start_turns(
    thread: Thread,
    principal: Principal,
    thread_id: str,
    run: RunAgentInput,
    history: list[RoomEvent],
) -> list[asyncio.Task[list[TurnFailure]]]:
    """Run the client's unanswered user messages the room does not hold yet, in order, in a
    task (under the thread's admission lock); the turns the run follows: that task, those
    already running the messages another run started, and the caller's other turns of the
    thread still running here (one a resume carries on), so that the run tells their
    failures.

    Raises:
        RunRefused: more of them than one run may start (``too_many_messages``), or one
            holds no text (``empty_message``): none runs.
    """
    new, running = await _unstarted(thread, principal.actor_id, thread_id, run, history)
    _startable(thread, new)
    caller = (thread_id, principal.actor_id)
    followed = running + [
        task
        for (room, sender, _), task in thread.starting.items()
        if (room, sender) == caller and not task.done()
    ]
    if new:
        followed.append(_start(thread, principal, thread_id, new))
    return list(dict.fromkeys(followed))


def _start(
    thread: Thread, principal: Principal, thread_id: str, new: list[Any]
) -> asyncio.Task[list[TurnFailure]]:
    """Run ``new`` in a task, noted in ``thread.starting`` until it ends."""
    started = {(thread_id, principal.actor_id, message.id) for message in new}
    channel_id = thread.channel.channel_id
    turns = [
        (
            InboundMessage(
                channel_id,
                principal.actor_id,
                TextContent(_text_of(message)),
                metadata={"message_id": message.id},
            ),
            f"AG-UI message {message.id}",
        )
        for message in new
    ]
    task = run_turns(
        thread.kit,
        thread_id,
        turns,
        thread.turns,
        agent=thread.agent,
        name=f"agui-turns-{thread_id}",
        logger=logger,
        # Another process may receive the same run at the same moment: one runs each message.
        claims=MessageClaims(thread.kit, thread.handler),
    )

    thread.starting.update(dict.fromkeys(started, task))

    async def forget() -> None:
        # Under the lock: a run that read the room before these messages were recorded
        # still finds them starting.
        async with thread.admission(thread_id):
            for key in started:
                thread.starting.pop(key, None)

    def over(_: asyncio.Task[list[TurnFailure]]) -> None:
        forgetting = asyncio.get_running_loop().create_task(forget())
        thread.turns.add(forgetting)
        forgetting.add_done_callback(thread.turns.discard)

    task.add_done_callback(over)
    return task


async def _unstarted(
    thread: Thread, sender: str, thread_id: str, run: RunAgentInput, history: list[RoomEvent]
) -> tuple[list[Any], list[asyncio.Task[list[TurnFailure]]]]:
    """``sender``'s new user messages no run of this process started yet; the turns running
    those that one did."""
    new = await _new_messages(
        thread.kit, thread_id, (thread.channel.channel_id, sender), run.messages, history
    )
    starting = thread.starting
    running = [
        starting[thread_id, sender, m.id] for m in new if (thread_id, sender, m.id) in starting
    ]
    new = [message for message in new if (thread_id, sender, message.id) not in starting]
    return new, running


def _startable(thread: Thread, new: list[Any]) -> None:
    """Refuse ``new`` when it holds more messages than one run may start, or one whose text
    is empty or blank.

    Raises:
        RunRefused: too many (``too_many_messages``); one holds no text (``empty_message``).
    """
    limit = thread.max_new_messages
    if len(new) > limit:
        raise RunRefused(
            "too_many_messages",
            f"The run sends {len(new)} unanswered user messages (after the last assistant, "
            f"tool, reasoning or activity message) the thread does not hold yet; one run "
            f"starts at most {limit}: "
            f"send at most {limit} new user messages a run. None of them was run",
        )
    blank = next((message for message in new if not _text_of(message).strip()), None)
    if blank is not None:
        raise RunRefused(
            "empty_message",
            f"User message {named(blank.id)} holds no text (its content is empty, blank, or "
            f"parts without text): send the user's words as its content, a string or text "
            f"parts. None of the run's messages was run",
        )


async def _new_messages(
    kit: RoomKit,
    thread_id: str,
    own: tuple[str, str],
    messages: list[Any],
    history: list[RoomEvent],
) -> list[Any]:
    """The client's unanswered user messages the room does not hold, each id once.

    A front end sends the whole conversation on every run. The user messages before the
    last answer it shows are answered (:func:`_unanswered`): whether the room holds them or
    not, they start no turn. Among the rest, the messages before the last one the room's
    latest events hold were sent before it, so the room holds them too; only when the latest
    events hold none of the client's messages, nor the last answer it shows (a client far
    behind, a seeded conversation), are the room's older events read, a page at a time. A
    user message is held when the room recorded a message the caller sent under its id
    (``own`` is the door's channel and the caller): the agent's replies go out under the
    room's own event ids (``"2"``), which a client numbering its messages also uses, and
    another person's client in a shared thread may number its own the same.
    """
    replies = {message_id_of(event) for event in history}
    answer = next((m for m in reversed(messages) if m.role in ANSWERS), None)
    # The client's last answer among the latest events: what the room holds after it is too.
    recent = answer is not None and answer.id in replies
    messages = _unanswered(messages)
    sent = _sent_ids(history, own)

    def held(message: Any) -> bool:
        return message.id in (sent if message.role == "user" else replies)

    last = max((i for i, message in enumerate(messages) if held(message)), default=-1)
    new = [m for m in messages[last + 1 :] if m.role == "user" and m.id not in sent]
    # The same id twice is the same message, run once.
    new = list({message.id: message for message in reversed(new)}.values())[::-1]
    if new and last < 0 and not recent and len(history) >= RECENT:
        wanted = {message.id for message in new}
        offset = 0
        while wanted:
            page = await kit.store.list_events(thread_id, offset=offset, limit=RECENT)
            wanted -= _sent_ids(page, own)
            if len(page) < RECENT:
                break
            offset += len(page)
        new = [message for message in new if message.id in wanted]
    return new


def _unanswered(messages: list[Any]) -> list[Any]:
    """The client's messages after the last answer it shows (an assistant, tool, reasoning
    or activity message).

    The user messages before that answer were answered in the client's own list: run again,
    each would run its turn (and its tools) a second time.
    """
    last = max((i for i, message in enumerate(messages) if message.role in ANSWERS), default=-1)
    return messages[last + 1 :]


def _sent_ids(events: list[RoomEvent], own: tuple[str, str]) -> set[str]:
    """The ids of the caller's messages among ``events``: those recorded on the door's
    channel from the caller (``own``)."""
    return {
        message_id
        for event in events
        if (event.channel_id, event.sender_id) == own
        and isinstance(message_id := event.metadata.get("message_id"), str)
    }


def _text_of(message: Any) -> str:
    """The text of a user message: its content, or its text parts joined."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content)

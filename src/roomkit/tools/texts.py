"""Every text the model reads about a tool call that did not simply run.

A refusal, a failure or a cut call reaches the model as a JSON error object (``{"error":
...}``, sometimes with the tool and a hint); a result recovered from speech goes back as a
line of context. The texts are written here and nowhere else, so each door, each channel,
each step and each surface that serves tools (the MCP server) words the same case the same way.
"""

from __future__ import annotations

import json
from typing import Any

from roomkit.models.clock import spoken_duration

__all__ = [
    "CHANNEL_CLOSED",
    "CUT",
    "DETACHED",
    "MODEL_CANCELLED",
    "MODEL_LOST",
    "PARTICIPANT_LEFT",
    "SESSION_ENDED",
    "TURN_ENDED",
    "UNPLUGGED",
    "approval_edited",
    "approval_expired",
    "approval_mismatch",
    "approval_rejected",
    "approval_responded",
    "approval_spent",
    "arguments_cut",
    "cancelled",
    "crashed",
    "denied",
    "error_body",
    "external_denied",
    "human_input_defaulted",
    "human_input_rejected",
    "human_input_timed_out",
    "invalid_arguments",
    "invalid_rewrite",
    "not_declared",
    "quorum_approved",
    "quorum_rejected",
    "recovered_result",
    "result_blocked",
    "room_unavailable",
    "timed_out",
    "too_many_calls",
    "too_many_waiting",
    "tool_withdrawn",
    "unencodable_arguments",
    "unserved",
    "upstream_failed",
]

# Why a call has no result: the hint of its cancellation.
TURN_ENDED = "The turn ended before its result."
CHANNEL_CLOSED = "The channel closed before its result."
SESSION_ENDED = "The session ended before its result."
MODEL_CANCELLED = "The model cancelled the call before its result."
MODEL_LOST = "The connection to the model was lost before its result."
CUT = "The call was cut before its result."
UNPLUGGED = "The conference's realtime provider was unplugged before its result."
DETACHED = "The conference was detached from the room before its result."

# Why a request was refused without a person's word: the reason its waiter reads.
PARTICIPANT_LEFT = "The person asked left the conference before answering."


def error_body(message: str, **extra: str) -> str:
    """The JSON error object the model reads."""
    return json.dumps({"error": message, **extra})


def cancelled(name: str, hint: str) -> str:
    """A call cut before its result; ``hint`` says why."""
    return error_body("Tool call cancelled", tool=name, hint=hint)


def not_declared(name: str) -> str:
    """A call to a tool the model was not offered."""
    return error_body(f"Tool '{name}' is not declared.")


def invalid_arguments(name: str, problem: str) -> str:
    """Arguments that break the tool's JSON Schema."""
    return error_body(f"Invalid arguments for '{name}': {problem}")


def unencodable_arguments(name: str, problem: str) -> str:
    """Arguments holding text UTF-8 cannot encode (a lone surrogate)."""
    return error_body(
        f"Invalid arguments for '{name}': arguments must be valid Unicode text: "
        f"{problem}; call it again with the text written out"
    )


def arguments_cut(name: str) -> str:
    """Arguments the provider cut off before they were complete."""
    return error_body(
        f"Tool '{name}' arguments were cut off: call it again with complete arguments."
    )


def room_unavailable(name: str) -> str:
    """The gate could not read the call's room, so it refuses the call (not a JSON object:
    the refusal wraps it)."""
    return f"Tool '{name}' denied: its room is unavailable."


def denied(name: str) -> str:
    """A BEFORE_TOOL_USE hook blocked the call without saying why (the refusal wraps it)."""
    return f"Tool '{name}' denied by pre-execution hook."


def invalid_rewrite(name: str, problem: str) -> str:
    """A BEFORE_TOOL_USE rewrite whose arguments break the schema (the refusal wraps it)."""
    return f"Invalid rewritten arguments for '{name}': {problem}"


def external_denied(name: str) -> str:
    """An external tool handler denied the call without saying why (the refusal wraps it)."""
    return f"Tool '{name}' was denied"


def result_blocked(name: str) -> str:
    """An ON_TOOL_CALL hook blocked the result without saying why (the report wraps it)."""
    return f"Tool '{name}' result blocked by hook."


def crashed(name: str, kind: str) -> str:
    """The tool raised: the model reads the error's type, never its message."""
    return error_body(f"Tool '{name}' failed ({kind})")


def unserved(name: str) -> str:
    """Nothing on the channel serves the name."""
    return error_body(f"Tool '{name}' has no handler on this channel.")


def timed_out(message: str) -> str:
    """The tool missed its bound (``message`` is the :class:`ToolTimeoutError`'s)."""
    return error_body(message)


def too_many_calls(name: str, limit: int) -> str:
    """The model made more calls at once than the channel runs; this one was not run."""
    return error_body(
        f"Tool '{name}' did not run: the model made more than {limit} tool calls at once; "
        "wait for their results before calling again"
    )


def too_many_waiting(name: str, waiting: int) -> str:
    """A connection already holds its cap of calls waiting for a person; nobody is asked."""
    return error_body(
        f"Tool '{name}' did not run: {waiting} questions from this connection are already "
        "waiting: wait for an answer before asking again"
    )


def tool_withdrawn(name: str, server: str) -> str:
    """An MCP server listed the tool once and lists it no more (``server``: its name)."""
    return error_body(f"Tool '{name}' did not run: the MCP server {server} no longer offers it.")


def upstream_failed(name: str, problem: str) -> str:
    """The server behind a tool (an MCP server) failed the call; ``problem`` says how."""
    return error_body(f"Tool '{name}' failed: {problem}")


def recovered_result(name: str, content: str) -> str:
    """The context line that gives a call recovered from speech its result."""
    return f"Result of {name}: {content}"


def human_input_timed_out(name: str, seconds: float) -> str:
    """Nobody answered a human-input tool in time."""
    return error_body(f"Human input timed out after {seconds}s for tool '{name}'")


def human_input_rejected(reason: object) -> str:
    """A person (or a hook) refused a human-input tool; ``reason`` is the rejection."""
    return error_body(f"Human input rejected: {reason}")


def approval_rejected(name: str, reason: str) -> str:
    """A person declined to let a held tool run; ``reason`` is theirs."""
    return error_body(
        f"A person declined to run '{name}': it did not run.", reason=reason or "none given"
    )


def approval_expired(name: str, seconds: float) -> str:
    """Nobody decided on a held tool in time and the rule denies it (not a rejection)."""
    return error_body(
        f"Nobody approved '{name}' within {seconds:g}s, so it did not run. No one declined "
        "it: the approval expired."
    )


def approval_responded(name: str, answer: str) -> str:
    """A person answered in a held tool's place: the model reads their text as its result."""
    return json.dumps(
        {
            "result": answer,
            "source": "person",
            "note": f"'{name}' did not run: a person answered in its place.",
        },
        ensure_ascii=False,
    )


def approval_edited(
    name: str, content: str, arguments: dict[str, Any], changed: dict[str, Any]
) -> str:
    """A held tool ran with arguments a person edited: its result, and what they changed."""
    return json.dumps(
        {
            "result": content,
            "note": f"A person edited the arguments of '{name}' before it ran; it ran with "
            "'arguments', and 'changed' shows what they changed.",
            "arguments": arguments,
            "changed": changed,
        },
        ensure_ascii=False,
        default=str,
    )


def quorum_approved(
    name: str,
    content: str,
    arguments: dict[str, Any],
    approvers: list[str],
    changed: dict[str, Any] | None,
) -> str:
    """A held tool ran once a quorum approved it: its result, the arguments that ran, who
    approved them, and what an edit changed (when one did)."""
    note = (
        f"'{name}' ran once {len(approvers)} people approved it ('approved_by'), with 'arguments'."
    )
    body: dict[str, Any] = {"result": content, "note": note}
    if changed:
        body["note"] = note + " An approver edited them first: 'changed' shows what changed."
        body["changed"] = changed
    body.update(arguments=arguments, approved_by=approvers)
    return json.dumps(body, ensure_ascii=False, default=str)


def quorum_rejected(name: str, declined: list[tuple[str, str]]) -> str:
    """Approvers of a quorum declined to let a held tool run; who, and each one's reason."""
    who = ", ".join(actor for actor, _ in declined) or "An approver"
    reasons = "; ".join(f"{actor}: {reason or 'none given'}" for actor, reason in declined)
    return error_body(f"{who} declined to run '{name}': it did not run.", reason=reasons)


def approval_mismatch(name: str) -> str:
    """The arguments at dispatch are not the ones approved, so the call was refused."""
    return error_body(
        f"Tool '{name}' did not run: its arguments are not the ones a person approved."
    )


def approval_spent(name: str) -> str:
    """An approval that authorised a run already, with no recorded result to replay."""
    return error_body(
        f"Tool '{name}' did not run again: its approval was already used for one run."
    )


def human_input_defaulted(name: str, seconds: float, answer: str) -> str:
    """Nobody answered a human-input tool in time, and its ladder's default answer stands
    (the model reads it as the answer, marked as a default)."""
    return json.dumps(
        {
            "answer": answer,
            "default": True,
            "note": f"Nobody answered '{name}' within {spoken_duration(seconds)}; "
            "this default answer was used instead.",
        }
    )

"""``roomkit pending``: a terminal client of a running desk.

Each command calls the desk's API with a token and prints one line a request; a failure is a
:class:`~roomkit.cli._common.Failure`, which :func:`roomkit.cli.main` prints as one line on
stderr. The commands need httpx, which the ``desk`` extra installs; they load no part of
the desk itself. The call, and the checks of what was typed before it, are in
:mod:`~roomkit.cli._desk_client`.

A decision on an approval names the digest of the arguments it decides on: the one
``--digest`` gives (what ``pending show`` printed), else the request's as read just before;
the desk refuses it (409, the new arguments quoted) once an edit has changed them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from roomkit.cli._common import Failure, printable
from roomkit.cli._desk_client import (
    DEFAULT_URL,
    TOKEN_ENV,
    call,
    check_typed,
    standard_input,
    strict_json,
)

__all__ = [
    "DEFAULT_URL",
    "TOKEN_ENV",
    "Failure",
    "add_parser",
    "answer",
    "answer_body",
    "approve",
    "edit",
    "listing",
    "printable",
    "reject",
    "respond",
    "show",
]

EXTRA = "desk"
"""The extra that installs httpx, which the commands call the desk with."""


def _summary(request: dict[str, Any]) -> str:
    arguments = request.get("arguments") or {}
    kind = request.get("kind")
    if kind == "question":
        return printable(arguments.get("question", ""))
    if kind == "questions":
        questions = arguments.get("questions") or [{}]
        more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
        return printable(questions[0].get("question", "")) + more
    if kind == "confirm":
        return "Confirm: " + printable(arguments.get("action", ""))
    if kind == "approval":
        return printable(f"Approve {request.get('tool_name')} {json.dumps(arguments)}")
    return printable(f"{request.get('tool_name')} {json.dumps(arguments)}")


def listing(args: argparse.Namespace) -> int:
    check_typed(args)
    path = "/api/requests"
    if args.room:
        path += "?" + urlencode({"room_id": args.room})
    requests = call(args, "GET", path)["requests"]
    if args.json:
        print(json.dumps(requests, indent=2))
        return 0
    if not requests:
        print("No open questions.")
    for request in requests:
        who = _for(request) or "(room)"
        print(
            f"{printable(request['id'])}  {request['kind']:<9}  "
            f"room={printable(request['room_id'], 40)}  for={printable(who, 40)}  "
            f"{_summary(request)}"
        )
    return 0


def answer_body(kind: str, answer: str, schema: object = None) -> dict[str, Any]:
    """The answer body for a request of ``kind`` from the text typed on the command line.

    JSON that is already a body (``{"answer": ...}``, ``{"answers": ...}``,
    ``{"confirmed": ...}``, ``{"decision": ...}``) is sent as it is. Otherwise: an approval
    takes yes/approve or no/reject; a confirm takes yes/no (or
    true/false); a question takes the text (a JSON list picks several options); a custom
    request takes the text as typed when its answer ``schema`` takes text (none, or a
    string's), else the JSON value, or the text when it is not JSON the desk takes (``NaN``,
    a number past a float's range or a key given twice included).
    """
    try:
        parsed: Any = strict_json(answer)
    except ValueError:
        parsed = answer
    if isinstance(parsed, dict) and parsed.keys() & {"answer", "answers", "confirmed", "decision"}:
        return parsed
    if kind == "approval":
        word = answer.strip().lower()
        if word in ("y", "yes", "ok", "approve", "approved"):
            return {"decision": "approve"}
        if word in ("n", "no", "reject", "rejected"):
            return {"decision": "reject", "reason": ""}
        raise Failure(
            "An approval takes yes or no here; use `pending approve|edit|reject|respond ID` "
            "for the rest",
            2,
        )
    if kind == "confirm":
        word = answer.strip().lower()
        if word in ("y", "yes", "true", "ok"):
            return {"confirmed": True}
        if word in ("n", "no", "false"):
            return {"confirmed": False}
        raise Failure('A confirm request takes yes or no (or {"confirmed": ...})', 2)
    if kind == "question":
        return {"answer": parsed if isinstance(parsed, list) else answer}
    if schema is None or (isinstance(schema, dict) and schema.get("type") == "string"):
        return {"answer": answer}
    return {"answer": parsed}


def _for(request: dict[str, Any]) -> str:
    """Who is asked: the actor named, else an approval's approvers (who alone decide it)."""
    approvers = request.get("approvers") or []
    if request.get("kind") == "approval" and approvers:
        return ", ".join(str(name) for name in approvers)
    return str(request.get("actor_id") or "")


def _typed_body(request: dict[str, Any], typed: str) -> dict[str, Any]:
    """The body for ``typed``: options by label or number for a request of choices."""
    from roomkit._forms import takes_choices, typed_body

    kind, arguments = request["kind"], request.get("arguments") or {}
    if not takes_choices(kind, arguments):
        return answer_body(kind, typed, request.get("answer_schema"))
    try:
        return typed_body(kind, arguments, typed)
    except ValueError as error:
        raise Failure(
            f"{printable(error, 400)} (`{_program()} pending show {_quote_arg(request['id'])}` "
            "shows the question)",
            2,
        ) from None


def show(args: argparse.Namespace) -> int:
    from roomkit._forms import answer_hint, typed_example

    check_typed(args)
    request = call(args, "GET", f"/api/requests/{_quote(args.id)}")
    kind, arguments = request["kind"], request.get("arguments") or {}
    who = _for(request) or "anyone in the room"
    print(
        f"{printable(request['id'])}  {kind}  {printable(request['tool_name'], 60)}  "
        f"room={printable(request['room_id'], 60)}  for={printable(who, 60)}  "
        f"status={request.get('status')}"
    )
    print()
    if kind == "approval":
        return _show_approval(request)
    for line in _form_lines(kind, arguments, request.get("answer_schema")):
        print(line)
    if request.get("status") != "pending":
        return 0
    has_schema = request.get("answer_schema") is not None
    example = typed_example(kind, arguments, has_schema=has_schema)
    print()
    print(answer_hint(kind, arguments, has_schema=has_schema) + " For example:")
    print(f"  {_program()} pending answer {_quote_arg(request['id'])} {example}")
    return 0


def _show_approval(request: dict[str, Any]) -> int:
    approvers = ", ".join(request.get("approvers") or []) or "anyone who may see it"
    print(f"  run: {printable(request['tool_name'], 200)}")
    print(f"  arguments: {printable(json.dumps(request.get('arguments') or {}), 2000)}")
    print(f"  digest: {request.get('arguments_digest')}")
    print(f"  approvers: {printable(approvers, 400)}")
    if request.get("status") != "pending":
        return 0
    pending_id, program = _quote_arg(request["id"]), _program()
    # Copied as printed, each decides on the arguments above or on none.
    pinned = f"{pending_id} --digest {_quote_arg(str(request.get('arguments_digest')))}"
    print()
    print("Decide with one of:")
    print(f"  {program} pending approve {pinned}")
    print(f"  {program} pending edit {pinned} '{{...every argument, as JSON...}}'")
    print(f"  {program} pending reject {pinned} --reason 'why not'")
    print(f"  {program} pending respond {pinned} 'the answer the agent reads instead'")
    return 0


def _shown(args: argparse.Namespace, request: dict[str, Any] | None = None) -> str | None:
    """The digest a decision on an approval names: ``--digest``, else the request's as read
    now (``request``, when the caller read it); ``None`` for any other request."""
    if request is None:
        request = call(args, "GET", f"/api/requests/{_quote(args.id)}")
    if request.get("kind") != "approval":
        return None
    given = getattr(args, "digest", None)
    return given if given else request.get("arguments_digest")


def _decide(args: argparse.Namespace, body: dict[str, Any], done: str) -> int:
    check_typed(args)
    request = call(args, "GET", f"/api/requests/{_quote(args.id)}")
    if request.get("kind") != "approval":
        # approve, edit and respond decide a held call; a question takes an answer.
        pinned = _quote_arg(args.id)
        raise Failure(
            f"{printable(args.id)} is a question, not a call waiting for approval: answer it "
            f"with `{_program()} pending answer {pinned} ...` (`{_program()} pending show "
            f"{pinned}` says what it takes)",
            2,
        )
    shown = _shown(args, request)
    if shown is not None:
        body = {**body, "digest": shown}
    settled = call(args, "POST", f"/api/requests/{_quote(args.id)}/answer", body)
    quorum = settled.get("quorum")
    if settled.get("status") == "pending" and isinstance(quorum, int):
        from roomkit._forms import quorum_progress

        # A vote on a quorum approval that counted: it waits for the others.
        waiting = [printable(str(name), 80) for name in settled.get("approvers") or []]
        progress = quorum_progress(len(settled.get("approved_by") or []), quorum, waiting)
        print(f"Voted on {printable(settled['id'])}: {progress}")
        return 0
    print(f"{done} {printable(settled['id'])}")
    return 0


def approve(args: argparse.Namespace) -> int:
    return _decide(args, {"decision": "approve"}, "Approved")


def edit(args: argparse.Namespace) -> int:
    example = 'edit takes every argument as one JSON object, e.g. \'{"to": "x"}\''
    # Arguments longer than one command-line argument may be (128 KiB on Linux) come on
    # standard input: `roomkit pending edit ID - < arguments.json`.
    typed = standard_input() if args.arguments == "-" else args.arguments
    try:
        arguments = strict_json(typed)
    except ValueError as error:
        raise Failure(f"{example}: {printable(error, 200)}", 2) from None
    if not isinstance(arguments, dict):
        raise Failure(example, 2)
    return _decide(args, {"decision": "edit", "arguments": arguments}, "Edited and approved")


def respond(args: argparse.Namespace) -> int:
    return _decide(args, {"decision": "respond", "result": args.result}, "Answered instead")


def _form_lines(kind: str, arguments: dict[str, Any], schema: Any) -> list[str]:
    """The question and its parts, as lines for a terminal."""
    from roomkit.models.kinds import option_labels

    def options(question: dict[str, Any], indent: str) -> list[str]:
        listed = question.get("options")
        labels = option_labels(listed) or []
        lines = []
        for number, (label, option) in enumerate(zip(labels, listed or [], strict=False), 1):
            about = option.get("description") if isinstance(option, dict) else None
            tail = f": {printable(about, 200)}" if isinstance(about, str) and about else ""
            lines.append(f"{indent}{number}) {printable(label, 200)}{tail}")
        if labels and question.get("multiSelect") is True:
            lines.append(f"{indent}(pick one or more)")
        return lines

    if kind == "questions":
        lines = []
        for index, question in enumerate(arguments.get("questions") or [], 1):
            header = question.get("header")
            label = f"  [{printable(header, 40)}]" if isinstance(header, str) and header else ""
            lines.append(f"{index}. {printable(question.get('question', ''), 500)}{label}")
            lines += options(question, "   ")
        return lines
    if kind == "question":
        return [printable(arguments.get("question", ""), 500), *options(arguments, "  ")]
    if kind == "confirm":
        lines = ["Confirm: " + printable(arguments.get("action", ""), 500)]
        details = arguments.get("details")
        if isinstance(details, dict):
            lines += [f"  {printable(k, 60)}: {printable(v, 200)}" for k, v in details.items()]
        elif details is not None:
            lines.append("  " + printable(json.dumps(details), 500))
        return lines
    lines = [printable(json.dumps(arguments, ensure_ascii=False), 1000)]
    if schema is not None:
        lines.append("Answer schema: " + printable(json.dumps(schema), 1000))
    return lines


def _program() -> str:
    """The command as it was typed (``.venv/bin/roomkit``), for examples to copy."""
    typed = sys.argv[0] if sys.argv else ""
    return typed if Path(typed).name == "roomkit" else "roomkit"


def _quote_arg(text: str) -> str:
    import shlex

    return shlex.quote(printable(text))


def answer(args: argparse.Namespace) -> int:
    check_typed(args)
    request = call(args, "GET", f"/api/requests/{_quote(args.id)}")
    body = _typed_body(request, args.answer)
    shown = _shown(args, request)
    if shown is not None:
        body = {"digest": shown, **body}
    settled = call(args, "POST", f"/api/requests/{_quote(args.id)}/answer", body)
    print(f"Answered {printable(settled['id'])}")
    return 0


def reject(args: argparse.Namespace) -> int:
    check_typed(args)
    body = {"reason": args.reason}
    shown = _shown(args)
    if shown is not None:
        body["digest"] = shown
    settled = call(args, "POST", f"/api/requests/{_quote(args.id)}/reject", body)
    print(f"Rejected {printable(settled['id'])}")
    return 0


def _quote(pending_id: str) -> str:
    return quote(pending_id, safe="")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``pending`` command group's arguments."""
    client = argparse.ArgumentParser(add_help=False)
    client.add_argument(
        "--url",
        default=os.environ.get("ROOMKIT_DESK_URL", DEFAULT_URL),
        help=f"the running desk (default: $ROOMKIT_DESK_URL or {DEFAULT_URL})",
    )
    client.add_argument("--token", help=f"a desk token (default: ${TOKEN_ENV})")
    client.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the desk")
    shown = argparse.ArgumentParser(add_help=False)
    shown.add_argument(
        "--digest",
        help="on an approval, the digest `pending show` printed: decide only while the "
        "arguments still have it (default: the arguments as read just before deciding)",
    )
    pending = commands.add_parser("pending", help="list and answer open questions")
    pending.set_defaults(extra=EXTRA)
    actions = pending.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing_ = actions.add_parser("list", parents=[client], help="the questions you may answer")
    listing_.add_argument("--room", help="only this room's")
    listing_.add_argument("--json", action="store_true", help="print the requests as JSON")
    listing_.set_defaults(run=listing, id=None)

    def on_one(
        name: str,
        run: Callable[[argparse.Namespace], int],
        about: str,
        *,
        whose: str = "request",
        decides: bool = True,
    ) -> argparse.ArgumentParser:
        """The subcommand ``name``, on the request its first argument names."""
        action = actions.add_parser(
            name, parents=[client, shown] if decides else [client], help=about
        )
        action.add_argument("id", help=f"the {whose}'s id (from `roomkit pending list`)")
        action.set_defaults(run=run)
        return action

    on_one("show", show, "a question, its options, and how to answer it", decides=False)
    answer_ = on_one("answer", answer, "answer a question")
    answer_.add_argument(
        "answer",
        help="the answer: text; an option's label or number; a JSON list for several options "
        "or a list of questions (`roomkit pending show ID` shows an example)",
    )
    reject_ = on_one("reject", reject, "refuse a question")
    reject_.add_argument("--reason", default="", help="what the agent reads")
    on_one("approve", approve, "approve a held tool call", whose="approval")
    edit_ = on_one("edit", edit, "approve a held tool call with other arguments", whose="approval")
    edit_.add_argument(
        "arguments",
        help="every argument, as one JSON object; - reads it from standard input (for "
        "arguments longer than a command line takes)",
    )
    respond_ = on_one(
        "respond", respond, "answer in a held tool's place (it does not run)", whose="approval"
    )
    respond_.add_argument("result", help="what the agent reads instead of the tool's result")

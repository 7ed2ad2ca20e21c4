"""``python -m roomkit.desk.demo``: the answer desk and a trip-planning agent on one machine.

The demo keeps everything in a data folder of its own (``.demo-data/`` in the working
directory, or ``--data-dir``): the desk's key, and one SQLite file holding both the pending
requests and the rooms with their history and turn journal. It sets up the room ``demo``
with the person ``demo-user``, serves the desk and its chat on 127.0.0.1:8765 (``--port``
or ``PORT`` to change it; 0 picks a free port) and prints the link to open, with a token for
``demo-user``, and the ``roomkit`` commands that answer from a terminal.

The agent is :class:`~roomkit.desk.demo_model.TripPlannerModel`, a scripted model, unless
``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY`` is set (``ROOMKIT_DEMO_MODEL`` names the model).
Its booking, ``book_trip``, is held for the person's approval: the desk shows it as an
approval card (approve, edit the budget or anything else, reject, or answer instead).

Ctrl-C or SIGTERM stops it (exit status 0; Ctrl-C while it still starts, before it prints
the link, exits 130, as ``roomkit desk`` does). Stop the demo at any moment, even with
SIGKILL: started again on the same folder, it re-drives the turns that were waiting for an
answer, and the questions are still on the page.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from roomkit._interrupts import INTERRUPTED, Interrupts
from roomkit._serving import Server, listen, port_problem, sign_in_link
from roomkit._streams import printable_streams
from roomkit.channels.ai import AIChannel
from roomkit.core.framework import RoomKit
from roomkit.core.store import RoomStore
from roomkit.desk.app import create_desk_app
from roomkit.desk.demo_console import Console, demo_directory, demo_ladder
from roomkit.desk.demo_model import BOOK_TRIP, SYSTEM_PROMPT, TripPlannerModel
from roomkit.desk.stores import close_stores, open_stores
from roomkit.desk.tokens import issue_token, load_or_create_secret
from roomkit.notify import Notifier
from roomkit.providers.ai.base import AIProvider, AITool
from roomkit.stores import DurableStore, PendingStore
from roomkit.tools.approvals import Approval
from roomkit.tools.human_input import (
    ASK_USER_QUESTION,
    HumanInputHandler,
    HumanInputToolHandler,
)

__all__ = [
    "AGENT_CHANNEL",
    "CHAT_CHANNEL",
    "DEMO_PERSON",
    "DEMO_ROOM",
    "Demo",
    "book_trip",
    "build_demo",
    "main",
    "pick_provider",
    "terminal_commands",
]

logger = logging.getLogger("roomkit.desk.demo")

DEMO_ROOM = "demo"
"""The room the demo sets up."""
DEMO_PERSON = "demo-user"
"""The person the printed link signs in."""
SLACK_HINT = "Answer from Slack: `roomkit desk --notify notify.toml` (docs/how-to/slack.md)"
"""How to turn Slack on, the last line the demo prints."""
AGENT_CHANNEL = "agent"
"""The AI channel's id (the sender of the agent's messages)."""
CHAT_CHANNEL = "chat"
"""The channel the page's chat messages come in on."""
DEFAULT_URL = "http://127.0.0.1:8765"
"""Where the demo listens by default (and where ``roomkit pending`` looks by default)."""
DATA_DIR = Path(".demo-data")
"""The data folder, relative to the working directory, when ``--data-dir`` is not given."""
DB_FILE = "demo.db"
"""The SQLite file in the data folder, shared by the request store and the room store."""
QUESTION_TIMEOUT = 3600.0
"""Seconds a person has to answer a question."""
REMIND_AFTER = 60.0
"""Seconds before a question left waiting is announced again (short, for the demo)."""
ESCALATE_AFTER = 120.0
"""Seconds before it is escalated to the person's manager."""


@dataclass
class Demo:
    """A wired demo: the kit and its agent, the desk app, and the secret its tokens use."""

    kit: RoomKit
    """The kit: the agent, the chat channel, the rooms."""
    handler: HumanInputHandler
    """The human-input handler the agent asks through and the desk answers through."""
    app: FastAPI
    """The desk with its chat, ready for uvicorn."""
    secret: bytes = field(repr=False)
    """The desk's secret (tokens are signed with it); left out of the ``repr``."""
    stores: tuple[object, ...] = ()
    """The stores to close with the demo."""
    console: Console | None = None
    """Where reminders and escalations are said (the desk runs its notifier)."""
    human: HumanInputToolHandler | None = None
    """The agent's human-input tools."""
    _resume: asyncio.Task[Any] | None = field(default=None, repr=False)

    def token_for(self, actor_id: str, *, admin: bool = False) -> str:
        """A desk token for ``actor_id``."""
        return issue_token(self.secret, actor_id, admin=admin)

    async def open_room(self, room_id: str, person: str) -> None:
        """Set up ``room_id`` (if new) with ``person`` in it, the agent and the chat attached."""
        kit = self.kit
        if await kit.store.get_room(room_id) is None:
            await kit.create_room(room_id)
        await kit.add_participant(room_id, person)
        bound = {binding.channel_id for binding in await kit.store.list_bindings(room_id)}
        for channel_id in (AGENT_CHANNEL, CHAT_CHANNEL):
            if channel_id not in bound:
                await kit.attach_channel(room_id, channel_id)

    def start(self) -> None:
        """Re-drive, in the background, the turns an earlier run left waiting for a person."""
        resume = getattr(self.kit, "resume_pending", None)
        if resume is not None and self._resume is None:
            self._resume = asyncio.get_running_loop().create_task(resume())

    async def aclose(self) -> None:
        """Close the kit (running turns are cut; their questions stay open in a durable
        store, for the next run to re-drive), then the stores."""
        await self.kit.close()
        if self._resume is not None:
            self._resume.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._resume
        await close_stores(*self.stores)


def pick_provider(environ: Mapping[str, str]) -> AIProvider:
    """Claude with ``ANTHROPIC_API_KEY``, OpenAI with ``OPENAI_API_KEY``, else the script.

    ``ROOMKIT_DEMO_MODEL`` names the model for a real provider.
    """
    model = environ.get("ROOMKIT_DEMO_MODEL")
    if key := environ.get("ANTHROPIC_API_KEY"):
        from roomkit.providers.ai.anthropic import AnthropicAIProvider

        return AnthropicAIProvider(model=model or "claude-opus-5", api_key=key)
    if key := environ.get("OPENAI_API_KEY"):
        from roomkit.providers.ai.openai import OpenAIAIProvider

        return OpenAIAIProvider(model=model or "gpt-4.1", api_key=key)
    return TripPlannerModel()


async def book_trip(name: str, arguments: dict[str, Any]) -> str:
    """The demo's booking, run once a person approved it: a confirmation with a reference
    made from what was booked (nothing is booked anywhere)."""
    text = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    reference = "TRIP-" + hashlib.sha256(text.encode()).hexdigest()[:6].upper()
    return json.dumps({"booked": True, "reference": reference, **arguments}, ensure_ascii=False)


async def _open_stores(data_dir: Path | None) -> tuple[PendingStore | DurableStore, RoomStore]:
    if data_dir is None:
        return open_stores("memory")
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    pending, rooms = open_stores(f"sqlite:///{data_dir / DB_FILE}")
    # Opening now makes an unusable folder fail at start-up, not at the first message.
    for store in (pending, rooms):
        opener = getattr(store, "open", None)
        if opener is not None:
            await opener()
    return pending, rooms


async def build_demo(
    data_dir: Path | None,
    *,
    provider: AIProvider | None = None,
    question_timeout: float = QUESTION_TIMEOUT,
    remind_after: float = REMIND_AFTER,
    escalate_after: float = ESCALATE_AFTER,
    console: Console | None = None,
) -> Demo:
    """Wire the demo: stores, kit, agent, desk and chat, and the room ``demo``.

    Args:
        data_dir: the folder for the key and the SQLite file; ``None`` keeps everything in
            memory (with a fresh secret), for tests.
        provider: the agent's model; :func:`pick_provider` from the environment when
            ``None``.
        question_timeout: seconds a person has to answer.
        remind_after: seconds before a waiting question is announced again.
        escalate_after: seconds before it is escalated to ``demo-manager``.
        console: where reminders and escalations are said; the terminal by default.
    """
    pending, rooms = await _open_stores(data_dir)
    handler = HumanInputHandler(store=pending)
    human = HumanInputToolHandler(
        {"AskUserQuestion"},
        timeout=question_timeout,
        handler=handler,
        tool_definitions=[AITool(**ASK_USER_QUESTION)],
        ladder=demo_ladder(remind_after, escalate_after),
        # The booking waits for the person who asked for the trip (the turn's actor).
        approvals={BOOK_TRIP["name"]: Approval(timeout=question_timeout)},
    )
    console = console if console is not None else Console()
    notifier = Notifier(handler, [console], directory=demo_directory(DEMO_PERSON))
    kit = RoomKit(store=rooms)
    kit.register_channel(
        AIChannel(
            AGENT_CHANNEL,
            provider=provider if provider is not None else pick_provider(os.environ),
            system_prompt=SYSTEM_PROMPT,
            human_input_handler=human,
            tools=[AITool(**BOOK_TRIP)],
            tool_handler=book_trip,
            # A turn may wait on a person for as long as they have to answer, per question.
            tool_loop_timeout_seconds=question_timeout * 8,
        )
    )
    if data_dir is not None:
        secret = await asyncio.to_thread(load_or_create_secret, data_dir)
    else:
        secret = os.urandom(32)
    app = create_desk_app(
        kit,
        handler=handler,
        secret=secret,
        data_dir=data_dir,
        chat_channel_id=CHAT_CHANNEL,
        notifier=notifier,
    )
    demo = Demo(kit, handler, app, secret, (pending, rooms), console=console, human=human)
    await demo.open_room(DEMO_ROOM, DEMO_PERSON)
    return demo


def terminal_commands(url: str, data_dir: Path) -> list[str]:
    """The shell commands that answer the demo's questions from a terminal.

    They call the ``roomkit`` command of this interpreter, with the demo's data folder (for
    the key its tokens are signed with) and, off the default address, the demo's URL.
    """
    script = Path(sys.executable).with_name("roomkit")
    if script.exists():
        roomkit = shlex.quote(_relative(script))
    else:
        roomkit = shlex.join([_relative(Path(sys.executable)), "-m", "roomkit.cli"])
    lines = []
    if url != DEFAULT_URL:
        lines.append(f"export ROOMKIT_DESK_URL={shlex.quote(url)}")
    folder = shlex.quote(str(data_dir))
    lines += [
        f"export ROOMKIT_TOKEN=$({roomkit} token {DEMO_PERSON} --data-dir {folder})",
        f"{roomkit} pending list",
        f"{roomkit} pending show ID",
    ]
    return lines


def _relative(path: Path) -> str:
    """``path`` from the working directory when it lies under it, else as it is."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


async def serve(
    data_dir: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    interrupts: Interrupts | None = None,
) -> None:
    """Run the demo until Ctrl-C or SIGTERM; prints the link to open once it listens, and
    the commands that answer from a terminal; ``interrupts`` watching it is given the
    server to stop."""
    demo = await build_demo(data_dir)
    try:
        with listen(host, port, hint="pass --port (make demo PORT=...)") as sock:
            bound = sock.getsockname()[1]
            # The page opens the chat of the room the fragment names, here the demo's.
            link = f"{sign_in_link(host, bound, demo.token_for(DEMO_PERSON))}&room={DEMO_ROOM}"
            url = link.partition("/#")[0]
            commands = "\n".join(f"  {line}" for line in terminal_commands(url, data_dir))

            def started() -> None:
                print(
                    f"Open {link}\n\nOr answer from a terminal, in another shell in this "
                    f"folder:\n{commands}\n\n{SLACK_HINT}",
                    flush=True,
                )
                demo.start()

            config = uvicorn.Config(demo.app, log_level="warning", access_log=False)
            server = Server(config, on_started=started)
            if interrupts is not None:
                interrupts.server = server
            await server.serve(sockets=[sock])
    finally:
        await demo.aclose()


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m roomkit.desk.demo",
        description="The answer desk with a trip-planning agent. Open the printed link.",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DATA_DIR,
        help="where the demo keeps its key and database (default: .demo-data)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port", type=int, help="port to listen on (default: $PORT or 8765; 0: any free one)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; ``--port`` (or ``PORT``) sets the port (8765 by default, 0 for any)."""
    printable_streams()
    args = _arguments(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    port = args.port
    if port is None:
        try:
            port = int(os.environ.get("PORT") or "8765")
        except ValueError:
            print(f"PORT must be a number, got {os.environ['PORT']!r}", file=sys.stderr)
            return 2
    problem = port_problem(port, option="--port" if args.port is not None else "PORT")
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    interrupts = Interrupts()
    try:
        # Ctrl-C while it starts interrupts it (130); once it serves, Ctrl-C stops it (0).
        return interrupts.run(
            lambda: serve(args.data_dir, host=args.host, port=port, interrupts=interrupts)
        )
    except KeyboardInterrupt:
        return INTERRUPTED
    except OSError as error:
        print(f"Cannot start the demo: {error.strerror or error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

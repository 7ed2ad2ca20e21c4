"""The demo's notification surface: a line on the terminal for each reminder and escalation.

The demo asks ``demo-user``; a question left waiting is re-announced after a minute and
escalated to ``demo-manager`` after two (``make demo`` shows both on its terminal), the way
a webhook or an email would carry them in an application.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from roomkit.notify import Directory, Ladder, Notice, Person, escalate, remind

__all__ = ["DEMO_MANAGER", "Console", "demo_directory", "demo_ladder"]

DEMO_MANAGER = "demo-manager"
"""Who the demo's questions are escalated to."""


def demo_ladder(remind_after: float, escalate_after: float) -> Ladder:
    """The demo's ladder: a reminder, then an escalation to the manager."""
    return Ladder(remind(after=remind_after), escalate(after=escalate_after, to="manager"))


def demo_directory(person: str) -> Directory:
    """``person`` reports to :data:`DEMO_MANAGER`."""
    return Directory({person: Person(manager=DEMO_MANAGER), DEMO_MANAGER: Person()})


class Console:
    """Says each reminder, escalation and ending through ``say`` (``print`` by default)."""

    name = "console"

    def __init__(self, say: Callable[[str], None] | None = None) -> None:
        self.lines: list[str] = []
        self._say = say or (lambda line: print(line, flush=True))

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        return recipient is not None

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        question = str(notice.request.arguments.get("question", notice.request.tool_name))
        who = notice.recipient
        line = {
            "question_pending": f"[asked {who}] {question}",
            "question_reminder": f"[reminder to {who}] still waiting: {question}",
            "question_escalated": f"[escalated, told {who}] {question}",
            "question_edited": f"[edited, told {who}] vote again: {question}",
            "question_settled": f"[closed, told {who}] {question} ({notice.outcome})",
        }[notice.type]
        self.lines.append(line)
        self._say(line)
        return None

    async def aclose(self) -> None:
        return None

"""mypy types user calls through the keyword sets declared once (``Unpack`` TypedDicts)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mypy import api

USER_CODE = """
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.base import DurableStore, PendingStore
from roomkit.stores.memory import MemoryStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.voice.realtime.base import RealtimeProvider, RealtimeSession
from roomkit.voice.realtime.mock import MockRealtimeProvider

RESOLVED = PendingInputStatus.RESOLVED


async def good(p: PendingStore, d: DurableStore, v: RealtimeProvider, s: RealtimeSession) -> None:
    p.settle("a", RESOLVED, result="yes", settled_by="ann")
    await d.settle("a", RESOLVED, reason=None, withdrawn=True, token="t")
    await d.list_pending(room_id="r", actor_id=None)
    await v.connect(s, system_prompt="Be brief.", tools=[{"name": "Ask"}])


async def bad(p: PendingStore, d: DurableStore, v: RealtimeProvider, s: RealtimeSession) -> None:
    p.settle("a", RESOLVED, reslt="yes")  # rejected
    await d.settle("a", RESOLVED, withdrawn="yes")  # rejected
    await d.list_pending(room="r")  # rejected
    await v.connect(s, prompt="Be brief.")  # rejected


async def stores_conform(s: RealtimeSession) -> None:
    await good(MemoryStore(), SQLiteStore("kit.db"), MockRealtimeProvider(), s)
"""


def test_mypy_checks_calls_against_the_declared_keywords(tmp_path: Path) -> None:
    source = tmp_path / "user_code.py"
    source.write_text(USER_CODE, encoding="utf-8")
    # mypy raises the process's recursion limit for good: the tests run after this one in
    # the process would then read arguments nested past Python's stack as if they were not.
    limit = sys.getrecursionlimit()
    try:
        out, err, _ = api.run(
            ["--strict", "--no-incremental", "--cache-dir", os.devnull, str(source)]
        )
    finally:
        sys.setrecursionlimit(limit)
    flagged = [int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line]
    rejected = [n for n, line in enumerate(USER_CODE.splitlines(), 1) if "# rejected" in line]
    assert flagged == rejected, out + err

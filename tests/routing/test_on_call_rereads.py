"""An iCal schedule read again: a lookup given up leaves the read under way to the next one,
and a file replaced is read again however its times were kept."""

from __future__ import annotations

import asyncio
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_on_call import ALICE_ALL_DECEMBER, calendar

from roomkit.routing import ICalOnCall

DECEMBER = datetime(2026, 12, 5, 12, tzinfo=UTC)


async def test_a_lookup_given_up_leaves_its_preparation_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large schedule takes longer to prepare than a lookup is given: each lookup starting
    it afresh, on a thread nobody can stop, it would never be ready."""
    import recurring_ical_events  # type: ignore[import-untyped]

    schedule = ICalOnCall(calendar(tmp_path, ALICE_ALL_DECEMBER))
    loop = asyncio.get_running_loop()
    started, released = asyncio.Event(), threading.Event()
    prepared: list[int] = []
    prepare = recurring_ical_events.of

    def slowly(*args: Any, **kwargs: Any) -> Any:
        prepared.append(threading.get_ident())
        loop.call_soon_threadsafe(started.set)
        released.wait(timeout=60)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(recurring_ical_events, "of", slowly)
    given_up = asyncio.create_task(schedule.on_call_at(DECEMBER))
    await started.wait()
    given_up.cancel()
    with pytest.raises(asyncio.CancelledError):
        await given_up
    waiting = asyncio.create_task(schedule.on_call_at(DECEMBER))
    released.set()
    assert await waiting == "alice"
    assert len(prepared) == 1
    assert await schedule.on_call_at(DECEMBER) == "alice"
    assert len(prepared) == 1


@pytest.mark.parametrize("how", ["renamed over it", "written in place"])
async def test_a_schedule_changed_with_its_modification_time_kept_is_read_again(
    tmp_path: Path, how: str
) -> None:
    """A deploy may keep a file's time (``cp -p``, ``rsync -t``, an image's fixed times),
    and a file caught half written is finished within the same tick of the clock."""
    path = calendar(tmp_path, ALICE_ALL_DECEMBER)
    schedule = ICalOnCall(path)
    assert await schedule.on_call_at(DECEMBER) == "alice"
    kept = path.stat().st_mtime_ns
    text = path.read_text().replace("SUMMARY:alice", "SUMMARY:robert")
    if how == "renamed over it":
        fresh = tmp_path / "fresh.ics"
        fresh.write_text(text)
        os.utime(fresh, ns=(kept, kept))
        os.replace(fresh, path)
    else:
        path.write_text(text)
        os.utime(path, ns=(kept, kept))
    assert path.stat().st_mtime_ns == kept
    assert await schedule.on_call_at(DECEMBER) == "robert"

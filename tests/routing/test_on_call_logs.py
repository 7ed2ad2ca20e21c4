"""What an iCal schedule says reaches the log quoted: its text cannot write a log line."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_on_call import ALICE_ALL_DECEMBER, calendar

from roomkit.routing import ICalOnCall

FORGED = "WARNING roomkit.routing: ICalOnCall: all clear"


@pytest.mark.parametrize(
    ("uid", "quoted"),
    [
        (f"bad\\n{FORGED}", f"'bad\\n{FORGED}'"),
        (f"bad\r{FORGED}", f"'bad\\r{FORGED}'"),
        ("bad\x1b[2Kcleared", "'bad\\x1b[2Kcleared'"),
    ],
)
async def test_a_skipped_events_uid_is_logged_quoted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, uid: str, quoted: str
) -> None:
    schedule = ICalOnCall(
        calendar(
            tmp_path, ALICE_ALL_DECEMBER, f"UID:{uid}\r\nSUMMARY:bob\r\nDTEND:20200102T000000Z"
        )
    )

    with caplog.at_level("WARNING", logger="roomkit.routing"):
        assert await schedule.on_call_at(datetime(2026, 12, 5, 12, tzinfo=UTC)) == "alice"
    (warned,) = [record.getMessage() for record in caplog.records]
    assert f"with UID {quoted}: they have no DTSTART" in warned
    assert "\n" not in warned
    assert "\r" not in warned
    assert "\x1b" not in warned


async def test_a_calendar_no_longer_readable_is_logged_quoted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The parser's message quotes the line it could not read: the log escapes it."""
    path = calendar(tmp_path, ALICE_ALL_DECEMBER)
    schedule = ICalOnCall(path)
    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    assert await schedule.on_call_at(now) == "alice"
    path.write_bytes(b"BEGIN:VCALENDAR\r\nX\x1b[2K\nWARNING forged\r\nEND:VCALENDAR\r\n")
    stamp = path.stat().st_mtime + 60
    os.utime(path, (stamp, stamp))

    with caplog.at_level("WARNING", logger="roomkit.routing"):
        assert await schedule.on_call_at(now) == "alice"
    (warned,) = [record.getMessage() for record in caplog.records]
    assert "could not read the file again" in warned
    assert "\\x1b[2K" in warned
    assert "\x1b" not in warned
    assert "\n" not in warned

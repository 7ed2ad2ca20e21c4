"""The notifier's TOML file lists delegations, roles and on-call schedules."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from roomkit.core.exceptions import NotifyConfigError
from roomkit.notify.config import load_notify_config
from roomkit.routing import ICalOnCall

SCHEDULE = Path(__file__).parent / "fixtures" / "payments.ics"
HEAD = """
[email]
directory = "outbox/"
sender = "roomkit@example.com"

[people.alice]
email = "alice@example.com"
manager = "mallory"
"""


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "notify.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_notify_config(path, environ={})


def test_delegations_roles_and_schedules_are_read(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        f"""
[[people.alice.delegations]]
to = "carol"
starts = 2026-12-02T09:00:00Z
ends = 2026-12-12T09:00:00Z
tools = ["pay"]
reason = "on leave"

[roles.kyc]
members = ["dan", "erin"]
rule = "rotation"

[on_call.payments]
ical = "{SCHEDULE.as_posix()}"
""",
    )
    directory = config.directory  # type: ignore[attr-defined]
    at = datetime(2026, 12, 5, tzinfo=UTC)
    assert [s.actor for s in directory.stand_ins("alice", at, "pay")] == ["carol"]
    assert directory.stand_ins("alice", at, "wire") == []
    assert directory.roles["kyc"].members == ("dan", "erin")
    assert directory.roles["kyc"].rule == "rotation"
    assert isinstance(directory.on_call["payments"], ICalOnCall)


def test_a_cycle_in_the_file_names_it(tmp_path: Path) -> None:
    text = """
[[people.alice.delegations]]
to = "bob"
starts = 2026-12-02T09:00:00Z
ends = 2026-12-12T09:00:00Z

[people.bob]
[[people.bob.delegations]]
to = "alice"
starts = 2026-12-05T09:00:00Z
ends = 2026-12-06T09:00:00Z
"""
    with pytest.raises(NotifyConfigError, match=r"cycle \(alice -> bob -> alice\)"):
        load(tmp_path, text)


def test_a_time_without_its_offset_is_refused(tmp_path: Path) -> None:
    text = """
[[people.alice.delegations]]
to = "bob"
starts = 2026-12-02T09:00:00
ends = 2026-12-12T09:00:00Z
"""
    with pytest.raises(NotifyConfigError, match=r"delegations #1 starts: must be a date-time"):
        load(tmp_path, text)

"""The notifier's TOML file lists delegations, roles and on-call schedules."""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.doc_pages import page_blocks

from roomkit.core.exceptions import NotifyConfigError
from roomkit.notify.config import load_notify_config
from roomkit.people import Directory, Person
from roomkit.routing import ICalOnCall
from roomkit.tools.human_input import HumanInputHandler

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
    return load_notify_config(path, environ={"PD": "pd-token", "PD_LINES": "pd\ntoken"})


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


def test_a_cycle_of_managers_in_the_file_names_it(tmp_path: Path) -> None:
    text = '[people.mallory]\nmanager = "alice"\n'
    with pytest.raises(NotifyConfigError, match=r"cycle \(alice -> mallory -> alice\)") as raised:
        load(tmp_path, text)
    assert "\n" not in str(raised.value)


def test_a_group_named_with_a_control_character_is_refused(tmp_path: Path) -> None:
    """Told with the name escaped, never with the control character itself."""
    for text in ('[roles."k\\u0000yc"]\nmembers = ["dan"]\n', '[roles."kyc\\n"]\nbad = 1\n'):
        with pytest.raises(NotifyConfigError) as raised:
            load(tmp_path, text)
        said = str(raised.value)
        assert "\\x00" in said or "\\n" in said, said
        assert said.isprintable(), said


def test_a_time_without_its_offset_is_refused(tmp_path: Path) -> None:
    text = """
[[people.alice.delegations]]
to = "bob"
starts = 2026-12-02T09:00:00
ends = 2026-12-12T09:00:00Z
"""
    with pytest.raises(NotifyConfigError, match=r"delegations #1 starts: must be a date-time"):
        load(tmp_path, text)


def test_the_delegation_page_s_file_is_a_good_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The TOML of docs/how-to/delegation.md loads as it is written, its schedule read from
    beside the file, with no warning (each delegate is in the directory)."""
    [text] = page_blocks("docs/how-to/delegation.md", "toml", "[on_call.payments]")
    (tmp_path / "schedules").mkdir()
    shutil.copy(SCHEDULE, tmp_path / "schedules" / "payments.ics")
    path = tmp_path / "notify.toml"
    path.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        directory = load_notify_config(path, environ={}).directory
    assert not [record.getMessage() for record in caplog.records]
    assert directory.roles["kyc"].members == ("dan", "erin", "frank")
    assert isinstance(directory.on_call["payments"], ICalOnCall)
    assert directory.on_call["payments"].path == tmp_path / "schedules" / "payments.ics"
    at = datetime(2026, 12, 5, tzinfo=UTC)
    assert [s.actor for s in directory.stand_ins("alice", at, "pay")] == ["carol"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[on_call.payments]\nical = "schedules/typo.ics"\n',
            "[on_call.payments] ical: ICalOnCall: cannot read",
        ),
        ('[on_call.payments]\nical = "notify.toml"\n', "is not an iCal calendar"),
        (
            '[on_call.payments]\nical = "/dev/zero"\n',
            "[on_call.payments] ical: ICalOnCall: '/dev/zero' is not a regular file",
        ),
        ('[on_call.payments]\nical = "."\n', "[on_call.payments] ical: ICalOnCall: '"),
        (
            '[on_call.payments]\nical = "~no-such-user-here/payments.ics"\n',
            "[on_call.payments] ical: '~no-such-user-here/payments.ics' names the home folder",
        ),
        (
            "[on_call.payments]\npagerduty_schedule = 'P1'\npagerduty_token_env = 'PD_LINES'\n",
            "[on_call.payments] pagerduty_token_env: the environment variable PD_LINES holds",
        ),
        (
            "[[people.alice.delegations]]\nto = 'bob'\nstarts = 2026-12-02T09:00:00Z\n"
            "ends = 2026-12-12T09:00:00Z\ntools = []\n",
            "names no tool: leave tools out",
        ),
        ("[roles.'']\nmembers = ['dan']\n", "a role is named by text"),
        (
            "[[people.alice.delegations]]\nto = 'bob'\nstarts = 2026-12-02\n"
            "ends = 2026-12-12T09:00:00Z\n",
            "delegations #1 starts: must be a date-time",
        ),
        ("[roles.kyc]\nmembers = 'dan'\n", "[roles.kyc] members: must be a list"),
        (
            "[on_call.payments]\npagerduty_schedule = 'P1'\npagerduty_token_env = 'PD'\n"
            "pagerduty_url = 'file:///etc/passwd'\n",
            "[on_call.payments]: PagerDutyOnCall(base_url=...) is the API's https:// address",
        ),
        (
            "[on_call.payments]\npagerduty_schedule = 'P1'\npagerduty_token_env = 'PD'\n"
            "pagerduty_url = 'http://pagerduty.example.com'\n",
            "plain http:// is taken only for this machine (127.0.0.1, ::1, localhost)",
        ),
    ],
)
def test_a_wrong_value_is_one_line_naming_the_file_once(
    tmp_path: Path, text: str, message: str
) -> None:
    """Each mistake is told when the file is loaded, naming the file once and the key."""
    with pytest.raises(NotifyConfigError) as raised:
        load(tmp_path, text)
    said = str(raised.value)
    assert message in said
    assert said.count("notify.toml") == 1 + ('ical = "notify.toml"' in text), said
    assert "\n" not in said


def test_the_files_notifier_follows_the_handlers_directory(tmp_path: Path) -> None:
    """A file naming no one gives a handler's notifier the handler's directory; a file
    whose delegations the handler does not route is told, saying what to do."""
    routed = HumanInputHandler(directory=Directory({"bob": Person(email="bob@example.com")}))
    bare = tmp_path / "bare.toml"
    bare.write_text(HEAD.split("[people.alice]")[0], encoding="utf-8")
    notifier = load_notify_config(bare, environ={}).notifier(routed)
    assert notifier.directory is routed.directory
    config = load(
        tmp_path,
        """
[[people.alice.delegations]]
to = "carol"
starts = 2026-12-02T09:00:00Z
ends = 2026-12-12T09:00:00Z
""",
    )
    with pytest.raises(ValueError, match=r"HumanInputHandler\(directory=\.\.\.\)"):
        config.notifier(HumanInputHandler())  # type: ignore[attr-defined]
    own = HumanInputHandler(directory=config.directory)  # type: ignore[attr-defined]
    assert config.notifier(own).directory is own.directory  # type: ignore[attr-defined]

"""The notifier's TOML file: a good one builds every surface, the directory and the ladder;
a wrong one is one line naming the key at fault, before anything starts."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from tests.doc_pages import ROOT, page_blocks
from tests.notify.receiver import SECRET

from roomkit.cli import main
from roomkit.core.exceptions import NotifyConfigError
from roomkit.notify import Person
from roomkit.notify.config import load_notify_config
from roomkit.notify.ladders import give_ladder
from roomkit.stores.outbox import outbox_for
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import (
    Default,
    Escalate,
    Ladder,
    Remind,
    escalate,
    record_ladder,
    remind,
)

ENV = {
    "HOOK_SECRET": SECRET,
    "SMTP_PASSWORD": "hunter2",
    "SLACK_BOT_TOKEN": "xoxb-1",
    "SLACK_SIGNING_SECRET": "s3cret",
}
GOOD = """
desk_url = "https://desk.example.com"

[[webhook]]
url = "https://example.com/hooks/roomkit"
secret_env = "HOOK_SECRET"

[[webhook]]
url = "http://127.0.0.1:9000/audit"
secret_env = "HOOK_SECRET"
name = "audit"

[email]
host = "smtp.example.com"
port = 465
username = "roomkit"
password_env = "SMTP_PASSWORD"
sender = "roomkit@example.com"
tls = "tls"

[slack]
token_env = "SLACK_BOT_TOKEN"
signing_secret_env = "SLACK_SIGNING_SECRET"
channel = "C0TEAM"
team = "T0TEAM"

[[apprise]]
urls = ["json://127.0.0.1:9001/notices"]

[people.alice]
email = "alice@example.com"
slack_user = "U0ALICE"
manager = "bob"

[people.bob]
email = "bob@example.com"

[ladder]
remind_after = 600
escalate_after = 1800.5
escalate_to = "carol"
default = "no"
"""
SLACK = '[slack]\ntoken_env = "SLACK_BOT_TOKEN"\nsigning_secret_env = "SLACK_SIGNING_SECRET"\n'
HOOK = '[[webhook]]\nurl = "https://example.com/h"\nsecret_env = "HOOK_SECRET"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "notify.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def test_a_good_file_builds_surfaces_directory_and_ladder(tmp_path: Path) -> None:
    config = load_notify_config(write(tmp_path, GOOD), environ=ENV)
    try:
        assert [s.name for s in config.surfaces] == [
            "webhook1",
            "audit",
            "email",
            "slack",
            "apprise",
        ]
        assert config.desk_url == "https://desk.example.com"
        assert config.directory.get("alice") == Person("alice@example.com", "U0ALICE", "bob")
        assert config.directory.actor_for_slack_user("U0ALICE") == "alice"
        assert config.ladder is not None
        assert config.ladder.steps == (Remind(600.0), Escalate(1800.5, "carol"))
        assert config.ladder.on_expiry == Default("no")
        slack = config.slack
        assert slack is not None
        assert getattr(slack, "signing_secret", None) == "s3cret"
        assert getattr(slack, "channel", None) == "C0TEAM"
        assert getattr(slack, "team", None) == "T0TEAM"
        email = config.surfaces[2]
        assert (getattr(email, "port", None), getattr(email, "security", None)) == (465, "tls")
    finally:
        for surface in config.surfaces:
            await surface.aclose()


async def test_a_small_file_has_defaults(tmp_path: Path) -> None:
    config = load_notify_config(
        write(tmp_path, HOOK + "[ladder]\nescalate_after = 60\n"), environ=ENV
    )
    try:
        assert [s.name for s in config.surfaces] == ["webhook"]
        assert (config.desk_url, config.slack, len(config.directory)) == (None, None, 0)
        assert config.ladder is not None
        assert config.ladder.steps == (Escalate(60.0, "manager"),)
    finally:
        await config.surfaces[0].aclose()


BAD = [
    ("desk_url = 3\n" + HOOK, "desk_url", "must be non-empty text, not 3"),
    (
        'desk_url = "desk.example.com"\n' + HOOK,
        "desk_url",
        "the URL must be an http:// or https:// URL, not",
    ),
    (
        'desk_url = "https://desk.example.com:0"\n' + HOOK,
        "desk_url",
        "the URL names the port '0' in 'desk.example.com:0': give a port from 1 to 65535",
    ),
    (
        'desk_url = "https://desk.example.com/#inbox"\n' + HOOK,
        "desk_url",
        "the URL holds a fragment (#...), where answer links put their token",
    ),
    ("colour = 1\n" + HOOK, "colour", "unknown key (the keys here: desk_url, webhook,"),
    ("", "", "names no surface: add a [[webhook]], [email],"),
    (
        '[webhook]\nurl = "https://x.example"\n',
        "webhook",
        "write one [[webhook]] table for each webhook",
    ),
    ('[[webhook]]\nsecret_env = "HOOK_SECRET"\n', "[[webhook]] url", "is missing"),
    (
        '[[webhook]]\nurl = "ftp://x.example"\nsecret_env = "HOOK_SECRET"\n',
        "[[webhook]] url",
        "the URL must be an http:// or https:// URL, not",
    ),
    (
        HOOK + '[people.alice]\nemail = "alice@example.com\\r\\nBcc: eve@example.com"\n',
        "[people.alice] email",
        "must be one line, with no control character",
    ),
    (
        '[[webhook]]\nurl = "https://[fd00::1/hooks"\nsecret_env = "HOOK_SECRET"\n',
        "[[webhook]] url",
        "the URL cannot be read as a URL (Invalid IPv6 URL): give an http:// or https:// URL",
    ),
    (
        '[[webhook]]\nurl = "https://x.example:70000/"\nsecret_env = "HOOK_SECRET"\n',
        "[[webhook]] url",
        "the URL names the port '70000' in 'x.example:70000': give a port from 1 to 65535",
    ),
    (
        '[[webhook]]\nurl = "https://x.example:0/h?token=t0p"\nsecret_env = "HOOK_SECRET"\n',
        "[[webhook]] url",
        "the URL names the port '0' in 'x.example:0': give a port from 1 to 65535",
    ),
    (
        SLACK + 'api_url = "http://127.0.0.1:0/api"\n',
        "[slack] api_url",
        "the URL names the port '0' in '127.0.0.1:0': give a port from 1 to 65535",
    ),
    (
        '[ntfy]\nserver = "https://ntfy.example.com:0"\ntopic = "a-{actor}-k3"\n',
        "[ntfy] server",
        "the URL names the port '0' in 'ntfy.example.com:0': give a port from 1 to 65535",
    ),
    (
        '[[webhook]]\nurl = "https://x.example"\nsecret_env = "NOPE"\n',
        "[[webhook]] secret_env",
        "the environment variable NOPE is not set",
    ),
    (
        '[[webhook]]\nurl = "https://x.example"\nsecret_env = "EMPTY"\n',
        "[[webhook]] secret_env",
        "the environment variable EMPTY is empty",
    ),
    (
        '[[webhook]]\nurl = "https://x.example"\nsecret_env = "SMTP_PASSWORD"\n',
        "[[webhook]] secret_env",
        "the environment variable SMTP_PASSWORD holds no",
    ),
    (
        '[[webhook]]\nurl = "https://x.example"\nsecret = "whsec_x"\n',
        "[[webhook]] secret",
        "unknown key (the keys here: url, secret_env,",
    ),
    (
        HOOK + HOOK.replace("https://example.com/h", "https://b.example") + 'name = "webhook1"\n',
        "[[webhook]] #2 name",
        "'webhook1' is [[webhook]] #1's already",
    ),
    ('[email]\nsender = "r@example.com"\n', "[email] host", "is missing"),
    (
        '[email]\nhost = "smtp"\nport = "587"\nsender = "r@example.com"\n',
        "[email] port",
        "must be a port number (587, 465, 25), not '587'",
    ),
    (
        '[email]\nhost = "smtp"\nsender = "roomkit"\n',
        "[email] sender",
        "must be an email address, not 'roomkit'",
    ),
    (
        '[email]\nhost = "smtp"\nsender = "r@example.com"\nusername = "r"\n',
        "[email] password_env",
        "username and password_env go together",
    ),
    (
        '[email]\nhost = "smtp"\nsender = "r@example.com"\ntls = "ssl"\n',
        "[email] tls",
        "is 'starttls', 'tls' or 'none', not 'ssl'",
    ),
    (
        '[email]\nhost = "smtp"\nsender = "r@example.com"\ncafile = "/no/such/ca.pem"\n',
        "[email] cafile",
        "Email(cafile='/no/such/ca.pem') cannot be read as PEM certificates",
    ),
    (
        '[email]\nhost = "smtp"\nsender = "r@example.com"\npassword = "x"\n',
        "[email] password",
        "unknown key (the keys here: host, port,",
    ),
    ('[slack]\nsigning_secret_env = "SLACK_SIGNING_SECRET"\n', "[slack] token_env", "is missing"),
    (
        '[slack]\ntoken_env = "SLACK_BOT_TOKEN"\nsigning_secret_env = "SLACK_SIGNING"\n',
        "[slack] signing_secret_env",
        "the environment variable SLACK_SIGNING is not",
    ),
    (
        '[slack]\ntoken_env = "SLACK_BOT_TOKEN"\nsigning_secret_env = 7\n',
        "[slack] signing_secret_env",
        "must be non-empty text, not 7",
    ),
    (SLACK + 'channel = ""\n', "[slack] channel", "must be non-empty text, not ''"),
    (
        SLACK + 'api_url = "localhost:3000"\n',
        "[slack] api_url",
        "the URL must be an http:// or https:// URL, not",
    ),
    (SLACK + 'workspace = "T0"\n', "[slack] workspace", "unknown key (the keys here: token_env,"),
    (SLACK + 'team = "T0 TEAM"\n', "[slack]", "Slack(team=...) is the id of the app's Slack"),
    ("slack = 1\n", "[slack]", "must be a table (slack = {...} or a [section])"),
    ("[[apprise]]\nurls = []\n", "[[apprise]] urls", "must be a list of Apprise URLs, e.g."),
    (
        '[[apprise]]\nurls = ["nope-not-a-scheme://x"]\n',
        "[[apprise]] urls",
        "Apprise(): URL #1 (nope-not-a-scheme://...) is",
    ),
    (HOOK + "[people.alice]\nemail = 5\n", "[people.alice] email", "must be non-empty text, not 5"),
    (
        HOOK + '[people.alice]\nphone = "1"\n',
        "[people.alice] phone",
        "unknown key (the keys here: email, slack_user,",
    ),
    (
        HOOK + '[people]\nalice = "alice@example.com"\n',
        "[people.alice]",
        "must be a table (people.alice = {...} or a",
    ),
    (
        HOOK + '[people.alice]\nslack_user = "U1"\n[people.bob]\nslack_user = "U1"\n',
        "[people.bob] slack_user",
        "U1 is alice's already",
    ),
    (
        HOOK + '[people."alice "]\nemail = "alice@example.com"\n',
        "[people.'alice ']",
        "the actor name starts or ends with a space: an actor name is 1 to 256 printable",
    ),
    (
        HOOK + "[people." + "a" * 300 + "]\n",
        "[people.'" + "a" * 39 + "]",
        "the actor name is 300 characters long, more than 256",
    ),
    (
        HOOK + '[people.alice]\nmanager = "bo\\nb"\n',
        "[people.alice] manager",
        "the actor name holds the unprintable character U+000A",
    ),
    (
        HOOK + '[ladder]\nescalate_after = 60\nescalate_to = "b\\u0000b"\n',
        "[ladder] escalate_to",
        "the actor name holds the unprintable character U+0000",
    ),
    (
        HOOK + "[ladder]\nremind_after = 0\n",
        "[ladder] remind_after",
        "must be a positive number of seconds, not 0",
    ),
    (
        HOOK + '[ladder]\nescalate_after = "1h"\n',
        "[ladder] escalate_after",
        "must be a number of seconds, not '1h'",
    ),
    (
        HOOK + '[ladder]\nescalate_to = "bob"\n',
        "[ladder] escalate_to",
        "needs escalate_after (seconds) to say when",
    ),
    (HOOK + "[ladder]\ndefault = false\n", "[ladder] default", "must be non-empty text, not False"),
    (
        HOOK + "[ladder]\nremind = 5\n",
        "[ladder] remind",
        "unknown key (the keys here: remind_after,",
    ),
]


@pytest.mark.parametrize(("text", "where", "says"), BAD, ids=[where for _, where, _ in BAD])
def test_a_wrong_file_names_the_key_at_fault(
    tmp_path: Path, text: str, where: str, says: str
) -> None:
    """One line: the file, where in it (the table and the key), and what is wrong."""
    path = write(tmp_path, text)
    with pytest.raises(NotifyConfigError) as caught:
        load_notify_config(path, environ={**ENV, "EMPTY": ""})
    line = str(caught.value)
    assert line.startswith(f"{path}: {where}: {says}" if where else f"{path} {says}"), line
    assert caught.value.key == where
    assert "\n" not in line


NAMED = [
    (HOOK, "[[webhook]]", "webhook"),
    ('[[apprise]]\nurls = ["json://127.0.0.1:9001/notices"]\n', "[[apprise]]", "apprise"),
    ('[webpush]\nsubject = "mailto:ops@example.com"\ndata_dir = "DESK"\n', "[webpush]", "webpush"),
    ('[ntfy]\nserver = "https://ntfy.example.com"\ntopic = "a-{actor}-k3"\n', "[ntfy]", "ntfy"),
]


@pytest.mark.parametrize(("text", "where", "default"), NAMED, ids=[w for _, w, _ in NAMED])
def test_a_surface_name_no_history_keeps_names_its_key(
    tmp_path: Path, text: str, where: str, default: str
) -> None:
    """A ``name`` longer than a surface may be is one line naming the table's ``name`` key,
    before any surface is made."""
    desk = (tmp_path / "desk").as_posix()  # the [webpush] key file's folder
    path = write(tmp_path, text.replace("DESK", desk) + f'name = "{"n" * 257}"\n')
    with pytest.raises(NotifyConfigError) as caught:
        load_notify_config(path, environ=ENV)
    assert str(caught.value) == (
        f"{path}: {where} name: the surface's name is 257 characters, over the 256 a surface "
        "may have on every store (each shown and delivered entry records it): pass a short "
        f"name, such as {default!r}"
    )
    assert caught.value.key == f"{where} name"
    assert sorted(tmp_path.iterdir()) == [path]


def test_a_file_that_is_not_toml_or_not_there_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[slack\n")
    with pytest.raises(NotifyConfigError, match=r"notify\.toml is not valid TOML: .*line 1"):
        load_notify_config(path, environ=ENV)
    with pytest.raises(NotifyConfigError, match=r"absent\.toml cannot be read: No such file"):
        load_notify_config(tmp_path / "absent.toml", environ=ENV)


@pytest.mark.parametrize("command", ["notify", "desk"])
def test_the_commands_refuse_a_wrong_file_with_one_line_and_status_2(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    monkeypatch.setenv("ROOMKIT_DESK_SECRET", "x" * 32)
    path = write(tmp_path, SLACK)
    store = f"sqlite:///{tmp_path / 'desk.db'}"
    argv = (
        ["notify", "--store", store, "--config", str(path)]
        if command == "notify"
        else ["desk", "--store", store, "--port", "0", "--notify", str(path)]
    )
    assert main([*argv, "--data-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"roomkit: {path}: [slack] token_env: the environment variable SLACK_BOT_TOKEN is not set\n"
    )


def test_roomkit_notify_refuses_a_memory_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, HOOK)
    assert main(["notify", "--store", "memory", "--config", str(path)]) == 2
    assert "A memory store lives inside one process" in capsys.readouterr().err


async def test_the_file_s_ladder_goes_to_requests_without_one_of_their_own() -> None:
    """A request whose tool recorded a ladder keeps it; a settled one gets nothing."""
    handler = HumanInputHandler()
    own, bare, settled = [
        await handler.create("ask", {"question": question}, actor_id="alice")
        for question in ("Own?", "Bare?", "Done?")
    ]
    await record_ladder(handler, own, Ladder(remind(30)))
    await handler.aresolve(settled.pending_id, "yes", by="alice")
    ladder = Ladder(remind(5), escalate(10))
    given = [await give_ladder(handler, ladder, r.pending_id) for r in (own, bare, settled)]
    assert given == [False, True, False]
    assert await give_ladder(handler, ladder, bare.pending_id) is False
    outbox = outbox_for(handler)
    jobs = [item.body["job"] for item in await outbox.items_for(bare.pending_id)]
    assert sorted(jobs) == ["escalate", "remind"]
    assert [item.body["job"] for item in await outbox.items_for(own.pending_id)] == ["remind"]


def readme_toml() -> str:
    """The TOML block of the guide to notifying from a file."""
    [text] = page_blocks("docs/how-to/notify-from-a-file.md", "toml")
    return text


SURFACE_EXTRAS = {"webhook": "notify", "email": "notify", "slack": "slack", "apprise": "apprise"}
"""The extra each surface of the guide's file needs, as ``pip install`` names it."""


def test_the_guide_names_the_extras_its_file_and_the_desk_need() -> None:
    """A reader of the guide on a fresh install learns there what its commands need."""
    document = tomllib.loads(readme_toml())
    page = (ROOT / "docs" / "how-to" / "notify-from-a-file.md").read_text(encoding="utf-8")
    named = re.search(r"pip install -e '\.\[([\w,-]+)\]'", page)
    assert named is not None, "the guide gives no pip install line"
    needed = {"desk"} | {extra for table, extra in SURFACE_EXTRAS.items() if table in document}
    assert needed <= set(named.group(1).split(","))


async def test_the_readme_s_file_is_a_good_one(tmp_path: Path) -> None:
    text = readme_toml()
    environ = {
        "ROOMKIT_WEBHOOK_SECRET": SECRET,
        "SMTP_PASSWORD": "x",
        "SLACK_BOT_TOKEN": "xoxb-1",
        "SLACK_SIGNING_SECRET": "s",
    }
    config = load_notify_config(write(tmp_path, text), environ=environ)
    for surface in config.surfaces:
        await surface.aclose()
    assert [s.name for s in config.surfaces] == ["webhook", "email", "slack", "apprise"]
    assert config.ladder is not None
    assert config.ladder.on_expiry == Default('{"answer": "no"}')

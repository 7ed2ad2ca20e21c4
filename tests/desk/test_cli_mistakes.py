"""Mistakes a newcomer makes on the command line end in one line saying what to do."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import pytest

from roomkit.cli import answer_body, main
from roomkit.desk import demo
from roomkit.desk.tokens import KEY_FILE
from roomkit.stores.sqlite import SQLiteStore


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_TOKEN", "ROOMKIT_DESK_URL", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)


def test_verifying_a_database_that_does_not_exist_says_so_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for action in ("verify", "export"):
        assert main(["audit", action, "--store", "sqlite:///desk.db"]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith("roomkit: desk.db does not exist")
        assert err.count("\n") == 1
    assert not (tmp_path / "desk.db").exists()


def _foreign(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('kept')")


@pytest.mark.parametrize("kind", ["empty", "foreign"])
@pytest.mark.parametrize(
    "command",
    [
        ["audit", "verify"],
        ["audit", "export"],
        ["audit", "checkpoint"],
        ["grants", "list"],
        ["grants", "revoke", "g-1"],
    ],
)
def test_a_file_without_a_store_is_refused_and_left_as_it_was(
    kind: str,
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A command on the desk's store never writes roomkit's tables into a file that holds
    none: an empty file, or another program's database."""
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", "a-key-long-enough-to-sign-with")
    path = tmp_path / "other.db"
    path.touch() if kind == "empty" else _foreign(path)
    before = path.read_bytes()
    assert main([*command, "--store", f"sqlite:///{path}"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"roomkit: {path} holds no roomkit store")
    assert "--store" in err
    assert err.count("\n") == 1
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["other.db"]


def test_listing_the_grants_of_a_store_without_any_leaves_it_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "desk.db"

    async def make() -> None:
        async with SQLiteStore(path) as store:
            assert await store.fetch("none") is None

    asyncio.run(make())
    before = path.read_bytes()
    assert main(["grants", "list", "--store", f"sqlite:///{path}"]) == 0
    assert capsys.readouterr().out == "No grants\n"
    assert path.read_bytes() == before


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_one_line(
    port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["desk", "--port", port, "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        err == f"roomkit: --port takes a port from 1 to 65535 (or 0 for any free one), got {port}\n"
    )


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--rate", "0"), ("--burst", "0"), ("--admin-rate", "-1"), ("--admin-burst", "0")],
)
def test_a_rate_limit_that_is_no_positive_number_is_one_line(
    flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["desk", flag, value, "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{flag} takes a positive " in err
    assert "DeskLimits" not in err


def test_the_demo_refuses_a_port_out_of_range_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert demo.main(["--port", "99999", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "--port takes a port from 1 to 65535 (or 0 for any free one), got 99999\n"
    assert not (tmp_path / "demo.db").exists()


def test_a_token_without_data_dir_names_the_folder_whose_key_signed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path))
    assert main(["token", "alice"]) == 0
    out, err = capsys.readouterr()
    assert out.endswith("\n")
    assert " " not in out.strip()
    assert err.startswith(f"Signed with the key in {tmp_path} (no --data-dir given)")
    assert f"--data-dir {tmp_path}" in err
    assert main(["token", "alice", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().err == ""


def test_a_token_from_a_data_folder_that_does_not_exist_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    assert main(["token", "alice", "--data-dir", str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"roomkit: The folder {missing} does not exist")
    assert "--data-dir" in err
    assert not missing.exists()


async def test_the_desk_refuses_a_token_of_another_key_naming_the_data_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx

    desk_data, other_data = tmp_path / "desk", tmp_path / "other"
    other_data.mkdir()
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0",
        "--data-dir", str(desk_data),
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert desk.stdout is not None
        opened = (await desk.stdout.readline()).decode()
        base = opened.split()[1].partition("/#")[0]
        lines = [(await desk.stdout.readline()).decode() for _ in range(2)]
        assert main(["token", "alice", "--data-dir", str(other_data)]) == 0
        foreign = capsys.readouterr().out.strip()
        async with httpx.AsyncClient(base_url=base) as client:
            refused = await client.get("/api/me", headers={"Authorization": f"Bearer {foreign}"})
    finally:
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
    assert (desk_data / KEY_FILE).exists()
    assert f"Created the desk's key in {desk_data}" in lines[1]
    assert refused.status_code == 401
    assert "--data-dir" in refused.json()["detail"]


NOT_UTF8 = b"caf\xe9".decode("utf-8", "surrogateescape")
"""An argument typed in Latin-1 on a UTF-8 terminal, as Python reads it."""


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["list", "--url", "http://[::1"], "--url (or $ROOMKIT_DESK_URL) takes"),
        (["list", "--url", "desk.example"], "--url (or $ROOMKIT_DESK_URL) takes"),
        (["list", "--url", "ftp://desk.example"], "--url (or $ROOMKIT_DESK_URL) takes"),
        (["list", "--url", "http://bob:pw@127.0.0.1:9"], "carries a user name or password"),
        (["list", "--timeout", "-1"], "--timeout takes a positive number of seconds"),
        (["list", "--timeout", "nan"], "--timeout takes a positive number of seconds"),
        (["list", "--timeout", "inf"], "--timeout takes a positive number of seconds"),
        (["list", "--timeout", "0"], "--timeout takes a positive number of seconds"),
        (["list", "--token", "caf\u00e9"], "The token holds characters no desk token has"),
        (["list", "--token", "a.b\nc"], "The token holds characters no desk token has"),
        (["list", "--room", NOT_UTF8], "--room holds bytes that are not UTF-8"),
        (["show", NOT_UTF8], "The request id holds bytes that are not UTF-8"),
        (["show", "f" * 100_000], "ids are at most 256 characters"),
        (["answer", "f" * 32, NOT_UTF8], "The answer holds bytes that are not UTF-8"),
        (["reject", "f" * 32, "--reason", NOT_UTF8], "--reason holds bytes that are not UTF-8"),
        (["respond", "f" * 32, NOT_UTF8], "The result holds bytes that are not UTF-8"),
        (["edit", "f" * 32, '{"to": NaN}'], "NaN is no JSON number"),
        (["edit", "f" * 32, '{"to": 1e999}'], "beyond a float's range"),
        (["edit", "f" * 32, '{"to": "a", "to": "b"}'], "names the key 'to' twice"),
        (["edit", "f" * 32, "[" * 100_000], "nests lists or objects too deep to read"),
        (["show", ""], "'' is not a request id"),
        (["show", "."], "'.' is not a request id"),
        (["answer", "..", "yes"], "'..' is not a request id"),
        (["reject", "."], "'.' is not a request id"),
        (["show", "a/b"], "'a/b' is not a request id: ids hold no / or \\"),
        (["answer", "..\\x", "yes"], "'..\\x' is not a request id"),
        (["approve", "f\x00f"], "'f\\x00f' is not a request id"),
        (["reject", "\x1b[2J"], "'\\x1b[2J' is not a request id"),
        (["edit", "f/../g", "{}"], "'f/../g' is not a request id"),
        (["respond", "f\nf", "done"], "'f\\nf' is not a request id"),
        (["approve", "f" * 32, "--digest", "\x1b[2J"], "--digest takes the 64 hex digits"),
        (["edit", "f" * 32, "{}", "--digest", "F" * 64], "--digest takes the 64 hex digits"),
    ],
)
def test_a_pending_argument_no_desk_takes_is_one_line_and_exit_2(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked before any call (nothing listens on the URL): never a traceback, never a
    "cannot reach" for what is a typing mistake."""
    url = "http://127.0.0.1:9"
    options = ["--token", "a.b"] if "--token" not in argv else []
    if "--url" not in argv:
        options += ["--url", url]
    code = main(["pending", *argv, *options])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("roomkit: ")
    assert err.count("\n") == 1
    assert words in err


def test_an_answer_nested_too_deep_for_json_is_sent_as_text() -> None:
    deep = "[" * 100_000
    assert answer_body("custom", deep, {"type": "array"}) == {"answer": deep}


def test_edit_from_a_closed_standard_input_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["pending", "edit", "f" * 32, "-", "--token", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("roomkit: Standard input is closed, so - reads nothing")


def test_edit_reads_no_more_of_standard_input_than_any_arguments_take(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Arguments without end (`< /dev/zero`) are refused once past the longest a request
    keeps, rather than read into memory until it is full."""
    endless = io.BytesIO(b"[" + b" " * 4_000_000)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(endless))
    assert main(["pending", "edit", "f" * 32, "-", "--token", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "longer than the arguments of any request" in err
    assert endless.tell() < 1_000_000

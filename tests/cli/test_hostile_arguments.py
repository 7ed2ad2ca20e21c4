"""Hostile command-line input ends in one line on stderr and exit status 2 (or 1 for a
store that cannot be reached), never a traceback."""

from __future__ import annotations

import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.servers.ports import free_port

from roomkit.cli import main

SURROGATE = b"\xed\xa0\x80".decode("utf-8", "surrogateescape")
"""What Python makes of an argument holding bytes that are not UTF-8."""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_TOKEN", "ROOMKIT_DESK_URL", "ROOMKIT_AUDIT_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    ("option", "hint"),
    [("foo=bar", "'foo' is not one redis-py takes"), ("ssl_cert_reqs=none", "rediss://")],
)
def test_a_redis_url_with_an_option_redis_does_not_take_is_one_line(
    option: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "verify", "--store", f"redis://127.0.0.1:1/0?{option}"]) == 2
    assert hint in one_line(capsys)


def test_a_desk_url_holding_bytes_that_are_not_utf8_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_TOKEN", "x")
    assert main(["pending", "list", "--url", f"http://127.0.0.1:1/{SURROGATE}"]) == 2
    assert one_line(capsys).startswith("roomkit: --url (or $ROOMKIT_DESK_URL) holds bytes")


def test_a_sqlite_path_too_long_for_the_file_system_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["audit", "verify", "--store", "sqlite:///" + "a" * 5000]) == 2
    assert "cannot be a database file (File name too long)" in one_line(capsys)


def test_a_postgres_host_no_resolver_takes_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "verify", "--store", "postgresql://" + "a" * 70 + "/x"]) == 1
    assert "cannot connect to the PostgreSQL store" in one_line(capsys)


def test_an_unreadable_postgres_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "verify", "--store", "postgresql://[::1/x"]) == 2
    assert one_line(capsys).startswith("roomkit: the PostgreSQL DSN cannot be read")


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["grants", "list", "--tool", SURROGATE], "--tool"),
        (["grants", "revoke", "g1", "--by", SURROGATE], "--by"),
    ],
)
def test_a_grants_option_holding_bytes_that_are_not_utf8_is_one_line(
    argv: list[str], option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "desk.db").touch()
    assert main([*argv, "--store", "sqlite:///desk.db"]) == 2
    assert one_line(capsys).startswith(f"roomkit: {option} holds bytes that are not UTF-8")


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_a_desk_url_with_a_port_out_of_range_is_one_line(
    port: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_TOKEN", "x")
    assert main(["pending", "list", "--url", f"http://127.0.0.1:{port}"]) == 2
    assert f"names the port {port}, and a port is 1 to 65535" in one_line(capsys)


@pytest.mark.parametrize("host", ["a..b", "a" * 64 + ".com", "xn--zz"])
def test_a_desk_url_with_a_host_no_resolver_takes_is_one_line(
    host: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_TOKEN", "x")
    assert main(["pending", "list", "--url", f"http://{host}"]) == 2
    assert one_line(capsys).startswith("roomkit: --url (or $ROOMKIT_DESK_URL) ")


def test_a_desk_that_is_not_running_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_TOKEN", "x")
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["pending", "list", "--url", url]) == 1
    assert one_line(capsys) == (
        f"roomkit: The desk at {url} cannot be reached (Connection refused): start it "
        "(`roomkit desk`), or pass --url (or set $ROOMKIT_DESK_URL) to the address it listens "
        "on\n"
    )


class _Files(SimpleHTTPRequestHandler):
    """A plain file server: 404 as an HTML page for every path under ``/api``."""

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_url_that_is_no_desk_is_not_a_missing_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that answers 404 without the desk's JSON is named as no desk."""
    monkeypatch.setenv("ROOMKIT_TOKEN", "x")
    files = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Files, directory=str(tmp_path)))
    serving = threading.Thread(target=files.serve_forever, kwargs={"poll_interval": 0.01})
    serving.start()
    try:
        url = f"http://127.0.0.1:{files.server_port}"
        assert main(["pending", "show", "q1", "--url", url]) == 1
    finally:
        files.shutdown()
        files.server_close()
        serving.join()
    assert "answered 404 Not Found, without the desk's JSON: it is no roomkit desk" in one_line(
        capsys
    )


def test_a_store_error_holding_terminal_escapes_shows_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path typed with an escape comes back in the store's message as text, never run."""
    (tmp_path / "e\x1b[2J.db").write_text("not a database")
    assert main(["grants", "list", "--store", "sqlite:///e\x1b[2J.db"]) == 1
    err = one_line(capsys)
    assert "\x1b" not in err
    assert "SQLite creates e\\x1b[2J.db-wal" in err


def test_a_closed_standard_output_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The token would be printed to nowhere: the command says so and exits 2."""
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["token", "alice", "--data-dir", str(tmp_path)]) == 2
    assert one_line(capsys) == (
        "roomkit: standard output is closed: send it to a terminal, a file or a pipe\n"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "key"],
        ["audit", "verify", "--store", "sqlite:///desk.db"],
        ["desk", "--store", "sqlite:///desk.db", "--port", "0"],
    ],
)
def test_a_data_dir_that_is_a_file_is_one_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "desk.db").touch()
    (tmp_path / "key.txt").write_text("not a folder")
    assert main([*argv, "--data-dir", "key.txt"]) == 2
    assert one_line(capsys) == (
        "roomkit: --data-dir (or $ROOMKIT_DESK_DATA) names key.txt, which is not a folder: "
        "pass the folder the desk keeps its key in\n"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "verify", "--store", f"redis://{SURROGATE}:1/0"],
        ["grants", "list", "--store", f"redis://127.0.0.1:1/{SURROGATE}"],
        ["audit", "verify", "--store", f"postgresql://roomkit:{SURROGATE}@127.0.0.1:1/kit"],
        ["mcp", "--store", f"postgresql://127.0.0.1:1/{SURROGATE}"],
    ],
)
def test_a_server_url_holding_bytes_that_are_not_utf8_is_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert one_line(capsys) == (
        "roomkit: --store holds bytes that are not UTF-8 text: type it again in UTF-8 (check "
        "the terminal's encoding)\n"
    )


@pytest.mark.parametrize(
    "hosts", ["127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:5432,127.0.0.1:99999"]
)
def test_a_postgres_url_with_a_port_out_of_range_is_one_line(
    hosts: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistake in the argument, as a Redis URL's is: exit 2, and the password unsaid."""
    url = f"postgresql://roomkit:hunter2@{hosts}/kit"
    assert main(["audit", "verify", "--store", url]) == 2
    err = one_line(capsys)
    assert "and a port is 1 to 65535: give the one the server listens on" in err
    assert "hunter2" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "verify"],
        ["grants", "list"],
        ["revoke", "--actor", "bob"],
        ["desk", "--port", "0"],
        ["mcp", "--actor", "alice"],
    ],
)
def test_a_folder_named_as_the_sqlite_file_is_one_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "stores").mkdir()
    assert main([*argv, "--store", "sqlite:///stores/"]) == 2
    assert one_line(capsys) == (
        "roomkit: --store names the folder stores, not a database file: name the file in it, "
        "such as sqlite:///stores/desk.db\n"
    )
    assert list((tmp_path / "stores").iterdir()) == []


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("http://bob:hunter2@127.0.0.1:{port}", 2),
        ("ftp://bob:hunter2@desk.example", 2),
        ("http://bob:hunt:er@2@[::1", 2),
    ],
)
def test_a_desk_url_s_password_is_never_printed(
    url: str, code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_TOKEN", "x")
    assert main(["pending", "list", "--url", url.replace("{port}", str(free_port()))]) == code
    err = one_line(capsys)
    assert "hunt" not in err
    assert "://bob@" in err


@pytest.mark.parametrize(
    "argv", [["notify", "--store", "sqlite:///kit.db", "--config"], ["desk", "--notify"]]
)
def test_a_notify_file_without_end_is_refused_unread(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past a megabyte, the file is no notifier's (`/dev/zero`, a wrong path): one line."""
    (tmp_path / "big.toml").write_text("#" * (1024 * 1024 + 1))
    assert main([*argv, "big.toml"]) == 2
    assert one_line(capsys) == (
        "roomkit: big.toml is over 1,048,576 bytes, more than a notifier's file holds\n"
    )
    assert not (tmp_path / "kit.db").exists()


def test_the_root_named_as_the_sqlite_file_gets_a_url_that_works(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["audit", "verify", "--store", "sqlite:////"]) == 2
    assert one_line(capsys).endswith("name the file in it, such as sqlite:////desk.db\n")


def test_a_desk_key_that_is_a_folder_is_one_line_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No warning that a folder is "readable by others", and no bare errno."""
    (tmp_path / "data" / "desk.key").mkdir(parents=True)
    assert main(["token", "alice"]) == 1
    assert one_line(capsys) == (
        f"roomkit: Cannot use the desk secret: the desk's key file {tmp_path}/data/desk.key "
        "cannot be read (Is a directory): move it away, and the desk makes a new key (the "
        "tokens and links the old one signed stop working)\n"
    )


def test_a_desk_secret_holding_bytes_that_are_not_utf8_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_DESK_SECRET", SURROGATE + "0123456789abcdefgh")
    assert main(["token", "alice"]) == 1
    assert one_line(capsys) == (
        "roomkit: Cannot use the desk secret: The desk secret holds bytes that are not UTF-8: "
        "generate one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`\n"
    )

"""Where ``roomkit desk`` and ``roomkit mcp --http`` listen (``--host``) and whom the desk's
WebSocket takes (``--allowed-origin``): a wrong value is one line naming the option and the
value, exit 2, before anything starts; an IPv6 address in brackets is served."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import httpx
import pytest

from roomkit.cli import main


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_TOKEN", "ROOMKIT_DESK_URL", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``roomkit`` exits 2 with."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    return err


@pytest.mark.parametrize("host", ["", "[::1", "[127.0.0.1]", "[desk]", "nosuch.invalid"])
def test_the_desk_refuses_a_host_it_cannot_listen_on(
    host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty value, a bracketed non-IPv6 and a name that resolves nowhere alike."""
    database = tmp_path / "desk.db"
    err = _refused(
        ["desk", "--host", host, "--data-dir", str(tmp_path / "data"),
         "--store", f"sqlite:///{database}"],
        capsys,
    )  # fmt: skip
    assert err.startswith("roomkit: --host ")
    assert repr(host) in err
    assert "Name or service not known\n" not in err
    assert not database.exists()
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("host", ["", "bad host", "nosuch.invalid", "[::1", "*"])
def test_mcp_refuses_a_host_it_cannot_listen_on(
    host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "kit.db"
    err = _refused(
        ["mcp", "--store", f"sqlite:///{database}", "--http", "0", "--host", host], capsys
    )
    assert err.startswith("roomkit: --host ")
    assert repr(host) in err
    assert not database.exists()


async def test_the_desk_listens_on_an_ipv6_address_in_brackets(tmp_path: Path) -> None:
    """``--host [::1]`` binds ``::1``; the sign-in link keeps the brackets a URL needs."""
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0", "--host", "[::1]",
        "--data-dir", str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert desk.stdout is not None
        line = (await desk.stdout.readline()).decode()
        found = re.match(r"Open (http://\[::1\]:\d+)/#token=", line)
        assert found, f"the desk printed {line!r} instead of its link"
        async with httpx.AsyncClient(base_url=found.group(1)) as client:
            page = await client.get("/")
    finally:
        desk.send_signal(signal.SIGINT)
        _, errors = await desk.communicate()
    assert page.status_code == 200
    assert desk.returncode == 0, errors.decode()


async def test_mcp_serves_http_on_an_ipv6_address_in_brackets(tmp_path: Path) -> None:
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "mcp", "--store",
        f"sqlite:///{tmp_path / 'kit.db'}", "--http", "0", "--host", "[::1]",
        "--data-dir", str(tmp_path / "data"),
        stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert server.stderr is not None
        line = ""
        while "serving" not in line:
            line = (await server.stderr.readline()).decode()
            assert line, "roomkit mcp stopped before it served"
        found = re.search(r"serving (http://\[::1\]:\d+)/mcp$", line.strip())
        assert found, f"roomkit mcp printed {line!r}"
        async with httpx.AsyncClient(base_url=found.group(1)) as client:
            unsigned = await client.post("/mcp", json={})
    finally:
        server.send_signal(signal.SIGINT)
        await server.communicate()
    assert unsigned.status_code == 401
    assert server.returncode == 0


@pytest.mark.parametrize(
    "origin",
    [
        "app.example.com",
        "https://app.example.com/desk",
        "https://app.example.com?x=1",
        "https://app.example.com#top",
        "https://user@app.example.com",
        "https://App.Example.com",
        "https://app.example.com:443",
        "http://app.example.com:80",
        "https://app.example.com:99999",
        "https://app.example.com:",
        "https://",
        "file:///tmp/page.html",
        "null",
        "",
        " https://app.example.com",
        "https://[::1",
    ],
)
def test_the_desk_refuses_an_allowed_origin_no_browser_sends(
    origin: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The desk matches a browser's ``Origin`` exactly: anything else would never match."""
    database = tmp_path / "desk.db"
    err = _refused(
        ["desk", "--allowed-origin", "https://ok.example.com", "--allowed-origin", origin,
         "--data-dir", str(tmp_path / "data"), "--store", f"sqlite:///{database}"],
        capsys,
    )  # fmt: skip
    assert err.startswith("roomkit: --allowed-origin takes an origin")
    assert err.endswith(f"got {origin!r}\n")
    assert not database.exists()


@pytest.mark.parametrize(
    "origin",
    ["*", "https://app.example.com", "https://app.example.com/", "http://localhost:8080",
     "http://[::1]:8080", "http://127.0.0.1:3000", "chrome-extension://abcdefgh"],
)  # fmt: skip
def test_the_desk_takes_an_origin_as_a_browser_sends_it(
    origin: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Taken: the next check, of ``--port``, is the one that stops the command."""
    err = _refused(
        ["desk", "--allowed-origin", origin, "--port", "99999", "--data-dir", str(tmp_path)],
        capsys,
    )
    assert err.startswith("roomkit: --port ")

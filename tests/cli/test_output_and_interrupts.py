"""What becomes of a command whose output cannot be written, or that is interrupted: one
line on stderr, or none, and the exit status; never a traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


def roomkit(*argv: str, cwd: Path, **options: object) -> subprocess.Popen[bytes]:
    """``python -m roomkit ARGV``, started."""
    env = {**os.environ, "ROOMKIT_DESK_DATA": str(cwd / "data")}
    for name in ("ROOMKIT_AUDIT_KEY", "ROOMKIT_DESK_SECRET"):
        env.pop(name, None)
    return subprocess.Popen(
        [sys.executable, "-m", "roomkit", *argv],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        **options,  # type: ignore[call-overload]
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_to_a_full_disk_is_one_line(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        child = roomkit("token", "alice", "--data-dir", str(tmp_path), cwd=tmp_path, stdout=full)
        _, err = child.communicate(timeout=60)
    assert child.returncode == 1
    assert err.decode().splitlines() == [
        "roomkit: cannot write the output (No space left on device): it is cut short; make "
        "room, then run the command again"
    ]


@pytest.fixture
def silent_server() -> Iterator[tuple[int, threading.Event]]:
    """A loopback port that takes connections and never answers; the event is set once
    one is taken."""
    listener = socket.create_server(("127.0.0.1", 0))
    taken = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        try:
            held.append(listener.accept()[0])
        except OSError:
            return
        taken.set()

    accepting = threading.Thread(target=accept)
    accepting.start()
    try:
        yield listener.getsockname()[1], taken
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        accepting.join()
        for connection in held:
            connection.close()


def test_ctrl_c_while_a_postgres_server_does_not_answer_prints_nothing(
    silent_server: tuple[int, threading.Event], tmp_path: Path
) -> None:
    """The opening left behind is not logged as a failure no one read."""
    port, taken = silent_server
    child = roomkit(
        "audit",
        "verify",
        "--store",
        f"postgresql://roomkit@127.0.0.1:{port}/kit",
        cwd=tmp_path,
        stdout=subprocess.PIPE,
    )
    try:
        assert taken.wait(timeout=30)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.returncode is None:
            child.kill()
            child.communicate()
    assert (child.returncode, out, err.decode()) == (130, b"", "")


def desk(tmp_path: Path, store: str) -> subprocess.Popen[bytes]:
    """``roomkit desk`` on ``store``, any free port, its output read by the test."""
    return roomkit("desk", "--store", store, "--port", "0", cwd=tmp_path, stdout=subprocess.PIPE)


def stopped(child: subprocess.Popen[bytes]) -> tuple[int, bytes, bytes]:
    """Ctrl-C sent to ``child``; its exit status and the rest of its output."""
    try:
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.returncode is None:
            child.kill()
            child.communicate()
    return child.returncode, out, err


def test_ctrl_c_while_the_desk_waits_on_its_store_exits_130(
    silent_server: tuple[int, threading.Event], tmp_path: Path
) -> None:
    port, taken = silent_server
    (tmp_path / "data").mkdir()
    child = desk(tmp_path, f"postgresql://roomkit@127.0.0.1:{port}/kit")
    assert taken.wait(timeout=30)
    code, out, err = stopped(child)
    assert (code, out, err.decode()) == (130, b"", "")


def test_ctrl_c_once_the_desk_serves_stops_it_with_0(tmp_path: Path) -> None:
    """Ctrl-C is how a served desk stops, as `roomkit notify` and `roomkit mcp` stop."""
    (tmp_path / "data").mkdir()
    child = desk(tmp_path, f"sqlite:///{tmp_path / 'desk.db'}")
    assert child.stdout is not None
    opened = child.stdout.readline().decode()
    assert opened.startswith("Open http://127.0.0.1:"), opened
    code, _, _ = stopped(child)
    assert code == 0


@pytest.mark.parametrize("transport", [[], ["--http", "0"]], ids=["stdio", "http"])
def test_ctrl_c_while_roomkit_mcp_waits_on_its_store_exits_130(
    silent_server: tuple[int, threading.Event], tmp_path: Path, transport: list[str]
) -> None:
    """Interrupted as it reads its store, before it serves: 130, nothing printed."""
    port, taken = silent_server
    (tmp_path / "data").mkdir()
    store = f"postgresql://roomkit@127.0.0.1:{port}/kit"
    child = roomkit("mcp", "--store", store, *transport, cwd=tmp_path, stdout=subprocess.PIPE)
    assert taken.wait(timeout=30)
    code, out, err = stopped(child)
    assert (code, out, err.decode()) == (130, b"", "")


def notifier(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> subprocess.Popen[bytes]:
    """``roomkit notify`` on ``store``, with a file naming one webhook no request reaches."""
    config = tmp_path / "notify.toml"
    config.write_text(
        '[[webhook]]\nurl = "http://127.0.0.1:9/hook"\nsecret_env = "HOOK_SECRET"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("HOOK_SECRET", "whsec_" + "A" * 32)
    return roomkit(
        "notify", "--store", store, "--config", str(config), cwd=tmp_path, stdout=subprocess.PIPE
    )


def test_ctrl_c_while_roomkit_notify_waits_on_its_store_exits_130(
    silent_server: tuple[int, threading.Event], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted as it reads its store, before it notifies: 130, nothing printed."""
    port, taken = silent_server
    (tmp_path / "data").mkdir()
    child = notifier(tmp_path, f"postgresql://roomkit@127.0.0.1:{port}/kit", monkeypatch)
    assert taken.wait(timeout=30)
    code, out, err = stopped(child)
    assert (code, out, err.decode()) == (130, b"", "")


def test_ctrl_c_once_roomkit_notify_notifies_stops_it_with_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C is how a notifier stops once it notifies: 0, and it says what is owed."""
    (tmp_path / "data").mkdir()
    child = notifier(tmp_path, f"sqlite:///{tmp_path / 'desk.db'}", monkeypatch)
    assert child.stdout is not None
    said = child.stdout.readline().decode()
    assert said == "Notifying through webhook; Ctrl-C or SIGTERM stops\n", said
    code, _, err = stopped(child)
    assert code == 0, err.decode()
    assert err.decode().splitlines()[-1] == "Stopped: what is owed stays in the store's outbox"


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_roomkit_mcp_on_stdio_stops_with_0_once_it_serves(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """Serving a client on stdio (its store answered), SIGTERM stops it as Ctrl-C does: 0."""
    (tmp_path / "data").mkdir()
    env = {**os.environ, "ROOMKIT_DESK_DATA": str(tmp_path / "data")}
    child = subprocess.Popen(
        [sys.executable, "-m", "roomkit", "mcp", "--store", f"sqlite:///{tmp_path / 'kit.db'}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert child.stderr is not None
        said = child.stderr.readline().decode()
        assert said.startswith("roomkit mcp: created a new store in "), said
        child.send_signal(stop)
        out, err = child.communicate(timeout=60)
    finally:
        if child.returncode is None:
            child.kill()
            child.communicate()
    assert (child.returncode, out, err) == (0, b"", b"")

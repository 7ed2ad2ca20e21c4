"""A real redis-server for the tests: started on a free port, stopped at the end.

By default the server writes every command to its append-only file before it replies
(``appendonly yes``, ``appendfsync always``) and keeps no snapshots, so a restart on the same
port and directory brings back exactly what was acknowledged; ``settings`` changes any line
of its configuration file (``{"appendonly": "no"}``, ``{"rename-command": 'CONFIG ""'}``).
``scripts/services.sh install`` (run by ``make test``) installs the binary.

The session's server is the fixture ``redis_server`` (:mod:`tests.servers.plugin`); a test
that needs other settings, or crashes the server on purpose, starts one of its own::

    def test_something(tmp_path):
        with running_redis(tmp_path, settings={"appendonly": "no"}) as server:
            store = RedisStore(server.url)

:func:`running_sentinel` starts a Redis Sentinel that watches a server of the test's own.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.servers.ports import free_port

__all__ = ["DURABLE", "RedisServer", "running_redis", "running_sentinel"]

_READY = b"Ready to accept connections"
_MONITORING = b"+monitor master"
"""What a Sentinel logs once it watches its master (it never says it is ready)."""
_START_TIMEOUT = 20.0
DURABLE = {"save": '""', "appendonly": "yes", "appendfsync": "always"}
"""The persistence settings of a server that loses nothing it acknowledged."""


class RedisServer:
    """One redis-server process on 127.0.0.1, restartable on the same port and directory.

    Args:
        directory: where the server keeps its configuration and append-only files.
        port: the port to listen on; a free one when ``None``.
        settings: configuration lines that replace or add to :data:`DURABLE`, by directive.
    """

    def __init__(
        self,
        directory: Path,
        *,
        port: int | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                "redis-server is not installed: run `make test`, which installs it "
                "(scripts/services.sh install)",
                pytrace=False,
            )
        self.binary = binary
        self.directory = directory
        self.port = port if port is not None else free_port()
        self.settings = {**DURABLE, **(settings or {})}
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's URL, database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        """Whether the process is up."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server and return once it accepts connections."""
        if self.running:
            return
        lines = {
            "port": str(self.port),
            "bind": "127.0.0.1",
            "dir": f'"{self.directory}"',
            "protected-mode": "no",
            **self.settings,
        }
        config = self.directory / "redis.conf"
        config.write_text("".join(f"{name} {value}\n" for name, value in lines.items()))
        process = subprocess.Popen(
            [self.binary, str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._process = process
        log = _Log(process)
        if not log.wait():
            self.stop()
            output = "\n".join(log.lines)
            pytest.fail(f"redis-server did not start on port {self.port}:\n{output}")

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server: SIGTERM (a clean shutdown) or, with ``kill``, SIGKILL (a crash)."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            process.send_signal(signal.SIGCONT)
            process.wait(timeout=_START_TIMEOUT)

    def pause(self) -> None:
        """Freeze the process (SIGSTOP): its sockets stay open, nothing answers.

        Returns once the process is stopped, so that nothing sent after this is answered.
        """
        if self._process is not None:
            self._process.send_signal(signal.SIGSTOP)
            os.waitpid(self._process.pid, os.WUNTRACED)

    def resume(self) -> None:
        """Let a paused process run again (SIGCONT)."""
        if self._process is not None:
            self._process.send_signal(signal.SIGCONT)

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """Paused (SIGSTOP) for the block, running again (SIGCONT) after it."""
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def restart(self, *, kill: bool = False) -> None:
        """Stop the server and start it again on the same port and directory."""
        self.stop(kill=kill)
        self.start()


@contextmanager
def running_redis(
    directory: Path, *, settings: Mapping[str, str] | None = None
) -> Iterator[RedisServer]:
    """A started :class:`RedisServer` in ``directory``, stopped on exit."""
    server = RedisServer(directory, settings=settings)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def running_sentinel(directory: Path, master: RedisServer, service: str) -> Iterator[int]:
    """A Redis Sentinel on 127.0.0.1 that watches ``master`` under the name ``service``,
    stopped on exit; its port."""
    port = free_port()
    config = directory / "sentinel.conf"
    lines = [
        f"port {port}",
        "bind 127.0.0.1",
        f'dir "{directory}"',
        f"sentinel monitor {service} 127.0.0.1 {master.port} 1",
    ]
    config.write_text("".join(f"{line}\n" for line in lines))
    process = subprocess.Popen(
        [master.binary, str(config), "--sentinel"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        log = _Log(process, ready=_MONITORING)
        if not log.wait():
            output = "\n".join(log.lines)
            pytest.fail(f"redis-server --sentinel did not start on port {port}:\n{output}")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=_START_TIMEOUT)


class _Log:
    """Reads the server's output in a thread: keeps it, and says when the server is ready
    (once it prints ``ready``)."""

    def __init__(self, process: subprocess.Popen[bytes], *, ready: bytes = _READY) -> None:
        self.lines: list[str] = []
        self.ready = False
        self._marker = ready
        self._settled = threading.Event()
        threading.Thread(
            target=self._pump, args=(process,), name=f"redis-server {process.pid}", daemon=True
        ).start()

    def wait(self) -> bool:
        """Whether the server became ready (False when it exited or took too long)."""
        self._settled.wait(_START_TIMEOUT)
        return self.ready

    def _pump(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        with process.stdout as stream:
            for raw in stream:
                self.lines.append(raw.decode(errors="replace").rstrip())
                if self._marker in raw:
                    self.ready = True
                    self._settled.set()
        self._settled.set()

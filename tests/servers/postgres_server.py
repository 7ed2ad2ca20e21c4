"""A real PostgreSQL cluster for the tests: made in a temporary folder, stopped at the end.

Debian keeps the server binaries out of PATH, so they are found with ``pg_config --bindir``,
then ``/usr/lib/postgresql/*/bin``, then PATH. ``initdb`` refuses to run as root: under root
every server command runs as the ``postgres`` user (``runuser -u postgres --``) on a folder
that user owns. The server listens on a free loopback TCP port (its Unix socket stays inside
the folder) with ``synchronous_commit=on``: a commit returns once its WAL is written to the
operating system, so a crashed server (``stop(mode="immediate")``, SIGKILL) keeps every
commit it acknowledged. ``fsync=off`` spares the flushes to the disk, which only a crash of
the machine itself would need and which no test can cause: on a busy disk they made each new
schema's tables, and each start after a crash, take seconds. The superuser ``postgres`` has
the password :data:`PASSWORD` over TCP. ``scripts/services.sh install`` (run by
``make test``) installs the ``postgresql`` package.

The session's cluster is the fixture ``postgres_server`` (:mod:`tests.servers.plugin`),
where each test takes a schema or a database of its own; a test that stops or crashes the
server starts one of its own::

    def test_something():
        with running_postgres() as server:
            store = PostgresStore(server.dsn)
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.servers.ports import free_port

__all__ = ["PASSWORD", "PostgresServer", "running_postgres"]

PASSWORD = "roomkit-test"
"""The superuser's password over TCP."""
_TIMEOUT = 60


def _bindir() -> Path | None:
    candidates: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, check=False
        ).stdout.strip()
        candidates.append(found)
    candidates.extend(sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True))
    initdb = shutil.which("initdb")
    if initdb is not None:
        candidates.append(str(Path(initdb).resolve().parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    return None


class PostgresServer:
    """One PostgreSQL cluster on 127.0.0.1, restartable on the same port and folder."""

    def __init__(self) -> None:
        bindir = _bindir()
        if bindir is None:
            pytest.fail(
                "PostgreSQL is not installed: run `make test`, which installs it "
                "(scripts/services.sh install)",
                pytrace=False,
            )
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="roomkit-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self._as_user = ["runuser", "-u", "postgres", "--"]
        password_file = self.root / "password"
        password_file.write_text(PASSWORD + "\n")
        if self._as_user:
            shutil.chown(password_file, "postgres", "postgres")
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            f"--pwfile={password_file}",
            "-E",
            "UTF8",
            "--no-sync",
        )

    def dsn_for(
        self, database: str = "postgres", *, password: str = PASSWORD, scheme: str = "postgresql"
    ) -> str:
        """A DSN for ``database`` as the superuser."""
        return f"{scheme}://postgres:{password}@127.0.0.1:{self.port}/{database}"

    @property
    def dsn(self) -> str:
        """The DSN of the ``postgres`` database."""
        return self.dsn_for()

    def start(self) -> None:
        """Start the server and return once it accepts connections."""
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.root} -c synchronous_commit=on "
            "-c max_connections=300 -c fsync=off"
        )
        self._run(
            "pg_ctl",
            "start",
            "-w",
            "-t",
            str(_TIMEOUT),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
        )

    @property
    def running(self) -> bool:
        """Whether the server is up (``pg_ctl status``)."""
        return self._run("pg_ctl", "status", "-D", str(self.data), check=False) == 0

    def stop(self, *, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (a clean shutdown) or ``immediate`` (a crash)."""
        self._run("pg_ctl", "stop", "-w", "-D", str(self.data), "-m", mode, check=False)

    def restart(self, *, mode: str = "fast") -> None:
        """Stop the server and start it again on the same port and folder."""
        self.stop(mode=mode)
        self.start()

    def pause(self) -> None:
        """Freeze the server and its backends (SIGSTOP): their sockets stay open, nothing
        answers, as with a stalled server or a network cut off without a reset."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT)."""
        self._signal(signal.SIGCONT)

    def _signal(self, signum: int) -> None:
        master = int((self.data / "postmaster.pid").read_text().split()[0])
        children = [
            int(task)
            for task in (Path("/proc") / str(master) / "task" / str(master) / "children")
            .read_text()
            .split()
        ]
        for pid in (master, *children):
            os.kill(pid, signum)

    def remove(self) -> None:
        """Stop the server and delete its folder."""
        self.stop(mode="immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *arguments: str, check: bool = True) -> int:
        command = [*self._as_user, str(self.bindir / program), *arguments]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_TIMEOUT, check=False, cwd="/"
        )
        if check and done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            pytest.fail(
                f"{program} failed ({done.returncode}):\n{done.stdout}{done.stderr}{tail}",
                pytrace=False,
            )
        return done.returncode


@contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """A started :class:`PostgresServer`, stopped and deleted on exit."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.remove()

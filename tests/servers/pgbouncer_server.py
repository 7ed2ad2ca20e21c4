"""A PgBouncer in transaction mode in front of a test cluster, for the length of a ``with``.

It listens on a free loopback port and logs in to the cluster as its superuser. PgBouncer
will not run as root: under a root run it switches to the ``postgres`` user (``-u``), in
a temporary folder that user owns. Debian installs it as ``/usr/sbin/pgbouncer``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.servers.ports import free_port
from tests.servers.postgres_server import PASSWORD, PostgresServer

_TIMEOUT = 30.0


def _program() -> str | None:
    return shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
    )


@contextmanager
def pgbouncer_in_transaction_mode(server: PostgresServer) -> Iterator[str]:
    """Start PgBouncer (transaction pooling) in front of ``server``; yield its DSN."""
    program = _program()
    if program is None:
        pytest.fail(
            "PgBouncer is not installed: run `make test`, which installs it "
            "(scripts/services.sh install)",
            pytrace=False,
        )
    root = Path(tempfile.mkdtemp(prefix="roomkit-pgbouncer-"))
    port = free_port()
    (root / "users.txt").write_text(f'"postgres" "{PASSWORD}"\n')
    (root / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"postgres = host=127.0.0.1 port={server.port} dbname=postgres\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = scram-sha-256\nauth_file = {root / 'users.txt'}\n"
        "pool_mode = transaction\nmax_client_conn = 200\ndefault_pool_size = 10\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
    )
    user: list[str] = []
    if os.geteuid() == 0:
        user = ["-u", "postgres"]
        for path in (root, *root.iterdir()):
            shutil.chown(path, "postgres", "postgres")
    process = subprocess.Popen(
        [program, *user, str(root / "pgbouncer.ini")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    reader = None
    try:
        reader = _wait_until_up(process)
        yield f"postgresql://postgres:{PASSWORD}@127.0.0.1:{port}/postgres"
    finally:
        process.terminate()
        try:
            process.wait(timeout=_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if reader is not None:
            reader.join(_TIMEOUT)
        assert process.stderr is not None
        process.stderr.close()
        shutil.rmtree(root, ignore_errors=True)


def _wait_until_up(process: subprocess.Popen[str]) -> threading.Thread:
    """Return once PgBouncer's log says it is up (or fail with the log); a thread keeps
    reading the log afterwards, so that PgBouncer never blocks on a full pipe."""
    up = threading.Event()
    seen: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if not up.is_set():
                seen.append(line)
                if "process up" in line:
                    up.set()
        up.set()

    reader = threading.Thread(target=read, name="pgbouncer log", daemon=True)
    reader.start()
    up.wait(_TIMEOUT)
    if process.poll() is not None or not any("process up" in line for line in seen):
        pytest.fail(f"pgbouncer did not start ({process.poll()}):\n{''.join(seen)}")
    return reader

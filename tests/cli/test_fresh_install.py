"""The install a user runs, in a fresh virtual environment: the checkout with one extra.

One venv, built once for the module: ``pip install -e '.[mcp]'`` (what every missing-extra
message says), then the commands a user with only that extra runs. It needs
the package index (or pip's cache), so it is marked ``install``: ``-m 'not install'`` skips
it on a machine without either.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from tests.cli.blocking import EVERY_OPTIONAL, blocked_env, refused

from roomkit._extras import install_command

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[2]


def run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def mcp_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh venv holding roomkit with the ``mcp`` extra alone.

    The venv is made without pip of its own (seeding one costs more than the install):
    this pip installs into it through ``--python``, as the venv's own would.
    """
    where = tmp_path_factory.mktemp("fresh") / "venv"
    venv.create(where, with_pip=False)
    # pip install -e '/the/checkout[mcp]': the tests run from one.
    pip, install, editable, target = shlex.split(install_command("mcp"))
    into = ["--python", str(where / "bin" / "python")]
    done = run(
        [sys.executable, "-m", pip, *into, install, "-q", editable, target],
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return where / "bin"


@pytest.mark.timeout(360)
def test_with_only_the_mcp_extra_its_commands_help(mcp_only: Path, tmp_path: Path) -> None:
    for argv in (["--help"], ["mcp", "--help"], ["audit", "verify", "--help"]):
        done = run([str(mcp_only / "roomkit"), *argv], cwd=tmp_path)
        assert done.returncode == 0, (argv, done.stderr)
        assert done.stdout.startswith("usage: roomkit"), argv


@pytest.mark.timeout(360)
def test_with_only_the_postgres_extra_audit_verify_helps(mcp_only: Path, tmp_path: Path) -> None:
    """With every other extra's libraries unimportable, as with ``.[postgres]`` alone."""
    env = blocked_env(tmp_path, EVERY_OPTIONAL - {"psycopg", "psycopg_pool"})
    done = run([str(mcp_only / "roomkit"), "audit", "verify", "--help"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert refused(done.stderr) == []
    assert "--store" in done.stdout


@pytest.mark.timeout(360)
def test_without_the_desk_extra_the_desk_says_so_in_one_line(
    mcp_only: Path, tmp_path: Path
) -> None:
    env = {**blocked_env(tmp_path, ()), "ROOMKIT_DESK_DATA": str(tmp_path / "desk")}
    done = run([str(mcp_only / "roomkit"), "desk", "--port", "0"], cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("roomkit: roomkit desk needs the desk extra (fastapi")
    assert install_command("desk") in done.stderr


@pytest.mark.timeout(360)
def test_with_only_the_mcp_extra_mcp_serves_over_stdio(mcp_only: Path, tmp_path: Path) -> None:
    """Its client gone at once (stdin closed), the server stops cleanly."""
    done = run([str(mcp_only / "roomkit"), "mcp", "--store", "sqlite:///kit.db"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Only the line naming the store it made: no extra is missing.
    assert done.stderr.startswith("roomkit mcp: created a new store in "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr

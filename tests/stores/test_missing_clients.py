"""A module whose library is missing says, in one line, which extra installs it: a store at
its path and at the old paths that still lead to it, and the other doors and surfaces."""

from __future__ import annotations

import subprocess
import sys

import pytest

from roomkit._extras import install_command


def import_error(statement: str, blocked: tuple[str, ...]) -> str:
    """What ``statement`` raises, in a fresh interpreter where ``blocked`` are missing."""
    probe = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "try:\n"
        f"    {statement}\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stderr == ""
    return done.stdout


@pytest.mark.parametrize(
    ("package", "blocked", "extra", "names"),
    [
        ("roomkit.stores.postgres", ("psycopg", "psycopg_pool"), "postgres", "PostgresStore"),
        ("roomkit.tools.human_input.stores.postgres", ("psycopg",), "postgres", "PostgresStore"),
        ("roomkit.core.redis_store", ("redis",), "redis", "RedisStore"),
        ("roomkit.stores.sqlite", ("aiosqlite",), "sqlite", "SQLiteStore"),
    ],
)
def test_a_store_without_its_client_names_the_extra(
    package: str, blocked: tuple[str, ...], extra: str, names: str
) -> None:
    said = import_error(f"from {package} import {names}", blocked)
    assert f"needs the {extra} extra" in said
    assert install_command(extra) in said
    assert names in said


@pytest.mark.parametrize(
    ("statement", "blocked", "extra"),
    [
        ("from roomkit.desk import create_desk_app", ("fastapi",), "desk"),
        ("from roomkit.desk.stores import open_stores", ("prometheus_client",), "desk"),
        ("from roomkit.notify import Webhook", ("standardwebhooks",), "notify"),
        ("from roomkit.notify import Email", ("aiosmtplib",), "notify"),
        ("from roomkit.mcp import HumanInputMCPServer", ("mcp_types",), "mcp"),
        ("from roomkit.tools.mcp import MCPTools", ("mcp", "mcp_types"), "mcp"),
        ("import roomkit.notify.slack_blocks", ("slack_sdk",), "slack"),
        ("import roomkit.adapters.temporal.updates", ("temporalio",), "temporal"),
        ("import roomkit.adapters.temporal.rooms", ("temporalio",), "temporal"),
    ],
    ids=[
        "desk",
        "desk-stores",
        "webhook",
        "email",
        "mcp-server",
        "mcp-tools",
        "slack-blocks",
        "temporal-updates",
        "temporal-rooms",
    ],
)
def test_a_module_without_its_library_names_the_extra(
    statement: str, blocked: tuple[str, ...], extra: str
) -> None:
    said = import_error(statement, blocked)
    assert f"needs the {extra} extra" in said
    assert install_command(extra) in said

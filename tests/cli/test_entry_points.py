"""Every entry point of the ``roomkit`` command runs without the extras it does not use.

Each child process runs with optional libraries made unimportable (:mod:`tests.cli.blocking`):
``roomkit --help``, every ``roomkit COMMAND --help`` and every command module load none of
them, and a command whose extra is missing says so in one line and exits 2.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tests.cli.blocking import EVERY_OPTIONAL, blocked_env, refused

import roomkit.cli
from roomkit._extras import EXTRA_OF, extra_of, install_command

ROOT = Path(__file__).resolve().parents[2]

HELPS = [
    [],
    ["desk"],
    ["token"],
    ["revoke"],
    ["pending"],
    ["pending", "list"],
    ["pending", "show"],
    ["pending", "answer"],
    ["pending", "reject"],
    ["pending", "approve"],
    ["pending", "edit"],
    ["pending", "respond"],
    ["mcp"],
    ["notify"],
    ["audit"],
    ["audit", "export"],
    ["audit", "verify"],
    ["audit", "checkpoint"],
    ["audit", "key"],
    ["grants"],
    ["grants", "list"],
    ["grants", "revoke"],
]

# Runs each argv's --help in this one process and reports the exit codes as JSON: one
# interpreter start for every help, the parser being the same for each.
_EVERY_HELP = """
import contextlib, io, json, sys
from roomkit.cli import main
codes = {}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main([*argv, "--help"])
            code = "returned"
        except SystemExit as done:
            code = done.code
    codes[" ".join(argv)] = [code, out.getvalue()[:60]]
print(json.dumps(codes))
"""


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def test_every_help_loads_no_optional_library(tmp_path: Path) -> None:
    env = blocked_env(tmp_path, EVERY_OPTIONAL)
    done = run([sys.executable, "-c", _EVERY_HELP, json.dumps(HELPS)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert refused(done.stderr) == []
    codes = json.loads(done.stdout)
    assert {argv: code for argv, (code, _) in codes.items()} == {
        " ".join(argv): 0 for argv in HELPS
    }
    assert all(shown.startswith("usage: roomkit") for _, shown in codes.values())


def test_every_command_module_imports_without_the_extras(tmp_path: Path) -> None:
    # ``roomkit.cli.__main__`` runs the command: the next test runs it.
    commands = [info.name for info in pkgutil.iter_modules(roomkit.cli.__path__)]
    modules = [
        "roomkit.cli",
        *(f"roomkit.cli.{name}" for name in commands if name != "__main__"),
        # The paths the commands had before they were a package.
        "roomkit._terminal",
        "roomkit._audit",
        "roomkit._notify_command",
    ]
    assert {"roomkit.cli.desk", "roomkit.cli.mcp", "roomkit.cli.pending"} <= set(modules)
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)"
    env = blocked_env(tmp_path, EVERY_OPTIONAL)
    done = run([sys.executable, "-c", script, *modules], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert refused(done.stderr) == []


@pytest.mark.parametrize("module", ["roomkit.cli", "roomkit"])
def test_python_m_roomkit_prints_its_help(tmp_path: Path, module: str) -> None:
    env = blocked_env(tmp_path, EVERY_OPTIONAL)
    done = run([sys.executable, "-m", module, "--help"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "usage: roomkit" in done.stdout
    assert refused(done.stderr) == []


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if not line.startswith("blocked import: ")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "blocked", "extra"),
    [
        (["mcp", "--store", "sqlite:///kit.db"], {"mcp"}, "mcp"),
        # The desk extra alone installs anyio (for its web framework) but not the MCP SDK.
        (["mcp", "--store", "sqlite:///kit.db"], {"mcp", "mcp_types"}, "mcp"),
        (["desk", "--port", "0"], {"uvicorn", "fastapi"}, "desk"),
        (["pending", "show", "q1", "--token", "t"], {"httpx"}, "desk"),
        (["audit", "verify", "--store", "postgresql://127.0.0.1:1/none"], {"psycopg"}, "postgres"),
        (["revoke", "--actor", "ann", "--store", "redis://127.0.0.1:1/0"], {"redis"}, "redis"),
        (["audit", "export", "--store", "sqlite:///kit.db"], {"aiosqlite"}, "sqlite"),
    ],
    ids=["mcp", "mcp-types", "desk", "pending", "postgres", "redis", "sqlite"],
)
def test_a_command_without_its_extra_says_which_in_one_line(
    tmp_path: Path, argv: list[str], blocked: set[str], extra: str
) -> None:
    (tmp_path / "kit.db").touch()
    env = blocked_env(tmp_path, blocked)
    env["ROOMKIT_DESK_DATA"] = str(tmp_path / "desk")
    done = run([sys.executable, "-m", "roomkit.cli", *argv], env, tmp_path)
    line = _one_line(done.stderr)
    assert done.returncode == 2, done.stderr
    assert line.startswith(f"roomkit: roomkit {argv[0]} needs the {extra} extra")
    assert install_command(extra) in line
    assert refused(done.stderr), "the blocked library was never asked for"


def test_the_terminal_client_needs_httpx_alone(tmp_path: Path) -> None:
    """``roomkit pending`` calls the desk over HTTP: it loads no part of the desk itself."""
    # httpx comes with anyio, which it needs.
    env = blocked_env(tmp_path, EVERY_OPTIONAL - {"httpx", "anyio"})
    argv = [
        "pending",
        "show",
        "q1",
        "--token",
        "t",
        "--url",
        "http://127.0.0.1:9",
        "--timeout",
        "5",
    ]
    done = run([sys.executable, "-m", "roomkit.cli", *argv], env, tmp_path)
    assert _one_line(done.stderr).startswith(
        "roomkit: The desk at http://127.0.0.1:9 cannot be reached"
    )
    assert done.returncode == 1
    assert refused(done.stderr) == []


def test_a_notifier_file_without_its_extra_says_which_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "kit.db").touch()
    config = tmp_path / "notify.toml"
    config.write_text('[[webhook]]\nurl = "https://example.com/hook"\nsecret_env = "HOOK_KEY"\n')
    env = blocked_env(tmp_path, {"standardwebhooks"})
    env["HOOK_KEY"] = "whsec_" + "a" * 32
    argv = ["notify", "--store", "sqlite:///kit.db", "--config", str(config)]
    done = run([sys.executable, "-m", "roomkit.cli", *argv], env, tmp_path)
    line = _one_line(done.stderr)
    assert done.returncode == 2, done.stderr
    assert "needs the notify extra" in line
    assert install_command("notify") in line


ON_CALL = '[on_call.payments]\nical = "payments.ics"\n'


@pytest.mark.parametrize(
    ("blocked", "also", "extras"),
    [
        ({"standardwebhooks", "aiosqlite"}, "", "notify,sqlite"),
        ({"standardwebhooks", "icalendar"}, ON_CALL, "notify,oncall"),
        ({"aiosqlite", "icalendar"}, ON_CALL, "oncall,sqlite"),
    ],
    ids=["surface and store", "surface and on-call", "on-call and store"],
)
def test_a_notifier_missing_several_extras_names_them_all_in_one_line(
    tmp_path: Path, blocked: set[str], also: str, extras: str
) -> None:
    """The file's surfaces, its on-call schedules and the store each need an extra: the one
    line names every one missing, and one command installs them all."""
    (tmp_path / "kit.db").touch()
    config = tmp_path / "notify.toml"
    config.write_text(
        '[[webhook]]\nurl = "https://example.com/hook"\nsecret_env = "HOOK_KEY"\n' + also
    )
    env = blocked_env(tmp_path, blocked)
    env["HOOK_KEY"] = "whsec_" + "a" * 32
    argv = ["notify", "--store", "sqlite:///kit.db", "--config", str(config)]
    done = run([sys.executable, "-m", "roomkit.cli", *argv], env, tmp_path)
    line = _one_line(done.stderr)
    assert done.returncode == 2, done.stderr
    first, second = extras.split(",")
    assert line.startswith(f"roomkit: roomkit notify needs the {first} and {second} extras"), line
    assert line.endswith(install_command(extras)), line


def test_a_notifier_file_writing_email_files_needs_no_extra(tmp_path: Path) -> None:
    """``[email] directory = ...`` writes ``.eml`` files: no SMTP library, no extra."""
    config = tmp_path / "notify.toml"
    config.write_text('[email]\ndirectory = "outbox"\n')
    env = blocked_env(tmp_path, EVERY_OPTIONAL)
    load = (
        "import sys; from roomkit.notify.config import load_notify_config; "
        "print(*(type(s).__name__ for s in load_notify_config(sys.argv[1]).surfaces))"
    )
    done = run([sys.executable, "-c", load, str(config)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "EmailFiles"
    assert refused(done.stderr) == []


IMPORTED_AS = {
    "a2a_sdk": "a2a",
    "ag_ui_protocol": "ag_ui",
    "openai_agents": "agents",
    "pydantic_ai_slim": "pydantic_ai",
}
"""Distributions whose import name is not their own name."""


def test_each_extra_named_is_one_pyproject_declares() -> None:
    """The table of extras agrees with ``pyproject.toml``: every library an extra installs
    is filed under an extra that installs it."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(EXTRA_OF.values()) <= set(extras)
    for extra, requirements in extras.items():
        if extra in {"dev", "docs"}:  # the tools' extras, which no command imports
            continue
        for requirement in requirements:
            name = requirement.split("[")[0].split(">")[0].split("=")[0].strip()
            module = name.replace("-", "_").lower()
            module = IMPORTED_AS.get(module, module)
            assert extra_of(module, extra) == extra, (extra, module)


def test_a_library_two_extras_install_is_named_by_the_command_that_runs() -> None:
    assert extra_of("uvicorn", "mcp") == "mcp"
    assert extra_of("uvicorn.config", None) == "desk"
    assert extra_of("psycopg_pool", "mcp") == "postgres"
    assert extra_of("json", "desk") is None
    assert extra_of(None) is None


def test_the_paths_the_commands_had_still_name_the_same_things() -> None:
    import roomkit._audit
    import roomkit._notify_command
    import roomkit._terminal
    import roomkit.desk.answers
    import roomkit.desk.forms
    import roomkit.desk.serving
    from roomkit import _forms, _serving
    from roomkit.cli import _common, audit, notify, pending

    assert roomkit._terminal.Failure is _common.Failure
    assert roomkit._terminal.answer_body is pending.answer_body is roomkit.cli.answer_body
    assert roomkit._audit.verify is audit.verify
    assert roomkit._notify_command.add_notify_parser is notify.add_parser
    assert roomkit.desk.serving.Server is _serving.Server
    assert roomkit.desk.serving.sign_in_link is _serving.sign_in_link
    assert roomkit.desk.forms.typed_body is _forms.typed_body
    assert roomkit.desk.answers.quorum_progress is _forms.quorum_progress


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path: Path) -> None:
    """``roomkit audit export ... | head``: the reader stops reading, and the command stops
    quietly, as Unix commands do (status 141)."""
    script = (
        "import asyncio\n"
        "from roomkit.stores.sqlite import SQLiteStore\n"
        "from roomkit.tools.human_input import HumanInputHandler\n"
        "async def fill():\n"
        "    store = SQLiteStore('kit.db')\n"
        "    handler = HumanInputHandler(store=store)\n"
        "    for _ in range(300):\n"
        "        await handler.create('AskUserQuestion', {'question': 'x' * 200})\n"
        "    await store.close()\n"
        "asyncio.run(fill())\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True, timeout=60)
    export = subprocess.Popen(
        [sys.executable, "-m", "roomkit.cli", "audit", "export", "--store", "sqlite:///kit.db"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert export.stdout is not None
    export.stdout.read(100)
    export.stdout.close()  # the reader leaves
    _, err = export.communicate(timeout=60)
    assert export.returncode == 141
    assert b"Traceback" not in err


def test_a_notifier_file_names_every_missing_extra_in_one_line(tmp_path: Path) -> None:
    """A file whose surfaces need several extras names them all, with one install command
    that brings them all, rather than one extra per attempt."""
    (tmp_path / "kit.db").touch()
    config = tmp_path / "notify.toml"
    config.write_text(
        '[[webhook]]\nurl = "https://example.com/hook"\nsecret_env = "HOOK_KEY"\n'
        '[slack]\ntoken_env = "SLACK_TOKEN"\nchannel = "#approvals"\n'
        '[[apprise]]\nurl_env = "APPRISE_URL"\n'
    )
    env = blocked_env(tmp_path, {"standardwebhooks", "slack_sdk", "apprise"})
    argv = ["notify", "--store", "sqlite:///kit.db", "--config", str(config)]
    done = run([sys.executable, "-m", "roomkit.cli", *argv], env, tmp_path)
    line = _one_line(done.stderr)
    assert done.returncode == 2, done.stderr
    assert "needs the notify, slack and apprise extras" in line
    assert "apprise, slack_sdk, standardwebhooks are not installed" in line
    assert install_command("notify,slack,apprise") in line

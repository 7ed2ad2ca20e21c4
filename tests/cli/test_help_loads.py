"""``roomkit --help`` and a command's ``--help`` load the parser, not the kit.

Each runs in a fresh interpreter, as ``python -m roomkit`` does, and reports the modules it
then holds: no channel, provider, voice back end, store, tool or desk module, and none of
the libraries they run on.
"""

from __future__ import annotations

import json

import pytest
from tests.fresh_python import fresh_python

# Runs `python -m roomkit` with argv, then prints the modules the process holds.
_HELP_THEN_MODULES = """
import json, runpy, sys
sys.argv = ["roomkit", *json.loads(sys.argv[1])]
try:
    runpy.run_module("roomkit", run_name="__main__", alter_sys=True)
except SystemExit as done:
    assert done.code == 0, done.code
print(json.dumps(sorted(sys.modules)))
"""

UNUSED = (
    "roomkit.channels",
    "roomkit.providers",
    "roomkit.voice",
    "roomkit.conference",
    "roomkit.stores",
    "roomkit.tools",
    "roomkit.desk",
    "roomkit.mcp",
    "roomkit.notify",
    "jsonschema",
    "regex",
    "pydantic",
    "fastapi",
    "starlette",
    "httpx",
)
"""What a help loads none of: each package, with its submodules."""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["audit", "verify", "--help"],
        ["mcp", "--help"],
        ["desk", "--help"],
        ["revoke", "--help"],
    ],
    ids=" ".join,
)
def test_a_help_loads_no_part_of_the_kit(argv: list[str]) -> None:
    done = fresh_python("-c", _HELP_THEN_MODULES, json.dumps(argv))
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.splitlines()[-1])  # after the help itself
    assert "roomkit.cli" in modules
    below = tuple(f"{package}." for package in UNUSED)
    loaded = [name for name in modules if name in UNUSED or name.startswith(below)]
    assert loaded == []

"""``import roomkit`` builds no pydantic validator and reads no package metadata.

Every ``roomkit`` command and every process of an application starts with the import, so what
it does not need waits for first use. Each check runs in a fresh interpreter.
"""

from __future__ import annotations

import json

from tests.fresh_python import fresh_python

# Imports roomkit (or the module in argv), runs the statement in argv, and prints what the
# process then holds: the roomkit models whose validator is built, and the startup modules.
_STATE = """
import importlib, json, sys
import pydantic
importlib.import_module(sys.argv[2])
exec(sys.argv[1])
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
built = sorted(
    f"{model.__module__}.{model.__qualname__}"
    for model in set(subclasses(pydantic.BaseModel))
    if model.__module__.startswith("roomkit") and model.__pydantic_complete__
)
watched = ("importlib.metadata", "pydantic.plugin._loader")
print(json.dumps({"built": built, "loaded": [name for name in watched if name in sys.modules]}))
"""


def state(module: str = "roomkit", then: str = "pass") -> dict[str, list[str]]:
    """What a fresh interpreter holds after importing ``module`` and running ``then``."""
    done = fresh_python("-c", _STATE, then, module)
    assert done.returncode == 0, done.stderr
    held: dict[str, list[str]] = json.loads(done.stdout)
    return held


def test_importing_roomkit_builds_no_model() -> None:
    """No model's validator is built, and no package metadata is read, by the import."""
    assert state() == {"built": [], "loaded": []}


def test_the_command_module_builds_no_model() -> None:
    """``roomkit.cli`` (what every ``roomkit`` command imports) builds none either."""
    assert state("roomkit.cli") == {"built": [], "loaded": []}


def test_a_model_builds_on_first_use_and_validates_as_declared() -> None:
    """The first model used is built then, and refuses what its fields refuse."""
    use = (
        "from pydantic import ValidationError\n"
        "from roomkit import AITool\n"
        "try:\n"
        "    AITool(name=1)\n"
        "except ValidationError as error:\n"
        "    assert error.errors()[0]['loc'] == ('name',), error\n"
        "else:\n"
        "    raise AssertionError('AITool(name=1) was taken')\n"
    )
    assert state(then=use)["built"] == ["roomkit.providers.ai.base.AITool"]


def test_a_history_entry_parses_on_first_use() -> None:
    """The history's entry union is built when an entry is first read, and tells kinds apart."""
    read = (
        "from roomkit.models.history import Shown, parse_entry\n"
        'entry = parse_entry(\'{"type": "shown", "at": "2026-12-03T11:07:43Z"}\')\n'
        "assert type(entry) is Shown and entry.to_dict()['type'] == 'shown', entry\n"
    )
    assert "roomkit.models.history.Shown" in state(then=read)["built"]

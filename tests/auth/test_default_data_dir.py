"""The desk's default data folder (``~/.roomkit/desk``) is read when used, never when roomkit
is imported: a workflow sandbox, or a container user with no home, imports roomkit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import roomkit.desk.tokens
from roomkit.auth import tokens

SRC = Path(tokens.__file__).parents[2]

# A process whose home cannot be found: no $HOME, and (as for a user with no entry in the
# password database) Path.home() raising what it raises then.
NO_HOME = """
import pathlib
def no_home(cls):
    raise RuntimeError("Could not determine home directory.")
pathlib.Path.home = classmethod(no_home)
import roomkit, roomkit.auth.tokens, roomkit.desk, roomkit.desk.tokens, roomkit.cli
from roomkit.auth.tokens import data_folder
print(data_folder("given"))
"""


def test_roomkit_imports_without_a_home_folder() -> None:
    env = {key: value for key, value in os.environ.items() if key != "HOME"}
    env["PYTHONPATH"] = str(SRC)
    env.pop("ROOMKIT_DESK_DATA", None)
    done = subprocess.run(
        [sys.executable, "-c", NO_HOME], env=env, capture_output=True, text=True, check=False
    )
    assert done.stderr == ""
    assert (done.returncode, done.stdout) == (0, "given\n")


def test_the_default_is_read_when_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The home folder of the moment, for each way of reaching the default."""
    monkeypatch.delenv("ROOMKIT_DESK_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    expected = tmp_path / ".roomkit" / "desk"
    assert tokens.default_data_dir() == expected
    assert expected == tokens.DEFAULT_DATA_DIR
    assert expected == roomkit.desk.tokens.DEFAULT_DATA_DIR
    assert tokens.data_folder() == expected
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path / "elsewhere"))
    assert tokens.data_folder() == tmp_path / "elsewhere"
    with pytest.raises(AttributeError, match="no attribute 'NOT_A_NAME'"):
        _ = tokens.NOT_A_NAME


# The roomkit command, run where no home folder can be found.
NO_HOME_COMMAND = """
import pathlib, sys
def no_home(cls):
    raise RuntimeError("Could not determine home directory.")
pathlib.Path.home = classmethod(no_home)
from roomkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def no_home_command(*arguments: str, data_env: str | None = None) -> tuple[int, str, str]:
    env = {key: value for key, value in os.environ.items() if key != "HOME"}
    env["PYTHONPATH"] = str(SRC)
    env.pop("ROOMKIT_DESK_DATA", None)
    env.pop("ROOMKIT_DESK_SECRET", None)
    if data_env is not None:
        env["ROOMKIT_DESK_DATA"] = data_env
    done = subprocess.run(
        [sys.executable, "-c", NO_HOME_COMMAND, *arguments],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("arguments", [["--help"], ["token", "--help"], ["audit", "--help"]])
def test_help_needs_no_home_folder(arguments: list[str]) -> None:
    status, out, err = no_home_command(*arguments)
    assert (status, err) == (0, "")
    assert "usage: roomkit" in out


def test_a_command_with_no_home_folder_says_where_to_keep_the_key(tmp_path: Path) -> None:
    """No traceback: one line naming --data-dir and $ROOMKIT_DESK_DATA; either one works."""
    status, out, err = no_home_command("token", "alice")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert "--data-dir" in err
    assert "ROOMKIT_DESK_DATA" in err
    folder = tmp_path / "desk"
    folder.mkdir()
    for given in (["--data-dir", str(folder)], []):
        status, out, err = no_home_command(
            "token", "alice", *given, data_env=None if given else str(folder)
        )
        assert status == 0, err
        secret = tokens.resolve_secret(data_dir=folder)
        assert tokens.token_claims(secret, out.strip())["sub"] == "alice"

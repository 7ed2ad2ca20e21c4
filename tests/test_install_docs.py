"""The install commands the README and the docs give work as written.

The README's install commands run, one after the other, in one fresh virtual environment
(pip's cache makes it quick): the checkout installed with an extra, then the wheel that
``make dist`` builds. Every other ``pip install`` line of the docs names the checkout or that
wheel, with extras ``pyproject.toml`` declares.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
from tests.doc_pages import ROOT, blocks, pages, section

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS = set(PYPROJECT["optional-dependencies"])
WHEEL = f"dist/roomkit_hitl-{PYPROJECT['version']}-py3-none-any.whl"
EDITABLE = re.compile(r"^pip install -e '\.\[(?P<extras>[\w,-]+)\]'$")
FROM_WHEEL = re.compile(r"^pip install '(?P<wheel>dist/[^'\[]+)\[(?P<extras>[\w,-]+)\]'$")


def command_lines(code: str) -> list[str]:
    """A shell block's commands, without their comments."""
    return [line.split("  #", 1)[0].strip() for line in code.splitlines() if line.strip()]


def readme_install_commands() -> list[str]:
    text = section("README.md", "## Install")
    found = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    return [line for block in found for line in command_lines(block)]


def documented_pip_lines() -> list[tuple[str, str]]:
    lines = []
    for page in pages():
        for block in blocks(page):
            if block.lang == "sh":
                for line in command_lines(block.code):
                    if line.startswith("pip install"):
                        lines.append((block.page, line))
    return lines


@pytest.mark.parametrize(("page", "line"), documented_pip_lines())
def test_every_documented_pip_install_names_the_checkout_or_the_wheel(page: str, line: str) -> None:
    editable, wheel = EDITABLE.match(line), FROM_WHEEL.match(line)
    found = editable or wheel
    assert found is not None, f"{page}: {line!r} installs from neither the checkout nor the wheel"
    if wheel is not None:
        assert wheel.group("wheel") == WHEEL, f"{page}: make dist builds {WHEEL}"
    unknown = set(found.group("extras").split(",")) - EXTRAS
    assert not unknown, f"{page}: {line!r} names extras pyproject.toml lacks: {unknown}"


@pytest.mark.timeout(600)
def test_the_readme_install_commands_work_in_a_fresh_venv(tmp_path: Path) -> None:
    commands = readme_install_commands()
    assert [c for c in commands if EDITABLE.match(c)], "the README installs from the checkout"
    assert "make dist" in commands
    assert [c for c in commands if FROM_WHEEL.match(c)], "the README installs the wheel"
    env_dir = tmp_path / "venv"
    # No pip of its own (seeding one costs more than an install): the venv's `pip` runs
    # this pip into it through --python, as the venv's own would.
    venv.create(env_dir, with_pip=False)
    bin_dir = env_dir / "bin"
    pip = bin_dir / "pip"
    pip.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -m pip --python "{bin_dir / "python"}" "$@"\n',
        encoding="utf-8",
    )
    pip.chmod(0o755)
    environ = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(env_dir),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_QUIET": "1",
    }
    environ.pop("PYTHONPATH", None)
    # The line an extra that is not installed (sqlite) raises names the command that
    # installs it beside this roomkit: in the checkout, or as the package.
    probe = (
        "import psycopg, roomkit\n"
        "from roomkit.stores.postgres import PostgresStore\n"
        "print(roomkit.__file__)\n"
        "try:\n"
        "    import roomkit.stores.sqlite\n"
        "except ImportError as error:\n"
        "    print(str(error).split(': ', 1)[1])\n"
    )
    for command in commands:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=ROOT,
            env=environ,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
        if command.startswith("pip install"):
            where = subprocess.run(
                [str(bin_dir / "python"), "-c", probe],
                cwd=tmp_path,
                env=environ,
                capture_output=True,
                text=True,
                check=False,
            )
            assert where.returncode == 0, f"after {command}:\n{where.stderr}"
            file, install = where.stdout.splitlines()
            installed = Path(file)
            if FROM_WHEEL.match(command):
                assert env_dir in installed.parents, "the wheel, not the checkout, is imported"
                assert install == "pip install 'roomkit-hitl[sqlite]'"
            else:
                assert ROOT / "src" in installed.parents, "the checkout is imported"
                assert install == f"pip install -e '{ROOT}[sqlite]'"

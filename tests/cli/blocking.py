"""Run Python with some optional libraries missing, as on a machine without their extras.

:func:`blocked_env` returns the environment of a child process in which importing any
module named in ``blocked`` (and its submodules) fails as an uninstalled library does, with
``ModuleNotFoundError``; it works for ``python -c``, ``python -m`` and console scripts
alike, through a ``sitecustomize`` module on ``PYTHONPATH``. Each refused import is also
written to stderr as ``blocked import: NAME``, so a test sees an import that a caller
caught and hid.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from roomkit._extras import EXTRA_OF

BLOCK_ENV = "ROOMKIT_TEST_BLOCKED_IMPORTS"
EVERY_OPTIONAL = frozenset(EXTRA_OF)
"""The top-level module of every library an extra installs."""

_SITECUSTOMIZE = '''
import os
import sys

_BLOCKED = frozenset(filter(None, os.environ.get("{env}", "").split(",")))


class _Blocked:
    """Refuses the blocked modules, as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".", 1)[0] in _BLOCKED:
            sys.stderr.write(f"blocked import: {{name}}\\n")
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


if _BLOCKED:
    sys.meta_path.insert(0, _Blocked())
'''


def blocked_env(folder: Path, blocked: Iterable[str]) -> dict[str, str]:
    """The environment of a child whose imports of ``blocked`` fail; ``folder`` (a
    temporary one) receives the ``sitecustomize`` module."""
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(env=BLOCK_ENV))
    env = dict(os.environ)
    env[BLOCK_ENV] = ",".join(sorted(blocked))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    return env


def refused(stderr: str) -> list[str]:
    """The imports the child was refused, as its stderr lists them."""
    prefix = "blocked import: "
    return [line[len(prefix) :] for line in stderr.splitlines() if line.startswith(prefix)]

"""The command line of the benchmarks: ``--help`` prints the script's docstring, and an
option the script does not know ends it with a message saying which ones it knows."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def options(doc: str | None, known: Sequence[str], arguments: Sequence[str]) -> set[str]:
    """The options given, all of them in ``known``; exits on ``--help`` or an unknown one."""
    given = list(arguments)
    if "--help" in given or "-h" in given:
        print(doc or "")
        sys.exit(0)
    unknown = [argument for argument in given if argument not in known]
    if unknown:
        accepted = ", ".join(known) if known else "none"
        print(
            f"{sys.argv[0]}: unknown option {unknown[0]!r} (accepted: {accepted}, --help)",
            file=sys.stderr,
        )
        sys.exit(2)
    return set(given)

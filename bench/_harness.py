"""What every benchmark shares: its command line, its percentiles, its table and its results file.

A benchmark starts a :class:`Run` with :func:`start`, adds its tables of :class:`Row` with
:meth:`Run.table` (printed as they come) and ends with :meth:`Run.finish`, which writes
``bench/results/<bench>.json``: the machine (CPU model, cores, the load average at the start
and at the end, Python, the date), the options and the rows. ``bench/report.py`` renders those
files into the performance page and the README's summary.

The command line is the same for every benchmark:

    --quick      fewer samples (a smoke run; the results say so)
    --rounds N   repeat the measurement N times where the benchmark repeats (its default else)
    --out PATH   write the results there instead of bench/results/<bench>.json
    --check      exit 1 when a figure misses its target
    --help       print the benchmark's docstring

and a benchmark may add flags of its own (``--sqlite``...) with ``flags``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
"""Where each benchmark writes its results file."""
FORMAT = "roomkit.bench.v1"


@dataclass
class Row:
    """One line of a table; ``met`` is ``None`` for figures without a target.

    ``figure`` is the text shown; ``value`` and ``unit`` the number behind it when there is
    one, and ``ratio`` a ratio against a baseline measured in the same run.
    """

    case: str
    figure: str
    target: str = ""
    met: bool | None = None
    value: float | None = None
    unit: str = ""
    ratio: float | None = None


def progress(message: str) -> None:
    """Say how far a long case has come, on stderr."""
    print(f"  ... {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value below which ``fraction`` (0 to 1) of ``values`` lie (nearest rank)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def print_table(rows: Sequence[Row]) -> None:
    """Print ``rows`` as a table: case, figure, target, result."""
    header = ["case", "figure", "target", "result"]
    cells = [[row.case, row.figure, row.target, _verdict(row)] for row in rows]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    for line in [header, ["-" * width for width in widths], *cells]:
        print(" | ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def _verdict(row: Row) -> str:
    return "" if row.met is None else "pass" if row.met else "MISS"


def machine() -> dict[str, Any]:
    """The CPU model, the cores, the load average now, Python and the platform."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "load": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass
class Table:
    """One table of a benchmark's results: an area (``"stores: Redis"``) and its rows."""

    area: str
    rows: list[Row] = field(default_factory=list)
    note: str = ""


@dataclass
class Run:
    """One run of a benchmark: its options, its tables, and where its results go."""

    bench: str
    title: str
    quick: bool
    rounds: int | None
    check: bool
    out: Path
    flags: set[str]
    numbers: dict[str, int]
    started: dict[str, Any]
    tables: list[Table] = field(default_factory=list)

    def table(self, area: str, rows: Sequence[Row], *, note: str = "") -> None:
        """Add a table of rows under ``area`` and print it."""
        self.tables.append(Table(area, list(rows), note))
        print(f"\n{area}" + (f" ({note})" if note else ""))
        print_table(rows)

    def rounds_or(self, default: int, quick: int | None = None) -> int:
        """The rounds asked for, else ``quick`` under ``--quick``, else ``default``."""
        if self.rounds is not None:
            return self.rounds
        return quick if self.quick and quick is not None else default

    @property
    def missed(self) -> int:
        """How many figures missed their target."""
        return sum(row.met is False for table in self.tables for row in table.rows)

    def finish(self) -> int:
        """Write the results file; return the exit status (1 under ``--check`` with a miss)."""
        ended = machine()
        results = {
            "format": FORMAT,
            "bench": self.bench,
            "title": self.title,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "options": {"quick": self.quick, "rounds": self.rounds, **self.numbers},
            "machine": {
                **{k: v for k, v in self.started.items() if k != "load"},
                "load_start": self.started["load"],
                "load_end": ended["load"],
            },
            "tables": [
                {"area": t.area, "note": t.note, "rows": [asdict(row) for row in t.rows]}
                for t in self.tables
            ],
        }
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        print(f"\nresults: {self.out}")
        return 1 if self.check and self.missed else 0


def start(
    bench: str,
    doc: str | None,
    arguments: Sequence[str] | None = None,
    *,
    flags: Sequence[str] = (),
    numbers: Mapping[str, int] | None = None,
) -> Run:
    """Parse the command line every benchmark takes (and its own ``flags``) and start a run.

    Args:
        bench: the benchmark's name, as in its results file's name (``"stores"``).
        doc: the benchmark's docstring; its first line is the title, all of it ``--help``.
        arguments: the command line (``sys.argv[1:]`` when ``None``).
        flags: the benchmark's own on/off options, such as ``"--sqlite"``.
        numbers: the benchmark's own whole-number options and their defaults, such as
            ``{"--size": 100_000}``; read back as ``run.numbers["size"]``.
    """
    lines = (doc or bench).strip().splitlines()
    parser = argparse.ArgumentParser(
        prog=f"bench_{bench}.py",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="fewer samples: a smoke run")
    parser.add_argument("--rounds", type=_positive, metavar="N", help="rounds of measurement")
    parser.add_argument("--out", type=Path, metavar="PATH", help="where to write the results")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    for flag in flags:
        parser.add_argument(flag, action="store_true")
    for option, default in (numbers or {}).items():
        parser.add_argument(option, type=_count, default=None, metavar="N", help=f"({default:,})")
    given = parser.parse_args(arguments)
    run = Run(
        bench=bench,
        title=lines[0].rstrip("."),
        quick=given.quick,
        rounds=given.rounds,
        check=given.check,
        out=given.out or RESULTS / f"{bench}.json",
        flags={flag for flag in flags if getattr(given, _attribute(flag))},
        numbers={
            _attribute(option): default
            if getattr(given, _attribute(option)) is None
            else getattr(given, _attribute(option))
            for option, default in (numbers or {}).items()
        },
        started=machine(),
    )
    facts = run.started
    print(
        f"{run.title}\n{facts['cpu']}, {facts['cores']} cores, load {facts['load']}, "
        f"Python {facts['python']}" + (" (--quick)" if run.quick else "")
    )
    return run


def _attribute(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def _count(text: str) -> int:
    """A whole number as people write it: ``20000``, ``20,000`` or ``20_000``."""
    try:
        return int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"takes a whole number, e.g. 20000 (not {text!r})"
        ) from None


def _positive(text: str) -> int:
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError("takes a whole number of rounds, 1 or more")
    return number

"""Benchmark of reading a body under limits (``roomkit.bodies.load_json``) against ``json.loads``.

Both run in this process on the same texts, in turns, and the ratio of their medians is
printed, so that the machine's load cancels out:

    * answer: a typical answer body (a few hundred bytes);
    * large: a 48 KB body of 800 objects with numbers, strings and escapes, under the desk's
      64 KiB cap;
    * attack: 50,000 opening brackets, refused by ``load_json`` before parsing; ``json.loads``
      gives up with a ``RecursionError`` instead.

Run ``python bench/bench_bodies.py`` (``--quick``: 5 rounds); it prints figures and exits 0
(no assertions).
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable

from _harness import Row, start

from roomkit.bodies import BodyRefusedError, load_json

ROUNDS = 15
QUICK_ROUNDS = 5


def answer() -> bytes:
    return json.dumps(
        {"answers": [{"question": "Which size?", "answer": ["S", "M"]} for _ in range(3)]}
    ).encode()


def large() -> bytes:
    items = [{"k": i, "v": [1.5, "line\nline\t\u00e9", {"a": None, "b": True}]} for i in range(800)]
    return json.dumps({"answer": items}).encode()


def per_call(read: Callable[[bytes], object], body: bytes, calls: int) -> float:
    """Seconds per call, over a batch of ``calls``."""
    started = time.perf_counter()
    for _ in range(calls):
        with contextlib.suppress(BodyRefusedError, RecursionError):
            read(body)
    return (time.perf_counter() - started) / calls


def compare(name: str, body: bytes, calls: int, rounds: int) -> Row:
    ours, plain = [], []
    for _ in range(rounds):
        ours.append(per_call(load_json, body, calls))
        plain.append(per_call(json.loads, body, calls))
    mine, theirs = statistics.median(ours), statistics.median(plain)
    return Row(
        f"{name} ({len(body):,} B): load_json beside json.loads",
        f"{mine * 1e6:.1f} us beside {theirs * 1e6:.1f} us ({mine / theirs:.2f}x)",
        value=mine * 1e6,
        unit="us",
        ratio=mine / theirs,
    )


def main() -> None:
    run = start("bodies", __doc__)
    rounds = run.rounds_or(ROUNDS, QUICK_ROUNDS)
    rows = [
        compare("answer", answer(), 2_000, rounds),
        compare("large", large(), 20, rounds),
        compare("attack", b"[" * 50_000, 20, rounds),
    ]
    run.table("Reading bodies", rows, note=f"medians of {rounds} rounds")
    sys.exit(run.finish())


if __name__ == "__main__":
    main()

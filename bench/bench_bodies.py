"""Benchmark of reading a body under limits (``roomkit.bodies.load_json``) against ``json.loads``.

Both run in this process on the same texts, in turns, and the ratio of their medians is
printed, so that the machine's load cancels out:

    * answer: a typical answer body (a few hundred bytes);
    * large: a 48 KB body of 800 objects with numbers, strings and escapes, under the desk's
      64 KiB cap;
    * attack: 50,000 opening brackets, refused by ``load_json`` before parsing; ``json.loads``
      gives up with a ``RecursionError`` instead.

Run ``python bench/bench_bodies.py``; it prints figures and exits 0 (no assertions).
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable

from bench_options import options

from roomkit.bodies import BodyRefusedError, load_json

ROUNDS = 15


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


def compare(name: str, body: bytes, calls: int) -> None:
    ours, plain = [], []
    for _ in range(ROUNDS):
        ours.append(per_call(load_json, body, calls))
        plain.append(per_call(json.loads, body, calls))
    mine, theirs = statistics.median(ours), statistics.median(plain)
    print(
        f"{name:8} {len(body):>7} B   load_json {mine * 1e6:9.1f} us   "
        f"json.loads {theirs * 1e6:9.1f} us   ratio {mine / theirs:5.2f}"
    )


def main() -> None:
    options(__doc__, [], sys.argv[1:])
    compare("answer", answer(), 2_000)
    compare("large", large(), 20)
    compare("attack", b"[" * 50_000, 20)


if __name__ == "__main__":
    main()

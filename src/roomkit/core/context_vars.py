"""A context variable set for the code inside a ``with`` block, and reset when it ends.

Several modules keep a setting in a :class:`~contextvars.ContextVar` for what runs inside a
block (the call being served, the kit whose turn runs, a decision made at once): each sets
it through :func:`bound`, so the previous value always comes back, however the block ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["bound"]

T = TypeVar("T")


@contextmanager
def bound(var: ContextVar[T], value: T) -> Iterator[None]:
    """Set ``var`` to ``value`` for the code inside, and reset it to what it was after."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)

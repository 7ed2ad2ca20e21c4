"""Callables kept in the order registered, each taken off by the function its registration
returns.

The realtime voice and conference back ends keep their event listeners so
(:class:`~roomkit.voice.callbacks.Callbacks`), and a handler its answer checks
(:class:`~roomkit.tools.human_input._answer_checks.AnswerChecks`): registering refuses what
is not callable and hands back the undo, which may run any number of times. What is done with
the callables (an event fired to each, a reason asked of each) is the subclass's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Registry"]

_C = TypeVar("_C", bound=Callable[..., object])


class Registry(Generic[_C]):
    """Callables in the order registered.

    Args:
        what: what a callable is called in the error that refuses one (``"an answer
            check"``).
    """

    __slots__ = ("_items", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._items: list[_C] = []

    def add(self, item: _C) -> Callable[[], None]:
        """Register ``item``; return a function that unregisters it (once is enough).

        Raises:
            TypeError: ``item`` is not callable.
        """
        if not callable(item):
            raise TypeError(f"{self._what} must be an async callable, got {item!r}")
        self._items.append(item)

        def remove() -> None:
            if item in self._items:
                self._items.remove(item)

        return remove

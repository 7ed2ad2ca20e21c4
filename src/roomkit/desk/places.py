"""The places the desk's WebSocket has: so many per person, so many in all.

Each open socket holds a queue and a writer task, so the desk counts them: a person (the
actor a token or answer link speaks for) holds at most
:attr:`~roomkit.desk.limits.DeskLimits.sockets_per_person` at once, and the desk at most
:attr:`~roomkit.desk.limits.DeskLimits.sockets`. A socket over either cap is refused once
authenticated (see :mod:`roomkit.desk.ws`); those already open, the person's own included,
keep theirs.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["NoPlaceError", "Places"]


class NoPlaceError(Exception):
    """No place for one more socket: ``reason`` says which cap is reached and what to do."""

    def __init__(self, reason: str, *, everyone: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.everyone = everyone
        """True when the desk's cap in all is reached, False for the person's own."""


class Places:
    """Counts the open sockets, per person and in all.

    Args:
        per_person: sockets one person may hold at once.
        total: sockets the desk holds at once, everyone's together.
    """

    def __init__(self, *, per_person: int, total: int) -> None:
        self.per_person = per_person
        self.total = total
        self._held: Counter[str] = Counter()
        self._count = 0

    def take(self, actor_id: str) -> None:
        """Take a place for one more socket of ``actor_id``.

        Raises:
            NoPlaceError: the person holds ``per_person`` sockets already, or the desk
                ``total``; the socket is to be closed with the error's reason.
        """
        if self._held[actor_id] >= self.per_person:
            raise NoPlaceError(
                f"Too many open sockets for one person ({self.per_person}): close one",
                everyone=False,
            )
        if self._count >= self.total:
            raise NoPlaceError(
                f"The desk holds its most open sockets ({self.total}): try again later",
                everyone=True,
            )
        self._held[actor_id] += 1
        self._count += 1

    def give_back(self, actor_id: str) -> None:
        """Free the place a socket of ``actor_id`` took with :meth:`take`."""
        held = self._held[actor_id] - 1
        if held > 0:
            self._held[actor_id] = held
        else:
            del self._held[actor_id]
        self._count -= 1

    @property
    def held(self) -> int:
        """The sockets open now, everyone's together."""
        return self._count

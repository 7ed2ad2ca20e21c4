"""The directory's check of its delegations: no cycle, and no chain over ``max_chain`` links,
among the delegations in force at any moment.

The set in force changes only when one starts or ends, and an end only takes links away, so
checking at each start is checking at every moment. A cycle or chain that is new at a start
holds a delegation starting then: the longest chain on from each such delegate and the
longest back from its delegator say whether there is one, walking only the links within
reach of the new ones (one person's thousands of delegations, each starting at its own
moment, cost a short walk each, not one over all of theirs in force at every start). Only
then are the people up to ``max_chain`` links before those delegations walked from, in the
directory's order, to name it. The links in force are kept from one start to the next (those
that ended taken out), and each walk remembers the longest chain on from everyone it has
left, so a moment costs the links near the delegations starting then, however many paths
they make (30 people each delegating to all of the next 30, five times over, are 24 million
paths from each of the first).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import NoReturn

from roomkit.people._entries import Person

__all__ = ["check_chains"]

_Links = dict[str, dict[str, int]]
"""Each actor's delegates in force, with how many of the actor's delegations name each."""


def check_chains(people: Mapping[str, Person], max_chain: int) -> None:
    """Refuse a cycle, or a chain over ``max_chain``, among the delegations in force at any
    moment.

    Raises:
        ValueError: naming the moment and the cycle or the chain.
    """
    # Instants, in UTC: two times of one zone compare by their clock reading, which the
    # hour a clock repeats makes ambiguous.
    edges = sorted(
        (
            (
                delegation.starts.astimezone(UTC),
                order,
                actor,
                delegation.to,
                delegation.ends.astimezone(UTC),
            )
            for order, (actor, delegation) in enumerate(
                (actor, delegation)
                for actor, person in people.items()
                for delegation in person.delegations
            )
        ),
        key=lambda edge: (edge[0], edge[1]),
    )
    listed = {actor: index for index, actor in enumerate(people)}
    links: _Links = {}
    back: _Links = {}
    ending: list[tuple[datetime, int, str, str]] = []
    index = 0
    while index < len(edges):
        moment = edges[index][0]
        while ending and ending[0][0] <= moment:
            _, _, actor, delegate = heapq.heappop(ending)
            _unlink(links, actor, delegate)
            _unlink(back, delegate, actor)
        started: dict[str, None] = {}
        new: list[tuple[str, str]] = []
        while index < len(edges) and edges[index][0] == moment:
            _, order, actor, delegate, ends = edges[index]
            _link(links, actor, delegate)
            _link(back, delegate, actor)
            heapq.heappush(ending, (ends, order, actor, delegate))
            started[actor] = None
            new.append((actor, delegate))
            index += 1
        if _within_bounds(links, back, new, max_chain, moment):
            continue
        # Something is wrong: walked as before, so that the message names what it named.
        walk = _Walk(links, max_chain, moment)
        # Walked in the directory's order: a cycle is named from whoever it lists first.
        for actor in sorted(_before(started, back, max_chain), key=listed.__getitem__):
            walk.start(actor)


def _within_bounds(
    links: _Links, back: _Links, new: list[tuple[str, str]], max_chain: int, moment: datetime
) -> bool:
    """Whether the links in force make no cycle and no chain over ``max_chain`` through the
    ``new`` ones (the others made none when they started, and an end only takes links away).

    A new cycle or chain over the bound holds a new link: the walks go on from its delegate
    (a cycle through it comes back there) and back from its delegator, which no cycle is
    left to hold once the walks on found none.
    """
    ahead = _Walk(links, max_chain, moment)
    try:
        for _, delegate in new:
            ahead.start(delegate)
    except ValueError:
        return False
    behind: dict[str, int] = {}
    return all(
        _longest_to(back, actor, behind) + 1 + ahead.longest(delegate) <= max_chain
        for actor, delegate in new
    )


def _longest_to(back: _Links, root: str, known: dict[str, int]) -> int:
    """The links in the longest chain ending at ``root``, read along ``back`` (which makes
    no cycle), kept in ``known`` for everyone it passes (depth first, without recursion)."""
    path = [root]
    ahead = [iter(back.get(root, ()))]
    longest = [0]
    while path:
        if path[-1] in known:
            found = known[path.pop()]
            ahead.pop()
            longest.pop()
        else:
            earlier = next(ahead[-1], None)
            if earlier is not None:
                path.append(earlier)
                ahead.append(iter(back.get(earlier, ())))
                longest.append(0)
                continue
            known[path[-1]] = found = longest.pop()
            path.pop()
            ahead.pop()
        if path and found + 1 > longest[-1]:
            longest[-1] = found + 1
    return known[root]


def _link(links: _Links, actor: str, delegate: str) -> None:
    ahead = links.setdefault(actor, {})
    ahead[delegate] = ahead.get(delegate, 0) + 1


def _unlink(links: _Links, actor: str, delegate: str) -> None:
    ahead = links[actor]
    ahead[delegate] -= 1
    if not ahead[delegate]:
        del ahead[delegate]
        if not ahead:
            del links[actor]


def _before(actors: Iterable[str], back: _Links, max_chain: int) -> dict[str, None]:
    """``actors`` and everyone up to ``max_chain`` links before them, nearest first."""
    found = dict.fromkeys(actors)
    edge = found
    for _ in range(max_chain):
        edge = dict.fromkeys(
            earlier for actor in edge for earlier in back.get(actor, ()) if earlier not in found
        )
        if not edge:
            break
        found.update(edge)
    return found


class _Walk:
    """Walks of the links in force at one moment, each person's longest chain on kept once
    they are left: a chain over ``max_chain``, or a cycle, is a :class:`ValueError`."""

    __slots__ = ("_links", "_longest", "_max_chain", "_moment", "_next")

    def __init__(self, links: _Links, max_chain: int, moment: datetime) -> None:
        self._links = links
        self._max_chain = max_chain
        self._moment = moment
        self._longest: dict[str, int] = {}
        """The links in the longest chain from each person left (no cycle reaches them)."""
        self._next: dict[str, str] = {}
        """Who comes next in that chain, for a person with a delegate in force."""

    def start(self, root: str) -> None:
        """Walk every chain from ``root`` (depth first, without recursion: ``max_chain`` may
        be larger than the interpreter's stack)."""
        if root in self._longest:
            return
        path = [root]
        on_path = {root: 0}
        ahead = [iter(self._links.get(root, ()))]
        longest = [0]
        while path:
            delegate = next(ahead[-1], None)
            if delegate is None:
                left = path.pop()
                ahead.pop()
                del on_path[left]
                self._longest[left] = found = longest.pop()
                if path and found + 1 > longest[-1]:
                    longest[-1] = found + 1
                    self._next[path[-1]] = left
                continue
            if delegate in on_path:
                self._cycle([*path[on_path[delegate] :], delegate])
            if delegate in self._longest:
                beyond = self._longest[delegate]
                if len(path) + beyond > self._max_chain:
                    self._too_long([*path, delegate])
                if beyond + 1 > longest[-1]:
                    longest[-1] = beyond + 1
                    self._next[path[-1]] = delegate
                continue
            if len(path) > self._max_chain:
                self._too_long([*path, delegate])
            on_path[delegate] = len(path)
            path.append(delegate)
            ahead.append(iter(self._links.get(delegate, ())))
            longest.append(0)

    def longest(self, actor: str) -> int:
        """The links in the longest chain on from ``actor``, once a walk has left them."""
        return self._longest[actor]

    def _cycle(self, cycle: list[str]) -> NoReturn:
        raise ValueError(
            f"Directory: the delegations in force at {self._moment.isoformat()} make a cycle "
            f"({' -> '.join(cycle)}): end one of them, or name someone else"
        )

    def _too_long(self, chain: list[str]) -> NoReturn:
        """Refuse ``chain`` carried on along the longest chains kept, to one link over."""
        while len(chain) - 1 <= self._max_chain:
            chain.append(self._next[chain[-1]])
        raise ValueError(
            f"Directory: the delegations in force at {self._moment.isoformat()} make a chain "
            f"of {len(chain) - 1} ({' -> '.join(chain)}), more than max_chain="
            f"{self._max_chain}: delegate to the last of them directly"
        )

"""Who stands in for someone away: each delegate along the chain in force, the chain each
one is reached by, and names looked up in proportion to the chain however long ``max_chain``
allows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from roomkit.people import Delegation, Directory, Person, StandIn

DEC = datetime(2026, 12, 1, tzinfo=UTC)
NOW = datetime(2026, 12, 5, tzinfo=UTC)
JAN = datetime(2027, 1, 1, tzinfo=UTC)


def away(to: str, ends: datetime = JAN, starts: datetime = DEC, **more: object) -> Delegation:
    return Delegation(to=to, starts=starts, ends=ends, **more)  # type: ignore[arg-type]


def along(approver: str, names: list[str], ends: list[datetime], ident: str) -> list[StandIn]:
    """The stand-ins a chain through ``names`` makes, the links ending at ``ends``."""
    return [
        StandIn(name, approver, ident, min(ends[: index + 1]), tuple(names[: index + 1]))
        for index, name in enumerate(names)
    ]


def test_each_stand_in_has_the_chain_to_them_and_its_earliest_end() -> None:
    names = [f"p{index}" for index in range(1, 200)]
    ends = [JAN - timedelta(hours=(index * 37) % 101) for index in range(len(names))]
    people = {"p0": Person(delegations=[away("p1", ends[0])])}
    for index, name in enumerate(names[:-1]):
        people[name] = Person(delegations=[away(names[index + 1], ends[index + 1])])
    directory = Directory(people, max_chain=len(names))
    ident = people["p0"].delegations[0].ident("p0")
    found = directory.stand_ins("p0", NOW, "pay")
    assert found == along("p0", names, ends, ident)
    assert found[-1].chain == tuple(names)
    assert found[0].chain == ("p1",)
    assert directory.stand_ins("p0", NOW, None) == found
    assert directory.stand_ins("p0", JAN, "pay") == []
    assert directory.stand_ins(names[-1], NOW, "pay") == []


def test_a_chain_stops_at_a_link_not_in_force_or_not_covering_the_tool() -> None:
    ends = {"bob": JAN, "carol": JAN - timedelta(days=1), "dan": JAN, "erin": JAN}
    directory = Directory(
        {
            "alice": Person(delegations=[away("bob")]),
            "bob": Person(delegations=[away("erin", tools={"wire"}), away("carol", ends["carol"])]),
            "carol": Person(
                delegations=[
                    away("dan", JAN + timedelta(days=9), starts=JAN),
                    away("erin", tools={"pay", "refund"}),
                ]
            ),
        },
        max_chain=3,
    )
    ident = Delegation(to="bob", starts=DEC, ends=JAN).ident("alice")

    def chain(names: list[str]) -> list[StandIn]:
        return along("alice", names, [ends[name] for name in names], ident)

    assert directory.stand_ins("alice", NOW, "pay") == chain(["bob", "carol", "erin"])
    assert directory.stand_ins("alice", NOW, "wire") == chain(["bob", "erin"])
    assert directory.stand_ins("alice", NOW, "deploy") == chain(["bob", "carol"])
    # A question goes only through delegations for every tool.
    assert directory.stand_ins("alice", NOW, None) == chain(["bob", "carol"])


def test_delegations_that_would_loop_at_other_moments_each_stand_in_alone() -> None:
    feb = datetime(2027, 2, 1, tzinfo=UTC)
    directory = Directory(
        {
            "alice": Person(delegations=[away("bob")]),
            "bob": Person(delegations=[away("alice", feb, starts=JAN)]),
        }
    )
    assert [s.chain for s in directory.stand_ins("alice", NOW, "pay")] == [("bob",)]
    assert [s.chain for s in directory.stand_ins("bob", JAN, "pay")] == [("alice",)]
    with pytest.raises(ValueError, match=r"cycle \(alice -> bob -> alice\)"):
        Directory(
            {"alice": Person(delegations=[away("bob")]), "bob": Person(delegations=[away("alice")])}
        )


COMPARED = [0]
"""How many times two :class:`_Counted` names were compared."""


class _Counted(str):
    """An actor name counting the comparisons made of it."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        COMPARED[0] += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def _chain_of(count: int) -> tuple[Directory, list[str]]:
    names = [_Counted(f"p{index}") for index in range(count + 1)]
    people = {name: Person(delegations=[away(to)]) for name, to in pairwise(names)}
    return Directory(people, max_chain=count), names


def test_a_long_chain_compares_names_in_proportion_to_its_length() -> None:
    """Each link was looked for among all the links before it: 4.5 million comparisons for
    a chain of 3,000."""
    directory, names = _chain_of(3_000)
    COMPARED[0] = 0
    found = directory.stand_ins(names[0], NOW, "pay")
    assert len(found) == 3_000
    assert found[-1].chain == tuple(names[1:])
    assert COMPARED[0] <= 4 * 3_000

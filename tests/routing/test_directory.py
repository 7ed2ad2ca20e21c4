"""The directory refuses delegations that would loop or run on too long, when it is built."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from types import FrameType
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roomkit.people
from roomkit.notify import Notifier
from roomkit.notify.surface import Directory as OldPathDirectory
from roomkit.notify.surface import Person as OldPathPerson
from roomkit.people import Delegation, Directory, Person, Role, on_call, role
from roomkit.tools.approvals import Approval
from roomkit.tools.human_input import HumanInputHandler

DEC = datetime(2026, 12, 1, tzinfo=UTC)
JAN = datetime(2027, 1, 1, tzinfo=UTC)
FEB = datetime(2027, 2, 1, tzinfo=UTC)


def away(to: str, starts: datetime = DEC, ends: datetime = JAN, **more: object) -> Delegation:
    return Delegation(to=to, starts=starts, ends=ends, **more)  # type: ignore[arg-type]


def test_the_old_import_path_names_the_same_classes() -> None:
    assert OldPathDirectory is Directory
    assert OldPathPerson is Person


def test_a_cycle_is_refused_when_the_directory_is_built() -> None:
    with pytest.raises(ValueError, match=r"cycle \(alice -> bob -> alice\)"):
        Directory(
            {"alice": Person(delegations=[away("bob")]), "bob": Person(delegations=[away("alice")])}
        )


def test_delegations_that_never_hold_together_make_no_cycle() -> None:
    directory = Directory(
        {
            "alice": Person(delegations=[away("bob", DEC, JAN)]),
            "bob": Person(delegations=[away("alice", JAN, FEB)]),
        }
    )
    assert directory.stand_ins("alice", DEC, "pay")[0].actor == "bob"
    assert directory.stand_ins("bob", JAN, "pay")[0].actor == "alice"


def test_a_chain_over_the_bound_is_refused() -> None:
    people = {
        name: Person(delegations=[away(to)])
        for name, to in (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"))
    }
    with pytest.raises(ValueError, match=r"chain of 4 \(a -> b -> c -> d -> e\).*max_chain=3"):
        Directory(people)
    assert len(Directory(people, max_chain=4)) == 4


def test_a_delegation_to_oneself_or_without_a_timezone_is_refused() -> None:
    with pytest.raises(ValueError, match="delegates to themselves"):
        Directory({"alice": Person(delegations=[away("alice")])})
    with pytest.raises(ValueError, match="timezone-aware"):
        Delegation(to="bob", starts=datetime(2026, 12, 1), ends=JAN)
    with pytest.raises(ValueError, match="ends"):
        Delegation(to="bob", starts=JAN, ends=DEC)


@pytest.mark.parametrize("tools", [{1, 2}, {"pay", ""}, [None]])
def test_a_delegation_naming_no_tool_by_text_is_refused(tools: object) -> None:
    """A tool named by a number or an empty text is no tool's name: the delegation would
    cover none of the calls meant."""
    with pytest.raises(TypeError, match=r"Delegation\(tools=...\) holds tool names"):
        Delegation(to="bob", starts=DEC, ends=JAN, tools=tools)  # type: ignore[arg-type]


def test_one_delegation_given_in_place_of_a_list_says_to_list_it() -> None:
    with pytest.raises(TypeError, match=r"pass \[Delegation\(...\)\]"):
        Person(delegations=away("bob"))  # type: ignore[arg-type]


@pytest.mark.parametrize("group", [role("kyc"), on_call("payments")])
def test_a_delegation_to_a_group_is_refused_naming_it(group: str) -> None:
    """Routed as a person's id, it reached none of the group: nobody decided for Alice."""
    with pytest.raises(ValueError, match=f"'alice' delegates to '{group}', a group"):
        Directory({"alice": Person(delegations=[away(group)])}, roles={"kyc": Role(["bob"])})


class _NoOffset(tzinfo):
    """A timezone without its data: it gives no offset from UTC."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None


@pytest.mark.parametrize("zone", [_NoOffset(), tzinfo()])
def test_a_delegation_in_a_timezone_giving_no_offset_is_refused(zone: tzinfo) -> None:
    """Its times could be compared with no moment a request is routed at."""
    with pytest.raises(ValueError, match="must be a timezone-aware datetime"):
        Delegation(to="bob", starts=datetime(2026, 12, 1, tzinfo=zone), ends=JAN)


NEW_YORK = ZoneInfo("America/New_York")


def test_a_delegation_over_the_hour_a_clock_repeats_is_timed_as_instants() -> None:
    """01:30 EDT to 01:30 EST is an hour, not nothing; 01:10 EST to 01:50 EDT ends first."""
    starts = datetime(2026, 11, 1, 1, 30, tzinfo=NEW_YORK)
    hour = Delegation(to="bob", starts=starts, ends=starts.replace(fold=1))
    assert hour.holds(datetime(2026, 11, 1, 6, tzinfo=UTC))
    assert hour.holds(datetime(2026, 11, 1, 1, 59, tzinfo=NEW_YORK))
    assert not hour.holds(datetime(2026, 11, 1, 1, 40, tzinfo=NEW_YORK, fold=1))
    with pytest.raises(ValueError, match="before it starts"):
        Delegation(
            to="bob",
            starts=datetime(2026, 11, 1, 1, 10, tzinfo=NEW_YORK, fold=1),
            ends=datetime(2026, 11, 1, 1, 50, tzinfo=NEW_YORK),
        )


def test_a_naive_moment_is_refused_not_read_as_local_time() -> None:
    """Compared as an instant, a naive moment would be taken as this machine's local time,
    a moment that differs from one host to the next: it is refused, as it was when moments
    were compared as they stand."""
    people = Directory({"alice": Person(delegations=[away("bob", DEC, JAN)])})
    with pytest.raises(TypeError, match="timezone-aware datetime"):
        people.away("alice", datetime(2026, 12, 15))


def test_a_cycle_within_the_hour_a_clock_repeats_is_refused() -> None:
    """Alice's delegation holds to 01:30 EST, after Bob's starts at 01:50 EDT."""
    starts = datetime(2026, 11, 1, 1, 30, tzinfo=NEW_YORK)
    alice = Delegation(to="bob", starts=starts, ends=starts.replace(fold=1))
    bob = away("alice", datetime(2026, 11, 1, 1, 50, tzinfo=NEW_YORK), JAN)
    with pytest.raises(ValueError, match="make a cycle"):
        Directory({"alice": Person(delegations=[alice]), "bob": Person(delegations=[bob])})


def test_a_person_who_is_their_own_manager_is_refused() -> None:
    """An escalation to them would reach no one new, and tell them it was escalated."""
    with pytest.raises(ValueError, match=r"^Directory: 'alice' is their own manager: leave"):
        Directory({"alice": Person(manager="alice")})


def test_managers_that_lead_back_are_refused_naming_the_cycle() -> None:
    people = {"ann": Person(manager="alice"), "alice": Person(manager="bob")}
    with pytest.raises(ValueError, match=r"managers make a cycle \(alice -> bob -> alice\)"):
        Directory({**people, "bob": Person(manager="alice")})
    with pytest.raises(ValueError, match="'bob' is their own manager"):
        Directory({**people, "bob": Person(manager="bob")})
    # A chain of managers ending with someone the directory does not list is fine.
    assert len(Directory({**people, "bob": Person(manager="carol")})) == 3


class _NobodyOnCall:
    async def on_call_at(self, at: datetime) -> str | None:
        return None


@pytest.mark.parametrize("name", ["k\x00yc", "kyc\n", "k\x1b[2Jyc", " kyc"])
def test_a_group_name_that_is_no_actor_name_is_refused(name: str) -> None:
    """A role's or a schedule's name travels in approvers, logs and histories."""
    with pytest.raises(ValueError, match=r"^Directory: the role name '.*' (holds|starts)"):
        Directory(roles={name: Role(members=["dan"])})
    with pytest.raises(
        ValueError, match=r"^Directory: the on-call schedule name '.*' (hold|start)"
    ):
        Directory(on_call={name: _NobodyOnCall()})
    with pytest.raises(ValueError, match=r"role\(\) takes the group's name"):
        role(name)
    with pytest.raises(ValueError, match=r"on_call\(\) takes the group's name"):
        on_call(name)


def test_a_group_name_too_long_for_its_approver_is_refused() -> None:
    """``role:NAME`` and ``on-call:NAME`` are approvers, kept as actor ids are (256)."""
    assert len(role("r" * 251)) == len(on_call("o" * 248)) == 256
    assert Approval(approvers=[role("r" * 251), on_call("o" * 248)])
    too_long = "longer than the 256 characters an actor id may have"
    with pytest.raises(ValueError, match=f"role\\(\\) takes .* 252 characters long: .*{too_long}"):
        role("r" * 252)
    with pytest.raises(
        ValueError, match=f"on_call\\(\\) takes .* 249 characters long: .*{too_long}"
    ):
        on_call("o" * 249)
    with pytest.raises(ValueError, match=f"^Directory: the role name .*{too_long}"):
        Directory(roles={"r" * 256: Role(members=["dan"])})
    with pytest.raises(ValueError, match=f"^Directory: the on-call schedule name .*{too_long}"):
        Directory(on_call={"o" * 249: _NobodyOnCall()})


def test_a_chain_covers_only_what_every_link_covers() -> None:
    directory = Directory(
        {
            "alice": Person(delegations=[away("bob", tools={"refund", "pay"})]),
            "bob": Person(delegations=[away("carol", tools={"refund"})]),
        }
    )
    assert [s.actor for s in directory.stand_ins("alice", DEC, "refund")] == ["bob", "carol"]
    assert [s.actor for s in directory.stand_ins("alice", DEC, "pay")] == ["bob"]
    assert directory.stand_ins("alice", DEC, "wire") == []


def test_groups_are_named_by_reference() -> None:
    assert (role("kyc"), on_call("payments")) == ("role:kyc", "on-call:payments")
    with pytest.raises(ValueError, match="at least one"):
        Role(members=[])
    with pytest.raises(TypeError, match="on_call_at"):
        Directory(on_call={"payments": object()})  # type: ignore[dict-item]


def test_the_notifier_reaches_people_by_the_handlers_directory() -> None:
    routed = Directory({"alice": Person(email="a@example.com", delegations=[away("bob")])})
    handler = HumanInputHandler(directory=routed)
    assert Notifier(handler, []).directory is routed
    assert Notifier(handler, [], directory=routed).directory is routed
    with pytest.raises(ValueError, match=r"not its handler's directory: .*leave directory out"):
        Notifier(handler, [], directory=Directory({"alice": Person(email="b@example.com")}))


def test_a_notifier_refuses_routing_its_handler_would_not_do() -> None:
    plain = HumanInputHandler()
    people = Directory({"alice": Person(email="a@example.com", manager="mallory")})
    assert Notifier(plain, [], directory=people).directory is people
    for routed in (
        Directory({"alice": Person(delegations=[away("bob")])}),
        Directory(roles={"kyc": Role(members=["dan"])}),
    ):
        with pytest.raises(ValueError, match=r"give the directory to HumanInputHandler\(directory"):
            Notifier(plain, [], directory=routed)


def _too_long(links: dict[str, list[str]], path: tuple[str, ...], bound: int) -> bool:
    if len(path) - 1 > bound:
        return True
    return any(to in path or _too_long(links, (*path, to), bound) for to in links[path[-1]])


def _over_bound(people: dict[str, list[tuple[str, int, int]]], bound: int) -> bool:
    """Whether, at some day, the delegations in force make a cycle or a chain over ``bound``:
    every path walked from every person, by brute force."""
    days = {start for links in people.values() for _, start, _ in links}
    for day in days:
        links = {name: [] for name in NAMES}
        for actor, out in people.items():
            links[actor] = [to for to, start, end in out if start <= day < end]
        if any(_too_long(links, (actor,), bound) for actor in links):
            return True
    return False


NAMES = ("a", "b", "c", "d", "e")


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(NAMES),
        st.lists(
            st.tuples(st.sampled_from(NAMES), st.integers(0, 6), st.integers(1, 4)),
            max_size=3,
        ),
    ),
    st.integers(1, 3),
)
def test_the_directory_refuses_exactly_the_cycles_and_long_chains_some_moment_holds(
    drawn: dict[str, list[tuple[str, int, int]]], bound: int
) -> None:
    people = {
        actor: [(to, start, start + length) for to, start, length in out if to != actor]
        for actor, out in drawn.items()
    }
    entries = {
        actor: Person(
            delegations=[
                away(to, DEC + timedelta(days=start), DEC + timedelta(days=end))
                for to, start, end in out
            ]
        )
        for actor, out in people.items()
    }
    if _over_bound(people, bound):
        with pytest.raises(ValueError, match=r"make a (cycle|chain)"):
            Directory(entries, max_chain=bound)
    else:
        assert len(Directory(entries, max_chain=bound)) == len(entries)


def test_a_long_actor_id_refused_is_quoted_with_its_cut_marked() -> None:
    with pytest.raises(ValueError, match=r"^Directory: the actor id 'a{36}\.\.\. ") as refused:
        Directory({"a" * 1_000 + " b": Person()})
    assert len(str(refused.value)) < 400


class _TooManySteps(Exception):
    pass


def _steps_building(people: dict[str, Person], max_chain: int, budget: int) -> int:
    """The lines of :mod:`roomkit.people` run building the directory, stopping the build
    with :class:`_TooManySteps` past ``budget``."""
    folder = str(Path(roomkit.people.__file__).parent)
    steps = 0

    def count(frame: FrameType, event: str, arg: object) -> object:
        nonlocal steps
        if event == "line":
            steps += 1
            if steps > budget:
                raise _TooManySteps
        return count

    def tracer(frame: FrameType, event: str, arg: object) -> object:
        return count if frame.f_code.co_filename.startswith(folder) else None

    previous = sys.gettrace()
    sys.settrace(tracer)  # type: ignore[arg-type]
    try:
        Directory(people, max_chain=max_chain)
    finally:
        sys.settrace(previous)
    return steps


def test_checking_a_lattice_of_delegations_takes_steps_in_proportion_to_its_links() -> None:
    """Six layers of 30 people, each delegating to all of the next layer: 4,500 links, and
    24 million chains from each of the first layer, which are not walked one by one."""
    layers = [[f"p{layer}_{index}" for index in range(30)] for layer in range(6)]
    people = {
        name: Person(delegations=[away(to) for to in (layers[row + 1] if row < 5 else [])])
        for row, layer in enumerate(layers)
        for name in layer
    }
    links = sum(len(person.delegations) for person in people.values())
    budget = 100 * (links + len(people))
    assert _steps_building(people, 5, budget) <= budget
    with pytest.raises(ValueError, match=r"chain of 5 \(p0_0 -> p1_0 -> .* -> p5_0\).*=4"):
        _steps_building(people, 4, budget)


def _one_after_another(count: int) -> dict[str, Person]:
    """Alice's ``count`` delegations, each to someone else, each starting a minute after
    the one before, all in force until January."""
    minute = timedelta(minutes=1)
    return {
        "alice": Person(delegations=[away(f"d{n}", DEC + n * minute) for n in range(count)]),
        "bob": Person(delegations=[away("alice")]),
        **{f"d{n}": Person() for n in range(count)},
    }


def test_one_persons_delegations_starting_one_after_another_take_steps_in_proportion() -> None:
    """At each start, every delegation of alice's in force was walked again: 2,000 of them
    starting one after another took 2 million walks."""
    people = _one_after_another(2_000)
    budget = 200 * (2_001 + len(people))
    assert _steps_building(people, 3, budget) <= budget
    looping = {**people, "d1999": Person(delegations=[away("bob", DEC + timedelta(days=3))])}
    cycle = r"at 2026-12-04T00:00:00\+00:00 make a cycle \(alice -> d1999 -> bob -> alice\)"
    with pytest.raises(ValueError, match=cycle):
        _steps_building(looping, 3, budget)

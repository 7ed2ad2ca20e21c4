"""What a request's arguments may be as JSON, read without writing them: how long, how deep,
how long a number, and whether they hold themselves.

Whatever writes arguments a model or a person handed in (the handler's ``create``, an
:class:`~roomkit.models.decisions.Edit`, a workflow's ask) reads them here first, so that a
value every store keeps is the value every store is given. Writing is what fails otherwise:

- a value held in many places is written once for each, so a small graph of shared lists
  can stand for more JSON than any machine could write (``a = [a, a]`` forty times over);
- a value nested a thousand levels deep is past the recursion limit of ``json`` (a store
  fails there, the memory store kept it), and one past :data:`MAX_ARGUMENTS_DEPTH` cannot
  come back in the body of an edit;
- an integer of more than 4,300 digits is past what ``str()`` writes, and one past
  :data:`MAX_NUMBER_CHARS` characters past what a body may carry.

The walk keeps its own stack (any depth is fine), counts each value once for every path to
it, as JSON writes it, and stops once the least the JSON can be is far past the limit, so it
visits a few hundred thousand values at most, however many paths a shared value has.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from roomkit.models.shown import shown

__all__ = [
    "MAX_APPROVERS",
    "MAX_ARGUMENTS_CHARS",
    "MAX_ARGUMENTS_DEPTH",
    "MAX_ID_CHARS",
    "MAX_KEY_CHARS",
    "MAX_NUMBER_CHARS",
    "MAX_SCOPED_KEY_BYTES",
    "TOP",
    "Path",
    "arguments_problem",
    "check_approver_count",
    "circular_at",
    "json_bounds",
    "path_text",
    "size_problem",
    "with_paths",
]

MAX_ARGUMENTS_CHARS = 56_000
"""The longest arguments (as JSON text) a request takes, on every store: its ``created``
entry keeps them beside the tool, the ids, the time and digest, an approval's description
(at most 4,000 characters) and approvers, all within the 89,900 characters of a history
entry (:data:`roomkit.stores.MAX_ENTRY_CHARS`)."""
MAX_ARGUMENTS_DEPTH = 24
"""The most levels of objects and lists arguments nest (the arguments' own object is the
first). Arguments a model writes rarely nest past ten; the desk takes bodies 32 levels deep
(:class:`~roomkit.desk.limits.DeskLimits`), and an edit sends the arguments back one level
down in its body, the deepest envelope a surface wraps them in (an A2A message) seven."""
MAX_NUMBER_CHARS = 100
"""The most characters of an integer as JSON (its digits and sign): what a body to the desk,
``roomkit mcp`` or A2A may carry (:attr:`roomkit.bodies.BodyLimits.max_number_chars`), and
below the fewest digits any interpreter writes (``sys.set_int_max_str_digits`` takes 640)."""

MAX_ID_CHARS = 256
"""The most characters each name a request holds may have, on every store: its
``room_id``, ``channel_id``, ``actor_id`` and ``tool_name``, and each of an approval's
approvers. PostgreSQL indexes the room and the actor, an index entry holding at most 2,704
bytes: 256 characters are at most 1,024 bytes of UTF-8. A created entry keeps four of them
and a surface beside the longest arguments, description and approvers, within the 89,900
characters of a history entry (56,000 + 4,000 + 5 x 256 + 100 x 259, and its other
fields)."""
MAX_APPROVERS = 100
"""The most approvers an approval may list, on every store, counted once each: those it is
made with (``Approval(approvers=...)``, a :class:`~roomkit.tools.approvals.Quorum`'s
``of=``, ``create_approval(approvers=...)``) and those escalations add to it. Each name is
kept in the request's row, in its ``created`` entry and in every notice that names who may
decide; a larger group is a role or an on-call schedule of the directory (``role:ops``),
one name however many people it holds."""
MAX_KEY_CHARS = 1_200
"""The most characters of a request's idempotency ``key`` and of its ``tool_call_id``:
room for an adapter's key (400 at most, then kept by its digest), for a Temporal workflow's
key and call id, which hold the workflow's id (up to 1,000 characters in Temporal) with its
run ids, and for an AI channel's ``room:channel:tool-call-id`` key of a call id up to 686
characters beside a room and a channel at :data:`MAX_ID_CHARS`."""
MAX_SCOPED_KEY_BYTES = 2_000
"""The most bytes of a key with its scope as every store keeps it: the JSON array of the
room, channel, actor and key (UTF-8, compact), which PostgreSQL holds in a unique index
whose entries take at most 2,704 bytes. Ids and a key of ASCII at their bounds make
1,981 bytes (3 x 256 + 1,200 + 13), so only text of several bytes a character (or that
JSON escapes) can reach it; in 4-byte characters the bounds alone would allow 7,885."""

_WALK_BUDGET = 4 * MAX_ARGUMENTS_CHARS
"""The walk over arguments stops once their JSON is sure to be longer than this; up to it,
the JSON is written when the bounds leave its length in doubt (a few megabytes at most)."""
_ESCAPE = 6
"""The most characters JSON spells one character of text in (``\\u001f``)."""
_NUMBER = 25
"""At least the JSON of a float, a flag or null, with its separator."""
_SMALL = 10**20
"""Integers closer to zero are as short as any number (:data:`_NUMBER`)."""
_PAST_POSITIVE = 10**MAX_NUMBER_CHARS
_PAST_NEGATIVE = -(10 ** (MAX_NUMBER_CHARS - 1))
_ARGUMENTS_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""How a store spells arguments (keys unsorted: the length is the same)."""


class Path:
    """Where a value sits in another, as the step to it from its container's path.

    A walk makes one of these per value rather than a copy of the whole path (which costs
    as much as the value is deep, and so, over a value nested many thousand levels, more
    time and memory than the value itself): the steps are read out only to be shown.
    Iterating gives the steps from the top; the top level itself is :data:`TOP`, which is
    false.
    """

    __slots__ = ("parent", "step")

    def __init__(self, parent: Path | None, step: str | int) -> None:
        self.parent = parent
        self.step = step

    def to(self, step: str | int) -> Path:
        """The path of the value at ``step`` in the one here."""
        return Path(self, step)

    def __bool__(self) -> bool:
        return self.parent is not None

    def __iter__(self) -> Iterator[str | int]:
        steps: list[str | int] = []
        node: Path | None = self
        while node is not None and node.parent is not None:
            steps.append(node.step)
            node = node.parent
        return reversed(steps)


TOP = Path(None, "")
"""The path of the value a walk starts from: no step."""


def path_text(path: Iterable[str | int]) -> str:
    """``path`` as text: ``questions[0].options``."""
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        else:
            text += f".{step}" if text else str(step)
    return text


def with_paths(value: object) -> Iterator[tuple[object, Path]]:
    """Each value in ``value`` with its path, in document order, a container before what
    it holds; a container reached again (by another path, or inside itself) is not entered
    again, so the walk visits each value once however it is shared."""
    stack: list[tuple[object, Path]] = [(value, TOP)]
    seen: set[int] = set()
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
        yield item, path
        if isinstance(item, dict):
            children = [(child, path.to(str(key))) for key, child in item.items()]
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend((child, path.to(i)) for i, child in reversed(list(enumerate(item))))


# -- approvers -------------------------------------------------------------------------------


def check_approver_count(count: int, name: str, *, listed: int = 0) -> None:
    """Refuse ``count`` approvers past :data:`MAX_APPROVERS`:
    all ``name`` hold, or (``listed`` > 0) those an escalation adding ``name`` to the
    ``listed`` approvers of a request would leave it with.

    Raises:
        ValueError: there are more; the message names ``name``, the count and the limit.
    """
    if count <= MAX_APPROVERS:
        return
    held = (
        f"{name} and the {listed:,} approvers listed already make {count:,}"
        if listed
        else f"{name} hold {count:,} actor ids"
    )
    raise ValueError(
        f"{held}, over the {MAX_APPROVERS:,} approvers an approval may list on every store: "
        "name a role or an on-call schedule of the directory ('role:ops') for a large "
        "group; nothing was stored"
    )


# -- the walk --------------------------------------------------------------------------------


def json_bounds(value: object) -> tuple[int, int, int, bool]:
    """The least and the most ``value``'s JSON can be long, how many objects and lists it
    holds, and whether it holds an integer longer than :data:`MAX_NUMBER_CHARS`, read
    without writing it.

    Each value reached counts once for every path to it, as JSON writes it; the walk stops
    once the least is over four times :data:`MAX_ARGUMENTS_CHARS` (and the figures are then
    for the part walked).
    """
    least = most = containers = 0
    long_number = False
    stack = [value]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        if isinstance(item, str):
            length = len(item)
            least += length + 2  # quotes
            most += _ESCAPE * length + 3  # quotes, and a colon or comma
        elif isinstance(item, dict):
            containers += 1
            count = len(item)
            least += 2 * count + 1 if count else 2  # braces, colons and commas
            most += 2
            if least > _WALK_BUDGET:
                break  # before reading its entries: one wide object is refused at once
            for key, child in item.items():
                push(key)
                push(child)
        elif isinstance(item, list | tuple):
            containers += 1
            count = len(item)
            least += count + 1 if count else 2  # brackets and commas
            most += 2 + count
            if least > _WALK_BUDGET:
                break
            extend(item)
        elif isinstance(item, int) and not -_SMALL < item < _SMALL:
            bits = item.bit_length()
            least += (bits - 1) * 3 // 10 + 1  # a digit per 3.33 bits, rounded down
            most += bits // 3 + 3  # a digit per 3.32 bits, and a sign
            if item >= _PAST_POSITIVE or item <= _PAST_NEGATIVE:
                long_number = True
        else:
            least += 1
            most += _NUMBER
        if least > _WALK_BUDGET:
            break
    return least, most, containers, long_number


# -- what keeps arguments out of a request ----------------------------------------------------

_SMALLER = "pass what identifies large content (an id, a URL), not the content"


def arguments_problem(arguments: object) -> str | None:
    """What keeps ``arguments`` from being a request's arguments on every store and surface,
    worded for a message (``"the arguments are 60,012 characters as JSON, over ..."``), or
    ``None``: longer as JSON than :data:`MAX_ARGUMENTS_CHARS`, nested deeper than
    :data:`MAX_ARGUMENTS_DEPTH`, or holding an integer longer than :data:`MAX_NUMBER_CHARS`.

    ``arguments`` are taken to hold no loop (:func:`circular_at` says where one is); what is
    no JSON (bytes, a set) is left for the caller to name.
    """
    bounds = json_bounds(arguments)
    least, _, containers, long_number = bounds
    if least > _WALK_BUDGET:
        return _at_least(least)
    if containers > MAX_ARGUMENTS_DEPTH:
        deep = _deep_at(arguments)
        if deep is not None:
            return (
                f"the arguments nest objects and lists more than {MAX_ARGUMENTS_DEPTH} levels "
                f"deep ({deep}), past what a request keeps and a person's edit can send back: "
                "flatten them, or pass the nested part as JSON text"
            )
    if long_number:
        number = _long_number_at(arguments)
        if number is not None:
            return (
                f"the arguments hold {number}, past the {MAX_NUMBER_CHARS} characters a number "
                "in a request may have (its digits and sign): send it as a string"
            )
    return _size_of(arguments, bounds)


def size_problem(arguments: object) -> str | None:
    """What :func:`arguments_problem` says of the length of ``arguments`` alone, or ``None``
    when they are no longer as JSON than :data:`MAX_ARGUMENTS_CHARS`."""
    bounds = json_bounds(arguments)
    return _at_least(bounds[0]) if bounds[0] > _WALK_BUDGET else _size_of(arguments, bounds)


def _at_least(least: int) -> str:
    # The walk stopped early: writing the JSON out could take longer than anyone waits, a
    # value shared by many paths being written once per path.
    return (
        f"the arguments are at least {least:,} characters as JSON (a value held in several "
        f"places is written once for each), over the {MAX_ARGUMENTS_CHARS:,} a request "
        f"keeps: shorten them, or {_SMALLER}"
    )


def _size_of(arguments: object, bounds: tuple[int, int, int, bool]) -> str | None:
    if bounds[1] <= MAX_ARGUMENTS_CHARS:
        return None
    try:
        size = len(_ARGUMENTS_JSON.encode(arguments))
    except (TypeError, ValueError, RecursionError):
        return None  # no JSON: the caller says where
    if size <= MAX_ARGUMENTS_CHARS:
        return None
    return (
        f"the arguments are {size:,} characters as JSON, over the {MAX_ARGUMENTS_CHARS:,} a "
        f"request keeps: shorten them (the question, its options), or {_SMALLER}"
    )


def _deep_at(value: object) -> str | None:
    """Where ``value`` first nests past :data:`MAX_ARGUMENTS_DEPTH`, worded for a message
    (``"level 25 at 'a[0][0]...'"``), or ``None`` if it does not."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        item, level, path = stack.pop()
        if isinstance(item, dict):
            children: Iterable[tuple[Any, str | int]] = ((v, str(k)) for k, v in item.items())
        elif isinstance(item, list | tuple):
            children = ((v, index) for index, v in enumerate(item))
        else:
            continue
        if level > MAX_ARGUMENTS_DEPTH:
            return f"level {level} at {shown(path_text(path))}"
        stack.extend(
            (child, level + 1, (*path, step))
            for child, step in reversed(list(children))
            if isinstance(child, dict | list | tuple)
        )
    return None


def _long_number_at(value: object) -> str | None:
    """The first integer longer than :data:`MAX_NUMBER_CHARS` in ``value`` and where it
    is, worded for a message (``"an integer 5,000 characters long at 'n'"``), or ``None``."""
    for item, path in with_paths(value):
        if isinstance(item, int) and (item >= _PAST_POSITIVE or item <= _PAST_NEGATIVE):
            where = f"at {shown(path_text(path))}" if path else "at the top level"
            length = _digits(item) + (item < 0)
            return f"an integer {length:,} characters long {where}"
    return None


def _digits(number: int) -> int:
    """How many digits ``number`` has, without ``str()`` (which refuses past 4,300)."""
    number = abs(number)
    digits = number.bit_length() * 30103 // 100000 + 1  # log10(2) rounded down: never short
    return digits if number >= 10 ** (digits - 1) else digits - 1


# -- a value that holds itself -----------------------------------------------------------------

_FLAT = frozenset({str, int, float, bool, type(None)})
"""The exact types of JSON values that hold no other value."""


def circular_at(value: object, *, limit: int | None = None) -> str | None:
    """Where ``value`` holds itself (a dict or list inside itself, which no JSON can write),
    worded for a message (``"'a.b'"``, ``"the top level"``), or ``None`` if it does not.

    A dict or list reached twice by different paths is no loop: JSON writes it twice.
    With ``limit``, the look reads at most that many values (the entries of the dicts and
    lists it opens, each once), and says ``None`` when it finds no loop among them.
    """
    left = limit
    # The common case first: a flat object of texts, numbers, flags and nulls.
    if (
        type(value) is dict
        and (left is None or len(value) <= left)
        and all(type(child) in _FLAT for child in value.values())
    ):
        return None
    on_path: set[int] = set()  # the containers above the one being looked at
    done: set[int] = set()  # the containers looked at in full, holding no loop
    stack: list[tuple[object, Path, bool]] = [(value, TOP, False)]
    while stack:
        item, path, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            done.add(id(item))
            continue
        if not isinstance(item, dict | list | tuple):
            continue
        if id(item) in on_path:
            return repr(path_text(path)) if path else "the top level"
        if id(item) in done:
            continue
        if left is not None:
            left -= len(item)
            if left < 0:
                return None
        if isinstance(item, dict):
            children = [(child, path.to(str(key))) for key, child in item.items()]
        else:
            children = [(child, path.to(index)) for index, child in enumerate(item)]
        on_path.add(id(item))
        stack.append((item, path, True))
        stack.extend((child, where, False) for child, where in reversed(children))
    return None

"""How a process numbers its room events, alone and once a durable room store gave it a node.

The generator serves the whole process, so each case runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_PRELUDE = """
from roomkit.models.event_ids import NODE_BITS, has_event_node, reserve_event_ids
from roomkit.models.room import RoomEvent, TextContent

def new():
    return RoomEvent("r", "c", "s", TextContent("x")).id

LOW = (1 << NODE_BITS) - 1
"""


def _run(case: str) -> None:
    """Run ``case`` (after :data:`_PRELUDE`) in a fresh interpreter; its asserts must hold."""
    done = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(case)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_a_process_without_a_durable_store_counts_from_one() -> None:
    """The memory store's events are numbered as they always were."""
    _run(
        """
        assert [new(), new(), new()] == [1, 2, 3]
        reserve_event_ids(41)
        assert new() == 42
        assert not has_event_node()
        """
    )


def test_a_node_fills_the_low_bits_and_ids_go_on_increasing() -> None:
    _run(
        """
        before = [new(), new()]
        reserve_event_ids(0, node=3)
        after = [new(), new(), new()]
        assert before + after == sorted(set(before + after))
        assert {i & LOW for i in after} == {3}
        assert has_event_node()
        """
    )


def test_stored_ids_old_and_new_stay_below_the_next_id() -> None:
    """A store's plain ids of an earlier version, and node ids of other processes alike."""
    _run(
        """
        reserve_event_ids(5, node=1)
        assert new() > 5
        other = (10**6 << NODE_BITS) | 9
        reserve_event_ids(other)
        first = new()
        assert first > other and first & LOW == 1
        reserve_event_ids(70_000)  # smaller than what this process handed out: no change
        assert new() == first + (1 << NODE_BITS)
        """
    )


def test_the_first_node_is_kept_and_nodes_are_taken_modulo_the_node_bits() -> None:
    _run(
        """
        reserve_event_ids(0, node=(1 << NODE_BITS) + 7)
        reserve_event_ids(0, node=9)  # a second store opened by the same process
        assert new() & LOW == 7
        """
    )


def test_a_negative_node_is_refused() -> None:
    _run(
        """
        try:
            reserve_event_ids(0, node=-1)
        except ValueError as error:
            assert "0 or more" in str(error)
        else:
            raise AssertionError("a negative node was taken")
        assert not has_event_node()
        """
    )

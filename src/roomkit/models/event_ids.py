"""The ids of room events: increasing in a process, and distinct across the processes of a store.

A :class:`~roomkit.models.room.RoomEvent` takes its id from one generator per process. Alone
(the memory store, no durable room store opened), the ids are a plain count: 1, 2, 3, ...

Processes that share a durable room store (replicas of one service) each count on their own,
so a count alone would hand the same id to two of their events. When a durable room store
opens, it therefore gives the process a *node* number (every opening of the store takes the
next one, with one atomic write) and the largest event id it holds. From then on an id is
``(count << NODE_BITS) | node % 2**NODE_BITS``: two processes with different nodes never make
the same id, however fast each creates events, and the count is moved past the stored ids, so
that every new id is greater than each id the store held when it opened (the plain ids of
earlier versions included) and than each id the process handed out before.

What holds, and where it stops:

- Ids are unique among the processes open on one store at the same time as long as fewer than
  ``2**NODE_BITS`` (65,536) other processes open the store during one process's life: nodes
  are taken modulo that. A process takes one node only (reopening a store takes none).
- With 37 bits left for the count, ids stay below ``2**53`` (exact in JavaScript) until the
  count reaches about 137 billion: the count of the busiest process, moved past the stored
  ids at each start, grows by one per event it creates.
- A process keeps the node of the first durable room store it opens (the generator serves
  the whole process). A store it opens later moves the count past its ids but gives no
  node: among the processes sharing that second store, the ids of this one are distinct
  only from those of processes whose node came from the same first store. Deployments open
  one room store per process.
"""

from __future__ import annotations

import threading

__all__ = ["NODE_BITS", "has_event_node", "next_event_id", "reserve_event_ids"]

NODE_BITS = 16
"""The low bits of an id that hold the process's node, once a durable room store gave one."""

_lock = threading.Lock()
_count = 1
"""The count of the next id."""
_node: int | None = None
"""The node a durable room store gave this process (already taken modulo ``2**NODE_BITS``)."""


def next_event_id() -> int:
    """A new event id: greater than every id handed out before in this process."""
    global _count
    with _lock:
        count = _count
        _count += 1
        node = _node
    return count if node is None else (count << NODE_BITS) | node


def has_event_node() -> bool:
    """Whether a durable room store gave this process its node already.

    A store that opens when it is so takes no node number from its counter.
    """
    return _node is not None


def reserve_event_ids(last_used: int, *, node: int | None = None) -> None:
    """Make every id handed out from now on greater than ``last_used``; adopt ``node``.

    A durable room store calls this when it opens, with the largest id it holds and, when
    :func:`has_event_node` was false, the node number it took for this process. The first
    node a process is given is kept; a later one is ignored.

    Args:
        last_used: the largest id stored (0 for none).
        node: the number the store gave this process, or ``None``.

    Raises:
        ValueError: ``node`` is negative.
    """
    global _count, _node
    if node is not None and node < 0:
        raise ValueError(f"an event-id node is 0 or more, got {node!r}")
    with _lock:
        if _node is None and node is not None:
            # The plain ids handed out so far (1 to _count - 1) stay below the first id that
            # carries the node.
            _count = ((_count - 1) >> NODE_BITS) + 1
            _node = node % (1 << NODE_BITS)
        above = last_used + 1 if _node is None else (last_used >> NODE_BITS) + 1
        _count = max(_count, above)

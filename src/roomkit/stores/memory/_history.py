"""Histories kept in this process's memory, by request id: :class:`MemoryHistory`.

A handler on the memory store does not need one: its requests carry their own histories
(:mod:`roomkit.tools.human_input._memory_trail`), and these go with them. The chain, its
texts and links are :mod:`roomkit.stores._history`'s.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from roomkit.stores._history import chain_text, chain_texts, read_entry

__all__ = ["MemoryHistory"]


class MemoryHistory:
    """Histories of requests, in this process's memory, by request id.

    Every chain is kept while the handler lives: an open request's chain is never dropped.

    Args:
        limit: ``None`` (the default) keeps every chain; a number keeps at most that many
            chains of settled requests (a chain counts as settled once a ``settled`` entry
            joins it), the oldest settled forgotten first. A chain of a request still open
            is never forgotten, whatever the limit.

    Raises:
        TypeError, ValueError: ``limit`` is not ``None`` or a positive int.
    """

    def __init__(self, *, limit: int | None = None) -> None:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be >= 1 (or None to keep every chain), got {limit}")
        self._limit = limit
        # Each chain's stored texts, oldest first; an entry appended by a settle stays a
        # dict until the chain is read, and is linked then, in its place.
        self._entries: dict[str, list[str | dict[str, Any]]] = {}
        self._settled: deque[str] = deque()
        """The requests whose chains hold a ``settled`` entry, oldest settled first."""

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry``, linked now: its values are stored as they are at this call."""
        return self.append_linked(pending_id, (entry,))[0]

    def append_linked(self, pending_id: str, entries: Sequence[Mapping[str, Any]]) -> list[int]:
        """As :meth:`append_chained`, linked at once: for entries whose values may change
        after this call (a ``created`` entry holds the request's arguments)."""
        texts = self._texts(pending_id)  # what a settle appended is linked first
        chain = self._entries.setdefault(pending_id, [])
        first = len(chain)
        chain += chain_texts(entries, pending_id, texts[-1] if texts else None)
        self._forget(entries, pending_id)
        return list(range(first, len(chain)))

    def append_chained(self, pending_id: str, entries: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append ``entries`` (checked already) to the request's chain, in order; their seqs.

        Synchronous: called in the same step of the event loop as the write it belongs with
        (a settle of the memory store), nothing can come between them, so the check-and-set
        on the head is implicit, and whoever learns of the write finds its entries stored.
        The entries are copied now and linked (their text and ``prev`` made) when the chain
        is next read or appended to, so their values must not change meanwhile (a settle's
        entries hold texts only); the order, and so the chain, is fixed here.
        """
        chain = self._entries.setdefault(pending_id, [])
        first = len(chain)
        chain += [dict(entry) for entry in entries]
        self._forget(entries, pending_id)
        return list(range(first, len(chain)))

    def _forget(self, entries: Sequence[Mapping[str, Any]], pending_id: str) -> None:
        """Past the limit, forget the oldest settled chains (``entries`` may settle one)."""
        if self._limit is not None and any(entry.get("type") == "settled" for entry in entries):
            self._settled.append(pending_id)
            while len(self._settled) > self._limit:
                self._entries.pop(self._settled.popleft(), None)

    def stored_texts(self) -> dict[str, list[str]]:
        """Every request's stored entries, oldest first (for an export or a check)."""
        return {pending_id: self._texts(pending_id) for pending_id in list(self._entries)}

    def _texts(self, pending_id: str) -> list[str]:
        """The request's chain as stored texts, linking the entries not linked yet."""
        chain = self._entries.get(pending_id)
        if not chain:
            return []
        head: str | None = None
        for seq, item in enumerate(chain):
            if not isinstance(item, str):
                item = chain[seq] = chain_text(item, pending_id, head)
            head = item
        return [item for item in chain if isinstance(item, str)]

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        return [read_entry(text, seq) for seq, text in enumerate(self._texts(pending_id))]

"""The ``roomkit audit`` commands: export and verify the histories kept in a durable store.

``export`` writes one JSON line per history entry, oldest first within each request:
``{"entry": {...}, "request": ID, "seq": N}``, where ``entry`` is the stored entry (its
canonical JSON is the text its successor's ``prev`` digests). ``verify`` recomputes every
chain (each ``prev``) and every arguments digest (a ``created`` entry's, and an edit's), and
names the first entry that does not hold. Either command exits 1 when a chain is broken; the
export still writes every entry first, and says on stderr where each chain breaks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from roomkit._terminal import Failure
from roomkit.models.pending_input import arguments_digest
from roomkit.tools.human_input.stores import broken_link

__all__ = ["export", "first_break", "verify"]


def export(args: argparse.Namespace) -> int:
    """``roomkit audit export``: the entries as JSON Lines on stdout."""
    since = _since(args.since)
    chains = _chains(args.store)
    broken = 0
    out = sys.stdout
    for pending_id in sorted(chains):
        texts = chains[pending_id]
        entries = [_parsed(text) for text in texts]
        if args.room is not None and (not entries or entries[0].get("room") != args.room):
            continue
        for seq, entry in enumerate(entries):
            if since is not None and not _at_or_after(entry, since):
                continue
            line = {"entry": entry, "request": pending_id, "seq": seq}
            out.write(json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
            out.write("\n")
        problem = first_break(pending_id, texts)
        if problem is not None:
            broken += 1
            print(f"roomkit: {problem}", file=sys.stderr)
    return 1 if broken else 0


def verify(args: argparse.Namespace) -> int:
    """``roomkit audit verify``: exit 0 when every chain and digest holds, else name the
    first entry that does not."""
    chains = _chains(args.store)
    for pending_id in sorted(chains):
        problem = first_break(pending_id, chains[pending_id])
        if problem is not None:
            raise Failure(problem)
    entries = sum(len(texts) for texts in chains.values())
    print(f"Verified {len(chains)} request histories, {entries} entries: every chain holds")
    return 0


def first_break(pending_id: str, texts: list[str]) -> str | None:
    """What is wrong with the first broken entry of the chain, ``None`` if it holds."""
    found = broken_link(pending_id, texts)
    if found is not None:
        seq, why = found
        return f"the history of {pending_id!r} breaks at entry {seq}: {why}"
    tool: object = None
    for seq, text in enumerate(texts):
        entry = json.loads(text)
        if entry.get("type") == "created":
            tool = entry.get("tool")
        arguments = entry.get("arguments")
        # A vote's edit names its own arguments' digest ``edited``; its ``digest`` is the
        # digest of the arguments it was a vote on.
        named = "edited" if entry.get("type") == "voted" else "digest"
        checkable = isinstance(tool, str) and isinstance(arguments, dict) and named in entry
        if checkable and entry[named] != arguments_digest(str(tool), arguments):
            return (
                f"the history of {pending_id!r} breaks at entry {seq}: its digest is not "
                "the digest of its arguments"
            )
    return None


def _chains(url: str) -> dict[str, list[str]]:
    """Every history the store ``url`` names keeps (exits 2 on a URL of no durable store)."""
    from roomkit.core.exceptions import StoreError
    from roomkit.desk.stores import close_stores, open_stores

    if url == "memory":
        raise Failure("A memory store keeps no history after its process: name a durable store", 2)
    missing = _missing_file(url)
    if missing is not None:
        raise Failure(
            f"{missing} does not exist: name the file the desk keeps its requests in "
            "(its `roomkit desk --store` URL)",
            2,
        )
    try:
        pending_store, room_store = open_stores(url)
    except (ValueError, ImportError) as error:
        raise Failure(str(error), 2) from None

    async def read() -> dict[str, list[str]]:
        try:
            texts: dict[str, list[str]] = await pending_store.history_texts()  # type: ignore[union-attr]
            return texts
        finally:
            await close_stores(pending_store, room_store)

    try:
        return asyncio.run(read())
    except StoreError as error:
        raise Failure(f"Could not read the histories: {error}") from None


def _missing_file(url: str) -> str | None:
    """The file a ``sqlite:///`` URL names when it does not exist (opening it would create
    an empty database, whose no histories would all "hold")."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or not url[len(prefix) :]:
        return None
    path = Path(url[len(prefix) :])
    return None if path.exists() else str(path)


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        message = f"--since takes an ISO-8601 time such as 2026-01-31T12:00Z, got {text!r}"
        raise Failure(message, 2) from None
    if when.tzinfo is None:
        raise Failure(f"--since needs a time zone (2026-01-31T12:00Z), got {text!r}", 2)
    return when


def _parsed(text: str) -> dict[str, Any]:
    try:
        entry = json.loads(text)
    except ValueError:
        return {"unreadable": text}
    return entry if isinstance(entry, dict) else {"unreadable": text}


def _at_or_after(entry: dict[str, Any], since: datetime) -> bool:
    at = entry.get("at")
    try:
        return isinstance(at, str) and datetime.fromisoformat(at.replace("Z", "+00:00")) >= since
    except ValueError:
        return True  # an entry whose time cannot be read is exported rather than hidden

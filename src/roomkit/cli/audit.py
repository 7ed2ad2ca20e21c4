"""``roomkit audit``: export, verify and anchor the trail of a durable store.

``export`` writes one JSON line per history entry, oldest first within each request:
``{"entry": {...}, "request": ID, "seq": N}``, where ``entry`` is the stored entry (its
canonical JSON is the text its successor's ``prev`` digests) and ``seq`` its stored number;
then one line per checkpoint, ``{"checkpoint": {...}, "mac": SIGNATURE, "n": N}``.
``verify`` checks every chain (its numbering, each ``prev``, each arguments digest) and,
with the audit key, every signed head and checkpoint (:mod:`~roomkit.stores._trail_check`),
and names everything that does not hold. Either command exits 1 when something does not;
the export still writes every entry first, and says on stderr what breaks. ``checkpoint``
writes a checkpoint of every head that changed since the last one; ``key`` creates the
audit key file.

``export`` and ``verify`` read the trail a page of chains at a time
(:meth:`~roomkit.stores.StoreTrail.stream`) and check each chain as it comes
(:class:`~roomkit.stores.TrailChecker`): what they hold is one page of chains and a few
small things per request (its id, what the checkpoints list of it), however long the
histories. The ``a2a-evidence`` format keeps one record per settled request until the last
is read, since its chain runs in the order the requests settled.

The audit key is ``ROOMKIT_AUDIT_KEY``, else ``audit.key`` in ``--data-dir`` (the desk's
data folder) when it exists (:func:`~roomkit.stores.load_audit_keys`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from roomkit.cli._common import Failure, add_store_option, on_stores, printable, refuse_missing_file

if TYPE_CHECKING:
    from roomkit.stores import AuditKeys, ChainRead, CheckpointReport, StoreTrail, TrailReport
    from roomkit.stores._trail import Checkpoint

__all__ = [
    "add_parser",
    "audit_keys",
    "checkpoint",
    "export",
    "key",
    "use_audit_keys",
    "verify",
]

T = TypeVar("T")


def _no_key() -> str:
    """What to do when there is no audit key."""
    from roomkit.stores import AUDIT_KEY_ENV

    return (
        f"no audit key: set {AUDIT_KEY_ENV}, or pass --data-dir with the desk's audit.key "
        "(`roomkit audit key` creates one)"
    )


def export(args: argparse.Namespace) -> int:
    """``roomkit audit export``: the entries and checkpoints as JSON Lines on stdout (or,
    with ``--format a2a-evidence``, A2A authorization-evidence records)."""
    evidence = getattr(args, "format", "jsonl") == "a2a-evidence"
    if evidence and args.since is not None:
        raise Failure(
            "--since does not apply to a2a-evidence: its chain starts at the first record", 2
        )
    since = _since(args.since)
    keys = audit_keys(args.data_dir)
    if evidence:
        for record in _run(args.store, keys, lambda trail: _evidence(trail, args.room)):
            _line(sys.stdout, record)
        return 0
    out = sys.stdout

    def write(chain: ChainRead) -> None:
        entries = [_parsed(text) for _, text in chain.rows]
        if args.room is not None and (not entries or entries[0].get("room") != args.room):
            return
        try:
            for (seq, _), entry in zip(chain.rows, entries, strict=True):
                if since is not None and not _at_or_after(entry, since):
                    continue
                _line(out, {"entry": entry, "request": chain.pending_id, "seq": seq})
        except OSError as error:
            raise _OutputFailed(error) from error

    try:
        report, checkpoints = _run(args.store, keys, lambda trail: _checked(trail, keys, write))
    except _OutputFailed as failed:
        # Written while the store's stream is open, whose faults are the store's: a closed
        # pipe or a full disk goes to the command's own handling of its output instead.
        raise failed.error from None
    for stored in checkpoints:
        body = _parsed(stored.text)
        if since is not None and not _at_or_after(body, since):
            continue
        _line(out, {"checkpoint": body, "mac": stored.mac, "n": stored.n})
    for problem in report.problems:
        print(f"roomkit: {problem}", file=sys.stderr)
    return 1 if report.problems else 0


class _OutputFailed(Exception):
    """Writing the export failed while the store's stream was open."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error


async def _checked(
    trail: StoreTrail, keys: AuditKeys | None, each: Callable[[ChainRead], None] | None = None
) -> tuple[TrailReport, list[Checkpoint]]:
    """The check of ``trail``, read a page of chains at a time (``each`` is given every
    chain as it is read), and its checkpoints."""
    from roomkit.stores import TrailChecker

    async with trail.stream() as read:
        checker = TrailChecker(keys, read.checkpoints, forgotten=read.forgotten, now=time.time())
        async for page in read.pages:
            for chain in page:
                checker.chain(*chain)
                if each is not None:
                    each(chain)
    return checker.finish(read.later), read.checkpoints


async def _evidence(trail: StoreTrail, room: str | None) -> list[dict[str, Any]]:
    """The export as A2A authorization-evidence records: the whole chain (of ``room``'s
    requests), since it is checked from its first record. The chains are read a page at a
    time; the records, one per settled request, are kept until the last is read, since
    their chain runs in the order the requests settled."""
    from roomkit.adapters.a2a_evidence import chained, evidence_record

    records = []
    async with trail.stream() as read:
        async for page in read.pages:
            for chain in page:
                entries = [_parsed(text) for _, text in chain.rows]
                if room is not None and (not entries or entries[0].get("room") != room):
                    continue
                record = evidence_record(chain.pending_id, entries)
                if record is not None:
                    records.append(record)
    return chained(records)


def verify(args: argparse.Namespace) -> int:
    """``roomkit audit verify``: exit 0 when every chain, and with the audit key every
    signed head and checkpoint, holds; else name each thing that does not."""
    keys = audit_keys(args.data_dir)
    report, _ = _run(args.store, keys, lambda trail: _checked(trail, keys))
    if report.problems:
        for problem in report.problems:
            print(f"roomkit: {problem}", file=sys.stderr)
        return 1
    print(_verified(report))
    return 0


def checkpoint(args: argparse.Namespace) -> int:
    """``roomkit audit checkpoint``: sign a checkpoint of every head that changed."""
    keys = audit_keys(args.data_dir)
    if keys is None:
        raise Failure(f"Cannot write a checkpoint: {_no_key()}", 2)
    if args.adopt:
        signed, broken = _run(args.store, keys, lambda store: store.adopt())
        print(f"Signed {_counted(signed, 'head as it stands', 'heads as they stand')}")
        if broken:
            left = "does not hold and was" if len(broken) == 1 else "do not hold and were"
            print(
                f"{_counted(len(broken), 'history', 'histories')} {left} left: "
                "`roomkit audit verify` names what breaks them",
                file=sys.stderr,
            )
    done, earlier = _run(args.store, keys, _checkpoint)
    if done.checkpoint is None and not earlier:
        print(_NO_FIRST_CHECKPOINT if done.unsigned else _NO_HISTORY)
    elif done.checkpoint is None:
        print("No head changed since the last checkpoint: none written")
    else:
        heads = _counted(done.heads, "changed head", "changed heads")
        print(f"Wrote checkpoint #{done.checkpoint.n} of {heads}")
    if done.unsigned:
        left = "is not signed and was" if len(done.unsigned) == 1 else "are not signed and were"
        print(
            f"{_counted(len(done.unsigned), 'head', 'heads')} {left} left out: "
            "`roomkit audit verify` names them",
            file=sys.stderr,
        )
    return 0


_NO_FIRST_CHECKPOINT = (
    "No checkpoint yet, and none written: no head is signed (histories written without the "
    "audit key). `roomkit audit checkpoint --adopt` signs them as they stand and writes the "
    "first"
)
_NO_HISTORY = "No history to checkpoint yet: none written"


async def _checkpoint(trail: StoreTrail) -> tuple[CheckpointReport, bool]:
    """A checkpoint of ``trail``, and whether one was written before (read only when this
    one wrote none, so that "nothing changed since the last" is said only when there is a
    last)."""
    done = await trail.checkpoint()
    if done.checkpoint is not None:
        return done, True
    async with trail.stream() as read:
        return done, bool(read.checkpoints)


def key(args: argparse.Namespace) -> int:
    """``roomkit audit key``: create the audit key file (``--rotate``: a new signing key);
    a file there that holds no usable key exits 2, left as it is."""
    from roomkit.stores import AUDIT_KEY_ENV, AUDIT_KEY_FILE, AuditKeys, create_audit_key

    # A file there that holds no usable key is left as it is (a rotation would keep it after
    # the new key): say what is wrong with it rather than report it as written. A key
    # that cannot be used is a mistake to mend, exit 2, as every audit command says it.
    broken = _broken_key_file(Path(args.data_dir) / AUDIT_KEY_FILE)
    if broken is not None:
        raise Failure(broken, 2)
    try:
        path = create_audit_key(args.data_dir, rotate=args.rotate)
        keys = AuditKeys.from_text(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise Failure(f"Cannot write the audit key: {error}") from None
    print(f"The audit key (id {keys.kid}) is in {path}")
    try:
        signing = AuditKeys.from_environment()
    except ValueError:
        signing = None  # too short to sign with: every command that signs says so
    if signing is not None:
        print(
            f"roomkit: {AUDIT_KEY_ENV} is set, so roomkit signs with its key (id "
            f"{signing.kid}), not this file's: unset it for the file's key to sign",
            file=sys.stderr,
        )
    return 0


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], data_dir: argparse.ArgumentParser
) -> None:
    """The ``audit`` command group's arguments."""
    audit = commands.add_parser("audit", help="export, verify and sign the decisions' history")
    actions = audit.add_subparsers(dest="action", required=True, metavar="ACTION")
    exporting = actions.add_parser(
        "export", parents=[data_dir], help="every history entry and checkpoint, as JSON Lines"
    )
    add_store_option(exporting)
    exporting.add_argument("--since", help="only entries at or after this ISO-8601 time")
    exporting.add_argument("--room", help="only the requests of this room")
    exporting.add_argument(
        "--format",
        choices=["jsonl", "a2a-evidence"],
        default="jsonl",
        help="JSON Lines (default), or A2A authorization-evidence records",
    )
    exporting.set_defaults(run=export)
    verifying = actions.add_parser(
        "verify",
        parents=[data_dir],
        help="check every chain and arguments digest; with the audit key, every signed "
        "head and checkpoint",
    )
    add_store_option(verifying)
    verifying.set_defaults(run=verify)
    signing = actions.add_parser(
        "checkpoint", parents=[data_dir], help="sign a checkpoint of every chain's head"
    )
    add_store_option(signing)
    signing.add_argument(
        "--adopt",
        action="store_true",
        help="first sign, as they stand, the heads of histories that hold and have none "
        "signed (written before heads were signed, or without the key)",
    )
    signing.set_defaults(run=checkpoint)
    keying = actions.add_parser(
        "key", parents=[data_dir], help="create the audit key file in the data folder"
    )
    keying.add_argument(
        "--rotate", action="store_true", help="a new signing key first; the old ones stay after it"
    )
    keying.set_defaults(run=key)


def _verified(report: TrailReport) -> str:
    chains = _counted(report.chains, "request history", "request histories")
    done = f"Verified {chains}, {_counted(report.entries, 'entry', 'entries')}: every chain holds"
    if not report.signed:
        return f"{done}. Not checked: the signed heads and checkpoints ({_no_key()})"
    if not report.checkpoints:
        kept = "no checkpoint yet, so a history deleted whole would not show"
    else:
        hold = "checkpoint holds" if report.checkpoints == 1 else "checkpoints hold"
        since = (
            "history written since is vouched for by its head"
            if report.unlisted == 1
            else "histories written since are vouched for by their heads"
        )
        kept = (
            f"{report.checkpoints} {hold} (the last at {report.last_at}; "
            f"{report.unlisted} {since} alone)"
        )
    purged = f"; {report.purged} gone after the audit retention" if report.purged else ""
    return f"{done}, every head holds its signature, {kept}{purged}"


def _counted(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def audit_keys(data_dir: Path | None) -> AuditKeys | None:
    """The audit keys of ``ROOMKIT_AUDIT_KEY`` or ``data_dir``'s ``audit.key`` (``None``:
    neither holds one); a key that cannot be used exits 2."""
    from roomkit.stores import AUDIT_KEY_ENV, AUDIT_KEY_FILE, load_audit_keys

    try:
        return load_audit_keys(data_dir)
    except (OSError, ValueError) as error:
        if os.environ.get(AUDIT_KEY_ENV, "").strip():
            raise Failure(
                f"{AUDIT_KEY_ENV} holds a key too short to sign with (each is at least 16 "
                "bytes): set it to the audit keys, the signing one first, separated by commas "
                "(or unset it to use audit.key in --data-dir)",
                2,
            ) from None
        broken = None if data_dir is None else _broken_key_file(Path(data_dir) / AUDIT_KEY_FILE)
        raise Failure(broken or f"Cannot read the audit key: {error}", 2) from None


def _broken_key_file(path: Path) -> str | None:
    """What is wrong with the audit key file ``path``, and what to do about it; ``None``
    when there is no such file, or it holds keys."""
    from roomkit.stores import AuditKeys

    where = f"The audit key file {printable(path, 300)}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        problem = "holds bytes that are not text, so no key"
    except OSError as error:
        fix = (
            "let this user read it (chmod 600 it, as its owner), or "
            if isinstance(error, PermissionError)
            else ""
        )
        return (
            f"{where} cannot be read ({error.strerror or error}): {fix}move it away and run "
            "`roomkit audit key` to create a new one"
        )
    else:
        try:
            AuditKeys.from_text(text)
        except ValueError:
            problem = (
                "holds a key too short to sign with (each is at least 16 bytes)"
                if text.strip()
                else "holds no key"
            )
        else:
            return None
    return (
        f"{where} {problem}: move it away, then `roomkit audit key` creates a new one (keep "
        "the old file if its key signed a trail: only that key verifies what it signed)"
    )


def use_audit_keys(store: object, keys: AuditKeys | None) -> StoreTrail | None:
    """``store``'s trail, signing with ``keys`` when given; ``None`` for a store with none."""
    from roomkit.stores import StoreTrail

    trail = getattr(store, "trail", None)
    if not isinstance(trail, StoreTrail):
        return None
    if keys is not None:
        trail.use_keys(keys)
    return trail


def _run(url: str, keys: AuditKeys | None, work: Callable[[StoreTrail], Awaitable[T]]) -> T:
    """``work`` on the trail of the store ``url`` names (exits 2 on a URL of no durable
    store), signing with ``keys``."""
    from roomkit.stores import StoreTrail

    if url == "memory":
        raise Failure("A memory store keeps no history after its process: name a durable store", 2)
    refuse_missing_file(url)

    async def on_trail(store: object) -> T:
        trail = getattr(store, "trail", None)
        if not isinstance(trail, StoreTrail):
            raise Failure(f"The store {url!r} keeps no audit trail", 2)
        trail.use_keys(keys)
        return await work(trail)

    return on_stores(url, "roomkit audit", on_trail, "Could not read the trail", create=False)


def _line(out: Any, line: dict[str, Any]) -> None:
    text = json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode(getattr(out, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        # A tampered entry holds a lone surrogate (a JSON escape, or bytes that were not
        # UTF-8), or the terminal's encoding lacks a letter the text has (an ASCII one):
        # the line keeps each as a JSON escape, so the export still writes everything, as
        # JSON that reads back the same.
        text = json.dumps(line, sort_keys=True, separators=(",", ":"))
    if not text.isprintable():
        # JSON escapes only the C0 controls: a C1 control (U+009B starts an escape sequence
        # in some terminals), a bidirectional override or a line separator in a stored
        # question would reach the terminal as it is. Each goes as a JSON escape instead.
        text = "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in text)
    out.write(text)
    out.write("\n")


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
    except (ValueError, RecursionError):
        return {"unreadable": text}
    return entry if isinstance(entry, dict) else {"unreadable": text}


def _at_or_after(entry: dict[str, Any], since: datetime) -> bool:
    at = entry.get("at")
    try:
        return isinstance(at, str) and datetime.fromisoformat(at.replace("Z", "+00:00")) >= since
    except ValueError:
        return True  # an entry whose time cannot be read is exported rather than hidden

"""Who may decide an approval, as every store keeps it: a tuple of actor ids, each once.

``Approval(approvers=...)``, a :class:`~roomkit.tools.approvals.Quorum`'s ``of=``, the
handler's ``create_approval(approvers=...)`` and ``add_approvers(actors)`` all read their
names here, so that a list one of them takes is a list every store keeps: at most
:data:`~roomkit.models.json_limits.MAX_APPROVERS` names, each at most
:data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters.

The order of the names is kept: it is the order the request's history, its digest of who was
asked and its notices show them in. A ``set`` or ``frozenset`` has no order of its own (it
differs from one process to the next), so its names are sorted.
"""

from __future__ import annotations

from collections.abc import Iterable

from roomkit._storable import unencodable_text
from roomkit.core.exceptions import InvalidTextError
from roomkit.models.json_limits import MAX_ID_CHARS, check_approver_count

__all__ = ["actor_ids"]


def actor_ids(actors: Iterable[str], *, name: str, single: str) -> tuple[str, ...]:
    """``actors`` as a tuple of actor ids without repeats, in their order (a set's sorted).

    ``name`` is the argument's name in messages (``"approvers"``); ``single`` says what
    an item that is no actor id must be (``"{name} must hold non-empty actor ids"``).

    Raises:
        ValueError: an item is not a non-empty ``str``, or is longer than
            :data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters; or there are
            more than :data:`~roomkit.models.json_limits.MAX_APPROVERS` of them.
        InvalidTextError: an item holds a lone surrogate, which no store can keep.
    """
    if isinstance(actors, set | frozenset):
        listed = list(actors)
        _check_each(listed, name, single)
        return tuple(sorted(listed))
    checked = tuple(dict.fromkeys(actors))
    _check_each(checked, name, single)
    return checked


def _check_each(actors: Iterable[object], name: str, single: str) -> None:
    count = 0
    for actor in actors:
        if not isinstance(actor, str) or not actor:
            raise ValueError(f"{single}, got {actor!r}")
        if len(actor) > MAX_ID_CHARS:
            raise ValueError(
                f"{name} hold an actor id of {len(actor):,} characters, over the "
                f"{MAX_ID_CHARS:,} an actor id may have on every store: pass a shorter one "
                "(an id, or the digest of a long name); nothing was stored"
            )
        problem = unencodable_text(actor)
        if problem is not None:
            raise InvalidTextError(
                f"{name} hold an actor id with {problem}, which UTF-8 cannot encode: "
                "send it as UTF-8 text; nothing was stored"
            )
        count += 1
    check_approver_count(count, name)

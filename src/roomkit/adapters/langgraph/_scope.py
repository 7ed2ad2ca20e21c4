"""Who a thread's requests are for, kept from its start so that a resume under another
``actor`` or ``room`` is refused rather than asking again.

A request's key holds the thread and the interrupt, within the scope of the actor and room
it was opened for: a resume given another actor or room would find none of the thread's
requests and open new ones, asking people again about what was decided. So the first start
of a thread takes, in the handler's ledger, the mark that the thread's scope is kept (a
spend-once: of starts under different scopes at the same moment, one takes it), then keeps
for good a mark of the thread under its actor and room, and the first mark for good; a start
or resume under another scope finds the first mark without the second and is refused before
anything is opened. A thread started before these marks were kept has neither, and goes on
as it is asked.
"""

from __future__ import annotations

import json

from roomkit.adapters._keys import pause_key
from roomkit.adapters._pauses import Asker
from roomkit.adapters._resumes import LEASE
from roomkit.models.shown import shown

__all__ = ["check_scope", "keep_scope"]


def _names(thread: str, asker: Asker) -> tuple[str, str]:
    """The mark that ``thread``'s scope is kept, and the mark of its scope being ``asker``'s."""
    scope = json.dumps([asker.actor, asker.room])
    return pause_key("lg-scoped", thread), pause_key("lg-scope", thread, scope)


async def check_scope(asker: Asker, thread: str, where: str) -> None:
    """Raise unless ``thread`` was started under ``asker``'s actor and room (or its scope
    was never kept).

    Raises:
        ValueError: it was started under another actor or room (nothing was opened).
    """
    kept, mine = _names(thread, asker)
    if await asker.resumes.held(mine) or not await asker.resumes.held(kept):
        return
    raise _another(asker, thread, where)


async def keep_scope(asker: Asker, thread: str, where: str) -> None:
    """Keep ``thread``'s scope as ``asker``'s actor and room, unless it is kept as theirs
    already.

    Raises:
        ValueError: it is kept under another actor or room (another start took it, at the
            same moment too; nothing was opened).
    """
    kept, mine = _names(thread, asker)
    resumes = asker.resumes
    if await resumes.held(mine):
        return
    # Taken for a lease, kept for good once the scope's own mark is: a start that dies in
    # between leaves the thread to the next start once the lease lapses.
    if await resumes.claim(kept, lease=LEASE):
        try:
            await resumes.keep_claim(mine)
        except BaseException:
            await resumes.unclaim(kept)
            raise
        await resumes.keep_claim(kept)
        return
    if not await resumes.held(mine):
        raise _another(asker, thread, where)


def _another(asker: Asker, thread: str, where: str) -> ValueError:
    return ValueError(
        f"{where}: thread {shown(thread)} was started under another actor or room than actor "
        f"{asker.actor!r} and room {asker.room!r}: pass the actor and room given to start() "
        "(they scope the thread's requests; under others, people would be asked again about "
        "what they decided); nothing was opened"
    )

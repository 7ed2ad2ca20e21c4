"""Who a thread's requests are for, kept from its start so that a resume under another
``actor`` or ``room`` is refused rather than asking again.

A request's key holds the thread and the interrupt, within the scope of the actor and room
it was opened for: a resume given another actor or room would find none of the thread's
requests and open new ones, asking people again about what was decided. So a start keeps,
for good in the handler's ledger, a mark of the thread under its actor and room, then a mark
that the thread's scope is kept; a start or resume under another scope finds the second
without the first and is refused before anything is opened. A thread started before these
marks were kept has neither, and goes on as it is asked.
"""

from __future__ import annotations

import json

from roomkit.adapters._keys import pause_key
from roomkit.adapters._pauses import Asker
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
    raise ValueError(
        f"{where}: thread {shown(thread)} was started under another actor or room than actor "
        f"{asker.actor!r} and room {asker.room!r}: pass the actor and room given to start() "
        "(they scope the thread's requests; under others, people would be asked again about "
        "what they decided); nothing was opened"
    )


async def keep_scope(asker: Asker, thread: str) -> None:
    """Keep ``thread``'s scope as ``asker``'s actor and room (at its start)."""
    kept, mine = _names(thread, asker)
    await asker.resumes.keep_claim(mine)
    await asker.resumes.keep_claim(kept)

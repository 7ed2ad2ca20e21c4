"""A request named by its id, checked to be the one a pause was asked in.

A framework's durable run names its requests by id in state its caller keeps (Pydantic AI's
``DeferredToolRequests`` metadata, kept with a message history that may travel through a
client). An id changed there must not lend one call's decision to another: the request must
be of the pause's kind and tool and, on an approval, made for the pause's arguments (their
digest, as it was made or as an edit left it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roomkit.core.exceptions import KeyConflictError
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.models.shown import shown
from roomkit.tools.human_input import HumanInputHandler, made_for

if TYPE_CHECKING:
    from roomkit.adapters._pauses import Pause

__all__ = ["check_bound"]


async def check_bound(handler: HumanInputHandler, request: PendingInput, pause: Pause) -> None:
    """Raise unless ``request`` is one that ``pause`` was asked in.

    Raises:
        KeyConflictError: ``request`` was made for another call; its decision stands for
            that call alone.
    """
    digest = None
    if pause.kind == "approval":
        digest = arguments_digest(pause.tool_name, pause.arguments)
    if await made_for(request, pause.kind, pause.tool_name, digest, handler.history):
        return
    raise KeyConflictError(
        f"request {request.pending_id} was made for the {request.kind} of "
        f"{shown(request.tool_name)} on other arguments than the {pause.kind} of "
        f"{shown(pause.tool_name)} it is named for: its decision stands for its own call only; "
        "end the run again to ask about this one",
        request,
    )

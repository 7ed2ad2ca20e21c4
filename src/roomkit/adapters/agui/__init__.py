"""AG-UI: a RoomKit agent behind an AG-UI endpoint, its held calls as interrupts.

:func:`agui_router` serves a kit's agent to AG-UI front ends (CopilotKit and others) beside
the desk: each run streams AG-UI events, a run whose turn waits for a person ends with
``RUN_FINISHED`` and an interrupt outcome (one interrupt per open request of the thread,
each with its deadline as ``expiresAt``), and the next run's ``resume[]`` answers them as the
authenticated person. The requests live in the kit's store, so an interrupt outlives the
process that raised it, and one answered on the desk first shows as settled. Needs the
``agui`` extra.
"""

from roomkit._extras import requires_extra

with requires_extra("roomkit.adapters.agui", "agui"):
    import ag_ui  # noqa: F401  (the extra's presence, checked once)

from roomkit.adapters.agui._run import AGUIChannel
from roomkit.adapters.agui.router import CAPABILITIES, agui_router

__all__ = ["CAPABILITIES", "AGUIChannel", "agui_router"]

"""Temporal: a workflow asks a person, or holds a call for approval, and resumes exactly once.

Needs the ``temporal`` extra (``pip install -e '.[temporal]'`` in roomkit's checkout).

In workflow code, :func:`ask_person` and :func:`request_approval`; on the worker,
``activities=activities(handler)``; beside it (or in the desk, or on its own), a
:class:`~roomkit.notify.Notifier` with the :class:`TemporalUpdates` surface, which delivers
each outcome to the workflow that asked. :func:`send_to_room` starts or reaches a room's
conversation workflow from a stateless front end. :class:`ActivityTimeouts` sets how long
an ask's activities may run, and how soon a worker that died running one is replaced.

Workflow files import it the way Temporal asks for libraries::

    with workflow.unsafe.imports_passed_through():
        from roomkit.adapters.temporal import ask_person, request_approval
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roomkit._lazy import lazy_exports

if TYPE_CHECKING:
    from roomkit.adapters.temporal._activities import activities
    from roomkit.adapters.temporal._protocol import UPDATE_NAME
    from roomkit.adapters.temporal._timeouts import ActivityTimeouts
    from roomkit.adapters.temporal._workflow import GRACE, ask_person, request_approval
    from roomkit.adapters.temporal.rooms import room_workflow_id, send_to_room
    from roomkit.adapters.temporal.updates import TemporalUpdates, update_id_of

__all__ = [
    "GRACE",
    "UPDATE_NAME",
    "ActivityTimeouts",
    "TemporalUpdates",
    "activities",
    "ask_person",
    "request_approval",
    "room_workflow_id",
    "send_to_room",
    "update_id_of",
]

# Each name loads only its own module: workflow code needs none of the worker's side.
_HOMES = {
    "GRACE": "_workflow",
    "ask_person": "_workflow",
    "request_approval": "_workflow",
    "UPDATE_NAME": "_protocol",
    "ActivityTimeouts": "_timeouts",
    "activities": "_activities",
    "TemporalUpdates": "updates",
    "update_id_of": "updates",
    "room_workflow_id": "rooms",
    "send_to_room": "rooms",
}


__getattr__ = lazy_exports(__name__, _HOMES, extra="temporal", library="temporalio")

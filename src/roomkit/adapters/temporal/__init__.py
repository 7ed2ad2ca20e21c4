"""Temporal: a workflow asks a person, or holds a call for approval, and resumes exactly once.

Needs the ``temporal`` extra (``pip install -e '.[temporal]'`` in roomkit's checkout).

In workflow code, :func:`ask_person` and :func:`request_approval`; on the worker,
``activities=activities(handler)``; beside it (or in the desk, or on its own), a
:class:`~roomkit.notify.Notifier` with the :class:`TemporalUpdates` surface, which delivers
each outcome to the workflow that asked. :func:`send_to_room` starts or reaches a room's
conversation workflow from a stateless front end.

Workflow files import it the way Temporal asks for libraries::

    with workflow.unsafe.imports_passed_through():
        from roomkit.adapters.temporal import ask_person, request_approval
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roomkit._extras import extra_missing

if TYPE_CHECKING:
    from roomkit.adapters.temporal._activities import activities
    from roomkit.adapters.temporal._protocol import UPDATE_NAME
    from roomkit.adapters.temporal._workflow import GRACE, ask_person, request_approval
    from roomkit.adapters.temporal.rooms import room_workflow_id, send_to_room
    from roomkit.adapters.temporal.updates import TemporalUpdates, update_id_of

__all__ = [
    "GRACE",
    "UPDATE_NAME",
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
    "activities": "_activities",
    "TemporalUpdates": "updates",
    "update_id_of": "updates",
    "room_workflow_id": "rooms",
    "send_to_room": "rooms",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'roomkit.adapters.temporal' has no attribute {name!r}")
    try:
        # The import statement's own machinery, not importlib's: in Temporal's sandbox, a
        # workflow file's `from roomkit.adapters.temporal import ...` (inside
        # `imports_passed_through()`) then passes the module through from the worker, where
        # importlib would load it afresh for every workflow, on the worker's event loop.
        module = __import__(f"{__name__}.{home}", fromlist=[name])
    except ModuleNotFoundError as error:
        if error.name is None or not error.name.startswith("temporalio"):
            raise
        message = extra_missing("roomkit.adapters.temporal", "temporal", error.name)
        raise ModuleNotFoundError(message, name=error.name) from None
    value = getattr(module, name)
    globals()[name] = value  # found at once from now on, by every workflow's import
    return value

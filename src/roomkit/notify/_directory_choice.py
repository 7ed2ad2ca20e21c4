"""Which directory a notifier reaches people by: its handler's, or the one it is given.

The handler routes its requests (delegations, roles, on-call schedules) by its own
directory, so a notifier takes that one; a directory given to a notifier whose handler has
none may only say how to reach people.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roomkit.notify.surface import Directory

if TYPE_CHECKING:
    from roomkit.tools.human_input import HumanInputHandler

__all__ = ["directory_of"]


def directory_of(handler: HumanInputHandler, given: Directory | None) -> Directory:
    """The directory the notifier reaches people by: the handler's, which routes its
    requests; else ``given``, which must then route nothing (no delegations, roles or
    schedules: they take effect only through the handler).

    Raises:
        ValueError: ``given`` is another directory than the handler's, or it routes requests
            the handler does not route.
    """
    own = getattr(handler, "directory", None)
    if isinstance(own, Directory):
        if given is not None and given is not own:
            raise ValueError(
                "Notifier(directory=...) is not its handler's directory: the handler routes "
                "its requests by its own (HumanInputHandler(directory=...)), and the notifier "
                "uses that one: leave directory out"
            )
        return own
    if given is None:
        return Directory()
    if given.routes_anything():
        raise ValueError(
            "Notifier(directory=...) lists delegations, roles or on-call schedules, which "
            "route requests only through the handler: give the directory to "
            "HumanInputHandler(directory=...) and leave it out here"
        )
    return given

"""The ids a caller names a request or a channel by, checked before they are looked up.

A pending id or a channel id is a key of the engines' dicts and a parameter of the durable
stores' queries: anything but a ``str`` would fail there with a message about hashing, or
look up nothing and pass for an unknown id. The handler's methods refuse it where it
enters, naming the parameter, as they do for every other argument.
"""

from __future__ import annotations

__all__ = ["check_channel", "check_id"]


def check_id(name: str, value: object) -> None:
    """Raise unless ``value`` is an id: a ``str``.

    Raises:
        TypeError: it is not; the message names ``name`` and the type given.
    """
    if isinstance(value, str):
        return
    raise TypeError(f"{name} must be a str, got {type(value).__name__}")


def check_channel(channel_id: object, registration: object) -> None:
    """Raise unless ``close()``'s scope is one: ``channel_id`` ``None`` or a ``str``, and
    ``registration`` ``None`` or the token
    :meth:`~roomkit.tools.human_input.HumanInputHandler.set_on_input_required` returned.

    Raises:
        TypeError: either is of another type; the message names it and the type given.
    """
    if channel_id is not None and not isinstance(channel_id, str):
        raise TypeError(f"channel_id must be a str or None, got {type(channel_id).__name__}")
    if registration is not None and type(registration) is not int:
        raise TypeError(
            "registration must be None or the int set_on_input_required() returned, "
            f"got {type(registration).__name__}"
        )

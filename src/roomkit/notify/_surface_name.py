"""The one check of a surface's name, made when the surface is.

A surface's name is recorded as the ``surface`` of the history entries its deliveries write
(``shown``, ``delivered``), so it is held to what a settle's ``surface=`` is held to
(:func:`~roomkit.tools.human_input.checks.check_surface`): text of at most
:data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters that UTF-8 can encode. Every
surface checks its ``name=`` here, as it is made, so that a bad one is refused where it was
given rather than when a delivery is first recorded.
"""

from __future__ import annotations

from roomkit.core.exceptions import InvalidTextError
from roomkit.models.json_limits import MAX_ID_CHARS
from roomkit.tools.human_input.checks import check_surface

__all__ = ["surface_name"]


def surface_name(name: object, *, what: str, example: str) -> str:
    """Return ``name`` when it may be a surface's name; raise otherwise.

    Args:
        name: the name given.
        what: where it was given, to start each message (``"Ntfy(name=...)"``).
        example: a name to suggest in its place (the surface's default).

    Raises:
        TypeError: ``name`` is not a ``str``.
        ValueError: it is longer than a surface may be; the message says how long it may be.
        InvalidTextError: it holds text UTF-8 cannot encode (a lone surrogate).
    """
    if type(name) is str and len(name) <= MAX_ID_CHARS and name.isascii():
        return name  # the common case: a short name
    if not isinstance(name, str):
        raise TypeError(
            f"{what} is the surface's name in histories and must be a str, "
            f"got {type(name).__name__}: pass a short name, such as {example!r}"
        )
    if len(name) > MAX_ID_CHARS:
        raise ValueError(
            f"{what} is {len(name):,} characters, over the {MAX_ID_CHARS} a surface may have "
            f"on every store (each shown and delivered entry records it): pass a short name, "
            f"such as {example!r}"
        )
    try:
        check_surface(name)
    except InvalidTextError as error:
        raise InvalidTextError(f"{what}: {error}") from None
    return name

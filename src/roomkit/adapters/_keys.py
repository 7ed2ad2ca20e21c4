"""The keys of an adapter's requests, and the names users give that go into them.

A request's key lets a run started again after a crash re-attach to the request it made
instead of asking twice, so a key must name one pause only. Within one owner's scope (room,
channel, actor) a key made for the same tool and arguments re-attaches whatever run made
it: two runs given the same key would share one request, and the second would take the
decision a person made for the first's call. A key is made of a prefix and parts that users
and frameworks choose (a run key, a thread id, a call id), which may hold the separator, so
each part is escaped before they are joined: ``%`` as ``%25`` and ``:`` as ``%3A``. No
escaped part holds a ``:``, so a key splits back into its parts one way only, and no two
different runs' parts give the same key; a part holding neither character is kept as it is,
so keys stay readable (``oa:r-1:call-1``).

A key longer than :data:`LONGEST` characters (a long thread id, a run key full of escaped
separators), or holding a lone surrogate that UTF-8 cannot encode (a call id a model wrote as
JSON's ``\\ud800``), is kept by the SHA-256 digest of its escaped form instead,
``prefix:%sha256:<hex>``: no escaped part starts ``%s``, so a digest never names what a
short key names. So is a shorter key that, with its owner's scope, is longer than a store's
index of keys holds (:func:`kept_key`: a few hundred characters that JSON escapes, six
bytes each), so that every key fits the stores' indexes whatever the ids hold; a key that
fits is kept as it is.

A request also records the framework's id of the tool call (:func:`call_id_of`), which its
model chose: one up to :data:`~roomkit.models.json_limits.MAX_KEY_CHARS` characters as it
is, a longer one (or one UTF-8 cannot encode) as ``sha256:`` and the hex SHA-256 digest of
it, so that no run fails on an id its caller never chose, and the same call keeps the same
id in every process.
"""

from __future__ import annotations

import hashlib

from roomkit._storable import unencodable_text
from roomkit.core.exceptions import InvalidTextError
from roomkit.models.json_limits import MAX_ID_CHARS, MAX_KEY_CHARS, MAX_SCOPED_KEY_BYTES
from roomkit.tools.human_input.checks import scoped_key_bytes

__all__ = [
    "LONGEST",
    "call_id_of",
    "checked_name",
    "checked_scope",
    "kept_key",
    "pause_key",
]

LONGEST = 400
"""The longest key kept as it is; a longer one is kept by its digest."""


def pause_key(prefix: str, *parts: str) -> str:
    """The key of the pause that ``parts`` name, under the adapter's ``prefix``: the parts
    escaped and joined with ``:``, or the digest of that when it is long or UTF-8 cannot
    encode it."""
    key = ":".join([prefix, *(_escaped(part) for part in parts)])
    if len(key) <= LONGEST and _encodable(key):
        return key
    return _digest(prefix, key)


def kept_key(key: str, room: str, channel: str, actor: str | None) -> str:
    """``key``, made by :func:`pause_key`, as a request of ``actor`` in ``room`` and
    ``channel`` keeps it: as it is when it fits a store's index of keys with that scope
    (:data:`~roomkit.models.json_limits.MAX_SCOPED_KEY_BYTES`), else by its digest, as a
    key over :data:`LONGEST` characters is kept."""
    if scoped_key_bytes(room, channel, actor, key) <= MAX_SCOPED_KEY_BYTES:
        return key
    return _digest(key.split(":", 1)[0], key)


def _digest(prefix: str, key: str) -> str:
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{prefix}:%sha256:{digest}"


def call_id_of(tool_call_id: str) -> str:
    """The id of a framework's tool call as its request keeps it: as it is up to
    :data:`~roomkit.models.json_limits.MAX_KEY_CHARS` characters, else ``sha256:<hex>``, the
    SHA-256 digest of its UTF-8."""
    if len(tool_call_id) <= MAX_KEY_CHARS and _encodable(tool_call_id):
        return tool_call_id
    return f"sha256:{hashlib.sha256(tool_call_id.encode('utf-8', 'surrogatepass')).hexdigest()}"


def _encodable(text: str) -> bool:
    """Whether UTF-8 encodes ``text`` (a lone surrogate, which JSON's ``\\ud800`` escape
    gives, it does not)."""
    return unencodable_text(text) is None


def _escaped(part: str) -> str:
    return part.replace("%", "%25").replace(":", "%3A")


def checked_name(name: str, value: str, *, where: str) -> str:
    """``value``, a name given to ``where`` as ``name`` that goes into the requests (a run
    key, a thread id, an actor), once it is text a store can hold.

    Checked before anything runs: a run whose name no store can keep would otherwise run
    its model, and fail only at its first request.

    Raises:
        InvalidTextError: ``value`` holds a lone surrogate, which UTF-8 cannot encode.
    """
    problem = unencodable_text(value)
    if problem is not None:
        raise InvalidTextError(
            f"{where}: {name} cannot be stored: it holds {problem}, which UTF-8 cannot "
            f"encode; give one of text UTF-8 encodes (nothing was run)"
        )
    return value


def checked_scope(actor: object, room: object, *, where: str) -> None:
    """Raise unless ``actor`` and ``room``, given to ``where``, can scope its requests.

    Checked before anything runs: a graph's nodes, or a model's turn, would otherwise run
    first, and the run fail only at its first request.

    Raises:
        TypeError: ``actor`` is neither a ``str`` nor ``None``, or ``room`` is no ``str``.
        ValueError: ``actor`` is empty, or either is longer than a request's ids may be on
            every store (:data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters).
        InvalidTextError: either holds a lone surrogate, which UTF-8 cannot encode.
    """
    if actor is not None and not isinstance(actor, str):
        raise TypeError(
            f"{where}: actor must be the id of who is asked (a str), or None, got "
            f"{type(actor).__name__} (nothing was run)"
        )
    if not isinstance(room, str):
        raise TypeError(
            f'{where}: room must be a str ("" when there is none), got {type(room).__name__} '
            "(nothing was run)"
        )
    if actor == "":
        raise ValueError(
            f"{where}: actor is empty: give the id of who is asked, or leave it out (nothing "
            "was run)"
        )
    for name, value in (("actor", actor), ("room", room)):
        if value is None:
            continue
        if len(value) > MAX_ID_CHARS:
            raise ValueError(
                f"{where}: {name} is {len(value):,} characters, over the {MAX_ID_CHARS} a "
                f"request's {name} may have on every store: pass a shorter one (an id, or the "
                "digest of a long name; nothing was run)"
            )
        checked_name(name, value, where=where)

"""Stores behind :class:`~roomkit.tools.human_input.HumanInputHandler`.

They live in :mod:`roomkit.stores` now; this path keeps working, with the same objects.
``MemoryStore`` is the default. ``SQLiteStore`` (``roomkit.stores.sqlite``), ``RedisStore``
(``roomkit.stores.redis``) and ``PostgresStore`` (``roomkit.stores.postgres``) are durable
and shared by processes (they need the ``sqlite`` / ``redis`` / ``postgres`` extras).
"""

from roomkit.stores import *  # noqa: F403 - the names of their new home, the very objects
from roomkit.stores import __all__ as __all__

"""Stores from a URL, for the desk process and the ``roomkit`` command line.

:func:`open_stores` is :func:`roomkit.stores.open_url` (the URL forms are listed there);
this path keeps working.
"""

from __future__ import annotations

from roomkit.stores import close_stores
from roomkit.stores import open_url as open_stores

__all__ = ["close_stores", "open_stores"]

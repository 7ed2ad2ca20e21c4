"""Old import paths of modules that moved: each name is read from the new home on first use.

A module that moved leaves a short module at its old path whose ``__getattr__`` (PEP 562)
is :func:`moved_attribute` bound to the new home, so that ``from <old path> import Name``
gets the very object ``from <new home> import Name`` gets. The new home is imported by
name only when an attribute is first read: an old path in ``roomkit.core`` loads nothing
above the core until someone uses it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["moved_attribute"]


def moved_attribute(home: str, old: str, name: str) -> Any:
    """The attribute ``name`` of the module ``home``, asked for at the old path ``old``.

    Args:
        home: the module's new dotted path.
        old: the old dotted path (named in the error).
        name: the attribute asked for.

    Raises:
        AttributeError: ``home`` has no attribute ``name``.
    """
    if name.startswith("__") and name.endswith("__"):
        # Module dunders (``__path__``, ``__file__``, ...) are the old module's own: a
        # lookup that misses them must not import the new home.
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    module = importlib.import_module(home)
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(
            f"module {old!r} has no attribute {name!r} (it moved to {home!r})"
        ) from None

"""A package's names loaded from their own submodules on first use.

A package whose names live in modules that need an optional library, or that are costly to
load, exports them through a module ``__getattr__`` (PEP 562) that :func:`lazy_exports`
builds: each name loads only its own module, once, and (when the package names its
optional library) a missing library raises the error :func:`~roomkit._extras.extra_missing`
words; without one, a module words its own (:func:`~roomkit._extras.requires_extra`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from roomkit._extras import extra_missing

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    homes: Mapping[str, str],
    *,
    extra: str | None = None,
    library: str | None = None,
) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package`` that loads each name of ``homes`` from its module.

    Args:
        package: the package's ``__name__``.
        homes: each exported name, with the submodule (relative to ``package``) it lives in.
        extra: the extra that installs ``library``, named when it is missing.
        library: the top-level name of the optional library the submodules import; ``None``
            when each submodule words the failure of its own imports.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            # The import statement's own machinery, not importlib's: in Temporal's sandbox,
            # a workflow file's `from <package> import ...` (inside
            # `imports_passed_through()`) then passes the module through from the worker,
            # where importlib would load it afresh for every workflow, on the worker's loop.
            module = __import__(f"{package}.{home}", fromlist=[name])
        except ImportError as error:
            # A submodule that words its own failure raises a plain ImportError naming the
            # library; the package's names raise ModuleNotFoundError either way.
            if extra is None or library is None:
                raise
            if error.name is None or not error.name.startswith(library):
                raise
            message = extra_missing(package, extra, error.name)
            raise ModuleNotFoundError(message, name=error.name) from None
        value = getattr(module, name)
        # Found at once from now on, by every importer.
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__

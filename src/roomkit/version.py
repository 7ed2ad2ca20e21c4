"""The installed roomkit's version, as its package metadata gives it."""

from __future__ import annotations

from functools import cache

__all__ = ["DISTRIBUTION", "package_version"]

DISTRIBUTION = "roomkit-hitl"
"""The name roomkit is installed under (``pip install roomkit-hitl``)."""


@cache
def package_version() -> str:
    """The version of the installed roomkit (``"0.1.0"``); ``""`` when roomkit runs from
    sources that were never installed, so have no metadata."""
    # Imported here: reading package metadata is left to the processes that ask for it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return ""

"""Which extra installs an optional library, and the one line that says how to install it.

Every lazy import of an optional library words its failure here, so each says the same
thing: what needs the library, the extra that brings it, and the command that installs that
extra. Until a release is published, the package is installed from a checkout of roomkit
(``pip install -e '.[postgres]'``), so that is the command the line names.
"""

from __future__ import annotations

__all__ = ["EXTRA_OF", "extra_missing", "extra_of", "install_command"]

_WHERE = "in roomkit's checkout"
"""Where the install command runs: no release is published yet."""

EXTRA_OF: dict[str, str] = {
    "aiohttp": "slack",
    "aiosmtplib": "notify",
    "aiosqlite": "sqlite",
    "anthropic": "anthropic",
    "apprise": "apprise",
    "fastapi": "desk",
    "hiredis": "redis",
    "httpx": "desk",
    "mcp": "mcp",
    "openai": "openai",
    "prometheus_client": "desk",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "redis": "redis",
    "slack_sdk": "slack",
    "standardwebhooks": "notify",
    "starlette": "desk",
    "uvicorn": "desk",
    "websockets": "realtime",
}
"""The extra that installs each optional library, by its top-level module name. A library
several extras install (uvicorn: ``desk`` and ``mcp``) names the first one documented."""


def install_command(extra: str) -> str:
    """The command that installs ``extra``: ``pip install -e '.[postgres]'``, run in a
    checkout of roomkit."""
    return f"pip install -e '.[{extra}]'"


def extra_of(module: str | None, preferred: str | None = None) -> str | None:
    """The extra that installs ``module`` (a dotted name; its top level counts), ``None``
    when no extra does.

    Args:
        module: the module that failed to import, as ``ModuleNotFoundError.name`` gives it.
        preferred: the extra of what is running; it wins when it installs ``module`` too
            (``roomkit mcp`` missing uvicorn needs ``mcp``, not ``desk``).
    """
    if not module:
        return None
    top = module.split(".", 1)[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    if preferred is not None and top in _SHARED.get(preferred, ()):
        return preferred
    return extra


def extra_missing(what: str, extra: str, module: str | None = None) -> str:
    """One line saying that ``what`` needs ``extra`` and how to install it.

    Args:
        what: what cannot run without it: ``roomkit mcp``, ``PostgresStore``.
        extra: the extra's name in ``pyproject.toml``: ``postgres``.
        module: the library that is missing, when it is worth naming.

    Example: ``roomkit mcp needs the mcp extra (mcp is not installed): pip install -e
    '.[mcp]' in roomkit's checkout``.
    """
    lacking = f" ({module} is not installed)" if module else ""
    return f"{what} needs the {extra} extra{lacking}: {install_command(extra)} {_WHERE}"


_SHARED: dict[str, frozenset[str]] = {
    "mcp": frozenset({"uvicorn", "aiosqlite", "starlette", "httpx"}),
    "desk": frozenset({"aiosqlite", "websockets"}),
}
"""Libraries an extra installs besides those :data:`EXTRA_OF` files under it."""

"""Which extra installs an optional library, and the one line that says how to install it.

Every lazy import of an optional library words its failure here, so each says the same
thing: what needs the library, the extra that brings it, and the command that installs that
extra, for the way this roomkit was installed, to run in any folder: from a checkout
(installed editable, or its sources on the path), ``pip install -e '/src/roomkit[postgres]'``
with the checkout's path; as a package (a wheel), ``pip install 'roomkit-hitl[postgres]'``,
which keeps the roomkit installed and adds the extra's libraries.
"""

from __future__ import annotations

import importlib
import shlex
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from roomkit.version import DISTRIBUTION

__all__ = [
    "EXTRA_OF",
    "checkout_root",
    "extra_missing",
    "extra_of",
    "extras_missing",
    "from_checkout",
    "install_command",
    "lacking_extras",
    "missing_extra_error",
    "missing_module",
    "requires_extra",
]


EXTRA_OF: dict[str, str] = {
    "a2a": "a2a",
    "ag_ui": "agui",
    "agents": "openai-agents",
    "aiohttp": "slack",
    "aiosmtplib": "notify",
    "aiosqlite": "sqlite",
    "anthropic": "anthropic",
    "anyio": "mcp",
    "apprise": "apprise",
    "cedarpy": "cedar",
    "fastapi": "desk",
    "hiredis": "redis",
    "http_ece": "push",
    "httpx": "desk",
    "icalendar": "oncall",
    "langgraph": "langgraph",
    "mcp": "mcp",
    "mcp_types": "mcp",
    "openai": "openai",
    "prometheus_client": "desk",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "py_vapid": "push",
    "pydantic_ai": "pydantic-ai",
    "pywebpush": "push",
    "recurring_ical_events": "oncall",
    "redis": "redis",
    "regopy": "rego",
    "slack_sdk": "slack",
    "sse_starlette": "a2a",
    "temporalio": "temporal",
    "standardwebhooks": "notify",
    "starlette": "desk",
    "uvicorn": "desk",
    "websockets": "realtime",
}
"""The extra that installs each optional library, by its top-level module name. A library
several extras install (uvicorn: ``desk`` and ``mcp``) names the first one documented."""


def install_command(extra: str) -> str:
    """The command that installs ``extra`` (several: ``"desk,notify"``) beside this roomkit,
    run from any folder: ``pip install -e '/src/roomkit[postgres]'`` (the checkout's path)
    for a roomkit run from its checkout, ``pip install 'roomkit-hitl[postgres]'`` for an
    installed one."""
    if not from_checkout():
        return f"pip install '{DISTRIBUTION}[{extra}]'"
    root = checkout_root()
    if root is None:
        return f"pip install -e '.[{extra}]' in roomkit's checkout"
    return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"


@cache
def checkout_root() -> Path | None:
    """The folder of the checkout this roomkit runs from (the one holding its
    ``pyproject.toml``), ``None`` when its sources are not laid out in one."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


@cache
def from_checkout() -> bool:
    """Whether this roomkit runs from a checkout: installed editable, or its sources on the
    path with no package installed, rather than the files an installed package put in place.
    Looked at once, when a line first needs it."""
    # Imported here: most processes never word a missing extra, and need no package metadata.
    from importlib.metadata import PackageNotFoundError, distribution

    here = Path(__file__).resolve().parent / "__init__.py"
    try:
        installed = distribution(DISTRIBUTION).locate_file("roomkit/__init__.py")
        return Path(str(installed)).resolve() != here
    except (PackageNotFoundError, OSError):
        return True


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


def missing_module(error: BaseException) -> str | None:
    """The top-level name of the module whose import failed: ``error``'s own, or that of the
    error it was raised from (a lazy import that words its failure keeps the original as its
    cause); ``None`` when neither names one."""
    seen: BaseException | None = error
    while seen is not None:
        name = getattr(seen, "name", None)
        if isinstance(name, str) and name:
            return name.split(".", 1)[0]
        seen = seen.__cause__
    return None


def extra_missing(what: str, extra: str, module: str | None = None) -> str:
    """One line saying that ``what`` needs ``extra`` and how to install it.

    Args:
        what: what cannot run without it: ``roomkit mcp``, ``PostgresStore``; ``""`` for a
            line that starts with ``needs`` (after a prefix of the caller's).
        extra: the extra's name in ``pyproject.toml``: ``postgres``.
        module: the library that is missing (its top level is named), when it is known.

    Example: ``roomkit mcp needs the mcp extra (mcp is not installed): pip install -e
    '/src/roomkit[mcp]'`` (from a checkout in ``/src/roomkit``), ``...: pip install
    'roomkit-hitl[mcp]'`` (an installed package).
    """
    lacking = f" ({module.split('.', 1)[0]} is not installed)" if module else ""
    subject = f"{what} needs" if what else "needs"
    return f"{subject} the {extra} extra{lacking}: {install_command(extra)}"


def lacking_extras(needed: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """The extras of ``needed`` that are not installed, each with the libraries missing.

    Args:
        needed: ``(extra, module)`` pairs: a module that imports only with its extra
            installed (a library, or a roomkit module importing one).
    """
    lacking: dict[str, set[str]] = {}
    for extra, module in needed:
        try:
            importlib.import_module(module)
        except ImportError as error:
            lacking.setdefault(extra, set()).add(missing_module(error) or module)
    return lacking


def extras_missing(what: str, lacking: Mapping[str, Collection[str]]) -> str:
    """One line saying that ``what`` needs every extra of ``lacking`` (as
    :func:`lacking_extras` gives them, named in its order), and the one command that
    installs them all.

    Example: ``roomkit notify needs the notify and sqlite extras (aiosqlite, standardwebhooks
    are not installed): pip install -e '/src/roomkit[notify,sqlite]'``.
    """
    extras = list(lacking)
    libraries = sorted(set().union(*lacking.values()))
    named = " and ".join([", ".join(extras[:-1]), extras[-1]] if len(extras) > 1 else extras)
    subject = f"{what} needs" if what else "needs"
    return (
        f"{subject} the {named} extra{'s' if len(extras) > 1 else ''} ({', '.join(libraries)} "
        f"{'is' if len(libraries) == 1 else 'are'} not installed): "
        f"{install_command(','.join(extras))}"
    )


def missing_extra_error(what: str, extra: str, error: ImportError) -> ImportError:
    """The error a lazy import raises (``from error``) when ``extra`` is not installed.

    It carries :func:`extra_missing`'s line and the missing module's name, so that
    :func:`missing_module` and the CLI still see which library is absent.

    Args:
        what: what cannot run without it: ``roomkit.notify.slack``.
        extra: the extra's name in ``pyproject.toml``: ``slack``.
        error: the failed import.
    """
    return ImportError(extra_missing(what, extra, error.name), name=error.name)


@contextmanager
def requires_extra(what: str, extra: str) -> Iterator[None]:
    """Word the failure of the imports in its block as :func:`missing_extra_error` does.

    Example::

        with requires_extra("roomkit.notify.slack", "slack"):
            from slack_sdk.web.async_client import AsyncWebClient

    Raises:
        ImportError: an import in the block failed (the message says how to install
            ``extra``; the original error is its cause).
    """
    try:
        yield
    except ImportError as error:
        raise missing_extra_error(what, extra, error) from error


_SHARED: dict[str, frozenset[str]] = {
    "mcp": frozenset({"uvicorn", "aiosqlite", "starlette", "httpx"}),
    "desk": frozenset({"aiosqlite", "websockets"}),
    "agui": frozenset({"fastapi"}),
    "a2a": frozenset({"starlette", "httpx", "standardwebhooks"}),
    "opa": frozenset({"httpx"}),
    "oncall": frozenset({"httpx"}),
}
"""Libraries an extra installs besides those :data:`EXTRA_OF` files under it."""

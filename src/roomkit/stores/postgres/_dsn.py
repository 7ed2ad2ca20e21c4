"""What a PostgreSQL store is given to connect with: a DSN and its store options, or a pool.

A ``postgresql://`` URL is all that :func:`roomkit.stores.open_url` and the command line's
``--store`` get, and libpq refuses a query option it does not know: :func:`store_target`
takes the stores' own options out of the URL's query first (``?pool_size=32``,
``?connect_timeout=2``), checks them beside the arguments of the same names, and leaves the
rest of the URL to libpq. :func:`check_dsn` checks what libpq gets and :func:`describe`
names the server for messages. No message shows the password: :func:`hidden` masks it
before libpq, whose errors quote the piece of the DSN they stopped at, reads the DSN again
for a message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool

from roomkit.stores._checks import seconds

__all__ = [
    "CONNECT_TIMEOUT",
    "StoreTarget",
    "check_dsn",
    "check_schema_name",
    "describe",
    "first_line",
    "hidden",
    "store_target",
]

CONNECT_TIMEOUT = 5.0
"""Seconds a connection of a PostgreSQL store may take to open, by default."""
_SCHEMES = ("postgresql://", "postgres://")
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,39}")
_USER_INFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^@/]*@")
"""A URL's scheme and user information; libpq ends the latter at the first ``@`` or ``/``."""
_PASSWORDS = (
    re.compile(r"(\A[A-Za-z][A-Za-z0-9+.-]*://[^@/:]*:)([^@/]*)(?=@)"),
    re.compile(r"([?&]password=)([^&]*)"),
    re.compile(r"((?:\A|\s)password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)"),
)
"""Where a password sits: in a URL's user information or query, or as ``password=``."""
_OPTIONS = ("pool_size", "connect_timeout")
"""The query options of a URL that are the store's, not libpq's."""

_T = TypeVar("_T")


class StoreTarget(NamedTuple):
    """What a store connects with: a DSN or a pool, and its own pool's options."""

    target: str | AsyncConnectionPool[Any]
    """The DSN libpq gets (without the store's options), or the pool given."""
    pool_size: int | None
    """The argument, else the URL's ``pool_size``; ``None``: neither (the default)."""
    connect_timeout: float
    """Seconds a connection may take to open."""


def store_target(
    dsn_or_pool: object, *, pool_size: int | None, connect_timeout: float | None
) -> StoreTarget:
    """``dsn_or_pool`` checked, with the store's ``pool_size`` and ``connect_timeout``: each
    the argument, else the option of that name in the URL's query, else its default.

    The options are taken out of the query of a ``postgresql://`` / ``postgres://`` URL, which
    libpq would otherwise refuse (``pool_size``) or which the store would override
    (``connect_timeout``); the rest of the URL goes to libpq as written.

    Raises:
        TypeError: ``dsn_or_pool`` is neither a ``str`` nor a pool, or ``connect_timeout`` is
            not a number.
        ValueError: ``dsn_or_pool`` is not a PostgreSQL DSN; an option of the URL is not a
            value it takes, is given twice in it, or is given beside the argument of the same
            name; ``connect_timeout`` is not positive.
    """
    if isinstance(dsn_or_pool, AsyncConnectionPool):
        target: str | AsyncConnectionPool[Any] = dsn_or_pool
    else:
        if isinstance(dsn_or_pool, str) and dsn_or_pool.startswith(_SCHEMES):
            dsn_or_pool, options = _taken(dsn_or_pool)
            pool_size = _one(options, "pool_size", pool_size, _connections)
            connect_timeout = _one(options, "connect_timeout", connect_timeout, _seconds)
        target = check_dsn(dsn_or_pool)
    timeout = CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
    return StoreTarget(target, pool_size, seconds("connect_timeout", timeout, zero=False))


def _taken(url: str) -> tuple[str, dict[str, list[str]]]:
    """``url`` without the store's options, and their values, decoded, by name."""
    found = _USER_INFO.match(url)
    start = url.find("?", found.end() if found else 0)
    if start < 0:
        return url, {}
    kept: list[str] = []
    options: dict[str, list[str]] = {}
    for option in url[start + 1 :].split("&"):
        name, _, value = option.partition("=")
        if unquote(name) in _OPTIONS:
            options.setdefault(unquote(name), []).append(unquote(value))
        else:
            kept.append(option)
    if not options:
        return url, {}
    rest = "&".join(kept)
    return (f"{url[:start]}?{rest}" if rest else url[:start]), options


def _one(
    options: dict[str, list[str]], name: str, given: _T | None, read: Callable[[str], _T]
) -> _T | None:
    """The option ``name``: the argument ``given``, or the URL's value read by ``read``."""
    values = options.get(name, [])
    if not values:
        return given
    if given is not None:
        raise ValueError(
            f"the store's {name} is given twice, as {name}= and in the URL's query "
            f"(?{name}=): keep one"
        )
    if len(values) > 1:
        raise ValueError(f"the URL gives {name}= {len(values)} times: keep one")
    return read(values[0])


def _connections(value: str) -> int:
    """The URL's ``pool_size``, or an error saying what it takes."""
    if value.isascii() and value.isdigit() and int(value) >= 1:
        return int(value)
    raise ValueError(
        f"the URL's pool_size={value[:40]!r} is not a whole number of connections from 1 up: "
        "write it as ?pool_size=32 (the most connections the store's pool opens at once)"
    )


def _seconds(value: str) -> float:
    """The URL's ``connect_timeout``, or an error saying what it takes."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if math.isfinite(number) and number > 0:
        return number
    raise ValueError(
        f"the URL's connect_timeout={value[:40]!r} is not a positive number of seconds: write "
        "it as ?connect_timeout=5 or ?connect_timeout=2.5 (how long a connection may take "
        "to open)"
    )


def check_dsn(dsn: object) -> str:
    """``dsn`` as a libpq connection string, or an error saying what one looks like.

    Raises:
        TypeError: ``dsn`` is not a ``str``.
        ValueError: it is not a ``postgresql://`` / ``postgres://`` URL nor a
            ``key=value`` connection string, or it names a port that is not 1 to 65535.
    """
    if not isinstance(dsn, str):
        raise TypeError(
            f"dsn must be a str (postgresql://user:password@host:5432/db) or an "
            f"AsyncConnectionPool, got {type(dsn).__name__}"
        )
    if not dsn.startswith(_SCHEMES) and "=" not in dsn:
        raise ValueError(
            f"{describe(dsn)!r} is not a PostgreSQL DSN: pass postgresql://user:password@"
            f"host:5432/database (or postgres://..., or 'host=... dbname=...')"
        )
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        raise ValueError(f"the PostgreSQL DSN cannot be read: {_unreadable(dsn)}") from None
    # libpq reads the port only as it connects, and then fails as a server not reached.
    for port in str(parts.get("port") or "").split(","):
        if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(
                f"the PostgreSQL DSN names the port {port[:20]!r}, and a port is 1 to 65535: "
                "give the one the server listens on (5432 by default)"
            )
    return dsn


def _unreadable(dsn: str) -> str:
    """Why libpq cannot read ``dsn``, as libpq says it of ``dsn`` with its password masked."""
    try:
        conninfo_to_dict(hidden(dsn))
    except psycopg.ProgrammingError as error:
        return first_line(error)
    return (
        "its password is not written as a URL takes it: percent-encode its characters that "
        "are not letters or digits (%25 for %, %40 for @, %2F for /)"
    )


def hidden(dsn: str) -> str:
    """``dsn`` with its password, wherever it is written, shown as ``****``."""
    for password in _PASSWORDS:
        dsn = password.sub(r"\1****", dsn)
    return dsn


def check_schema_name(schema: object) -> str:
    """``schema`` as the name of a PostgreSQL schema the store may use.

    Raises:
        TypeError: ``schema`` is not a ``str``.
        ValueError: it is not 1 to 40 lower-case letters, digits and underscores, starting
            with a letter or an underscore.
    """
    if not isinstance(schema, str):
        raise TypeError(f"schema must be a str, got {type(schema).__name__}")
    if not _NAME.fullmatch(schema):
        raise ValueError(
            f"schema must be 1 to 40 lower-case letters, digits and underscores, starting "
            f"with a letter or an underscore, got {schema!r}"
        )
    return schema


def describe(dsn: str) -> str:
    """The server and database of ``dsn``, without its password, for messages."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return hidden(dsn)
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    database = parts.get("dbname") or parts.get("user") or ""
    return f"postgresql://{host}:{port}/{database}"


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (or its type's name, when it has none)."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]

"""Typed values out of a notifier file's tables, each mistake raised with where it is."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

from roomkit._urls import http_url
from roomkit.auth.names import RULE, actor_name_problem
from roomkit.core.exceptions import NotifyConfigError
from roomkit.notify.surface import surface_name

__all__ = ["TomlValues"]


class TomlValues:
    """Reads one file's values: text, seconds, URLs, secrets from the environment, tables,
    surface names; a mistake raises :class:`NotifyConfigError` naming the file and the key."""

    def __init__(self, path: str, environ: Mapping[str, str]) -> None:
        self.path = path
        self.environ = environ

    def fail(self, where: str, message: str) -> NoReturn:
        raise NotifyConfigError(
            f"{self.path}: {where}: {message}" if where else f"{self.path} {message}", key=where
        )

    def actor_name(self, where: str, value: str) -> None:
        """Fail unless ``value`` is an actor name, the rule the desk's tokens follow."""
        problem = actor_name_problem(value)
        if problem is not None:
            self.fail(where, f"the actor name {problem}: {RULE}")

    def known(self, table: dict[str, Any], where: str, keys: tuple[str, ...]) -> None:
        for key in table:
            if key not in keys:
                at = f"{where} {key}" if where else key
                self.fail(at, f"unknown key (the keys here: {', '.join(keys)})")

    def table(self, value: object, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, f"must be a table ({where.strip('[]')} = {{...}} or a [section])")
        return value

    def tables(self, document: dict[str, Any], key: str) -> list[dict[str, Any]]:
        value = document.get(key, [])
        if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
            self.fail(key, f"write one [[{key}]] table for each {key} (double brackets)")
        return value

    @staticmethod
    def label(key: str, index: int, document: dict[str, Any]) -> tuple[str, str]:
        """Where the ``index``-th table of ``key`` is, and the surface's default name."""
        if len(document[key]) == 1:
            return f"[[{key}]]", key
        return f"[[{key}]] #{index}", f"{key}{index}"

    def text(self, table: dict[str, Any], where: str, key: str, *, required: bool = False) -> Any:
        value = table.get(key)
        at = f"{where} {key}" if where else key
        if value is None:
            if required:
                self.fail(at, "is missing")
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(at, f"must be non-empty text, not {value!r}")
        return value

    def line(self, table: dict[str, Any], where: str, key: str, *, required: bool = False) -> Any:
        """:meth:`text` that goes into a mail header (an address, a login): one line, no
        control character."""
        value = self.text(table, where, key, required=required)
        if value is not None and any(ord(char) < 32 or ord(char) == 127 for char in value):
            at = f"{where} {key}" if where else key
            self.fail(at, f"must be one line, with no control character, not {value!r}")
        return value

    def surface_name(self, table: dict[str, Any], where: str, default: str) -> str:
        """The table's ``name``, else ``default``; a name no history keeps as a surface's
        (longer than a surface may be) fails at its key, as the surface would refuse it."""
        name = self.text(table, where, "name")
        if name is None:
            return default
        try:
            return surface_name(name, what="the surface's name", example=default)
        except (TypeError, ValueError) as error:
            self.fail(f"{where} name", str(error))

    def seconds(self, table: dict[str, Any], where: str, key: str) -> float:
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(f"{where} {key}", f"must be a number of seconds, not {value!r}")
        if not (math.isfinite(value) and value > 0):
            self.fail(f"{where} {key}", f"must be a positive number of seconds, not {value!r}")
        return float(value)

    def url(
        self, table: dict[str, Any], where: str, key: str, *, required: bool = False
    ) -> str | None:
        value = self.text(table, where, key, required=required)
        if value is None:
            return None
        try:
            # The check of the surface the URL is for, told here at its key with the file's
            # other mistakes, rather than by the surface, under the table's last key read.
            return http_url(value, "the URL")
        except ValueError as error:
            self.fail(f"{where} {key}" if where else key, str(error))

    def secret(self, table: dict[str, Any], where: str, key: str) -> str:
        name = self.text(table, where, key, required=True)
        value = self.environ.get(name)
        if not value:
            state = "is not set" if value is None else "is empty"
            self.fail(f"{where} {key}", f"the environment variable {name} {state}")
        return value

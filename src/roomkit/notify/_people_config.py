"""The routing parts of a notifier's TOML file: delegations, roles and on-call schedules.

::

    [people.alice]
    email = "alice@example.com"
    manager = "mallory"

    [[people.alice.delegations]]
    to = "carol"
    starts = 2026-12-02T09:00:00Z           # a TOML date-time with its offset
    ends = 2026-12-12T09:00:00Z
    tools = ["pay"]                         # leave out for every tool
    reason = "on leave"

    [roles.kyc]
    members = ["dan", "erin", "frank"]
    rule = "rotation"                       # or "everyone"

    [on_call.payments]
    ical = "schedules/payments.ics"         # a file (beside this one), or an https:// feed
    # pagerduty_schedule = "PABC123"        # or PagerDuty's API:
    # pagerduty_token_env = "PAGERDUTY_TOKEN"
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, Protocol

from roomkit._extras import extra_missing
from roomkit.auth.names import actor_name_problem
from roomkit.notify._header_values import token_of
from roomkit.people import Delegation, OnCallSource, Role
from roomkit.routing.pagerduty import API

__all__ = ["delegations", "on_call", "roles"]

_DELEGATION = ("to", "starts", "ends", "tools", "reason")
_ROLE = ("members", "rule")
_ON_CALL = ("ical", "pagerduty_schedule", "pagerduty_token_env", "pagerduty_url")


class Reader(Protocol):
    """What these sections need of the file's reader (``notify.config``)."""

    def fail(self, where: str, message: str) -> NoReturn: ...

    def known(self, table: dict[str, Any], where: str, keys: tuple[str, ...]) -> None: ...

    def table(self, value: object, where: str) -> dict[str, Any]: ...

    def text(
        self, table: dict[str, Any], where: str, key: str, *, required: bool = False
    ) -> Any: ...

    def actor_name(self, where: str, value: str) -> None: ...

    def secret(self, table: dict[str, Any], where: str, key: str) -> str: ...


def _moment(reader: Reader, table: dict[str, Any], where: str, key: str) -> datetime:
    value = table.get(key)
    if not isinstance(value, datetime) or value.tzinfo is None:
        reader.fail(
            f"{where} {key}",
            f"must be a date-time with its offset (2026-12-02T09:00:00Z), not {value!r}",
        )
    return value


def delegations(reader: Reader, value: object, where: str) -> tuple[Delegation, ...]:
    """The ``[[people.NAME.delegations]]`` tables of one person."""
    where = f"{where} delegations"
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        reader.fail(where, "write one [[people.NAME.delegations]] table for each (double brackets)")
    found: list[Delegation] = []
    for index, table in enumerate(value, start=1):
        at = f"{where} #{index}"
        reader.known(table, at, _DELEGATION)
        to = reader.text(table, at, "to", required=True)
        reader.actor_name(f"{at} to", to)
        tools = table.get("tools")
        if tools is not None and (
            not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools)
        ):
            reader.fail(f"{at} tools", f"must be a list of tool names, not {tools!r}")
        starts, ends = _moment(reader, table, at, "starts"), _moment(reader, table, at, "ends")
        reason = reader.text(table, at, "reason") or ""
        try:
            found.append(
                Delegation(
                    to=to,
                    starts=starts,
                    ends=ends,
                    tools=None if tools is None else frozenset(tools),
                    reason=reason,
                )
            )
        except (TypeError, ValueError) as error:
            reader.fail(at, str(error))
    return tuple(found)


def roles(reader: Reader, value: object) -> dict[str, Role]:
    """The ``[roles.NAME]`` tables."""
    found: dict[str, Role] = {}
    for name, table in reader.table(value, "roles").items():
        where = _section("roles", name)
        reader.known(reader.table(table, where), where, _ROLE)
        members = table.get("members")
        if not isinstance(members, list) or not members:
            reader.fail(f"{where} members", f"must be a list of actor names, not {members!r}")
        for member in members:
            reader.actor_name(f"{where} members", member)
        rule = table.get("rule", "everyone")
        if rule not in ("everyone", "rotation"):
            reader.fail(f"{where} rule", f"is 'everyone' or 'rotation', not {rule!r}")
        found[name] = Role(members=tuple(members), rule=rule)
    return found


def on_call(reader: Reader, value: object, folder: Path) -> dict[str, OnCallSource]:
    """The ``[on_call.NAME]`` tables: an iCal schedule or a PagerDuty schedule each; an
    iCal file's path is read from ``folder`` (the TOML file's) when it is relative, and the
    file is read now, so that a wrong one is told before anything runs."""
    found: dict[str, OnCallSource] = {}
    for name, table in reader.table(value, "on_call").items():
        where = _section("on_call", name)
        reader.known(reader.table(table, where), where, _ON_CALL)
        ical = reader.text(table, where, "ical")
        schedule = reader.text(table, where, "pagerduty_schedule")
        if (ical is None) == (schedule is None):
            reader.fail(where, "needs one of ical (a file or URL) or pagerduty_schedule")
        if ical is not None:
            try:
                from roomkit.routing.ical import ICalOnCall

                found[name] = ICalOnCall(_beside(ical, folder))
            except ImportError as error:
                reader.fail(where, _missing("oncall", error))
            except ValueError as error:
                reader.fail(f"{where} ical", str(error))
            continue
        token = reader.secret(table, where, "pagerduty_token_env")
        try:
            # Checked now: a token no header carries would fail every lookup, one by one.
            token = token_of(token, f"the environment variable {table['pagerduty_token_env']}")
        except ValueError as error:
            reader.fail(f"{where} pagerduty_token_env", str(error))
        url = reader.text(table, where, "pagerduty_url") or API
        try:
            from roomkit.routing.pagerduty import PagerDutyOnCall

            found[name] = PagerDutyOnCall(token, schedule, base_url=url)
        except ImportError as error:
            reader.fail(where, _missing("desk", error))
        except ValueError as error:
            reader.fail(where, str(error))
    return found


def on_call_extras(document: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``(extra, library)`` pairs the ``[on_call.NAME]`` tables of ``document`` need
    (their mistakes are :func:`on_call`'s to tell)."""
    tables = document.get("on_call")
    needed: list[tuple[str, str]] = []
    for table in tables.values() if isinstance(tables, dict) else ():
        if isinstance(table, dict) and "ical" in table:
            needed += [("oncall", "icalendar"), ("oncall", "recurring_ical_events")]
        elif isinstance(table, dict) and "pagerduty_schedule" in table:
            needed.append(("desk", "httpx"))
    return needed


def _section(kind: str, name: str) -> str:
    """Where the table ``[kind.name]`` is, its name escaped (and cut short) when it is no
    actor name (the directory refuses it), so that no message carries its control
    characters."""
    shown = name if actor_name_problem(name) is None else repr(name)[:40]
    return f"[{kind}.{shown}]"


def _missing(extra: str, error: ImportError) -> str:
    return extra_missing("", extra, error.name) if error.name else str(error)


def _beside(source: str, folder: Path) -> str | Path:
    """An iCal source as given when it is a feed's URL or an absolute path, else the path
    read from ``folder``."""
    if source.startswith(("http://", "https://", "webcal://")):
        return source
    try:
        path = Path(source).expanduser()
    except RuntimeError:
        # "~name/..." for a user this machine does not know, or "~/..." without $HOME.
        raise ValueError(
            f"{source!r} names the home folder of a user this machine does not know (or "
            "$HOME is not set): give the schedule's full path"
        ) from None
    return path if path.is_absolute() else folder / path

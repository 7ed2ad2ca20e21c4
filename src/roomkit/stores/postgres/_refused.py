"""What the PostgreSQL stores say when the server refuses their user a privilege.

A user that may not make the stores' tables (no ``CREATE`` on their schema, or on the
database while the schema is still to make), or may not use tables their owner made, gets
psycopg's ``InsufficientPrivilege`` (SQLSTATE 42501) from the server. No retry helps, so it
is no outage: a plain :class:`~roomkit.core.exceptions.StoreError` names the user and the
grants that let it in, one way or the other.
"""

from __future__ import annotations

import re

import psycopg

from roomkit.core.exceptions import StoreError

__all__ = ["refused_error"]

_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*")
"""A role name that SQL takes unquoted."""


def refused_error(
    error: psycopg.Error, where: str, *, schema: str, user: str, making: bool
) -> StoreError:
    """The error of a store at ``where`` whose ``user`` the server refused a privilege on
    the tables in ``schema`` (a checked name) with ``error``: while it makes or checks its
    tables (``making``), or later, using them."""
    first = (str(error).strip() or type(error).__name__).splitlines()[0]
    role = user if _PLAIN.fullmatch(user) else '"' + user.replace('"', '""') + '"'
    use = (
        f"GRANT USAGE ON SCHEMA {schema} TO {role}; GRANT SELECT, INSERT, UPDATE, DELETE ON "
        f"ALL TABLES IN SCHEMA {schema} TO {role}; GRANT USAGE ON ALL SEQUENCES IN SCHEMA "
        f"{schema} TO {role}"
    )
    refused = f"the PostgreSQL store at {where} refused its user {user!r} ({first})"
    if not making:
        return StoreError(f"{refused}: grant it the use of the store's tables ({use})")
    return StoreError(
        f"{refused}: either grant it the making of the store's tables (GRANT CREATE ON SCHEMA "
        f"{schema} TO {role}; and GRANT CREATE ON DATABASE while the schema is still to "
        "make), or open the store once as its owner (the schema's owner, or a user with "
        f"CREATE on it), which makes the tables, then grant {role} their use ({use})"
    )

"""A policy named in the notifier's TOML file: its ``[policy]`` table.

::

    [policy]
    engine = "cedar"                    # "cedar", "rego" or "opa"
    file = "policies/payments.cedar"    # cedar: the policies; rego: a module or a list
    entities = "policies/entities.json" # cedar, optional
    # data = "policies/data.json"       # rego, optional
    # query = "data.roomkit.decision"   # rego
    # url = "http://127.0.0.1:8181"     # opa
    # token_env = "OPA_TOKEN"           # opa, optional: holds its bearer token
    # path = "roomkit/decision"         # opa
    # timeout = 2.0                     # opa, seconds
    shadow = true                       # record and count, keep today's behaviour
    on_error = "ask"                    # or "deny"
    name = "payments"

Relative paths are read from the TOML file's folder. The policy is built (and parsed) when
the file is loaded, so a policy that does not parse is refused at start, with its file and
line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roomkit.models.shown import shown
from roomkit.policy._base import PolicyBase, PolicyError
from roomkit.policy.cedar import CedarPolicy
from roomkit.policy.opa import OPAPolicy
from roomkit.policy.rego import RegoPolicy

__all__ = ["KEYS", "policy_from_table"]

KEYS = (
    "engine",
    "file",
    "entities",
    "data",
    "query",
    "url",
    "token_env",
    "path",
    "timeout",
    "shadow",
    "on_error",
    "name",
)
"""The keys a ``[policy]`` table takes."""


def policy_from_table(
    table: dict[str, Any], folder: Path, environ: Mapping[str, str] = os.environ
) -> PolicyBase:
    """The policy a ``[policy]`` table names; paths relative to ``folder``, ``token_env``
    read from ``environ``.

    Raises:
        PolicyError: an unknown key or engine, a missing one, a file that cannot be read or
            a policy that does not parse (the message names the key, or the file and line).
        ImportError: the engine's extra is not installed.
    """
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise PolicyError(f"unknown key {unknown[0]!r}: a [policy] takes {', '.join(KEYS)}")
    engine = table.get("engine")
    common: dict[str, Any] = {}
    for key in ("shadow", "on_error", "name"):
        if key in table:
            common[key] = table[key]
    if "shadow" in common and not isinstance(common["shadow"], bool):
        raise PolicyError(
            f"shadow is true or false, a TOML boolean written without quotes, got "
            f"{shown(common['shadow'])}"
        )
    for key in ("url", "token_env", "path", "query", "on_error", "name"):
        if key in table and not (isinstance(table[key], str) and table[key]):
            raise PolicyError(f"{key} is non-empty text, got {table[key]!r}")
    if engine == "opa":
        if "url" not in table:
            raise PolicyError("an opa policy needs url")
        options: dict[str, Any] = {k: table[k] for k in ("path", "timeout") if k in table}
        if "token_env" in table:
            token = environ.get(table["token_env"])
            if not token:
                state = "is not set" if token is None else "is empty"
                raise PolicyError(
                    f"token_env: the environment variable {table['token_env']} {state}"
                )
            options["headers"] = {"Authorization": f"Bearer {token}"}
        return OPAPolicy(table["url"], **options, **common)
    if "token_env" in table:
        raise PolicyError("token_env is for opa policies: the bearer token sent to the server")
    if engine not in ("cedar", "rego"):
        raise PolicyError(f"engine is 'cedar', 'rego' or 'opa', got {engine!r}")
    if "file" not in table:
        raise PolicyError(f"a {engine} policy needs file")
    files = table["file"]
    timed = {"timeout": table["timeout"]} if "timeout" in table else {}
    if engine == "cedar":
        if "timeout" in table:
            raise PolicyError(
                "timeout is for rego and opa policies: a cedar policy decides on the event "
                "loop, in a fraction of a millisecond"
            )
        if not isinstance(files, str):
            raise PolicyError("file is the path of one .cedar file")
        entities = _path(table["entities"], folder) if "entities" in table else None
        return CedarPolicy(_path(files, folder), entities, **common)
    listed = [files] if isinstance(files, str) else files
    if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
        raise PolicyError("file is a .rego file's path, or a list of them")
    data = _path(table["data"], folder) if "data" in table else None
    query = {"query": table["query"]} if "query" in table else {}
    return RegoPolicy([_path(item, folder) for item in listed], data, **query, **timed, **common)


def _path(value: Any, folder: Path) -> Path:
    if not isinstance(value, str) or not value:
        raise PolicyError(f"a path is a non-empty string, got {value!r}")
    path = Path(value)
    return path if path.is_absolute() else folder / path

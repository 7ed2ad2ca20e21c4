"""The checks of :class:`~roomkit.mcp.server.HumanInputMCPServer`'s arguments.

Each wrong argument is refused when the server is made, by name, saying what to pass: left
in, it would meet a call in the middle of a person's wait (a comparison that fails, a tool
list the SDK cannot write, a key the state boundary refuses) with a message naming nothing
the developer wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from roomkit.models.clock import bounded_seconds, check_deadline
from roomkit.models.shown import shown
from roomkit.notify.links import AnswerLinks
from roomkit.tools.validation import check_tool_name, check_tool_schema, unencodable_text

__all__ = ["check_numbers", "check_state_options", "tools_by_name"]


def check_numbers(
    timeout: object, progress_interval: object, hold: object, max_open_calls: object
) -> None:
    """Refuse a number of the server that is not one, or is out of its range.

    Raises:
        TypeError: one is not a number (a bool is not one), or ``max_open_calls`` not a
            whole number.
        ValueError: ``timeout`` is not a person's deadline (above 0, at most a century),
            ``progress_interval`` or ``hold`` not positive seconds, at most a century,
            ``max_open_calls`` below 1.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
    # Checked here: a call would read the store's refusal of it as its own arguments'.
    check_deadline("timeout", timeout)
    bounded_seconds("progress_interval", progress_interval)
    if hold is not None:
        bounded_seconds("hold", hold)
    if isinstance(max_open_calls, bool) or not isinstance(max_open_calls, int):
        raise TypeError(f"max_open_calls must be a whole number, got {max_open_calls!r}")
    if max_open_calls < 1:
        raise ValueError(f"max_open_calls must be at least 1, got {max_open_calls}")


def check_state_options(state_keys: object, links: object) -> list[bytes] | None:
    """``state_keys`` as a list (read once: a generator is taken whole), after refusing
    ``state_keys`` that are no list of keys and ``links`` that issue no links.

    The keys' length is the SDK's to check, when ``hold`` puts them to use. A refusal never
    quotes the keys, which are secrets.

    Raises:
        TypeError: naming the argument and what to pass.
    """
    keys: list[Any] | None = None
    if state_keys is not None:
        if isinstance(state_keys, str | bytes | bytearray | Mapping) or not isinstance(
            state_keys, Iterable
        ):
            raise TypeError(_NO_KEYS.format(type(state_keys).__name__))
        keys = list(state_keys)
        for key in keys:
            if not isinstance(key, bytes | bytearray | str):
                raise TypeError(_NO_KEYS.format(f"a list holding {type(key).__name__}"))
    if links is not None and not isinstance(links, AnswerLinks):
        raise TypeError(
            f"links must be the desk's AnswerLinks (roomkit.notify.links), or None, got {links!r}"
        )
    return keys


_NO_KEYS = (
    "state_keys must be a list of keys (bytes, each 32 or more: "
    "roomkit.mcp.waits.state_key(secret) makes one), or None, got {}"
)


def tools_by_name(tools: object) -> dict[str, Mapping[str, Any]]:
    """The tool definitions ``tools`` holds, by name, once each is one a client can list.

    Raises:
        TypeError: ``tools`` is no iterable of mappings.
        ValueError: a tool has no usable name (letters, digits, ``_`` and ``-``), no
            parameters schema for an object, a description that is not text, text UTF-8
            cannot encode, or a name given twice; or there is no tool at all.
    """
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
        raise TypeError(
            "tools must be a list of tool definitions (mappings of name, description and "
            f"parameters), got {type(tools).__name__}"
        )
    found: dict[str, Mapping[str, Any]] = {}
    for tool in tools:
        if not isinstance(tool, Mapping):
            raise TypeError(
                "each of tools must be a mapping of name, description and parameters, got "
                f"{type(tool).__name__}"
            )
        name = tool.get("name")
        if not isinstance(name, str):
            raise ValueError(
                f"each tool needs a 'name', the text a model calls it by: got {name!r}"
            )
        check_tool_name(name)
        if "parameters" not in tool:
            raise ValueError(f"Tool {name!r}: give 'parameters', the JSON Schema of its arguments")
        check_tool_schema(name, tool["parameters"])
        _check_text(name, "parameters", tool["parameters"])
        description = tool.get("description")
        if description is not None and not isinstance(description, str):
            raise ValueError(
                f"Tool {name!r}: description must be text, or left out, got "
                f"{type(description).__name__}"
            )
        _check_text(name, "description", description)
        if name in found:
            raise ValueError(f"tool {shown(name)} is given twice")
        found[name] = tool
    if not found:
        raise ValueError("tools must name at least one tool")
    return found


def _check_text(name: str, field: str, value: object) -> None:
    """Refuse text in ``value`` that UTF-8 cannot encode: the SDK could list no tool."""
    problem = unencodable_text(value)
    if problem is not None:
        raise ValueError(f"Tool {name!r}: {field} must be valid Unicode text, but holds {problem}")

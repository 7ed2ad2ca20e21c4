"""MCP: a door through which any MCP client asks a person (``roomkit mcp``).

:class:`HumanInputMCPServer` offers the human-input tools to MCP clients and records each
call as a request on a :class:`~roomkit.tools.human_input.HumanInputHandler`, so the desk,
the notifications and every other surface on the same store show it and answer it.
``roomkit mcp`` (:mod:`roomkit.mcp.command`) serves it over stdio or streamable HTTP.
Needs the ``mcp`` extra.
"""

from roomkit._extras import requires_extra

with requires_extra("roomkit.mcp", "mcp"):
    from roomkit.mcp.server import KEY_META, PROGRESS_INTERVAL, HumanInputMCPServer

__all__ = ["KEY_META", "PROGRESS_INTERVAL", "HumanInputMCPServer"]

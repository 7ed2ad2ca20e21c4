"""Serving a desk app with uvicorn, now in :mod:`roomkit._serving` (re-exported here)."""

from roomkit._serving import SHUTDOWN_GRACE, Server, listen, port_problem, sign_in_link

__all__ = ["SHUTDOWN_GRACE", "Server", "listen", "port_problem", "sign_in_link"]

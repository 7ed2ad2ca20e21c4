"""Moved to :mod:`tests.servers.pgbouncer_server`; this name stays for the tests that import it."""

from tests.servers.pgbouncer_server import (
    pgbouncer_in_transaction_mode as pgbouncer_in_transaction_mode,
)

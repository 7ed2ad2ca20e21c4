"""Moved to :mod:`tests.servers.postgres_server`; this name stays for the tests that import it."""

from tests.servers.postgres_server import PASSWORD as PASSWORD
from tests.servers.postgres_server import PostgresServer as PostgresServer
from tests.servers.postgres_server import running_postgres as running_postgres

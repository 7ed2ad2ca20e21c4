"""The stores' tests' shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest
from tests.postgres_server import PostgresServer


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    """The DSN of a new, empty database of the session's server, dropped after the test."""
    name = f"bare{os.urandom(4).hex()}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    yield postgres_server.dsn_for(name)
    with psycopg.connect(postgres_server.dsn, autocommit=True) as db:
        db.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

"""Test-suite settings shared by every test directory.

Hypothesis profiles: ``ci`` (the default) explores enough to catch ordering bugs in the
state machines and never fails on slow examples; ``dev`` is a quicker pass for local edits
(``HYPOTHESIS_PROFILE=dev pytest``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from tests.postgres_server import PostgresServer, running_postgres

settings.register_profile(
    "ci",
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev",
    max_examples=20,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL cluster for the session, in a temporary folder; tests take a schema
    each."""
    with running_postgres() as server:
        yield server

"""The PostgreSQL tutorial's block runs against a real server (the suite's test of every
documented block runs it without ``DATABASE_URL``, where it does nothing)."""

from __future__ import annotations

import contextlib
import io
import os

import psycopg
import pytest
from tests.doc_pages import page_blocks
from tests.postgres_server import PostgresServer


def test_the_readme_postgres_block_commits_the_answer_with_the_write(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (code,) = page_blocks("docs/tutorials/production-postgres.md", "python", "PostgresStore(dsn)")
    database = f"readme{os.urandom(4).hex()}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{database}"')
    dsn = postgres_server.dsn_for(database)
    monkeypatch.setenv("DATABASE_URL", dsn)
    out = io.StringIO()

    with contextlib.redirect_stdout(out):
        exec(compile(code, "the PostgreSQL tutorial's block", "exec"), {"__name__": "readme"})

    assert out.getvalue().strip() == "approved"
    with psycopg.connect(dsn) as db:
        assert db.execute("SELECT amount FROM refunds").fetchall() == [(40,)]

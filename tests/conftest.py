"""Test-suite settings shared by every test directory.

A thread left running by a test (a store never closed) must fail the run, not keep the
process from exiting: the run ends naming the threads still alive after a short grace.

Hypothesis profiles: ``ci`` (the default) explores enough to catch ordering bugs in the
state machines and never fails on slow examples; ``dev`` is a quicker pass for local edits
(``HYPOTHESIS_PROFILE=dev pytest``).

The servers the tests run against and their fixtures are in ``tests/servers/``. The desk's
data folder (``$ROOMKIT_DESK_DATA``) is a temporary one of the run's.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import threading

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.servers.plugin"]
"""The servers' fixtures (Redis, PostgreSQL, the fake Slack API, every store)."""

# The suite never reads the desk folder or the keys of whoever runs it (a desk of theirs may
# keep an audit key, which every audit command would then check by): the desk's data folder
# is one of the run's own, and no desk secret or audit key comes from the environment.
for _key in ("ROOMKIT_AUDIT_KEY", "ROOMKIT_DESK_SECRET"):
    os.environ.pop(_key, None)
os.environ["ROOMKIT_DESK_DATA"] = _DESK_DATA = tempfile.mkdtemp(prefix="roomkit-tests-desk-")
atexit.register(shutil.rmtree, _DESK_DATA, ignore_errors=True)

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


_EXIT_GRACE = 10.0
"""Seconds the threads still running when the run ends get to finish, all together."""


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the process if threads that Python would wait for at exit are still running."""
    left = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.main_thread()
        and not thread.daemon
        # The default executors' idle workers: Python's exit stops them itself.
        and not thread.name.startswith(("ThreadPoolExecutor-", "asyncio_"))
    ]
    for thread in left:
        thread.join(timeout=_EXIT_GRACE / len(left))
    left = [thread for thread in left if thread.is_alive()]
    if not left:
        return
    names = ", ".join(sorted(thread.name for thread in left))
    sys.stdout.flush()
    sys.stderr.write(f"\nthreads left running by the tests, not waited for: {names}\n")
    sys.stderr.flush()
    os._exit(int(config.stash.get(_EXIT_STATUS, 1)) or 1)


_EXIT_STATUS = pytest.StashKey[int]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_EXIT_STATUS] = exitstatus


_FASTAPI_CACHES = (
    ("fastapi.dependencies.models", "_is_gen_callable_cached"),
    ("fastapi.dependencies.models", "_is_async_gen_callable_cached"),
    ("fastapi.dependencies.models", "_is_coroutine_callable_cached"),
    ("fastapi._compat.v2", "get_cached_model_fields"),
)
"""FastAPI's ``lru_cache``s keyed by an app's endpoints and dependencies (4,096 entries each):
they keep alive every app a test built, its handler and store with it. Emptied after each
test, the desk's tests alone end with some 230 MB less heap, and the collector's full passes
over it take a quarter less time."""


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Let go of the apps the test built: empty FastAPI's caches of their endpoints."""
    for module_name, name in _FASTAPI_CACHES:
        module = sys.modules.get(module_name)
        cached = getattr(module, name, None)
        if cached is not None and hasattr(cached, "cache_clear"):
            cached.cache_clear()

"""Workflow code that schedules roomkit's activities: the timeouts and retries each gets, a
missing registration turned into an error saying what to add, and the wait for a worker.

A worker that runs none of roomkit's activities (one given no activities polls for none)
may be one of several on its task queue: workflow-only workers beside activity workers. Its
asks' creates wait for those workers, for as long as they are down or backlogged: each is
scheduled with a bound on the wait for a worker (``ActivityTimeouts.unpolled``); past it, a
warning says what to add if this worker is meant to run them, and the create is scheduled
again with the bound doubled (up to an hour), so the ask goes on as soon as a worker takes
it. A re-scheduled create carries the same ask, under the same key: it re-attaches to the
request of any attempt that ran, and one whose wait ran out never ran. A worker that runs
roomkit's activities takes its own asks' creates, and schedules them with no bound.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

with workflow.unsafe.imports_passed_through():
    from roomkit.adapters.temporal._protocol import CREATE_ACTIVITY
    from roomkit.adapters.temporal._timeouts import ActivityTimeouts

__all__ = ["LONGEST_UNPOLLED", "run_activity"]

LONGEST_UNPOLLED = timedelta(hours=1)
"""The longest a re-scheduled create waits for a worker before the warning comes again
(``unpolled`` doubles up to it, or stays as given when longer)."""

_UNREGISTERED = (
    "no worker on task queue {queue!r} runs roomkit's activities: pass "
    "activities=roomkit.adapters.temporal.activities(handler) to the Worker"
)
_UNTAKEN = (
    "no worker on task queue %r has taken roomkit's create activity for %g s; the ask "
    "waits on and schedules it again. If this worker is meant to run roomkit's activities, "
    "pass activities=roomkit.adapters.temporal.activities(handler) to the Worker (or start "
    "a worker that does on this task queue)"
)
_ASSERT_REGISTERED = "__temporal_assert_local_activity_valid"
"""The worker's check, given to workflow code, that it registers an activity."""


async def run_activity(
    name: str,
    argument: dict[str, Any],
    timeouts: ActivityTimeouts,
    *,
    retry: RetryPolicy | None = None,
) -> dict[str, Any]:
    """Run one of roomkit's activities; a missing registration is a clear error, and a
    create no worker takes is scheduled again, with a warning, for as long as it takes."""
    policy = retry or RetryPolicy(non_retryable_error_types=["NotFoundError", "ValueError"])
    # A worker that runs no roomkit activity may be one of several on the queue; one that
    # does takes its own create, so only the former bounds the wait for a worker.
    bound = None if name != CREATE_ACTIVITY or _registered_here(name) else timeouts.unpolled
    waited = timedelta(0)
    while True:
        try:
            result: dict[str, Any] = await workflow.execute_activity(
                name,
                argument,
                schedule_to_start_timeout=bound,
                start_to_close_timeout=timeouts.start_to_close,
                heartbeat_timeout=timeouts.heartbeat,
                retry_policy=policy,
                result_type=dict,
            )
            return result
        except ActivityError as error:
            cause = error.cause
            queue = workflow.info().task_queue
            if isinstance(cause, ApplicationError) and cause.type == "NotFoundError":
                raise RuntimeError(_UNREGISTERED.format(queue=queue)) from None
            if isinstance(cause, ApplicationError) and cause.type == "ValueError":
                raise ValueError(cause.message) from None
            if not _untaken(cause):
                raise
            # Nobody took it: the activity never ran, and the workers that run it may be
            # down for a while (a deploy, an outage). Whatever the bound is here, the
            # timeout in history re-schedules it: a worker that runs roomkit's activities
            # now (restarted with them) replays a history made without them as it was.
            if bound is not None:
                waited += bound
                workflow.logger.warning(_UNTAKEN, queue, waited.total_seconds())  # not on replay
                bound = min(bound * 2, max(bound, LONGEST_UNPOLLED))


def _untaken(cause: BaseException | None) -> bool:
    """Whether ``cause`` says no worker took the activity within its bound."""
    return isinstance(cause, ActivityTimeoutError) and cause.type is TimeoutType.SCHEDULE_TO_START


def _registered_here(name: str) -> bool:
    """Whether the worker running this workflow registers the activity ``name``: ``True``
    unless the worker's check says it does not (a worker that cannot say, or whose check
    fails otherwise, has the create wait with no bound, as a worker that runs it would)."""
    try:
        check = workflow.extern_functions().get(_ASSERT_REGISTERED)
        if check is None:
            return True
        check(name)
    except ValueError:
        return False
    except Exception:  # the SDK's own, private check: one that breaks cannot tell
        return True
    return True

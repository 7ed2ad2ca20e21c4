"""``A2APush``: the push notifications of A2A tasks, delivered through roomkit's outbox.

The SDK's push sender makes one POST and forgets it. ``A2APush`` is a notification surface
(:class:`~roomkit.notify.Notifier` runs it): when a request of an A2A context's room opens
or settles (answered on the desk, on Slack, timed out, withdrawn), each task of that context
still waiting on a person gets a push at every URL configured on it. The notifier records the
delivery in the store's outbox before it is sent and retries it after a 5xx, a 408, a 429 or
a connection error, under the same ``webhook-id`` every time; each POST is signed (Standard
Webhooks) and carries the task's ``X-A2A-Notification-Token`` and ``Authorization``. A config
is checked by one rule (:mod:`roomkit.adapters.a2a._push_rule`) both as it is set, through
:attr:`A2APush.configs`, and before each POST.

The body is the A2A ``StreamResponse`` JSON of a ``TaskStatusUpdateEvent``: ``input-required``
with the request's data part when it opens, ``working`` with its outcome when it is answered
or refused (the caller's next message on the task carries the turn on). A request that times
out or is withdrawn ends the task whose ``input-required`` message named it: ``failed`` or
``canceled`` with roomkit's text and the request's data part, saved in the task store and
pushed, without waiting for the caller's next message; a retry of that push posts the end the
task store holds.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
from a2a.auth.user import User
from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_part
from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore, TaskStore
from a2a.types import (
    ListTasksRequest,
    Role,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.push_url_validator import validate_push_notification_url

# protobuf ships no type stubs (unless types-protobuf is installed); MessageToDict returns
# a plain dict.
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped,unused-ignore]
from google.protobuf.timestamp_pb2 import Timestamp  # type: ignore[import-untyped,unused-ignore]
from standardwebhooks import Webhook as Signer

from roomkit.adapters.a2a._endings import asked, ending
from roomkit.adapters.a2a._push_rule import CheckedConfigs, config_problem
from roomkit.models.kinds import request_kind
from roomkit.models.pending_input import PendingInput
from roomkit.models.shown import shown
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Notice, Person, surface_name

__all__ = ["A2APush"]

_RETRIED = {408, 425, 429}
_ASKING = TaskState.TASK_STATE_INPUT_REQUIRED
_WAITING = {TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, _ASKING}
_ENDED = {TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED}


class A2APush:
    """A notification surface that pushes A2A task updates.

    Args:
        tasks: the SDK's task store the request handler uses (its tasks name their context).
        configs: the SDK's push-notification config store the configs are kept in. Give
            the request handler :attr:`configs` instead, which refuses, as it is set, a config
            the push could not send.
        secret: the signing secret in its ``whsec_<base64>`` form.
        retry: when to try again; :class:`~roomkit.notify.retry.Retry`'s defaults otherwise.
        client: the HTTP client to POST with (one of its own by default).
        name: the surface's name in histories (at most 256 characters, as any surface's).
        timeout: seconds one POST of its own client may take; a POST that takes longer is
            tried again later under the same ``webhook-id``.
        push_url_validator: ``async (url) -> bool``, whether a URL's host may be pushed
            to (a caller sets the URLs: this is where one naming a loopback, private or
            cloud-metadata address is refused). The SDK's ``validate_push_notification_url``
            by default; ``None`` posts to any host (tests with a receiver on the loopback).
            It is asked as :attr:`configs` takes a config and again before each POST,
            whatever the host resolved to when the config was set.

    Raises:
        ValueError: the secret is not a ``whsec_`` secret, the timeout is not positive, or
            ``name`` is longer than a surface may be.
        TypeError: ``name`` is not a ``str``.
        InvalidTextError: ``name`` holds text UTF-8 cannot encode.
    """

    def __init__(
        self,
        tasks: TaskStore,
        configs: PushNotificationConfigStore,
        *,
        secret: str,
        retry: Retry | None = None,
        client: httpx.AsyncClient | None = None,
        name: str = "a2a-push",
        timeout: float = 10.0,
        push_url_validator: Callable[[str], Awaitable[bool]] | None = (
            validate_push_notification_url
        ),
    ) -> None:
        self.name = surface_name(name, what="A2APush(name=...)", example="a2a-push")
        if not isinstance(secret, str) or not secret.startswith("whsec_"):
            raise ValueError("A2APush(secret=...) takes a Standard Webhooks 'whsec_...' secret")
        if not timeout > 0:
            raise ValueError(f"A2APush(timeout=...) takes seconds above 0, got {shown(timeout)}")
        self.tasks = tasks
        self.configs: PushNotificationConfigStore = CheckedConfigs(configs, push_url_validator)
        """``configs``, refusing a config the push could not send (JSON-RPC ``InvalidParams``
        naming what is wrong, nothing stored): the store to give the SDK's request handler."""
        self.retry = retry if retry is not None else Retry()
        self._signer = Signer(secret)
        self._client = client if client is not None else httpx.AsyncClient(timeout=timeout)
        self._owns_client = client is None
        self._url_ok = push_url_validator

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """It tells the tasks, not a person: each notice once."""
        return recipient is None

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Push the notice to every waiting task of the request's context.

        Raises:
            DeliveryError: a receiver failed (``retry`` when sending again may succeed).
        """
        if notice.type not in ("question_pending", "question_settled"):
            return None
        request = notice.request
        if request.actor_id is None:
            return None  # no A2A caller asked it: no task of theirs waits on it
        # The SDK keeps each caller's tasks apart: they are listed as their owner's.
        owner = ServerCallContext(user=_Owner(request.actor_id))
        listed = await self._context_tasks(request.room_id, owner)
        ends = _ending(notice)
        sent = 0
        failed: list[DeliveryError] = []
        for task in listed:
            named = request.pending_id in asked(task)
            if task.status.state in _ENDED and ends is not None and named:
                # Ended by an earlier attempt of this delivery, whose POST failed: the end
                # the task store holds is posted again.
                update = _status_update(task, task.status)
            elif task.status.state not in _WAITING:
                continue
            elif ends is not None and named and task.status.state == _ASKING:
                update = await self._end(task, ends, owner, request)
            else:
                update = _update(notice, task.id)
            for config in await self.configs.get_info_for_dispatch(task.id):
                # One URL failing keeps none of the others from their push.
                try:
                    await self._post(notice, update, config)
                except DeliveryError as error:
                    failed.append(error)
                else:
                    sent += 1
        if failed:
            # Sent again, the pushes that went through carry the same ``webhook-id``.
            retry = any(error.retry for error in failed)
            raise DeliveryError("; ".join(str(error) for error in failed), retry=retry)
        return {"pushed": sent}

    async def _context_tasks(self, context_id: str, owner: ServerCallContext) -> list[Task]:
        """Every task of the context, all pages read before any is changed: a task saved
        while the pages are read moves to the first page and could be skipped."""
        tasks: list[Task] = []
        token = ""
        while True:
            page = await self.tasks.list(
                ListTasksRequest(context_id=context_id, page_token=token), owner
            )
            tasks += page.tasks
            token = page.next_page_token
            if not token:
                return tasks

    async def _end(
        self,
        task: Task,
        ends: tuple[TaskState, str],
        owner: ServerCallContext,
        request: PendingInput,
    ) -> StreamResponse:
        """End ``task`` as ``request`` ended (timed out: ``failed``; withdrawn:
        ``canceled``), in the task store too: the task does not wait for a follow-up. The
        end names the request, so that a retry of the push finds the task it ended."""
        state, said = ends
        data = {"pending_id": request.pending_id, "kind": str(request_kind(request))}
        parts = [new_text_part(said), new_data_part(data)]
        message = new_message(parts, task.context_id, task.id, role=Role.ROLE_AGENT)
        status = TaskStatus(state=state, message=message, timestamp=_now())
        task.status.CopyFrom(status)
        await self.tasks.save(task, owner)
        return _status_update(task, status)

    async def _post(self, notice: Notice, update: StreamResponse, config: Any) -> None:
        # The rule the config was set under: one stored around the handler is refused here.
        problem = await config_problem(config, self._url_ok)
        if problem is not None:
            raise DeliveryError(
                f"A2A push config of task {config.task_id} refused: {problem}", retry=False
            )
        data = json.dumps(MessageToDict(update), separators=(",", ":"))
        now = datetime.now(UTC)
        # One delivery of one notice to one URL: the same id on every retry.
        delivery_id = f"{notice.delivery_id}.{config.id or 'push'}"
        headers = {
            "content-type": "application/json",
            "webhook-id": delivery_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": self._signer.sign(delivery_id, now, data),
        }
        if config.token:
            headers["X-A2A-Notification-Token"] = config.token
        auth = config.authentication
        if config.HasField("authentication") and auth.scheme and auth.credentials:
            headers["Authorization"] = f"{auth.scheme} {auth.credentials}"
        try:
            response = await self._client.post(config.url, content=data, headers=headers)
        except httpx.HTTPError as error:
            raise DeliveryError(f"A2A push to {config.url} failed: {error}", retry=True) from None
        status = response.status_code
        if status >= 300:
            retry = status >= 500 or status in _RETRIED
            raise DeliveryError(f"A2A push to {config.url} answered {status}", retry=retry)

    async def aclose(self) -> None:
        """Close the HTTP client it made."""
        if self._owns_client:
            await self._client.aclose()


class _Owner(User):
    """The caller who asked a request, as the SDK's task store knows its owners."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def _ending(notice: Notice) -> tuple[TaskState, str] | None:
    """How a task the settled request asked ends, or ``None`` when it goes on."""
    if notice.type != "question_settled":
        return None
    waited = None
    if notice.deadline_at is not None:
        waited = (notice.deadline_at - notice.request.created_at).total_seconds()
    return ending(notice.request, waited)


def _now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


def _status_update(task: Task, status: TaskStatus) -> StreamResponse:
    event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=status)
    return StreamResponse(status_update=event)


def _update(notice: Notice, task_id: str) -> StreamResponse:
    request = notice.request
    data: dict[str, Any] = {"pending_id": request.pending_id, "kind": str(request_kind(request))}
    if notice.type == "question_pending":
        state = TaskState.TASK_STATE_INPUT_REQUIRED
        question = request.arguments.get("question") or request.arguments.get("action")
        text = question if isinstance(question, str) else request.tool_name
        if notice.deadline_at is not None:
            data["expires_at"] = notice.deadline_at.isoformat().replace("+00:00", "Z")
    else:
        state = TaskState.TASK_STATE_WORKING
        by = f" by {notice.answered_by}" if notice.answered_by else ""
        via = f" on {notice.answered_via}" if notice.answered_via else ""
        text = f"Request {request.pending_id} {notice.outcome}{by}{via}"
        data.update(outcome=notice.outcome, answered_by=notice.answered_by)
    message = new_message([new_text_part(text), new_data_part(data)], request.room_id, task_id)
    event = TaskStatusUpdateEvent(
        task_id=task_id, context_id=request.room_id, status=TaskStatus(state=state, message=message)
    )
    return StreamResponse(status_update=event)

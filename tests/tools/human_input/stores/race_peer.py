"""A process of its own on a durable store, for the tests that race two or kill one.

    python -m tests.tools.human_input.stores.race_peer KIND LOCATION PREFIX PLAN

opens the store (as :data:`~tests.tools.human_input.stores.store_kit.OPEN_ELSEWHERE` does),
prints ``ready``, waits for a line on stdin, carries out PLAN (JSON, below) and prints what
came of it as one JSON line. A plan whose ``then`` is ``"die"`` sends its own process SIGKILL
at once after its step, before anything else runs: the store sees a process killed there.

Plans (``op``):

- ``settle``: ``aresolve`` every ``[id, answer, by]`` of ``calls`` at once (``areject``
  with the answer as the reason, for a call ``[id, reason, by, "reject"]``); the results.
- ``approval``: ``create_approval(tool, arguments, approvers=..., quorum=..., actor_id=...,
  key=...)``; the request's id and status, or the kind of error that refused a write.
- ``create``: ``create(tool, arguments, key=..., actor_id=...)``; the request's id.
- ``decided``: ``create_decided(tool, arguments, approve() or reject(reason), by=...,
  surface="policy", key=...)``, its history the policy's ``policy_decided`` entry (a call
  a policy settles without anyone); the request's id and status, or the kind of error that
  refused a write.
- ``grant``: ``approve_and_grant(id, GrantScope.from_json(scope), by=...)``; the grant's id,
  or the kind of error that refused a write.
- ``use``: ``grants.use(grant_id)`` ``times`` times at once; how many counted.
- ``record``: ``record`` a ``shown`` entry by ``actor`` on every id of ``ids``, ``times``
  times each, all at once; their seqs.
- ``default``: ``record_default(handler, id, answer)`` on the timed-out request ``id``;
  ``null``, or the kind of error that refused a write.
- ``escalate``: ``add_approvers(id, actors, by=...)``; whether it took.
- ``notify``: a :class:`~roomkit.notify.Notifier` with a webhook to ``url`` signed with
  ``secret``, until SIGTERM; ``null``.
- ``approval`` or ``route`` with ``role`` and ``members``: as below, through a directory
  whose rotation role ``role`` has ``members``.
- ``route``: route the request ``id`` (``router.refresh``, as a desk reading it or a
  notifier's step does) with ``on_call``, a schedule name, naming ``person`` at every hour;
  who has each of its groups now, or the kind of error that refused the write.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import datetime
from typing import Any

from roomkit import HumanInputHandler
from roomkit.people import Directory, Person, Role


def _open(kind: str, where: str, prefix: str) -> Any:
    if kind == "sqlite":
        from roomkit.stores.sqlite import SQLiteStore

        return SQLiteStore(where, backstop_interval=0.02)
    if kind == "postgres":
        from roomkit.stores.postgres import PostgresStore

        return PostgresStore(where, schema=prefix, backstop_interval=0.05)
    from roomkit.stores.redis import RedisStore

    return RedisStore(where, prefix=prefix, backstop_interval=0.05)


async def _carry_out(handler: HumanInputHandler, plan: dict[str, Any], stop: asyncio.Event) -> Any:
    op = plan["op"]
    if op == "settle":
        return await asyncio.gather(*(_settle(handler, *call) for call in plan["calls"]))
    if op == "approval":
        try:
            request = await handler.create_approval(
                plan["tool"],
                plan["arguments"],
                approvers=plan["approvers"],
                quorum=plan.get("quorum"),
                actor_id=plan.get("actor_id"),
                key=plan.get("key"),
            )
        except Exception as error:  # the store's, or its driver's when a trigger refuses
            return {"refused": type(error).__name__}
        return [request.pending_id, request.status.value]
    if op == "create":
        request = await handler.create(
            plan["tool"], plan["arguments"], key=plan.get("key"), actor_id=plan.get("actor_id")
        )
        return request.pending_id
    if op == "decided":
        from roomkit.models.history import PolicyDecided
        from roomkit.tools.approvals import approve, reject
        from roomkit.tools.human_input import create_decided

        reason = plan.get("reason")
        try:
            request = await create_decided(
                handler,
                plan["tool"],
                plan["arguments"],
                approve() if reason is None else reject(reason),
                by=plan["by"],
                surface="policy",
                history=[
                    PolicyDecided(
                        actor=plan["by"],
                        decision="allow" if reason is None else "deny",
                        automatic=True,
                    )
                ],
                actor_id=plan.get("actor_id"),
                key=plan.get("key"),
            )
        except Exception as error:  # the store's, or its driver's when a trigger refuses
            return {"refused": type(error).__name__}
        return [request.pending_id, request.status.value]
    if op == "grant":
        from roomkit.policy.grants import GrantScope, approve_and_grant

        try:
            _, made = await approve_and_grant(
                handler, plan["id"], GrantScope.from_json(plan["scope"]), by=plan["by"]
            )
        except Exception as error:  # the store's, or its driver's when a trigger refuses
            return {"refused": type(error).__name__}
        return None if made is None else made.grant_id
    if op == "use":
        grants = handler.grants
        used = await asyncio.gather(*(grants.use(plan["grant_id"]) for _ in range(plan["times"])))
        return sum(grant is not None for grant in used)
    if op == "record":
        from roomkit.models.history import Shown

        entries = [
            handler.record(pending_id, Shown(actor=plan["actor"], surface="desk"))
            for pending_id in plan["ids"]
            for _ in range(plan["times"])
        ]
        return await asyncio.gather(*entries)
    if op == "default":
        from roomkit.tools.human_input.ladder import record_default

        try:
            await record_default(handler, plan["id"], plan["answer"])
        except Exception as error:  # the store's, when the file fails the write
            return {"refused": type(error).__name__}
        return None
    if op == "escalate":
        return await handler.add_approvers(plan["id"], plan["actors"], by=plan["by"])
    if op == "route":
        request = await handler.get_request(plan["id"])
        assert request is not None
        assert handler.router is not None
        try:
            return await handler.router.refresh(request)
        except Exception as error:  # the store's, or its driver's when a trigger refuses
            return {"refused": type(error).__name__}
    if op == "notify":
        from roomkit.notify import Notifier, Retry, Webhook

        webhook = Webhook(plan["url"], plan["secret"], retry=Retry(first=0.05, cap=0.2))
        async with Notifier(handler, [webhook], lease=30.0, poll=0.1):
            await stop.wait()
        return None
    raise ValueError(f"unknown op {op!r}")


async def _settle(
    handler: HumanInputHandler, pending_id: str, answer: str, by: str, how: str = "resolve"
) -> bool:
    if how == "reject":
        return await handler.areject(pending_id, answer, by=by)
    return await handler.aresolve(pending_id, answer, by=by)


class _OnCall:
    """An on-call schedule naming the same person at every hour."""

    def __init__(self, person: str) -> None:
        self.person = person

    async def on_call_at(self, at: datetime) -> str | None:
        return self.person


def _directory(plan: dict[str, Any]) -> Directory | None:
    """The directory a ``route`` plan (or an ``approval`` plan naming a ``role``) routes
    through."""
    if "role" in plan:
        return Directory(roles={plan["role"]: Role(members=plan["members"], rule="rotation")})
    if "on_call" not in plan:
        return None
    person = plan["person"]
    return Directory(
        {person: Person(email=f"{person}@example.com")},
        on_call={plan["on_call"]: _OnCall(person)},
    )


async def main(kind: str, where: str, prefix: str, plan_text: str) -> None:
    plan = json.loads(plan_text)
    stop = asyncio.Event()
    if plan["op"] == "notify":
        # The test may send SIGTERM as soon as another peer has delivered everything, even
        # before this one has read its "go": the notifier stops whenever it comes.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with _open(kind, where, prefix) as store:
        handler = HumanInputHandler(store=store, directory=_directory(plan))
        print("ready", flush=True)
        sys.stdin.readline()
        done = await _carry_out(handler, plan, stop)
        print(json.dumps(done), flush=True)
        if plan.get("then") == "die":
            os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

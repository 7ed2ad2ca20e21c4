"""A process killed while it assigns a request to a rotation's member: the member it picked
still has the next turn, on every durable store.

The process makes a request of the rotation role, or hands one on from a member who left
the role, and is killed while the write carrying the assignment is on its way (on Redis and
PostgreSQL a relay holds the write's bytes until the kill; SQLite has no wire to hold them
on, so the file refuses the write and the process kills itself then). The member never got
the request: the next request goes to them.
"""

from __future__ import annotations

import pytest
from tests.tools.human_input.stores.store_kit import Backend
from tests.tools.human_input.stores.test_reassignment_kills import killed_as_it_writes

from roomkit import HumanInputHandler
from roomkit.people import Directory, Role, role

pytestmark = pytest.mark.timeout(120)

ROLE = "payments"
MEMBERS = ["ann", "bob"]
PLAN = {
    "op": "approval",
    "tool": "pay",
    "arguments": {"amount": 5},
    "approvers": [role(ROLE)],
    "role": ROLE,
    "members": MEMBERS,
}
REFUSE_ASSIGNMENTS = (
    "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_history "
    "WHEN NEW.entry LIKE '%escalated%' BEGIN SELECT RAISE(ABORT, 'refused'); END"
)


async def test_a_process_killed_as_it_assigns_a_rotation_skips_no_member(
    backend: Backend,
) -> None:
    await killed_as_it_writes(backend, PLAN, REFUSE_ASSIGNMENTS, b"escalated")
    async with backend.make() as store:
        directory = Directory(roles={ROLE: Role(members=MEMBERS, rule="rotation")})
        handler = HumanInputHandler(store=store, directory=directory)
        assert handler.router is not None
        assert await store.list_pending() == [], "the killed process stored no request"
        request = await handler.create_approval("pay", {"amount": 5}, approvers=[role(ROLE)])
        assert await handler.router.assigned(request) == {role(ROLE): "ann"}
        after = await handler.create_approval("pay", {"amount": 6}, approvers=[role(ROLE)])
        assert await handler.router.assigned(after) == {role(ROLE): "bob"}


async def test_a_process_killed_as_it_hands_a_rotation_on_skips_no_member(
    backend: Backend,
) -> None:
    directory = Directory(roles={ROLE: Role(members=MEMBERS, rule="rotation")})
    async with backend.make() as store:
        handler = HumanInputHandler(store=store, directory=directory)
        assert handler.router is not None
        made = await handler.create_approval("pay", {"amount": 5}, approvers=[role(ROLE)])
        assert await handler.router.assigned(made) == {role(ROLE): "ann"}
    # A process whose role has lost ann hands the request on to bob, and is killed.
    plan = {"op": "route", "id": made.pending_id, "role": ROLE, "members": ["bob"]}
    await killed_as_it_writes(backend, plan, REFUSE_ASSIGNMENTS, b"member left")
    async with backend.make() as store:
        handler = HumanInputHandler(store=store, directory=directory)
        assert handler.router is not None
        assert await handler.router.assigned(made) == {role(ROLE): "ann"}
        after = await handler.create_approval("pay", {"amount": 6}, approvers=[role(ROLE)])
        assert await handler.router.assigned(after) == {role(ROLE): "bob"}

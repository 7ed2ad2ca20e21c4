"""Single use and revocation through the store's ledger: every desk on one SQLite file or one
redis-server, and a desk restarted on it, refuses a spent link and a revoked token alike."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from desk_harness import SECRET, World, bearer, next_frame, serve, socket_for, token, ws_url
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from roomkit.auth.gate import Use
from roomkit.auth.ledger import LINK_USED, REVOKED
from roomkit.cli import main
from roomkit.desk import issue_answer_link, issue_sign_in_link
from roomkit.desk.stores import open_stores
from roomkit.notify.links import AnswerLinks
from roomkit.tools.human_input import HumanInputHandler

SCHEMA = {"type": "integer", "minimum": 1}


class Place:
    """One store URL, as ``roomkit desk --store`` and ``roomkit revoke --store`` take it."""

    def __init__(self, url: str, data_dir: Path) -> None:
        self.url = url
        self.data_dir = data_dir
        self.opened: list[Any] = []

    def handler(self) -> HumanInputHandler:
        """A handler on a store of its own: what one more process would have."""
        store, _ = open_stores(self.url)
        self.opened.append(store)
        return HumanInputHandler(store=store)

    def desk(self) -> World:
        """A desk with a handler of its own on the store."""
        return World(handler=self.handler())

    async def restart(self, desk: World) -> World:
        """Stop every desk (their stores closed) and start a new one on the same store."""
        await desk.app.state.desk.aclose()
        for store in self.opened:
            await store.close()
        self.opened.clear()
        return self.desk()

    async def cli(self, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
        """Run ``roomkit`` on this store, with the desk's key in the data folder."""
        options = ["--store", self.url, "--data-dir", str(self.data_dir)]
        code = await asyncio.to_thread(main, [*argv, *options])
        out, err = capsys.readouterr()
        return code, out + err


@pytest.fixture(params=["sqlite", "redis"])
async def place(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Place]:
    data_dir = tmp_path / "desk-data"
    data_dir.mkdir(mode=0o700)
    (data_dir / "desk.key").write_text(SECRET)
    (data_dir / "desk.key").chmod(0o600)
    if request.param == "sqlite":
        made = Place(f"sqlite:///{tmp_path / 'desk.db'}", data_dir)
    else:
        made = Place(request.getfixturevalue("redis_database"), data_dir)
    yield made
    for store in made.opened:
        await store.close()


async def ask(place: Place, actor: str, **options: Any) -> str:
    """A question for ``actor``, asked by an agent on the store (a form, given a schema)."""
    tool, arguments = (
        ("Form", {"x": 1}) if "answer_schema" in options else ("Ask", {"question": "Go?"})
    )
    request = await place.handler().create(
        tool, arguments, room_id="room", actor_id=actor, **options
    )
    return request.pending_id


async def refused_socket(base: str, credential: str) -> int | None:
    """The close code the desk's WebSocket answers ``credential`` with."""
    async with connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "auth", "token": credential}))
        async with asyncio.timeout(10):
            try:
                await ws.recv()
            except Exception:
                return ws.close_code
        return None


async def test_a_link_spent_on_one_desk_is_spent_on_every_desk(place: Place) -> None:
    pending_id = await ask(place, "bob")
    first, second = place.desk(), place.desk()
    link = issue_answer_link(SECRET, pending_id, "bob", 600)
    async with first.client() as client:
        used = await client.post(
            f"/api/requests/{pending_id}/answer", json={"answer": "yes"}, headers=bearer(link)
        )
    async with second.client() as client:
        seen = await client.get(f"/api/requests/{pending_id}", headers=bearer(link))
        again = await client.post(
            f"/api/requests/{pending_id}/reject", json={}, headers=bearer(link)
        )
    async with serve(second.app) as base:
        code = await refused_socket(base, link)
    assert used.status_code == 200
    assert (seen.status_code, seen.json()["detail"]) == (401, "This answer link was already used")
    assert again.status_code == 401
    assert code == 1008


async def test_a_spent_link_stays_spent_after_the_desk_restarts(place: Place) -> None:
    pending_id = await ask(place, "bob")
    desk = place.desk()
    link = issue_answer_link(SECRET, pending_id, "bob", 600)
    async with desk.client() as client:
        used = await client.post(
            f"/api/requests/{pending_id}/reject", json={"reason": "no"}, headers=bearer(link)
        )
    desk = await place.restart(desk)
    async with desk.client() as client:
        seen = await client.get(f"/api/requests/{pending_id}", headers=bearer(link))
    async with serve(desk.app) as base:
        code = await refused_socket(base, link)
    assert used.status_code == 200
    assert seen.status_code == 401
    assert code == 1008


async def test_a_refused_answer_leaves_the_link_usable_on_another_desk(place: Place) -> None:
    pending_id = await ask(place, "bob", answer_schema=SCHEMA)
    first, second = place.desk(), place.desk()
    link = issue_answer_link(SECRET, pending_id, "bob", 600)
    url = f"/api/requests/{pending_id}/answer"
    async with first.client() as client:
        refused = await client.post(url, json={"answer": 0}, headers=bearer(link))
    async with second.client() as client:
        taken = await client.post(url, json={"answer": 2}, headers=bearer(link))
    assert refused.status_code == 422
    assert (taken.status_code, taken.json()["result"]) == (200, "2")


async def test_concurrent_answers_with_one_link_spend_it_once(place: Place) -> None:
    pending_id = await ask(place, "bob")
    desks = [place.desk(), place.desk()]
    link = issue_answer_link(SECRET, pending_id, "bob", 600)

    async def answer(desk: World) -> int:
        async with desk.client() as client:
            reply = await client.post(
                f"/api/requests/{pending_id}/answer", json={"answer": "y"}, headers=bearer(link)
            )
        return reply.status_code

    codes = await asyncio.gather(*(answer(desk) for desk in desks * 3))
    assert sorted(codes) == [200, 401, 401, 401, 401, 401]


async def test_a_revoked_token_is_refused_by_every_desk(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await ask(place, "carol")
    first, second = place.desk(), place.desk()
    revoked, kept = token("carol", ttl=3600), token("carol", ttl=3600)
    async with first.client() as client:
        before = await client.get("/api/me", headers=bearer(revoked))
    code, said = await place.cli(capsys, "revoke", revoked)
    async with second.client() as client:
        after = await client.get(f"/api/requests/{pending_id}", headers=bearer(revoked))
        other = await client.get(f"/api/requests/{pending_id}", headers=bearer(kept))
    async with first.client() as client:
        listed = await client.get("/api/requests", headers=bearer(revoked))
    async with serve(second.app) as base:
        closed = await refused_socket(base, revoked)
    assert before.status_code == 200
    assert (code, said.strip()) == (0, "Revoked the token of carol")
    assert (after.status_code, after.json()["detail"]) == (401, "This token was revoked")
    assert listed.status_code == 401
    assert other.status_code == 200
    assert closed == 1008


async def test_revoking_an_actor_refuses_every_token_it_had(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await ask(place, "dave")
    desk = place.desk()
    link = issue_answer_link(SECRET, pending_id, "dave", 600)
    from roomkit.auth.tokens import _sign

    from_before_issue_times = _sign(SECRET, {"sub": "dave", "adm": False})
    old_tokens = [token("dave", ttl=3600), token("dave", admin=True), link, from_before_issue_times]
    code, said = await place.cli(capsys, "revoke", "--actor", "dave")
    fresh = token("dave", ttl=3600)
    desk = await place.restart(desk)
    async with desk.client() as client:
        refused = [
            (await client.get("/api/me", headers=bearer(old))).status_code for old in old_tokens
        ]
        accepted = await client.get(f"/api/requests/{pending_id}", headers=bearer(fresh))
        bystander = await client.get("/api/me", headers=bearer("erin"))
    async with serve(desk.app) as base:
        closed = await refused_socket(base, old_tokens[0])
        async with socket_for(base, fresh) as (_, snapshot):
            pass
    assert code == 0
    assert said.startswith("Revoked every token of dave (issued until ")
    assert refused == [401, 401, 401, 401]
    assert accepted.status_code == 200
    assert bystander.status_code == 200
    assert closed == 1008
    assert [view["id"] for view in snapshot] == [pending_id]


async def test_revoking_an_answer_link_spends_it(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await ask(place, "bob")
    link = issue_answer_link(SECRET, pending_id, "bob", 600)
    code, said = await place.cli(capsys, "revoke", link)
    async with place.desk().client() as client:
        seen = await client.get(f"/api/requests/{pending_id}", headers=bearer(link))
    assert (code, said.strip()) == (0, "Revoked the answer link of bob")
    assert seen.status_code == 401


async def test_a_revoked_answer_link_no_longer_reads_its_request(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A spent link still shows its request's outcome on ``GET /api/link``; a revoked one,
    spent before or not, shows nothing more."""
    unused_id, spent_id = await ask(place, "bob"), await ask(place, "bob")
    unused = issue_answer_link(SECRET, unused_id, "bob", 600)
    spent = issue_answer_link(SECRET, spent_id, "bob", 600)
    desk = place.desk()
    async with desk.client() as client:
        answered = await client.post(
            f"/api/requests/{spent_id}/answer", json={"answer": "yes"}, headers=bearer(spent)
        )
        assert answered.status_code == 200, answered.text
        assert (await client.get("/api/link", headers=bearer(spent))).status_code == 200
        for link in (unused, spent):
            assert (await place.cli(capsys, "revoke", link))[0] == 0
        seen = [await client.get("/api/link", headers=bearer(link)) for link in (unused, spent)]
    assert [(r.status_code, r.json().get("detail")) for r in seen] == [
        (401, "This token was revoked"),
        (401, "This token was revoked"),
    ]


async def test_revoking_a_sign_in_link_spends_it(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sign-in link is refused by its link entry: ``roomkit revoke`` records that one."""
    link = issue_sign_in_link(SECRET, "admin", admin=True)
    desk = place.desk()
    await desk.handler.list_pending()  # the desk that printed the link read its store
    code, said = await place.cli(capsys, "revoke", link)
    async with desk.client() as client:
        traded = await client.post("/api/sign-in", headers=bearer(link))
    assert (code, said.strip()) == (0, "Revoked the sign-in link of admin")
    assert (traded.status_code, traded.json()["detail"]) == (
        401,
        "This sign-in link was already used: ask for a fresh one",
    )


async def test_revoking_a_link_as_it_was_sent_revokes_its_token(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """``roomkit revoke`` takes a link whole, as a notice or ``roomkit desk`` shows it
    (``<desk>/#token=...``), and revokes the token in its fragment."""
    pending_id = await ask(place, "bob")
    answer_url = AnswerLinks("https://desk.example", SECRET).url(pending_id, "bob", 600)
    sign_in = issue_sign_in_link(SECRET, "admin", admin=True)
    desk = place.desk()
    await desk.handler.list_pending()  # the desk that printed the link read its store
    answer_code, answer_said = await place.cli(capsys, "revoke", answer_url)
    sign_in_code, sign_in_said = await place.cli(
        capsys, "revoke", f"http://127.0.0.1:8765/#token={sign_in}"
    )
    answer = bearer(answer_url.partition("#token=")[2])
    async with desk.client() as client:
        seen = await client.get("/api/link", headers=answer)
        traded = await client.post("/api/sign-in", headers=bearer(sign_in))
    assert (answer_code, answer_said.strip()) == (0, "Revoked the answer link of bob")
    assert (sign_in_code, sign_in_said.strip()) == (0, "Revoked the sign-in link of admin")
    assert (seen.status_code, seen.json()["detail"]) == (401, "This token was revoked")
    assert traded.status_code == 401


async def closed_with(ws: ClientConnection) -> tuple[int, str]:
    """The close code and reason that end ``ws``, once the frames before them are read."""

    async def read_to_the_end() -> None:
        while True:
            await ws.recv()

    async with asyncio.timeout(20):
        with pytest.raises(ConnectionClosed) as closed:
            await read_to_the_end()
    received = closed.value.rcvd
    assert received is not None, "the desk closed the socket without saying why"
    return received.code, received.reason


async def test_a_socket_on_a_link_closes_when_another_desk_spends_the_link(place: Place) -> None:
    """The socket's desk learns of the settle through the store's change notification."""
    pending_id = await ask(place, "bob")
    watching, answering = place.desk(), place.desk()
    link = issue_answer_link(SECRET, pending_id, "bob", 600)
    async with serve(watching.app) as base, socket_for(base, link) as (ws, snapshot):
        async with answering.client() as client:
            used = await client.post(
                f"/api/requests/{pending_id}/answer", json={"answer": "yes"}, headers=bearer(link)
            )
        async with asyncio.timeout(20):
            settled = await next_frame(ws, "question_settled")
        code, reason = await closed_with(ws)
    assert [view["id"] for view in snapshot] == [pending_id]
    assert used.status_code == 200
    assert settled["request"]["id"] == pending_id
    assert (code, reason) == (1008, "This answer link was already used")


async def test_a_link_socket_sees_the_outcome_when_a_re_read_falls_between_spend_and_settle(
    place: Place,
) -> None:
    """A link is spent just before its answer settles the request: a re-read of the ledger in
    between leaves the socket open, so its person sees the outcome before the close."""
    pending_id = await ask(place, "bob")
    watching = place.desk()
    hub = watching.app.state.desk.hub
    hub.recheck = 3600
    ledger = hub.gate.ledger
    looked = asyncio.Event()
    read_refusals = ledger.refusals

    async def counted(principals: Any) -> list[str | None]:
        refusals = await read_refusals(principals)
        if any(refusals):
            looked.set()
        return refusals

    link = issue_answer_link(SECRET, pending_id, "bob", 600)
    async with serve(watching.app) as base, socket_for(base, link) as (ws, _):
        ledger.refusals = counted
        assert await ledger.spend(await hub.gate.admit(link, Use.ANSWER_LINK))
        # Another question's deadline makes the hub look again while the answer is on its
        # way: the ledger says spent, the request is still open.
        await ask(place, "carol", timeout=0.2)
        async with asyncio.timeout(20):
            await looked.wait()
        await place.handler().aresolve(pending_id, "yes")
        async with asyncio.timeout(20):
            settled = await next_frame(ws, "question_settled")
        code, reason = await closed_with(ws)
    assert settled["request"]["id"] == pending_id
    assert (code, reason) == (1008, "This answer link was already used")


async def test_a_socket_on_a_link_closes_when_the_link_is_revoked(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await ask(place, "bob")
    desk = place.desk()
    desk.app.state.desk.hub.recheck = 0.05
    link = issue_answer_link(SECRET, pending_id, "bob", 600)
    async with serve(desk.app) as base, socket_for(base, link) as (ws, _):
        code, _ = await place.cli(capsys, "revoke", link)
        closed = await closed_with(ws)
    assert code == 0
    # `roomkit revoke` records the link revoked, then spent: a recheck that falls between
    # the two writes reads the first, one after them both the spent link.
    assert closed in {(1008, REVOKED), (1008, LINK_USED)}


async def test_a_revoked_actors_sockets_close_and_others_stay(
    place: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing is open: the hub still re-reads the ledger while clients are connected."""
    desk = place.desk()
    desk.app.state.desk.hub.recheck = 0.05
    async with (
        serve(desk.app) as base,
        socket_for(base, token("dave", ttl=3600)) as (dave, _),
        socket_for(base, token("erin", ttl=3600)) as (erin, _),
    ):
        code, _ = await place.cli(capsys, "revoke", "--actor", "dave")
        closed = await closed_with(dave)
        pending_id = await ask(place, "erin")
        async with asyncio.timeout(20):
            pushed = await next_frame(erin, "question_pending")
    assert code == 0
    assert closed == (1008, "This token was revoked")
    assert pushed["request"]["id"] == pending_id

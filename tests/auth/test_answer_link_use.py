"""An answer link reading its one request (``GET /api/link``): a use of the one gate.

The link reads its request spent or not, so that a page opened again shows how the request
ended; a revocation of its person still refuses it, and no other credential is taken.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.desk.desk_harness import SECRET, World, bearer

from roomkit.auth import (
    CredentialGate,
    LinkLedger,
    Refused,
    TokenAuthenticator,
    Use,
    issue_answer_link,
    issue_sign_in_link,
    issue_token,
)
from roomkit.auth.gate import ONLY_ANSWER_LINK
from roomkit.auth.ledger import LINK_USED, REVOKED, actor_entry
from roomkit.auth.tokens import (
    DATA_ENV,
    KEY_FILE,
    SECRET_ENV,
    load_or_create_secret,
    resolve_secret,
)
from roomkit.notify.links import AnswerLinks
from roomkit.tools.human_input import HumanInputHandler


def gate_of(handler: HumanInputHandler) -> CredentialGate:
    return CredentialGate(TokenAuthenticator(SECRET), LinkLedger(handler.ledger))


async def test_a_spent_link_reads_its_request_and_does_nothing_else() -> None:
    handler = HumanInputHandler()
    gate = gate_of(handler)
    link = issue_answer_link(SECRET, "req-1", "alice", 600)
    principal = await gate.admit(link, Use.ANSWER_LINK)
    assert await LinkLedger(handler.ledger).spend(principal)
    assert (await gate.admit(link, Use.ANSWER_LINK)).request_id == "req-1"
    with pytest.raises(Refused, match=LINK_USED):
        await gate.admit(link, Use.DESK)


async def test_a_spent_link_of_a_revoked_person_is_refused() -> None:
    handler = HumanInputHandler()
    gate = gate_of(handler)
    link = issue_answer_link(SECRET, "req-1", "alice", 600)
    assert await LinkLedger(handler.ledger).spend(await gate.admit(link, Use.ANSWER_LINK))
    await handler.ledger.record_spent(actor_entry("alice"), until=None)
    with pytest.raises(Refused, match=REVOKED) as refused:
        await gate.admit(link, Use.ANSWER_LINK)
    assert refused.value.status == 401


@pytest.mark.parametrize("admin", [False, True])
async def test_only_an_answer_link_is_taken(admin: bool) -> None:
    gate = gate_of(HumanInputHandler())
    for token in (
        issue_token(SECRET, "alice", admin=admin),
        issue_sign_in_link(SECRET, "alice", admin=admin),
    ):
        with pytest.raises(Refused) as refused:
            await gate.admit(token, Use.ANSWER_LINK)
        assert (str(refused.value), refused.value.status) == (ONLY_ANSWER_LINK, 401)


async def test_the_desk_shows_a_link_its_answered_request_and_who_answered_it() -> None:
    world = World()
    await world.room("room", "alice", "bob")
    mine, other = await world.ask(actor_id="alice"), await world.ask(actor_id="alice")
    link = bearer(issue_answer_link(SECRET, mine, "alice", 600))
    async with world.client() as client:
        before = await client.get("/api/link", headers=link)
        answered = await client.post(
            f"/api/requests/{mine}/answer", json={"answer": "blue"}, headers=link
        )
        after = await client.get("/api/link", headers=link)
        again = await client.post(
            f"/api/requests/{mine}/answer", json={"answer": "red"}, headers=link
        )
        stranger = await client.get(f"/api/requests/{other}", headers=link)
        person = await client.get("/api/link", headers=bearer("alice"))
    assert (before.status_code, before.json()["id"], before.json()["status"]) == (
        200,
        mine,
        "pending",
    )
    assert answered.status_code == 200
    assert after.status_code == 200
    assert (after.json()["id"], after.json()["result"], after.json()["settled_by"]) == (
        mine,
        "blue",
        "alice",
    )
    assert after.json()["status"] != "pending"
    assert again.status_code == 401
    assert stranger.status_code == 401
    assert (person.status_code, person.json()["detail"]) == (401, ONLY_ANSWER_LINK)


async def test_links_signed_in_code_use_the_data_folder_the_desk_command_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$ROOMKIT_DESK_DATA`` names the desk's folder for ``roomkit desk``: a notifier's links
    and a desk built in code, given no folder, sign and check with the key kept there."""
    monkeypatch.delenv(SECRET_ENV, raising=False)
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "desk-data"))
    url = AnswerLinks("https://desk.example").url("req-1", "alice", 600)
    key = load_or_create_secret(tmp_path / "desk-data")
    assert (tmp_path / "desk-data" / KEY_FILE).is_file()
    gate = CredentialGate(TokenAuthenticator(key), LinkLedger(HumanInputHandler().ledger))
    principal = await gate.admit(url.split("#token=", 1)[1], Use.ANSWER_LINK)
    assert (principal.request_id, principal.actor_id) == ("req-1", "alice")
    assert resolve_secret() == key

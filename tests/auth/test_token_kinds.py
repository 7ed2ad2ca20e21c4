"""Tokens name their kind; tokens signed before they did still read, as the same kind.

``legacy_tokens.json`` holds tokens signed by the code before the ``kind`` claim, with the
secret that signed them: an actor token (with and without an expiry), an administrator's,
an answer link, two sign-in links and an expired token.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.desk.desk_harness import serve

from roomkit import RoomKit
from roomkit.auth import (
    CredentialGate,
    CredentialKind,
    LinkLedger,
    Refused,
    TokenAuthenticator,
    Use,
    issue_answer_link,
    issue_sign_in_link,
    issue_token,
)
from roomkit.auth.tokens import _sign, token_claims
from roomkit.desk import create_desk_app
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

LEGACY = json.loads((Path(__file__).parent / "legacy_tokens.json").read_text())
SECRET: str = LEGACY["secret"]
TOKENS: dict[str, str] = LEGACY["tokens"]


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[0]
    decoded: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return decoded


def test_the_legacy_tokens_name_no_kind() -> None:
    assert all("kind" not in claims_of(token) for token in TOKENS.values())


def test_every_new_token_names_its_kind() -> None:
    kinds = {
        "actor": issue_token(SECRET, "alice"),
        "answer": issue_answer_link(SECRET, "req-1", "alice"),
        "sign-in": issue_sign_in_link(SECRET, "alice"),
    }
    assert {kind: claims_of(token)["kind"] for kind, token in kinds.items()} == {
        "actor": "actor",
        "answer": "answer",
        "sign-in": "sign-in",
    }
    # Beside it, the claims an older desk tells the kinds by.
    assert claims_of(kinds["sign-in"])["use"] == "sign-in"
    assert claims_of(kinds["answer"])["req"] == "req-1"


@pytest.mark.parametrize(
    ("name", "kind", "actor", "admin"),
    [
        ("actor", CredentialKind.ACTOR, "alice", False),
        ("actor_no_expiry", CredentialKind.ACTOR, "alice", False),
        ("admin", CredentialKind.ACTOR, "root", True),
        ("answer_link", CredentialKind.ANSWER_LINK, "bob", False),
        ("sign_in", CredentialKind.SIGN_IN_LINK, "carol", False),
        ("admin_sign_in", CredentialKind.SIGN_IN_LINK, "root", True),
    ],
)
async def test_a_legacy_token_reads_as_its_kind(
    name: str, kind: CredentialKind, actor: str, admin: bool
) -> None:
    principal = await TokenAuthenticator(SECRET).authenticate(TOKENS[name])
    assert (principal.kind, principal.actor_id, principal.admin) == (kind, actor, admin)
    if kind is CredentialKind.ANSWER_LINK:
        assert principal.request_id == "req-legacy"


async def test_a_legacy_expired_token_stays_expired() -> None:
    with pytest.raises(PermissionError, match="expired"):
        await TokenAuthenticator(SECRET).authenticate(TOKENS["expired_actor"])


USES = {
    # name: the uses it is good for
    "actor": {Use.DESK, Use.SESSION},
    "admin": {Use.DESK, Use.SESSION, Use.ADMIN},
    "answer_link": {Use.DESK, Use.ANSWER_LINK},
    "sign_in": {Use.SIGN_IN},
    "admin_sign_in": {Use.SIGN_IN},
    "expired_actor": set(),
}


@pytest.mark.parametrize("name", sorted(USES))
async def test_the_gate_takes_a_legacy_token_for_its_own_uses_only(name: str) -> None:
    gate = CredentialGate(TokenAuthenticator(SECRET), LinkLedger(HumanInputHandler().ledger))
    admitted: set[Use] = set()
    for use in Use:
        try:
            await gate.admit(TOKENS[name], use)
        except Refused:
            continue
        admitted.add(use)
    assert admitted == USES[name]


def test_a_kind_claim_that_disagrees_with_the_others_is_malformed() -> None:
    """A sign-in link cannot be passed off as a person's token by its ``kind`` claim."""
    forged = _sign(
        SECRET,
        {"sub": "root", "kind": "actor", "adm": True, "use": "sign-in", "exp": 4e9, "jti": "n"},
    )
    with pytest.raises(PermissionError, match="malformed token kind"):
        token_claims(SECRET, forged)
    unknown = _sign(SECRET, {"sub": "root", "kind": "superuser", "adm": True, "jti": "n"})
    with pytest.raises(PermissionError, match="malformed token kind"):
        token_claims(SECRET, unknown)


async def test_the_desk_and_mcp_take_legacy_tokens_as_before(tmp_path: Path) -> None:
    """A desk signed with the fixture's secret: a legacy sign-in link signs in, once, and
    opens nothing else; ``roomkit mcp --http`` takes a legacy person's token and refuses the
    legacy links."""
    pytest.importorskip("mcp")
    from roomkit.mcp import HumanInputMCPServer
    from roomkit.mcp.command import bearer_app

    # On a shared store: a memory desk takes only the sign-in links issued since it started.
    store = SQLiteStore(tmp_path / "desk.db")
    handler = HumanInputHandler(store=store)
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://desk.test"
    ) as desk:
        me = await desk.get("/api/me", headers=bearer(TOKENS["actor"]))
        link_me = await desk.get("/api/me", headers=bearer(TOKENS["admin_sign_in"]))
        signed_in = await desk.post("/api/sign-in", headers=bearer(TOKENS["admin_sign_in"]))
        again = await desk.post("/api/sign-in", headers=bearer(TOKENS["admin_sign_in"]))
    assert (me.status_code, me.json()["actor_id"]) == (200, "alice")
    assert link_me.status_code == 401
    assert "only signs in" in link_me.json()["detail"]
    assert (signed_in.status_code, signed_in.json()["admin"]) == (200, True)
    assert again.status_code == 401
    await store.close()

    mcp = bearer_app(HumanInputMCPServer(HumanInputHandler()), SECRET.encode())
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "legacy", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    async with serve(mcp, lifespan="on") as base, httpx.AsyncClient() as http:  # type: ignore[arg-type]
        statuses = {
            name: (
                await http.post(
                    f"{base}/mcp", json=initialize, headers={**bearer(TOKENS[name]), **accept}
                )
            ).status_code
            for name in ("actor", "admin", "answer_link", "sign_in", "admin_sign_in")
        }
    assert statuses == {
        "actor": 200,
        "admin": 200,
        "answer_link": 401,
        "sign_in": 401,
        "admin_sign_in": 401,
    }


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}

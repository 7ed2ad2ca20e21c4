"""An actor name is a bounded, printable identifier: checked where a token is issued (a
``ValueError``, ``roomkit token`` exits 2) and where one is read (401, never a 500), and in
the notifier's directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.desk.desk_harness import SECRET, World, serve, world_on
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit.auth import (
    MAX_ACTOR_CHARS,
    CredentialGate,
    LinkLedger,
    Principal,
    Refused,
    TokenAuthenticator,
    check_actor_name,
    issue_token,
)
from roomkit.auth.gate import INVALID
from roomkit.auth.tokens import _sign, issue_answer_link, issue_sign_in_link
from roomkit.cli import main
from roomkit.notify import Directory, Person
from roomkit.tools.human_input import HumanInputHandler

ODD = {
    "nul": "ali\x00ce",
    "newline": "ali\nce",
    "tab": "ali\tce",
    "surrogate": "ali\ud800ce",
    "separator": "ali\u2028ce",
    "bidi": "ali\u202ece",
    "long": "a" * 2500,
    "edge space": " alice",
    "empty": "",
}
"""Names that are no actor names."""
FINE = ["alice", "Zoë Müller", "bob@example.com", "U012AB3CD", "a" * MAX_ACTOR_CHARS]


@pytest.mark.parametrize("name", FINE)
def test_a_printable_name_within_bounds_is_an_actor_name(name: str) -> None:
    assert check_actor_name(name) == name


@pytest.mark.parametrize("name", ODD.values(), ids=ODD.keys())
def test_an_odd_name_is_refused_with_the_rule(name: str) -> None:
    with pytest.raises(ValueError, match="an actor name is 1 to 256 printable characters"):
        check_actor_name(name)


@pytest.mark.parametrize("name", ODD.values(), ids=ODD.keys())
def test_no_token_is_issued_for_an_odd_name(name: str) -> None:
    issuers = [
        lambda: issue_token(SECRET, name),
        lambda: issue_answer_link(SECRET, "req-1", name),
        lambda: issue_sign_in_link(SECRET, name, admin=True),
    ]
    for issue in issuers:
        with pytest.raises(ValueError, match="actor_id"):
            issue()


@pytest.mark.parametrize("name", ODD.values(), ids=ODD.keys())
def test_roomkit_token_exits_2_for_an_odd_name(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", name, "--data-dir", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("roomkit: ACTOR ")
    assert "printable characters" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "desk.key").exists(), "no key file for a command refused"


def test_roomkit_revoke_exits_2_for_an_odd_actor(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["revoke", "--actor", "ali\nce", "--store", "sqlite:///unused.db"]) == 2
    assert "--actor holds the unprintable character U+000A" in capsys.readouterr().err


def signed(name: str) -> str:
    """A token this desk signed for ``name`` by hand, as an older desk (or a forger holding
    the secret) could."""
    return _sign(SECRET, {"sub": name, "adm": True, "iat": 1.0, "jti": "n1"})


@pytest.mark.parametrize("name", [n for k, n in ODD.items() if k != "empty"], ids=list(ODD)[:-1])
@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
async def test_the_desk_answers_an_odd_names_token_with_401(
    name: str, kind: str, tmp_path: Path, redis_server: RedisServer
) -> None:
    """``/api/me`` and an answer: 401 saying the token is not valid, never a 500."""
    async with world_on(kind, tmp_path, str(redis_server.url)) as world:
        pending_id = await world.ask(actor_id=None)
        headers = {"Authorization": f"Bearer {signed(name)}"}
        async with world.client() as client:
            me = await client.get("/api/me", headers=headers)
            answer = await client.post(
                f"/api/requests/{pending_id}/answer", json={"answer": "x"}, headers=headers
            )
    assert (me.status_code, answer.status_code) == (401, 401)
    assert me.json()["detail"] == INVALID


async def test_a_real_desk_keeps_its_connection_for_an_odd_name() -> None:
    """Over a real server too: a 401, and the connection stays usable."""
    import httpx

    world = World()
    async with serve(world.app) as base, httpx.AsyncClient(base_url=base) as client:
        replies = [
            await client.get("/api/me", headers={"Authorization": f"Bearer {signed(name)}"})
            for name in ODD.values()
            if name
        ]
        after = await client.get("/api/me", headers={"Authorization": f"Bearer {signed('ok')}"})
    assert {reply.status_code for reply in replies} == {401}
    assert after.status_code == 200


@pytest.mark.parametrize("name", ODD.values(), ids=ODD.keys())
def test_the_directory_takes_actor_names_only(name: str) -> None:
    with pytest.raises(ValueError, match="an actor name is 1 to 256 printable characters"):
        Directory({name: Person(email="a@example.com")})
    with pytest.raises(ValueError, match="manager"):
        Directory({"alice": Person(manager=name)})


class Returns:
    """An authenticator of the application's own that says every token speaks for ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def authenticate(self, token: str) -> Principal:
        return Principal(self.name)


@pytest.mark.parametrize("name", [n for k, n in ODD.items() if k != "empty"], ids=list(ODD)[:-1])
async def test_an_authenticators_odd_name_is_refused_with_401(name: str) -> None:
    world = World(auth=Returns(name))
    async with world.client() as client:
        me = await client.get("/api/me", headers={"Authorization": "Bearer anything"})
    assert me.status_code == 401
    assert me.json()["detail"].startswith("The token names an actor the desk cannot use: ")


async def test_the_gate_vouches_for_actor_names_only() -> None:
    """What a Slack click's person goes through, once Slack's signature and the directory
    named them."""
    gate = CredentialGate(TokenAuthenticator(SECRET), LinkLedger(HumanInputHandler().ledger))
    assert (await gate.vouch("alice")).actor_id == "alice"
    for name in ODD.values():
        with pytest.raises(Refused):
            await gate.vouch(name)

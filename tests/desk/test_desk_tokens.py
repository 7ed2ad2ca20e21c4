"""Desk tokens, answer links, the secret and its key file."""

from __future__ import annotations

import base64
import json
import secrets
import stat
from pathlib import Path

import pytest

from roomkit.auth.ledger import KEPT_PAST_EXPIRY
from roomkit.desk import (
    SECRET_ENV,
    Principal,
    TokenAuthenticator,
    issue_answer_link,
    issue_token,
    load_or_create_secret,
    resolve_secret,
)
from roomkit.desk.auth import LinkLedger
from roomkit.stores import MemoryLedger

SECRET = "tokens-test-secret-0123456789abcdef"
NOW = 1_900_000_000.0


def authenticator(now: float = NOW) -> TokenAuthenticator:
    return TokenAuthenticator(SECRET, clock=lambda: now)


async def test_an_actor_token_names_its_actor_and_role() -> None:
    alice = await authenticator().authenticate(issue_token(SECRET, "alice", now=NOW))
    root = await authenticator().authenticate(issue_token(SECRET, "root", admin=True, now=NOW))
    assert (alice.actor_id, alice.admin, root.actor_id, root.admin) == (
        "alice",
        False,
        "root",
        True,
    )
    assert alice.token_id
    assert root.token_id
    assert alice.token_id != root.token_id
    assert alice.issued_at == root.issued_at == NOW


async def test_a_token_is_compact_base64url_payload_and_signature() -> None:
    token = issue_token(SECRET, "alice", ttl=60, now=NOW)
    payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    nonce = claims.pop("jti")
    assert claims == {
        "sub": "alice",
        "kind": "actor",
        "adm": False,
        "iat": NOW,
        "exp": int(NOW + 60),
    }
    assert isinstance(nonce, str)
    assert len(nonce) >= 16
    assert "=" not in token
    assert len(base64.urlsafe_b64decode(signature + "=")) == 32


async def test_a_token_expires() -> None:
    token = issue_token(SECRET, "alice", ttl=60, now=NOW)
    assert (await authenticator(NOW + 59).authenticate(token)).expires_at == NOW + 60
    with pytest.raises(PermissionError, match="expired"):
        await authenticator(NOW + 60).authenticate(token)


async def test_an_answer_link_is_bound_to_one_request_and_actor() -> None:
    link = issue_answer_link(SECRET, "req-1", "bob", 300, now=NOW)
    principal = await authenticator().authenticate(link)
    assert (principal.actor_id, principal.admin, principal.request_id) == ("bob", False, "req-1")
    assert principal.link_id
    assert principal.expires_at == NOW + 300
    other = await authenticator().authenticate(
        issue_answer_link(SECRET, "req-1", "bob", 300, now=NOW)
    )
    assert other.link_id != principal.link_id


@pytest.mark.parametrize(
    "claims",
    [
        {"adm": True},
        {"sub": "", "adm": True},
        {"sub": 3},
        {"sub": "a", "adm": "yes"},
        {"sub": "a", "exp": "soon"},
        {"sub": "a", "req": "r", "jti": "n"},
        {"sub": "a", "req": "r", "exp": NOW + 9},
        {"sub": "a", "req": 5, "exp": NOW + 9, "jti": "n"},
        {"sub": "a", "use": "admin", "exp": NOW + 9, "jti": "n"},
        {"sub": "a", "use": "sign-in", "jti": "n"},
        {"sub": "a", "use": "sign-in", "exp": NOW + 9},
        {"sub": "a", "use": "sign-in", "req": "r", "exp": NOW + 9, "jti": "n"},
    ],
)
async def test_a_signed_token_with_bad_claims_is_refused(claims: dict) -> None:
    from roomkit.auth.tokens import _sign

    with pytest.raises(PermissionError):
        await authenticator().authenticate(_sign(SECRET, claims))


@pytest.mark.parametrize(
    "token",
    ["", "abc", "a.b.c", ".sig", "payload.", "é.é", "x" * 5000, "eyJzdWIiOiJhIn0.AAAA"],
)
async def test_a_malformed_token_is_refused(token: str) -> None:
    with pytest.raises(PermissionError):
        await authenticator().authenticate(token)


async def test_a_non_canonical_signature_spelling_is_refused() -> None:
    token = issue_token(SECRET, "alice")
    payload, signature = token.split(".")
    # The last character of a 32-byte signature carries 2 spare bits: flip one of them.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet[alphabet.index(signature[-1]) ^ 1]
    with pytest.raises(PermissionError):
        await authenticator().authenticate(f"{payload}.{signature[:-1]}{last}")


async def test_the_authenticator_error_never_quotes_the_token() -> None:
    token = issue_token("another-secret-0123456789abcdef", "alice")
    with pytest.raises(PermissionError) as refused:
        await authenticator().authenticate(token)
    assert token not in str(refused.value)
    assert token.split(".")[1] not in str(refused.value)


def test_a_short_secret_is_refused_with_advice() -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        TokenAuthenticator("short")


def test_the_key_file_is_created_private_and_reused(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    first = load_or_create_secret(folder)
    mode = stat.S_IMODE((folder / "desk.key").stat().st_mode)
    assert mode == 0o600
    assert load_or_create_secret(folder) == first
    assert len(first) >= 32


def test_a_process_making_the_key_while_another_does_reads_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second of two processes starting at once arrives while the first makes the key:
    each gets the one key that is kept, never an empty file."""
    folder = tmp_path / "data"
    make = secrets.token_urlsafe
    other: list[bytes] = []

    def arriving(nbytes: int) -> str:
        if not other:
            other.append(b"")
            other[0] = load_or_create_secret(folder)
        return make(nbytes)

    monkeypatch.setattr(secrets, "token_urlsafe", arriving)
    first = load_or_create_secret(folder)
    assert first == other[0] == (folder / "desk.key").read_bytes().strip()
    assert [path.name for path in folder.iterdir()] == ["desk.key"]


def test_the_environment_secret_wins_over_the_key_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, "env-secret-0123456789abcdef")
    assert resolve_secret(data_dir=tmp_path) == b"env-secret-0123456789abcdef"
    assert not (tmp_path / "desk.key").exists()
    monkeypatch.delenv(SECRET_ENV)
    assert resolve_secret(data_dir=tmp_path) == (tmp_path / "desk.key").read_bytes().strip()
    assert resolve_secret(SECRET, data_dir=tmp_path) == SECRET.encode()


def test_an_empty_key_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "desk.key").write_text("\n")
    (tmp_path / "desk.key").chmod(0o600)
    with pytest.raises(ValueError, match="delete it"):
        load_or_create_secret(tmp_path)


async def test_the_ledger_spends_a_link_once_and_can_refund_it() -> None:
    ledger = LinkLedger(MemoryLedger(clock=lambda: NOW))
    link = Principal("bob", request_id="r", link_id="n1", expires_at=NOW + 60)
    assert await ledger.spend(link)
    assert not await ledger.spend(link)
    assert await ledger.refusal(link) == "This answer link was already used"
    await ledger.refund(link)
    assert await ledger.refusal(link) is None
    assert await ledger.spend(link)
    assert not await ledger.spend(Principal("bob"))


async def test_the_memory_ledger_forgets_entries_once_they_expire() -> None:
    """A spent link's entry is kept a day past the link's expiry, then forgotten."""
    now = [NOW]
    memory = MemoryLedger(clock=lambda: now[0])
    ledger = LinkLedger(memory)
    for index in range(1024):
        await ledger.spend(Principal("b", request_id="r", link_id=f"o{index}", expires_at=NOW + 1))
    now[0] = NOW + 2
    assert await memory.read_spent(["desk:link:o1"]) == {"desk:link:o1": NOW}
    now[0] = NOW + 2 + KEPT_PAST_EXPIRY
    await ledger.spend(Principal("b", request_id="r", link_id="new", expires_at=NOW + 60))
    assert len(memory) == 1
    assert await memory.read_spent(["desk:link:new", "desk:link:o1"]) == {"desk:link:new": now[0]}


def test_the_desk_exports_its_token_names_as_roomkit_auth_makes_them() -> None:
    """``roomkit.desk`` keeps exporting the token names it always has, as the same objects
    ``roomkit.auth.tokens`` holds."""
    import roomkit.auth.tokens
    import roomkit.desk

    names = {
        "SECRET_ENV",
        "issue_answer_link",
        "issue_sign_in_link",
        "issue_token",
        "load_or_create_secret",
        "resolve_secret",
    }
    assert names <= set(roomkit.desk.__all__)
    for name in names:
        assert getattr(roomkit.desk, name) is getattr(roomkit.auth.tokens, name)

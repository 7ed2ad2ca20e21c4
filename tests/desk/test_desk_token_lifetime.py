"""Tokens expire: a default lifetime, no way around it with odd numbers or repeated claims,
and ``roomkit token`` / ``roomkit revoke`` refusing what cannot work."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path

import pytest

from roomkit.cli import main
from roomkit.desk import TokenAuthenticator, issue_answer_link, issue_token
from roomkit.desk.tokens import DEFAULT_TOKEN_TTL

SECRET = "lifetime-test-secret-0123456789abcdef"
NOW = 1_900_000_000.0


def signed(payload: str) -> str:
    """A token whose payload is ``payload`` verbatim, signed with the tests' secret."""
    body = base64.urlsafe_b64encode(payload.encode()).rstrip(b"=").decode()
    digest = hmac.new(SECRET.encode(), body.encode(), hashlib.sha256).digest()
    return f"{body}.{base64.urlsafe_b64encode(digest).rstrip(b'=').decode()}"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)


async def test_an_actor_token_expires_after_thirty_days_by_default() -> None:
    token = issue_token(SECRET, "alice", now=NOW)
    day = 86_400
    alive = await TokenAuthenticator(SECRET, clock=lambda: NOW + 30 * day - 1).authenticate(token)
    assert alive.expires_at == NOW + DEFAULT_TOKEN_TTL == NOW + 30 * day
    with pytest.raises(PermissionError, match="expired"):
        await TokenAuthenticator(SECRET, clock=lambda: NOW + 30 * day).authenticate(token)


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), float("inf")])
def test_a_token_or_link_lifetime_must_be_positive_and_finite(ttl: float) -> None:
    with pytest.raises(ValueError, match="positive, finite"):
        issue_token(SECRET, "alice", ttl=ttl)
    with pytest.raises(ValueError, match="positive, finite"):
        issue_answer_link(SECRET, "req", "alice", ttl)


@pytest.mark.parametrize(
    "payload",
    [
        '{"sub":"a","adm":false,"exp":NaN}',
        '{"sub":"a","adm":false,"exp":Infinity}',
        '{"sub":"a","adm":false,"exp":-Infinity}',
        '{"sub":"a","adm":false,"exp":1e400}',
        '{"sub":"a","adm":false,"exp":1' + "0" * 400 + "}",
        '{"sub":"a","adm":false,"iat":NaN}',
        '{"sub":"a","adm":false,"exp":1,"exp":99999999999}',
        '{"sub":"a","adm":false,"sub":"root"}',
        '{"sub":"a","adm":false,"adm":true}',
        '{"sub":"a","req":"r","exp":1e400,"jti":"n"}',
        '{"sub":"a","adm":false,"jti":""}',
        '{"sub":"a","adm":false,"jti":7}',
    ],
)
async def test_non_finite_numbers_and_repeated_claims_are_refused(payload: str) -> None:
    with pytest.raises(PermissionError, match="malformed"):
        await TokenAuthenticator(SECRET, clock=lambda: NOW).authenticate(signed(payload))


async def test_a_strict_payload_still_reads() -> None:
    token = signed('{"sub":"a","adm":false,"exp":2000000000.5}')
    principal = await TokenAuthenticator(SECRET, clock=lambda: NOW).authenticate(token)
    assert principal.expires_at == 2_000_000_000.5


@pytest.mark.parametrize("ttl", ["0", "-5", "nan", "inf", "1e300", "315360001"])
def test_the_token_command_refuses_a_lifetime_that_never_ends(
    ttl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["token", "alice", "--ttl", ttl, "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "--ttl must be a positive number of seconds" in err
    assert err.count("\n") == 1


def test_the_token_command_takes_a_lifetime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", "alice", "--ttl", "60", "--data-dir", str(tmp_path)]) == 0
    token = capsys.readouterr().out.strip()
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert claims["exp"] - claims["iat"] == pytest.approx(60, abs=1)
    assert claims["jti"]


def test_the_revoke_command_says_what_it_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_DESK_SECRET", SECRET)
    store = ["--store", f"sqlite:///{tmp_path / 'desk.db'}"]
    cases = [
        (["revoke", *store], "Revoke one token (TOKEN) or every token of an actor"),
        (["revoke", "t.x", "--actor", "bob", *store], "Revoke one token (TOKEN) or every"),
        (["revoke", "--actor", "bob"], "A memory store lives inside the desk process"),
        (["revoke", "forged.token", *store], "Not a token of this desk"),
        (["revoke", signed('{"sub":"old","adm":false}'), *store], "--actor old"),
        (["revoke", "--actor", "bob", "--store", "mongodb://x"], "Unknown store URL"),
    ]
    for argv, words in cases:
        code = main(argv)
        err = capsys.readouterr().err
        assert code in (1, 2), argv
        assert words in err, argv
        assert err.count("\n") == 1, argv
        assert err.startswith("roomkit: "), argv


def test_revoking_an_actor_name_as_the_token_names_the_actor_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``roomkit revoke alice`` means alice's tokens: the error says to write ``--actor``."""
    monkeypatch.setenv("ROOMKIT_DESK_SECRET", SECRET)
    code = main(["revoke", "alice", "--store", f"sqlite:///{tmp_path / 'desk.db'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "alice is not a token" in err
    assert "`roomkit revoke --actor alice` with the same --store" in err


@pytest.mark.parametrize("what", [["--actor", "bob"], ["TOKEN"]])
def test_revoking_on_a_sqlite_file_that_does_not_exist_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    what: list[str],
) -> None:
    """A mistyped path would make an empty database no desk reads: the token would be left
    working while the command said it was revoked."""
    monkeypatch.setenv("ROOMKIT_DESK_SECRET", SECRET)
    argv = [issue_token(SECRET, "bob") if word == "TOKEN" else word for word in what]
    missing = tmp_path / "typo.db"
    code = main(["revoke", *argv, "--store", f"sqlite:///{missing}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("roomkit: ")
    assert err.count("\n") == 1
    assert "does not exist" in err
    assert not missing.exists()


def test_no_token_or_link_lasts_past_ten_years() -> None:
    """One that did would, in effect, never expire (and overflow Redis's expiry when
    revoked): an actor token lasting until revoked is ``ttl=None``."""
    from roomkit.auth.tokens import MAX_TTL, issue_answer_link, issue_token

    with pytest.raises(ValueError, match="at most 315360000 seconds"):
        issue_token(SECRET, "alice", ttl=1e300)
    with pytest.raises(ValueError, match="at most"):
        issue_answer_link(SECRET, "q1", "alice", ttl=MAX_TTL + 1)
    assert issue_token(SECRET, "alice", ttl=MAX_TTL)


def test_a_secret_too_short_is_named_as_set_not_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_DESK_SECRET", "short")
    code = main(["token", "alice", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("roomkit: Cannot use the desk secret: The desk secret must be at least")
    assert "No desk secret" not in err

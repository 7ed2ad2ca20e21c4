"""An audit key file that holds no usable key is named, with what to do about it: never a
pointer back to ``roomkit audit key``, which leaves an existing file as it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roomkit.cli import main

BROKEN = {
    "not-text": (b"\xd6\x00\xff" * 12, "holds bytes that are not text"),
    "too-short": (b"abc\n", "holds a key too short to sign with"),
    "blank": (b"\n \n", "holds no key"),
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    monkeypatch.chdir(tmp_path)


def key_file(folder: Path, content: bytes) -> Path:
    folder.mkdir()
    path = folder / "audit.key"
    path.write_bytes(content)
    path.chmod(0o600)
    return path


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert (out, err.count("\n")) == ("", 1), err
    return err


@pytest.mark.parametrize("kind", sorted(BROKEN))
@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "key"],
        ["audit", "key", "--rotate"],
        ["audit", "verify", "--store", "sqlite:///desk.db"],
    ],
    ids=["key", "rotate", "verify"],
)
def test_a_broken_key_file_is_named_with_what_to_do(
    kind: str, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each command exits 2, the status of a mistake to mend."""
    content, problem = BROKEN[kind]
    path = key_file(tmp_path / "data", content)
    (tmp_path / "desk.db").touch()
    assert main([*argv, "--data-dir", str(path.parent)]) == 2
    line = one_line(capsys)
    assert line.startswith(f"roomkit: The audit key file {path} {problem}")
    assert "move it away, then `roomkit audit key` creates a new one" in line
    assert path.read_bytes() == content, "the file was changed"


def test_a_key_file_that_is_a_folder_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "data" / "audit.key"
    path.mkdir(parents=True)
    assert main(["audit", "key", "--data-dir", str(path.parent)]) == 2
    assert one_line(capsys) == (
        f"roomkit: The audit key file {path} cannot be read (Is a directory): move it away and "
        "run `roomkit audit key` to create a new one\n"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_a_key_file_this_user_cannot_read_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = key_file(tmp_path / "data", b"k" * 43 + b"\n")
    path.chmod(0)
    assert main(["audit", "key", "--data-dir", str(path.parent)]) == 2
    assert "cannot be read (Permission denied): let this user read it" in one_line(capsys)


def test_a_short_key_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", "abc")
    (tmp_path / "desk.db").touch()
    assert main(["audit", "verify", "--store", "sqlite:///desk.db"]) == 2
    assert one_line(capsys).startswith(
        "roomkit: ROOMKIT_AUDIT_KEY holds a key too short to sign with (each is at least 16 "
        "bytes): set it to the audit keys"
    )


def test_the_key_command_says_when_the_environment_key_signs_instead(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``ROOMKIT_AUDIT_KEY`` set, every command signs with it: ``audit key`` still
    writes the file, and says the file's key does not sign while the variable is set."""
    from roomkit.stores import AuditKeys

    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", "an-environment-key-of-32-bytes!!")
    environment = AuditKeys.from_environment()
    assert environment is not None
    assert main(["audit", "key", "--data-dir", str(tmp_path / "data")]) == 0
    out, err = capsys.readouterr()
    written = AuditKeys.from_text((tmp_path / "data" / "audit.key").read_text())
    assert out == f"The audit key (id {written.kid}) is in {tmp_path / 'data' / 'audit.key'}\n"
    assert err == (
        f"roomkit: ROOMKIT_AUDIT_KEY is set, so roomkit signs with its key (id "
        f"{environment.kid}), not this file's: unset it for the file's key to sign\n"
    )

"""``[webpush]`` and ``[ntfy]`` in the notifier's TOML file."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.doc_pages import page_blocks

from roomkit.core.exceptions import NotifyConfigError
from roomkit.notify import Ntfy, WebPush
from roomkit.notify.config import load_notify_config
from roomkit.notify.push_subscriptions import load_or_create_vapid_key, vapid_public_key


def load(tmp_path: Path, text: str, **environ: str) -> list[object]:
    path = tmp_path / "notify.toml"
    path.write_text(text, encoding="utf-8")
    return list(load_notify_config(path, environ=environ).surfaces)


def test_both_tables_build_their_surfaces(tmp_path: Path) -> None:
    folder = tmp_path / "desk"
    webpush, ntfy = load(
        tmp_path,
        f"""
desk_url = "https://desk.example.com"

[webpush]
subject = "mailto:ops@example.com"
data_dir = "{folder}"

[ntfy]
server = "https://ntfy.example.com"
topic = "approvals-{{actor}}-k3v9q"
token_env = "NTFY_TOKEN"
clear = true
""",
        NTFY_TOKEN="tk_abc",
    )
    assert isinstance(webpush, WebPush)
    assert webpush.public_key == vapid_public_key(load_or_create_vapid_key(folder))
    assert isinstance(ntfy, Ntfy)
    assert ntfy.topic("alice") == "approvals-alice-k3v9q"
    assert ntfy.clear is True


def test_ntfy_takes_a_table_of_topics(tmp_path: Path) -> None:
    [ntfy] = load(
        tmp_path,
        '[ntfy]\nserver = "https://ntfy.sh"\n[ntfy.topics]\nalice = "alice-x1"\n',
    )
    assert isinstance(ntfy, Ntfy)
    assert (ntfy.topic("alice"), ntfy.topic("bob")) == ("alice-x1", None)


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        ("[webpush]\n", "[webpush] subject", "is missing"),
        ('[webpush]\nsubject = "ops@example.com"\n', "[webpush] subject", "mailto:"),
        (
            '[webpush]\nsubject = "mailto:o@example.com"\npush_hosts = "push.example.com"\n',
            "[webpush] push_hosts",
            "list",
        ),
        (
            '[webpush]\nsubject = "mailto:o@example.com"\npush_hosts = ["https://p.example"]\n',
            "[webpush] push_hosts",
            "host names",
        ),
        ('[ntfy]\nserver = "https://ntfy.sh"\n', "[ntfy] topic", "is missing"),
        ('[ntfy]\nserver = "https://ntfy.sh"\ntopic = "fixed"\n', "[ntfy] topic", "{actor}"),
        (
            '[ntfy]\nserver = "https://ntfy.sh"\ntopic = "approvals.{actor}.k3v9q"\n',
            "[ntfy] topic",
            "holds '.'",
        ),
        (
            '[ntfy]\nserver = "https://ntfy.sh"\ntopic = "a-{actor}"\n[ntfy.topics]\na = "b"\n',
            "[ntfy] topics",
            "not both",
        ),
        ('[ntfy]\nserver = "https://ntfy.sh"\ntopic = "a-{actor}"\nclear = 1\n', "clear", "true"),
        ('[ntfy]\nserver = "https://ntfy.sh"\ntopic = "a-{actor}"\ntoken_env = "T"\n', "T", "set"),
    ],
)
def test_a_mistake_is_one_line_naming_the_key(
    tmp_path: Path, text: str, where: str, says: str
) -> None:
    with pytest.raises(NotifyConfigError) as raised:
        load(tmp_path, text)
    message = str(raised.value)
    assert where in message
    assert says in message
    assert "\n" not in message


def test_the_phone_page_s_file_is_a_good_one(tmp_path: Path) -> None:
    [text] = page_blocks("docs/how-to/phone.md", "toml")
    folder = tmp_path / "desk"
    text = text.replace("/var/lib/roomkit/desk", str(folder))
    webpush, ntfy = load(tmp_path, text, NTFY_TOKEN="tk_abc")
    assert isinstance(webpush, WebPush)
    assert (folder / "push-vapid.pem").is_file()
    assert isinstance(ntfy, Ntfy)
    assert ntfy.topic("alice") == "approvals-alice-k3v9q"


def test_the_table_widens_the_push_services_and_follows_the_desk_s_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path / "desk"))
    [webpush] = load(
        tmp_path,
        '[webpush]\nsubject = "mailto:ops@example.com"\npush_hosts = ["push.example.com"]\n',
    )
    assert isinstance(webpush, WebPush)
    assert (tmp_path / "desk" / "push-vapid.pem").is_file()
    assert webpush.push_hosts.problem("https://push.example.com/p/1") is None
    assert webpush.push_hosts.problem("https://fcm.googleapis.com/fcm/send/1") is None
    assert webpush.push_hosts.problem("https://internal.example.com/p/1") is not None


def test_a_data_folder_the_key_cannot_be_in_is_named_as_the_key_at_fault(
    tmp_path: Path,
) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("not a folder")
    with pytest.raises(NotifyConfigError) as raised:
        load(tmp_path, f'[webpush]\nsubject = "mailto:ops@example.com"\ndata_dir = "{taken}"\n')
    assert raised.value.key == "[webpush] data_dir"
    assert "cannot be read or made" in str(raised.value)

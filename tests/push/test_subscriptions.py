"""Each person's push subscriptions and the VAPID key in the desk's data folder, shared by
processes."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest
from tests.push.push_service import Browser

from roomkit.notify.push_subscriptions import (
    MAX_PER_PERSON,
    SUBSCRIPTIONS_FILE,
    VAPID_FILE,
    PushSubscriptions,
    load_or_create_vapid_key,
    subscription_of,
)


def device(n: int) -> Browser:
    return Browser(f"https://push.example.net/p/{n}")


def test_writers_at_once_lose_nothing(tmp_path: Path) -> None:
    """Eight writers (each with its own view of the folder, as processes have) add at once."""
    people = [f"person{n}" for n in range(8)]
    start = threading.Barrier(len(people))

    def add(n: int) -> None:
        mine = PushSubscriptions(tmp_path)
        start.wait()
        for k in range(3):
            mine.add(people[n], subscription_of(device(n * 10 + k).subscription()))

    threads = [threading.Thread(target=add, args=(n,)) for n in range(len(people))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reader = PushSubscriptions(tmp_path)
    assert {p: len(reader.of(p)) for p in people} == dict.fromkeys(people, 3)
    assert stat.S_IMODE((tmp_path / SUBSCRIPTIONS_FILE).stat().st_mode) == 0o600


@pytest.mark.parametrize("first", ["vapid key", "subscription"])
def test_the_data_folder_they_make_is_for_its_user_alone(tmp_path: Path, first: str) -> None:
    """Whichever of the desk's files comes first makes the folder as the key file does: 0700."""
    folder = tmp_path / "desk"
    if first == "vapid key":
        load_or_create_vapid_key(folder)
    else:
        PushSubscriptions(folder).add("alice", subscription_of(device(1).subscription()))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_reader_sees_another_writer_s_change(tmp_path: Path) -> None:
    reader, writer = PushSubscriptions(tmp_path), PushSubscriptions(tmp_path)
    assert not reader.reaches("alice")
    writer.add("alice", subscription_of(device(1).subscription()))
    assert reader.reaches("alice")
    assert writer.remove(device(1).endpoint)
    assert not reader.reaches("alice")
    assert not writer.remove(device(1).endpoint)


def test_the_oldest_device_goes_past_the_limit(tmp_path: Path) -> None:
    kept = PushSubscriptions(tmp_path)
    for n in range(MAX_PER_PERSON + 2):
        kept.add("alice", subscription_of(device(n).subscription()))
    endpoints = [s.endpoint for s in kept.of("alice")]
    assert endpoints == [device(n).endpoint for n in range(2, MAX_PER_PERSON + 2)]


def test_an_unreadable_file_reaches_nobody_until_rewritten(tmp_path: Path) -> None:
    (tmp_path / SUBSCRIPTIONS_FILE).write_text("{not json")
    kept = PushSubscriptions(tmp_path)
    assert kept.of("alice") == []
    kept.add("alice", subscription_of(device(1).subscription()))
    assert [s.endpoint for s in PushSubscriptions(tmp_path).of("alice")] == [device(1).endpoint]


def test_an_unreadable_file_is_kept_aside_not_written_over(tmp_path: Path) -> None:
    """A hand edit that broke the file (a trailing comma) loses none of the devices it
    lists: the next write keeps it aside, for fixing and moving back."""
    kept = PushSubscriptions(tmp_path)
    kept.add("alice", subscription_of(device(1).subscription()))
    path = tmp_path / SUBSCRIPTIONS_FILE
    broken = path.read_text()[:-1] + ",}"
    path.write_text(broken)
    kept.add("dave", subscription_of(device(2).subscription()))
    (aside,) = tmp_path.glob(f"{SUBSCRIPTIONS_FILE}.unreadable-*")
    assert aside.read_text() == broken
    assert [s.endpoint for s in PushSubscriptions(tmp_path).of("dave")] == [device(2).endpoint]


def test_a_person_s_entry_of_another_shape_is_skipped_and_the_others_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    PushSubscriptions(tmp_path).add("alice", subscription_of(device(1).subscription()))
    path = tmp_path / SUBSCRIPTIONS_FILE
    path.write_text(path.read_text().replace('{"people":{', '{"people":{"bob":{"a":1},'))
    kept = PushSubscriptions(tmp_path)
    assert [s.endpoint for s in kept.of("alice")] == [device(1).endpoint]
    assert not kept.reaches("bob")
    assert "Skipping the push subscriptions of 'bob'" in caplog.text


@pytest.mark.parametrize("shape", ['{"people": [1]}', "[]", '{"people": "alice"}'])
def test_a_file_of_another_shape_is_unreadable_and_kept_aside(tmp_path: Path, shape: str) -> None:
    """JSON, but not the file's shape: it reaches nobody, and the next write keeps it aside."""
    (tmp_path / SUBSCRIPTIONS_FILE).write_text(shape)
    kept = PushSubscriptions(tmp_path)
    assert not kept.reaches("alice")
    kept.add("dave", subscription_of(device(2).subscription()))
    (aside,) = tmp_path.glob(f"{SUBSCRIPTIONS_FILE}.unreadable-*")
    assert aside.read_text() == shape
    assert [s.endpoint for s in PushSubscriptions(tmp_path).of("dave")] == [device(2).endpoint]


def load_at_once(folder: Path, callers: int) -> tuple[list[bytes], list[Exception]]:
    """The keys ``callers`` threads read, started at once on ``folder``, and their errors."""
    start = threading.Barrier(callers)
    keys: list[bytes] = []
    errors: list[Exception] = []

    def load() -> None:
        start.wait()
        try:
            keys.append(load_or_create_vapid_key(folder))
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=load) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return keys, errors


def test_callers_starting_at_once_on_a_fresh_folder_all_read_the_one_key(tmp_path: Path) -> None:
    """Eight callers at once, as a desk and its notifiers starting together: each reads the
    key one of them made, never its file before the key is in."""
    for round_ in range(30):
        folder = tmp_path / str(round_)
        keys, errors = load_at_once(folder, 8)
        assert errors == []
        assert len(keys) == 8
        assert len(set(keys)) == 1
        assert [p.name for p in folder.iterdir()] == [VAPID_FILE]

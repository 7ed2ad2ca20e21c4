import pytest

from roomkit.notify import Directory, Person


def test_a_directory_finds_people_by_actor_and_by_slack_user() -> None:
    directory = Directory(
        {"alice": Person(email="alice@example.com", slack_user="U1", manager="bob")}
    )
    assert directory.get("alice") == Person("alice@example.com", "U1", "bob")
    assert directory.get("carol") is None
    assert directory.actor_for_slack_user("U1") == "alice"
    assert directory.actor_for_slack_user("U2") is None
    assert "alice" in directory
    assert len(directory) == 1


@pytest.mark.parametrize(
    ("people", "error"),
    [({"": Person()}, ValueError), ({"alice": "alice@example.com"}, TypeError)],
)
def test_a_directory_refuses_entries_it_cannot_use(people: dict, error: type) -> None:
    with pytest.raises(error, match="Directory"):
        Directory(people)

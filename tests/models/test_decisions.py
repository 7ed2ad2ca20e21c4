"""Typed decisions: each is its own JSON text, reads back equal, and cannot change."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from roomkit import InvalidAnswerError
from roomkit.tools.approvals import (
    Approve,
    Decision,
    Edit,
    Reject,
    Respond,
    approve,
    edit,
    read_decision,
    reject,
    respond,
)


def test_the_builders_return_typed_decisions() -> None:
    assert type(approve()) is Approve
    assert type(edit({"to": "c"})) is Edit
    assert type(reject("no")) is Reject
    assert type(respond("done")) is Respond
    assert edit({"to": "c"}).arguments == {"to": "c"}
    assert reject("no").reason == "no"
    assert respond("done").message == "done"


@pytest.mark.parametrize(
    ("decision", "text"),
    [
        (Approve(), '{"decision":"approve"}'),
        (Edit(arguments={"to": "zoë"}), '{"decision":"edit","arguments":{"to":"zoë"}}'),
        (Reject(reason="too much"), '{"decision":"reject","reason":"too much"}'),
        (Reject(), '{"decision":"reject","reason":""}'),
        (Respond(message="paid"), '{"decision":"respond","result":"paid"}'),
    ],
)
def test_a_decision_is_its_wire_text_and_reads_back_typed(decision: Decision, text: str) -> None:
    assert decision == text
    assert decision.canonical == text
    assert type(decision.canonical) is str
    assert isinstance(decision, Decision)
    assert json.loads(decision) == decision.to_dict()
    back = read_decision(text)
    assert type(back) is type(decision)
    assert back == decision
    assert read_decision(decision) is decision
    assert pickle.loads(pickle.dumps(decision)) == decision
    assert type(copy.deepcopy(decision)) is type(decision)


def test_the_kind_names_the_decision_and_match_reads_its_fields() -> None:
    seen = []
    for decision in (Approve(), Edit({"a": 1}), Reject("r"), Respond("m")):
        match decision:
            case Edit(arguments=arguments):
                seen.append(("edit", arguments))
            case Reject(reason=reason):
                seen.append(("reject", reason))
            case Respond(message=message):
                seen.append(("respond", message))
            case Approve():
                seen.append(("approve", None))
        assert decision.kind == decision.to_dict()["decision"]
    assert seen == [("approve", None), ("edit", {"a": 1}), ("reject", "r"), ("respond", "m")]


def test_a_decision_cannot_change() -> None:
    arguments = {"a": 1}
    edited = Edit(arguments)
    arguments["a"] = 2
    edited.arguments["a"] = 3
    assert edited.arguments == {"a": 1}
    assert edited == '{"decision":"edit","arguments":{"a":1}}'
    with pytest.raises(AttributeError, match="cannot be changed"):
        Reject("no").reason = "yes"  # type: ignore[misc]


def test_decision_builds_the_one_of_its_kind() -> None:
    assert type(Decision("approve")) is Approve
    assert Decision("edit", {"a": 1}) == Edit({"a": 1})
    assert Decision("reject", text="why") == Reject("why")
    assert Decision("respond", text="r") == Respond("r")
    with pytest.raises(ValueError, match="approve, edit, reject or respond"):
        Decision("maybe")


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: Edit([1]), "full replacement arguments as a dict"),  # type: ignore[arg-type]
        (lambda: Edit({"a": object()}), "JSON-serialisable"),
        (lambda: Reject(3), "reason as a str"),  # type: ignore[arg-type]
        (lambda: Respond(None), "answer as a str"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_field_says_what_to_pass(make: object, error: str) -> None:
    with pytest.raises(TypeError, match=error):
        make()  # type: ignore[operator]


def test_json_text_that_is_no_decision_is_still_refused() -> None:
    with pytest.raises(InvalidAnswerError, match="an approval takes a decision"):
        read_decision("yes")


def _shared(doublings: int) -> list[object]:
    shared: list[object] = [1]
    for _ in range(doublings):
        shared = [shared, shared]
    return shared


def _nested(levels: int) -> dict[str, object]:
    value: object = 1
    for _ in range(levels - 1):
        value = [value]
    return {"tree": value}


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"tree": _shared(40)}, "the arguments are at least 224,"),
        ({"pages": ["x" * 100_000] * 1_000}, "the arguments are at least "),
        ({"note": "x" * 56_000}, "the arguments are 56,011 characters as JSON"),
        (_nested(3_000), "more than 24 levels deep (level 25 at 'tree[0][0]"),
        ({"n": 10**5_000}, "an integer 5,001 characters long at 'n'"),
        ({"n": [2, 10**100]}, "an integer 101 characters long at 'n[1]'"),
    ],
    ids=["shared 40 levels", "one text in many places", "long", "deep", "huge", "long number"],
)
def test_an_edit_is_refused_what_create_refuses_without_writing_it_out(
    arguments: dict[str, object], problem: str
) -> None:
    with pytest.raises(
        ValueError, match=r"^an edit's arguments must fit in a request, but "
    ) as caught:
        Edit(arguments)
    assert problem in str(caught.value)


def test_an_edit_that_holds_itself_says_where() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(TypeError, match=r"JSON-serialisable, but hold themselves at 'a\[0\]'"):
        Edit({"a": loop})


def test_an_edit_at_the_limits_is_taken() -> None:
    arguments = {"tree": _nested(24)["tree"], "n": 10**99, "shared": _shared(10)}
    assert Edit(arguments).arguments == json.loads(json.dumps(arguments))


def test_a_decision_text_past_the_limits_is_no_decision() -> None:
    text = json.dumps({"decision": "edit", "arguments": {"n": 10**150}})
    with pytest.raises(InvalidAnswerError, match="an integer 151 characters long at 'n'"):
        read_decision(text)

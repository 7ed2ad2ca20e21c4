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

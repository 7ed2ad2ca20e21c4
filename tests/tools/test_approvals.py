"""The approval rule, the decision builders and the reading of a decision."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from roomkit import Approval, HumanInputToolHandler, InvalidAnswerError, InvalidTextError, Quorum
from roomkit.models.json_limits import MAX_APPROVERS, MAX_ID_CHARS
from roomkit.models.pending_input import arguments_digest
from roomkit.tools.approvals import (
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


def test_the_builders_write_the_documented_json() -> None:
    assert json.loads(approve()) == {"decision": "approve"}
    assert json.loads(edit({"to": "c"})) == {"decision": "edit", "arguments": {"to": "c"}}
    assert json.loads(reject("no")) == {"decision": "reject", "reason": "no"}
    assert json.loads(respond("done")) == {"decision": "respond", "result": "done"}


@pytest.mark.parametrize(
    ("text", "decision"),
    [
        (approve(), Decision("approve")),
        ('{"decision": "edit", "arguments": {"a": 1}}', Decision("edit", {"a": 1})),
        (reject("why"), Decision("reject", text="why")),
        (respond("r"), Decision("respond", text="r")),
    ],
)
def test_a_decision_reads_back(text: str, decision: Decision) -> None:
    assert read_decision(text) == decision
    assert read_decision(decision.canonical) == decision


@pytest.mark.parametrize(
    "text",
    [
        "yes",
        "approve",
        "[]",
        '{"decision": 1}',
        '{"decision": "maybe"}',
        '{"decision": "approve", "arguments": {}}',
        '{"decision": "edit", "arguments": [1]}',
        '{"decision": "reject", "reason": 3}',
        '{"decision": "respond"}',
    ],
)
def test_anything_else_is_no_decision(text: str) -> None:
    with pytest.raises(InvalidAnswerError):
        read_decision(text)


def test_the_digest_is_the_documented_sha256() -> None:
    arguments = {"b": "é", "a": [1, 2]}
    text = json.dumps(
        {"tool": "t", "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert arguments_digest("t", arguments) == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"timeout": 0}, ValueError),
        ({"timeout": float("inf")}, ValueError),
        ({"timeout": 10**12}, ValueError),
        ({"on_expiry": "maybe"}, ValueError),
        ({"when": "always"}, TypeError),
        ({"approvers": [""]}, ValueError),
    ],
)
def test_a_rule_refuses_what_it_cannot_use(options: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        Approval(**options)


def test_a_quorum_names_its_approvers_and_its_count() -> None:
    rule = Approval(approvers=Quorum(2, of=["alice", "bob", "carol", "bob"]), veto=False)
    assert rule.approvers == ("alice", "bob", "carol")
    assert rule.quorum == Quorum(2, of=["alice", "bob", "carol"])
    assert (rule.quorum.n, rule.veto) == (2, False)
    assert Approval(approvers="alice").quorum is None
    assert Approval().veto is True


@pytest.mark.parametrize(
    ("n", "of", "error", "says"),
    [
        (3, ["alice", "bob"], ValueError, "from 1 to 2"),
        (0, ["alice"], ValueError, "from 1 to 1"),
        (True, ["alice"], TypeError, "count"),
        (1, "alice", TypeError, "not a string"),
        (1, ["alice", ""], ValueError, "non-empty"),
    ],
)
def test_a_quorum_refuses_a_count_it_cannot_reach(n: Any, of: Any, error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        Quorum(n, of=of)


def test_veto_is_true_or_false() -> None:
    with pytest.raises(TypeError, match="veto"):
        Approval(veto="no")  # type: ignore[arg-type]


def test_one_approver_may_be_named_alone() -> None:
    assert Approval(approvers="alice").approvers == ("alice",)
    assert Approval(approvers=["a", "b", "a"]).approvers == ("a", "b")


def test_approvals_take_a_set_of_names_or_a_dict() -> None:
    held = HumanInputToolHandler({"Ask"}, approvals={"send"})
    assert held.approvals == {"send": Approval()}
    rule = Approval(timeout=5)
    assert HumanInputToolHandler({"Ask"}, approvals={"send": rule}).approvals["send"] is rule


@pytest.mark.parametrize(
    ("approvals", "error"),
    [("send", TypeError), ({"Ask"}, ValueError), ({"send": True}, TypeError)],
)
def test_approvals_refuse_what_they_cannot_hold(approvals: Any, error: type) -> None:
    with pytest.raises(error):
        HumanInputToolHandler({"Ask"}, approvals=approvals)


def _names(count: int) -> list[str]:
    return [f"person-{i:03d}" for i in range(count)]


@pytest.mark.parametrize(
    ("build", "held"),
    [
        (lambda names: Approval(approvers=names), "Approval approvers"),
        (lambda names: Approval(approvers=Quorum(2, of=names)), "Quorum of="),
    ],
    ids=["approval", "quorum"],
)
def test_a_rule_naming_more_approvers_than_an_approval_lists_is_refused(
    build: Any, held: str
) -> None:
    """Refused where the rule is written, not at the first call it holds."""
    with pytest.raises(ValueError, match=rf"^{held} hold 101 actor ids, over the 100"):
        build(_names(MAX_APPROVERS + 1))
    build(_names(MAX_APPROVERS))  # at the bound: taken


@pytest.mark.parametrize(
    ("approver", "refused", "said"),
    [
        ("b" * (MAX_ID_CHARS + 1), ValueError, r"hold an actor id of 257 characters, over the 256"),
        ("b\udc80", InvalidTextError, r"a lone surrogate \(U\+DC80\) at character 1"),
    ],
    ids=["too-long", "lone-surrogate"],
)
@pytest.mark.parametrize(
    "build",
    [lambda names: Approval(approvers=names), lambda names: Quorum(1, of=names)],
    ids=["approval", "quorum"],
)
def test_a_rule_naming_an_approver_no_store_keeps_is_refused(
    build: Any, approver: str, refused: type[Exception], said: str
) -> None:
    with pytest.raises(refused, match=said):
        build(["alice", approver])


def test_a_set_of_approvers_is_sorted() -> None:
    """A set has no order of its own: sorted, the rule lists them alike in every process."""
    names = _names(40)
    assert Approval(approvers=set(names)).approvers == tuple(names)
    assert Approval(approvers=Quorum(2, of=frozenset(names))).approvers == tuple(names)
    assert Approval(approvers=reversed(names)).approvers == tuple(reversed(names))


@pytest.mark.parametrize(
    ("build", "said"),
    [
        (lambda: Reject("no \udc80"), r"^reason must be valid Unicode text, but holds a lone "),
        (lambda: reject("no \udc80"), r"^reason must be valid Unicode text, but holds a lone "),
        (lambda: Respond("no \udc80"), r"^message must be valid Unicode text, but holds a lone "),
        (lambda: respond("no \udc80"), r"^message must be valid Unicode text, but holds a lone "),
        (
            lambda: Edit({"to": ["bob", "no \udc80"]}),
            r"^an edit's arguments must be valid Unicode text, but hold a lone surrogate "
            r"\(U\+DC80\) at character 3 of 'to\[1\]'",
        ),
    ],
    ids=["Reject", "reject", "Respond", "respond", "Edit"],
)
def test_a_decision_holding_text_utf8_cannot_encode_is_refused_when_made(
    build: Any, said: str
) -> None:
    """Named by its field, where the approval would count characters of the decision's JSON
    (a ``ValueError``: the decisions are plain data, under the library's error tree)."""
    with pytest.raises(ValueError, match=said):
        build()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"decision": "reject", "reason": "no \\udc80"}', "decision's 'reason' must be valid"),
        ('{"decision": "respond", "result": "no \\udc80"}', "decision's 'result' must be valid"),
        ('{"decision": "edit", "arguments": {"to": "\\udc80"}}', "arguments must be valid"),
    ],
    ids=["reject", "respond", "edit"],
)
def test_a_decision_text_whose_escapes_make_no_unicode_is_no_decision(text: str, said: str) -> None:
    with pytest.raises(InvalidAnswerError, match=said):
        read_decision(text)

"""Policies load from text or files; one that does not parse is refused at start, naming the
file and the line; a missing engine names the extra that installs it."""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType

import pytest
from engines import CEDAR, REGO

from roomkit.policy import (
    Abstain,
    Allow,
    Ask,
    CedarPolicy,
    Deny,
    OPAPolicy,
    PolicyCall,
    PolicyError,
    RegoPolicy,
)
from roomkit.policy.cedar import REMEMBERED
from roomkit.policy.ruling import rule_call
from roomkit.tools.approvals import Approval, Quorum


def call(**arguments: object) -> PolicyCall:
    return PolicyCall("pay", arguments, "digest", "alice", "r1", "agent")


def test_a_cedar_file_loads_and_decides(tmp_path: Path) -> None:
    path = tmp_path / "pay.cedar"
    path.write_text(CEDAR, encoding="utf-8")
    policy = CedarPolicy(str(path))
    assert isinstance(policy.decide(call(to="bob", amount=5)), Allow)
    assert policy.version is not None
    assert policy.version.startswith("sha256:")


def test_cedar_takes_any_actor_and_tool_name_as_an_entity_id() -> None:
    """An id with quotes, a backslash or a line break is an id like any other."""
    policy = CedarPolicy('permit(principal == User::"eve\\"x", action, resource);')
    odd = PolicyCall('pay "now"\n', {}, "digest", 'eve"x', "r1", "agent")
    assert isinstance(policy.decide(odd), Allow)
    other = PolicyCall("pay", {}, "digest", "eve\nx", "r1", "agent")
    assert policy.decide(other) == Abstain("no Cedar policy applied")


@pytest.mark.parametrize(
    "scope",
    ["action", 'action == Action::"pay"', 'action in [Action::"pay"]', 'action in Action::"all"'],
)
def test_cedar_hands_the_context_to_every_policy_that_reads_it(scope: str) -> None:
    """A call any context-reading policy may apply to is decided on its context; the rest
    alike, without it."""
    text = f"""
    permit(principal, {scope}, resource) when {{ context.room == "r1" }};
    permit(principal, action == Action::"look", resource);
    """
    policy = CedarPolicy(
        text,
        [
            {
                "uid": {"type": "Action", "id": "pay"},
                "attrs": {},
                "parents": [{"type": "Action", "id": "all"}],
            }
        ],
    )
    assert isinstance(policy.decide(call(amount=5)), Allow)
    elsewhere = PolicyCall("pay", {}, "digest", "alice", "r2", "agent")
    assert policy.decide(elsewhere) == Abstain("no Cedar policy applied")
    look = PolicyCall("look", {}, "digest", "alice", None, None)
    assert isinstance(policy.decide(look), Allow)


GROUPS = """
@id("staff-lookups")
permit(principal in Group::"staff", action == Action::"lookup", resource);

@id("no-deletes")
@reason("nobody deletes")
forbid(principal, action == Action::"delete", resource);

@id("ask:exports")
@approvers("dave")
forbid(principal, action == Action::"export", resource);

@id("small-payments")
permit(principal, action == Action::"pay", resource) when { context.arguments.amount < 100 };
"""

MEMBERS = [
    {
        "uid": {"type": "User", "id": "alice"},
        "attrs": {},
        "parents": [{"type": "Group", "id": "staff"}],
    },
    {"uid": {"type": "User", "id": "bob"}, "attrs": {}, "parents": []},
]


def test_a_remembered_cedar_decision_is_the_one_cedar_gives_each_time() -> None:
    """Decisions on calls decided without their context are remembered per actor and
    tool: asked again, in any order, each is what a policy asked once gives; a call whose
    context a policy reads is decided on its arguments every time."""
    remembering = CedarPolicy(GROUPS, MEMBERS)
    calls = [
        PolicyCall(tool, {"amount": amount}, "digest", actor, "r1", "agent")
        for actor in ("alice", "bob", None)
        for tool in ("lookup", "delete", "export", "other")
        for amount in (5, 500)
    ]
    for _ in range(3):
        for one in calls:
            assert remembering.decide(one) == CedarPolicy(GROUPS, MEMBERS).decide(one)
    assert isinstance(remembering.decide(PolicyCall("lookup", {}, "d", "alice")), Allow)
    assert remembering.decide(PolicyCall("lookup", {}, "d", "bob")) == Abstain(
        "no Cedar policy applied"
    )
    assert remembering.decide(PolicyCall("delete", {}, "d", "alice")) == Deny(
        "no-deletes: nobody deletes"
    )
    paid = [remembering.decide(PolicyCall("pay", {"amount": n}, "d", "bob")) for n in (5, 500, 5)]
    assert [type(decision) for decision in paid] == [Allow, Abstain, Allow]


def test_cedar_decides_each_call_again_under_entities_given_per_call() -> None:
    """Entities that a function gives per call may differ from one call to the next: the
    decision follows them."""
    member = {"alice": True}

    def entities(found: PolicyCall) -> list[dict[str, object]]:
        parents = [{"type": "Group", "id": "staff"}] if member.get(found.actor or "") else []
        return [{"uid": {"type": "User", "id": found.actor}, "attrs": {}, "parents": parents}]

    policy = CedarPolicy(GROUPS, entities)
    lookup = PolicyCall("lookup", {}, "digest", "alice")
    assert isinstance(policy.decide(lookup), Allow)
    member["alice"] = False
    assert policy.decide(lookup) == Abstain("no Cedar policy applied")


def test_a_cedar_policy_remembers_a_bounded_number_of_decisions() -> None:
    policy = CedarPolicy(GROUPS, MEMBERS)
    for number in range(REMEMBERED + 10):
        policy.decide(PolicyCall("lookup", {}, "digest", f"user-{number}"))
    assert isinstance(policy.decide(PolicyCall("lookup", {}, "digest", "alice")), Allow)
    assert len(policy._decided) <= REMEMBERED


def test_cedar_entities_that_cannot_be_read_are_refused_at_start() -> None:
    with pytest.raises(PolicyError, match="the Cedar entities cannot be read"):
        CedarPolicy("permit(principal, action, resource);", [{"uid": 3}])


def test_a_cedar_file_that_does_not_parse_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.cedar"
    good = "permit(principal, action, resource);\n\n"
    path.write_text(good + "forbid(principal, action resource);\n", encoding="utf-8")
    with pytest.raises(PolicyError, match=rf"{path}:3: the Cedar policies do not parse"):
        CedarPolicy(path)


def test_a_rego_file_that_does_not_parse_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.rego"
    path.write_text("package roomkit\nimport rego.v1\nallow if {\n  input.x ==\n}\n")
    with pytest.raises(PolicyError, match=rf"{path}:4: the Rego module does not parse"):
        RegoPolicy(path)


def test_a_rego_module_that_does_not_parse_writes_nothing_to_the_output(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """rego-cpp would print the parse error on the process's own stdout (a JSON export, a
    CLI's answer): it is said once, in the error."""
    with pytest.raises(PolicyError, match="<text 1>:2: the Rego module does not parse"):
        RegoPolicy("package roomkit\ndecision := {")
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("modules", [5, None])
def test_rego_modules_of_the_wrong_type_are_refused_saying_what_they_are(
    modules: object,
) -> None:
    with pytest.raises(PolicyError, match="RegoPolicy modules are a module's text"):
        RegoPolicy(modules)  # type: ignore[arg-type]


def test_a_rego_file_and_its_data_load(tmp_path: Path) -> None:
    module = tmp_path / "limits.rego"
    module.write_text(
        "package roomkit\nimport rego.v1\n"
        'decision := {"decision": "deny", "reason": "over"} if '
        "{ input.arguments.amount > data.limit }\n"
    )
    data = tmp_path / "data.json"
    data.write_text('{"limit": 10}')
    policy = RegoPolicy(module, data=data)
    assert policy.decide(call(amount=50)) == Deny("over")


LIMITED = (
    "package roomkit\nimport rego.v1\n"
    'decision := {"decision": "deny", "reason": "over"} if { input.arguments.amount > data.limit }'
)


def test_rego_data_given_as_any_mapping_is_read_as_its_object() -> None:
    """Not as its text, which no rule reads a limit from."""
    policy = RegoPolicy(LIMITED, data=MappingProxyType({"limit": 10}))
    assert policy.decide(call(amount=50)) == Deny("over")


@pytest.mark.parametrize("value", [datetime(2026, 12, 1, tzinfo=UTC), {1, 2}, float("nan")])
def test_rego_data_holding_what_json_has_not_is_refused_naming_it(value: object) -> None:
    with pytest.raises(PolicyError, match=r"^Rego data is a JSON object, and this one is not"):
        RegoPolicy(LIMITED, data={"limit": 10, "other": value})


def test_a_policy_written_on_one_long_line_is_read_as_its_text() -> None:
    """A line longer than any file name is no file's path: the policy it holds is parsed, not
    refused with the system's "File name too long"."""
    blocked = ", ".join(f'"{n:04}"' for n in range(60))
    cedar = CedarPolicy(
        f"forbid(principal, action, resource) when {{ [{blocked}].contains(context.room) }};"
    )
    assert isinstance(cedar.decide(PolicyCall("pay", {}, "d", "alice", "0042")), Deny)
    with pytest.raises(PolicyError, match="<text 1>:1: the Rego module does not parse"):
        RegoPolicy(f"package roomkit decision ::= [{blocked}]")


def test_a_missing_policy_file_is_refused() -> None:
    with pytest.raises(PolicyError, match="cannot read the policy file"):
        CedarPolicy("no/such/file.cedar")


def test_a_wrong_on_error_is_refused() -> None:
    with pytest.raises(PolicyError, match="on_error is 'ask' or 'deny'"):
        CedarPolicy(CEDAR, on_error="allow")  # type: ignore[arg-type]


@pytest.mark.parametrize("shadow", ["false", 0, None])
def test_a_shadow_that_is_no_bool_is_refused(shadow: object) -> None:
    """Text is no flag: ``bool("false")`` would put the policy in shadow."""
    with pytest.raises(PolicyError, match=rf"^shadow is True or False, got {shadow!r}$"):
        CedarPolicy(CEDAR, shadow=shadow)  # type: ignore[arg-type]


def test_a_huge_shadow_is_quoted_cut_short() -> None:
    with pytest.raises(PolicyError) as refused:
        CedarPolicy(CEDAR, shadow="y" * 1_000_000)  # type: ignore[arg-type]
    assert len(str(refused.value)) < 200


def test_a_bad_opa_url_is_refused() -> None:
    with pytest.raises(PolicyError, match="http"):
        OPAPolicy("localhost:8181")


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:99999", "OPAPolicy url names the port '99999' in '127.0.0.1:99999'"),
        ("http://127.0.0.1:abc", "OPAPolicy url names the port 'abc' in '127.0.0.1:abc'"),
        ("http://:8181", "OPAPolicy url must be an http:// or https:// URL naming a host"),
        ("http://[::1:8181", "OPAPolicy url cannot be read as a URL (Invalid IPv6 URL)"),
    ],
)
def test_an_opa_url_no_query_can_reach_is_refused_naming_it(url: str, said: str) -> None:
    """A port out of range or no number was taken, and failed every decision inside httpx;
    an unclosed bracket raised urllib's bare ValueError."""
    with pytest.raises(PolicyError, match=re.escape(said)):
        OPAPolicy(url)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://roomkit:s3cret@127.0.0.1:8181", "user name or password"),
        ("http://:s3cret@127.0.0.1:8181/", "user name or password"),
        ("http://127.0.0.1:8181?token=s3cret", "query"),
        ("http://127.0.0.1:8181/#s3cret", "fragment"),
    ],
)
def test_an_opa_url_with_credentials_a_query_or_a_fragment_is_refused(url: str, said: str) -> None:
    """The rule's path goes after the URL (a query or fragment would swallow it, and every
    call would go to another endpoint), and the URL is each decision's recorded version (a
    password in it would be written in every history): refused, without quoting the secret,
    naming ``headers=``."""
    with pytest.raises(PolicyError, match=said) as raised:
        OPAPolicy(url)
    assert "s3cret" not in str(raised.value)
    assert "headers=" in str(raised.value)


@pytest.mark.parametrize(
    "headers",
    [{"Authorization": None}, {"Authorization": "Bearer s3cret\u00e9"}, {1: "s3cret"}],
)
def test_opa_headers_no_query_can_send_are_refused_when_built(headers: object) -> None:
    """A header HTTP cannot carry (a token read from an unset variable, ``None``) failed every
    query: refused when the policy is built, the value unquoted (it is a secret)."""
    with pytest.raises(PolicyError, match="OPAPolicy headers") as raised:
        OPAPolicy("http://127.0.0.1:8181", headers=headers)  # type: ignore[arg-type]
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer s3cret\n"},
        {"Authorization": "Bearer s3cret\r\nX-Other: 1"},
        {"Authorization": " Bearer s3cret"},
        {"Bad Name": "s3cret"},
        {"": "s3cret"},
    ],
)
def test_opa_headers_http_cannot_carry_are_refused_when_built(headers: dict[str, str]) -> None:
    """Each query failed in HTTP ("Illegal header value"): the policy never decided."""
    with pytest.raises(PolicyError, match=r"OPAPolicy header .* strip it") as raised:
        OPAPolicy("http://127.0.0.1:8181", headers=headers)
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize("path", ["", "/", None, 5])
def test_an_opa_path_that_names_no_rule_is_refused(path: object) -> None:
    """An empty path would ask for the whole data document, which is no decision: every call
    would abstain, silently."""
    with pytest.raises(PolicyError, match="OPAPolicy path is the rule's path"):
        OPAPolicy("http://127.0.0.1:8181", path)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), "2", True, 4e9, 1e300])
def test_an_opa_timeout_not_above_0_and_at_most_a_century_is_refused(timeout: object) -> None:
    """As RegoPolicy's: a NaN or infinite timeout would bound no query, one over a century
    is a mistake."""
    with pytest.raises(PolicyError, match="OPAPolicy timeout is a positive number of seconds"):
        OPAPolicy("http://127.0.0.1:8181", timeout=timeout)  # type: ignore[arg-type]


def test_an_opa_timeout_of_up_to_a_century_is_taken() -> None:
    assert OPAPolicy("http://127.0.0.1:8181", timeout=3_153_600_000).timeout == 3_153_600_000


@pytest.mark.parametrize(
    ("module", "extra", "make"),
    [
        ("cedarpy", "cedar", lambda: CedarPolicy(CEDAR)),
        ("regopy", "rego", lambda: RegoPolicy(REGO)),
    ],
)
def test_a_missing_engine_names_its_extra(
    module: str, extra: str, make: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=rf"needs the {extra} extra"):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"engine": "opa", "url": "http://127.0.0.1:8181", "path": 5}, "path"),
        ({"engine": "opa", "url": 8181}, "url"),
        ({"engine": "rego", "file": "a.rego", "query": 5}, "query"),
        ({"engine": "cedar", "file": "a.cedar", "name": ""}, "name"),
    ],
    ids=["opa-path", "opa-url", "rego-query", "empty-name"],
)
def test_a_policy_table_value_of_the_wrong_type_is_named(
    table: dict[str, object], key: str, tmp_path: Path
) -> None:
    from roomkit.policy.config import policy_from_table

    with pytest.raises(PolicyError, match=rf"^{key} is non-empty text"):
        policy_from_table(table, tmp_path)


def test_a_rego_query_holding_several_ways_fails_naming_how_many() -> None:
    """``verdicts[_]`` gives a result for each verdict: one ``deny`` among them was read as
    an undefined rule (abstaining, so a tool without a rule ran); one result is read."""
    module = (
        "package roomkit\nimport rego.v1\n"
        'verdicts contains {"decision": "deny"} if input.arguments.to == "mallory"\n'
        'verdicts contains {"decision": "allow"} if input.arguments.amount < 100\n'
    )
    policy = RegoPolicy(module, query="data.roomkit.verdicts[_]")
    with pytest.raises(RuntimeError, match=r"Rego gave 2 results of data\.roomkit\.verdicts"):
        policy.decide(call(to="mallory", amount=5))
    assert policy.decide(call(to="bob", amount=5)) == Allow()


def test_rego_that_cannot_decide_says_so(tmp_path: Path) -> None:
    """Rules that conflict, or input Rego cannot take, are a failure that says what it is
    (the policy's ``on_error`` then asks or refuses), not a JSON parse error."""
    conflicting = tmp_path / "conflict.rego"
    conflicting.write_text(
        "package roomkit\nimport rego.v1\n"
        'decision := {"decision": "allow"} if input.arguments.a\n'
        'decision := {"decision": "deny"} if input.arguments.b\n',
        encoding="utf-8",
    )
    policy = RegoPolicy(conflicting)
    with pytest.raises(RuntimeError, match="Rego could not evaluate"):
        policy.decide(call(a=True, b=True))
    with pytest.raises(ValueError, match="Out of range float"):
        policy.decide(call(a=float("nan")))


async def test_a_rego_decision_no_rule_defines_abstains() -> None:
    """With no ``default``, a call no rule matches leaves the query undefined: no opinion."""
    policy = RegoPolicy(
        "package roomkit\nimport rego.v1\n"
        'decision := {"decision": "deny"} if input.arguments.to == "mallory"\n',
        on_error="deny",
    )
    assert policy.decide(call(to="bob")) == Abstain("data.roomkit.decision is undefined")
    assert isinstance(policy.decide(call(to="mallory")), Deny)
    ruling = await rule_call(policy, None, call(to="bob"))
    assert (ruling.ask, ruling.refusal) == (None, None)
    assert ruling.evidence is not None
    assert ruling.evidence["decision"] == "abstain"
    assert not ruling.evidence.get("error")


def test_rego_that_recurses_is_refused_saying_so() -> None:
    """rego-cpp finds a recursion at the query: the policy is refused with its words, not
    a JSON parse error."""
    with pytest.raises(PolicyError) as refused:
        RegoPolicy("package roomkit\nf(x) = y { y := f(x) }\ndecision = f(1)\n")
    assert str(refused.value) == (
        "<text>: data.roomkit.decision cannot be evaluated: Recursion detected in rule body: "
        "data.roomkit.decision"
    )


async def test_rego_that_recurses_on_some_input_fails_that_call_saying_so() -> None:
    """A recursion only some arguments reach fails those calls (``on_error`` decides, here
    refusing), its reason rego-cpp's message without the arguments; other calls decide."""
    policy = RegoPolicy(
        "package roomkit\nimport rego.v1\n"
        "a if { input.arguments.loop; b }\nb if a\n"
        'default decision := "deny"\n'
        'decision := "allow" if { not input.arguments.loop }\n'
        'decision := "ask" if a\n',
        on_error="deny",
    )
    assert isinstance(policy.decide(call(loop=False)), Allow)
    with pytest.raises(RuntimeError) as failed:
        policy.decide(call(loop=True, note="(errormsg 5:hello)"))
    assert str(failed.value) == (
        "Rego could not evaluate data.roomkit.decision on this call: "
        "Recursion detected in rule body: data.roomkit.decision"
    )
    ruling = await rule_call(policy, None, call(loop=True))
    assert ruling.refusal is not None
    assert ruling.evidence is not None
    assert ruling.evidence["error"] is True
    assert "Recursion detected" in ruling.evidence["reason"]
    assert isinstance(policy.decide(call(loop=False)), Allow)


@pytest.mark.parametrize(
    "terms",
    [
        '"quorum": "2"',  # a quorum written as text
        '"quorum": 0',
        '"timeout": -5',
        '"quorum": 3',  # more than it names
    ],
)
async def test_a_rego_ask_on_terms_no_ask_can_meet_asks_the_approvers_it_names(
    terms: str,
) -> None:
    """An ask naming its approvers on terms that cannot be met fails the policy; under
    ``on_error="ask"`` those approvers are asked, never the call's own actor (the default
    approver); under ``on_error="deny"`` the call is refused."""
    module = (
        "package roomkit\nimport rego.v1\n"
        f'decision := {{"decision": "ask", "approvers": ["sec1", "sec2"], {terms}}}\n'
    )
    ruling = await rule_call(RegoPolicy(module), None, call(amount=5))
    assert ruling.ask is not None
    assert ruling.ask.approvers == ("sec1", "sec2")
    assert ruling.evidence is not None
    assert ruling.evidence["error"] is True
    refused = await rule_call(RegoPolicy(module, on_error="deny"), None, call(amount=5))
    assert (refused.ask, refused.refusal is not None) == (None, True)


@pytest.mark.parametrize(
    "stray",
    ['"sec2 "', '"sec\\u0000"', '"\\ud800"', '""'],
    ids=["trailing space", "NUL", "lone surrogate", "empty"],
)
async def test_a_rego_ask_naming_someone_nobody_signs_in_as_asks_the_others(
    stray: str,
) -> None:
    """An ask naming an approver who is no actor name (a stray space, a control character)
    would wait on nobody: it fails the policy, and the approvers it names who are actor
    names are asked."""
    module = (
        "package roomkit\nimport rego.v1\n"
        f'decision := {{"decision": "ask", "approvers": ["sec1", {stray}]}}\n'
    )
    ruling = await rule_call(RegoPolicy(module), None, call(amount=5))
    assert ruling.ask is not None
    assert ruling.ask.approvers == ("sec1",)
    assert ruling.evidence is not None
    assert ruling.evidence["error"] is True
    assert "Ask approvers are actor ids" in ruling.evidence["reason"]


@pytest.mark.parametrize(
    ("rule", "approvers"),
    [
        (None, ("sec1",)),
        # A quorum above the approvers it names needs all of them, never the rule's others.
        (Approval(approvers=Quorum(2, of=["s1", "s2", "s3"])), ("sec1",)),
        (Approval(approvers=["s1", "s2"]), ("sec1",)),
    ],
)
async def test_a_python_ask_no_rule_can_meet_asks_whom_it_names_else_the_rules(
    rule: Approval | None, approvers: tuple[str, ...]
) -> None:
    class Strict:
        def decide(self, call: PolicyCall) -> Ask:
            return Ask(["sec1"], quorum=3)

    ruling = await rule_call(Strict(), rule, call(amount=5))
    assert ruling.ask is not None
    assert ruling.ask.approvers == approvers


def test_a_cedar_policys_version_changes_with_its_entities(tmp_path: Path) -> None:
    """The same text deciding otherwise under other entities has another version."""
    text = 'permit(principal in Group::"payers", action, resource);'
    path = tmp_path / "entities.json"
    members = [{"uid": {"type": "User", "id": "alice"}, "parents": [], "attrs": {}}]
    path.write_text(json.dumps(members), encoding="utf-8")
    before = CedarPolicy(text, str(path))
    members[0]["parents"] = [{"type": "Group", "id": "payers"}]
    path.write_text(json.dumps(members), encoding="utf-8")
    after = CedarPolicy(text, str(path))
    assert before.decide(call()) != after.decide(call())
    assert before.version != after.version
    assert CedarPolicy(text, []).version == CedarPolicy(text).version

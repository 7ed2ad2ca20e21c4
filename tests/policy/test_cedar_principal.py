"""A Cedar call for nobody known is ``Anonymous::""``, a principal no actor has: a person who
signs in as ``anonymous`` is ``User::"anonymous"``, as any other person is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from roomkit.core.exceptions import InvalidTextError
from roomkit.policy import Abstain, Allow, CedarPolicy, Deny, PolicyCall

POLICIES = """
@id("the-anonymous-user")
permit(principal == User::"anonymous", action == Action::"pay", resource){when};

@id("nobody-signed-in")
@reason("sign in first")
forbid(principal is Anonymous, action == Action::"pay", resource){when};

@id("nobody-looks")
permit(principal == Anonymous::"", action == Action::"look", resource){when};
"""

NONE_APPLIED = Abstain("no Cedar policy applied")


def _no_entities(call: PolicyCall) -> list[dict[str, Any]]:
    return []


def _policies(how: str) -> CedarPolicy:
    """The policies decided each of the three ways a call reaches Cedar: remembered by actor
    and tool, on the call's context, under entities given per call."""
    when = ' when { context.room == "r1" }' if how == "context" else ""
    entities: list[dict[str, Any]] | Callable[[PolicyCall], list[dict[str, Any]]] = (
        _no_entities if how == "per-call" else []
    )
    return CedarPolicy(POLICIES.format(when=when), entities)


@pytest.mark.parametrize("how", ["remembered", "context", "per-call"])
def test_no_actor_an_empty_actor_and_the_user_anonymous_are_told_apart(how: str) -> None:
    """A call with no actor and one with an empty actor meet the ``Anonymous`` policies, and
    only them; a call from the actor ``anonymous`` meets the ``User::"anonymous"`` one, and
    only it, in whatever order they come."""
    policy = _policies(how)
    for _ in range(2):
        for actor in ("anonymous", None, "", "anonymous"):
            pay = policy.decide(PolicyCall("pay", {}, "digest", actor, "r1", "agent"))
            look = policy.decide(PolicyCall("look", {}, "digest", actor, "r1", "agent"))
            if actor == "anonymous":
                assert pay == Allow("the-anonymous-user")
                assert look == NONE_APPLIED
            else:
                assert pay == Deny("nobody-signed-in: sign in first")
                assert look == Allow("nobody-looks")


def test_principal_is_user_never_applies_to_a_call_for_nobody() -> None:
    policy = CedarPolicy("permit(principal is User, action, resource);")
    assert isinstance(policy.decide(PolicyCall("pay", {}, "digest", "anonymous")), Allow)
    assert policy.decide(PolicyCall("pay", {}, "digest", None)) == NONE_APPLIED
    assert policy.decide(PolicyCall("pay", {}, "digest", "")) == NONE_APPLIED


@pytest.mark.parametrize("how", ["remembered", "context", "per-call"])
@pytest.mark.parametrize("field", ["actor", "tool"])
def test_an_actor_or_tool_no_entity_id_can_be_is_refused_naming_it(how: str, field: str) -> None:
    """An actor or a tool holding a lone surrogate, which UTF-8 cannot encode, is refused with
    the error that says which, however the call reaches Cedar."""
    names = {"actor": "alice", "tool": "pay", field: "b\ud800"}
    call = PolicyCall(names["tool"], {}, "digest", names["actor"], "r1", "agent")
    with pytest.raises(InvalidTextError, match=rf"^a Cedar call's {field} .* lone surrogate"):
        _policies(how).decide(call)


@pytest.mark.parametrize("how", ["remembered", "context", "per-call"])
def test_an_actor_that_is_no_text_is_a_type_error(how: str) -> None:
    """A call for an actor given as a number raised ``AttributeError`` from the check of its
    text, where Cedar says it takes text: a ``TypeError``, as a tool that is no text is."""
    call = PolicyCall("pay", {}, "digest", 5, "r1", "agent")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _policies(how).decide(call)

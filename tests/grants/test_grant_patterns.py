"""A grant's patterns match in linear time on any arguments: one that could hang (``^(a+)+$``
on ``"aaaa...!"``) is refused when the grant is made, and never matched when it is used."""

from __future__ import annotations

import pytest
from tests.grants.conftest import HandlerMaker
from tests.grants.test_grant_flow import granted, held

from roomkit import PendingInputStatus
from roomkit.policy.grants import Grant, GrantRefusedError, GrantScope, covers

HOSTILE = "a" * 64 + "!"
"""What ``^(a+)+$`` takes longer than the age of the universe to refuse."""


@pytest.mark.parametrize(
    ("pattern", "refusal"),
    [
        ("^(a+)+$", "repeats a group"),
        ("^(a|aa)*$", "repeats a group"),
        ("^a*a*b$", "2 repeats that grow"),
        ("[a-z]+@example", "not anchored"),
        ("(?m)^a+$", "every line"),
        ("^(a)\\1$", "backreference"),
        ("^(?=a)a+$", "lookahead"),
        ("^(", "not a regular expression"),
    ],
)
def test_a_pattern_that_could_match_slowly_is_refused(pattern: str, refusal: str) -> None:
    for schema in (
        {"properties": {"to": {"pattern": pattern}}},
        {"patternProperties": {pattern: {"maximum": 1}}},
    ):
        with pytest.raises(GrantRefusedError, match=refusal):
            GrantScope(expires_in=60, schema=schema)


@pytest.mark.parametrize(
    "pattern", ["^[a-z]+@example\\.com$", "^INV-[0-9]{4}-[A-Z]?$", "\\A(?:bob|ann)$", "^[^/]+$"]
)
def test_a_pattern_that_matches_in_linear_time_is_taken(pattern: str) -> None:
    GrantScope(expires_in=60, schema={"properties": {"to": {"pattern": pattern}}})


DRAFT3 = "http://json-schema.org/draft-03/schema#"
HIDDEN = [
    {"properties": {"to": {"$ref": "#/examples/0"}}, "examples": [{"pattern": "^(a+)+$"}]},
    {
        "properties": {"to": {"$ref": "#/$defs/x/const"}},
        "$defs": {"x": {"const": {"pattern": "^(a+)+$"}}},
    },
    {
        "properties": {"to": {"$ref": "#/$defs/x/enum/0"}},
        "$defs": {"x": {"enum": [{"pattern": "^(a+)+$"}]}},
    },
    {"$schema": DRAFT3, "properties": {"to": {"disallow": [{"pattern": "^(a+)+$"}]}}},
    {"$schema": DRAFT3, "properties": {"to": {"type": [{"pattern": "^(a+)+$"}], "maxLength": 99}}},
    {"$schema": DRAFT3, "properties": {"to": {"extends": {"pattern": "^(a+)+$"}}}},
]
"""Schemas whose pattern the validator reaches where no keyword of the draft holds a schema:
through a ``$ref`` pointing anywhere in the document, or draft 3's ``type``, ``disallow`` and
``extends``."""


@pytest.mark.parametrize("schema", HIDDEN)
def test_a_pattern_is_checked_wherever_it_stands_in_the_schema(schema: dict[str, object]) -> None:
    with pytest.raises(GrantRefusedError, match="repeats a group"):
        GrantScope(expires_in=60, schema=schema)


@pytest.mark.parametrize("schema", HIDDEN)
async def test_a_stored_grant_with_a_hidden_pattern_covers_nothing_and_returns(
    handlers: HandlerMaker, schema: dict[str, object]
) -> None:
    """The test's own timeout is the hang guard, as above."""
    grant = Grant(grant_id="g1", tool="pay", granted_by=("ann",), expires_at=2e9, schema=schema)
    request = await held(handlers(), {"to": HOSTILE, "amount": 3})
    problem = covers(grant, request)
    assert problem is not None
    assert "repeats a group" in problem


async def test_a_draft_3_schema_with_its_own_keywords_grants(handlers: HandlerMaker) -> None:
    """Draft 3's ``extends`` may be one schema, which its validator takes."""
    handler = handlers()
    schema = {"$schema": DRAFT3, "properties": {"to": {"extends": {"pattern": "^b[a-z]+$"}}}}
    await granted(handler, GrantScope(expires_in=3600, schema=schema))
    assert (await held(handler, {"to": "bill", "amount": 3})).status is PendingInputStatus.RESOLVED
    assert (await held(handler, {"to": "ann", "amount": 3})).status is PendingInputStatus.PENDING


async def test_a_grant_within_its_pattern_covers_the_call(handlers: HandlerMaker) -> None:
    handler = handlers()
    scope = GrantScope(expires_in=3600, schema={"properties": {"to": {"pattern": "^b[a-z]+$"}}})
    await granted(handler, scope)
    assert (await held(handler, {"to": "bill", "amount": 3})).status is PendingInputStatus.RESOLVED
    assert (await held(handler, {"to": "ann", "amount": 3})).status is PendingInputStatus.PENDING


async def test_a_stored_grant_with_such_a_pattern_covers_nothing_and_returns(
    handlers: HandlerMaker,
) -> None:
    """A grant stored before patterns were checked is not matched (the match would hang;
    the test's own timeout is the hang guard)."""
    grant = Grant(
        grant_id="g1",
        tool="pay",
        granted_by=("ann",),
        expires_at=2e9,
        schema={"properties": {"to": {"pattern": "^(a+)+$"}}},
    )
    request = await held(handlers(), {"to": HOSTILE, "amount": 3})
    problem = covers(grant, request)
    assert problem is not None
    assert "repeats a group" in problem


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": ["x"], "required": ["x"]},
        {"properties": {"a": 5}, "required": ["a"]},
        {"required": ["a"], "items": 3},
    ],
)
async def test_a_stored_grant_whose_schema_is_no_schema_covers_nothing(
    handlers: HandlerMaker, schema: dict[str, object]
) -> None:
    """A grant written to a store by hand (or by an older version) with a schema that is no
    JSON Schema is passed over with a reason; the look for a grant goes on."""
    grant = Grant(grant_id="g1", tool="pay", granted_by=("ann",), expires_at=2e9, schema=schema)
    request = await held(handlers(), {"to": "bob", "amount": 3})
    problem = covers(grant, request)
    assert problem is not None
    assert problem.startswith("its schema is broken")

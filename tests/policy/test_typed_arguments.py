"""A number written as text never passes a policy's comparison with a number: the page's
examples and the shared rules guard their comparisons with the type they expect."""

from __future__ import annotations

import pytest
from engines import CEDAR, REGO
from tests.doc_pages import page_blocks

from roomkit.policy import Allow, CedarPolicy, PolicyCall, RegoPolicy
from roomkit.policy._base import PolicyFailed

PAGE = "docs/how-to/policy.md"
TEXT_AMOUNT = {"to": "bob", "amount": "5000"}


def call(arguments: dict[str, object]) -> PolicyCall:
    return PolicyCall("pay", arguments, "digest", "alice", "r1", "agent")


def quoted(block: str, opening: str) -> str:
    """The ``'''...'''`` text that follows ``opening`` in a page's code block."""
    start = block.index(opening) + len(opening)
    return block[start : block.index("'''", start)]


def test_the_pages_rego_example_does_not_allow_an_amount_written_as_text() -> None:
    """rego-cpp holds ``"5000" < 100`` true: the example checks ``is_number`` first."""
    pytest.importorskip("regopy")
    (block,) = page_blocks(PAGE, "python", "RegoPolicy('''")
    policy = RegoPolicy(quoted(block, "RegoPolicy('''"))
    assert not isinstance(policy.decide(call(TEXT_AMOUNT)), Allow)
    assert isinstance(policy.decide(call({"to": "bob", "amount": 5})), Allow)


def test_the_shared_rego_rules_do_not_allow_an_amount_written_as_text() -> None:
    pytest.importorskip("regopy")
    assert not isinstance(RegoPolicy(REGO).decide(call(TEXT_AMOUNT)), Allow)


@pytest.mark.parametrize("text", [CEDAR, None], ids=["shared", "page"])
def test_cedar_cannot_decide_an_amount_written_as_text(text: str | None) -> None:
    """``<`` on a string is an error in Cedar: no policy applies, and on_error decides."""
    pytest.importorskip("cedarpy")
    if text is None:
        (block,) = page_blocks(PAGE, "python", "small-payments")
        text = quoted(block, "CedarPolicy('''")
    with pytest.raises(PolicyFailed, match="expected long, got string"):
        CedarPolicy(text).decide(call(TEXT_AMOUNT))

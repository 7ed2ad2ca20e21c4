"""``asks_person`` with a policy refuses arguments no request holds as ``create`` does,
before digesting them: never json's own error, nor a ``RecursionError``."""

from __future__ import annotations

from typing import Any

import pytest

from roomkit.core.exceptions import ArgumentsTooLargeError, InvalidTextError
from roomkit.policy import Allow, PolicyCall, PolicyDecision
from roomkit.policy.ruling import asks_person
from roomkit.tools.approvals import Approval


class Allowing:
    name = "allowing"

    def decide(self, call: PolicyCall) -> PolicyDecision:
        return Allow()


def _loop() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["again"] = loop
    return loop


def _deep(levels: int) -> dict[str, Any]:
    deep: dict[str, Any] = {}
    for _ in range(levels):
        deep = {"in": deep}
    return deep


@pytest.mark.parametrize(
    ("arguments", "refused", "says"),
    [
        pytest.param(_loop(), ValueError, "hold themselves", id="loop"),
        pytest.param({"n": float("nan")}, ValueError, "a number JSON cannot carry", id="nan"),
        pytest.param({"s": {1, 2}}, TypeError, "arguments must be JSON", id="set"),
        pytest.param({"t": "a\ud800"}, InvalidTextError, "lone surrogate", id="surrogate"),
        pytest.param(
            _deep(5_000), ArgumentsTooLargeError, "levels deep", id="deeper-than-the-stack"
        ),
    ],
)
async def test_arguments_no_request_holds_are_refused_as_create_refuses_them(
    arguments: dict[str, Any], refused: type[Exception], says: str
) -> None:
    with pytest.raises(refused, match=says):
        await asks_person(Approval(policy=Allowing()), "pay", arguments, actor="alice")


async def test_plain_arguments_are_ruled_by_the_policy() -> None:
    assert not await asks_person(Approval(policy=Allowing()), "pay", {"n": 1}, actor="alice")

"""Calls recovered from the model's speech: what is parsed, whose speech counts, and how the
result goes back."""

from __future__ import annotations

from typing import Any

import pytest
from tests.channels.realtime_harness import ANSWER, lookup_handler
from tests.channels.realtime_voice.voice_harness import MakeVoice

from roomkit.channels.realtime_voice._recovery import RecoveredCall, recover_calls


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ('call:Ask{question:"Color?"}', {"question": "Color?"}),
        ('call:Ask{"question": "Color?", "n": 2}', {"question": "Color?", "n": 2}),
        ("call:Ask{question: 'a, b', n: -3, x: 1.5}", {"question": "a, b", "n": -3, "x": 1.5}),
        ("call:Ask{ok: true, no: FALSE, none: null}", {"ok": True, "no": False, "none": None}),
        ("call:Ask{question: What's up?, n: 1}", {"question": "What's up?", "n": 1}),
        ("call:Ask{question: red, green or blue}", {"question": "red, green or blue"}),
        ("call:Ask{q = 1, 'r': \"s\"}", {"q": 1, "r": "s"}),
        ("call:Ask{nested: {a: 1}, list: [1, 2]}", {"nested": {"a": 1}, "list": [1, 2]}),
        ('call:Ask{question: "say \\"hi\\""}', {"question": 'say "hi"'}),
        ("call: Ask {}", {}),
    ],
)
def test_a_spoken_call_is_parsed(text: str, arguments: dict[str, Any]) -> None:
    assert recover_calls(f"Sure. {text} One moment.") == [RecoveredCall("Ask", arguments)]


def test_every_call_of_an_utterance_is_found_in_order() -> None:
    text = 'call:lookup{key: a} and then call:Ask{question: "b?"} it\'s done'
    assert recover_calls(text) == [
        RecoveredCall("lookup", {"key": "a"}),
        RecoveredCall("Ask", {"question": "b?"}),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "no call here",
        "call:Ask without braces",
        'call:Ask{question: "never closed}',
        "call:Ask{question: unclosed",
        "call:Ask{just words}",
    ],
)
def test_what_cannot_be_read_is_skipped(text: str) -> None:
    assert recover_calls(text) == []


async def test_the_result_is_injected_as_silent_context(make: MakeVoice) -> None:
    h = await make(tool_handler=lookup_handler)
    await h.provider.simulate_transcription(h.session, 'call:lookup{key: "k"}')

    text = await h.provider.wait_for_injection("Result of lookup: ")
    assert text == 'Result of lookup: {"value": 42, "key": "k"}'
    [inject] = [call for call in h.provider.calls if call.method == "inject_context"]
    assert inject.args["silent"] is True
    assert h.provider.tool_results == []


async def test_two_calls_in_one_utterance_are_both_served(make: MakeVoice) -> None:
    h = await make(tool_handler=lookup_handler)
    text = 'call:lookup{key: "k"} then call:Ask{question: "Color?"}'
    await h.provider.simulate_transcription(h.session, text)
    h.resolve(await h.questions.get())

    assert await h.provider.wait_for_injection("Result of Ask: ") == f"Result of Ask: {ANSWER}"
    assert await h.provider.wait_for_injection("Result of lookup: ")
    ask, lookup = await h.report("Ask"), await h.report("lookup")
    assert ask.tool_call_id != lookup.tool_call_id


@pytest.mark.parametrize(
    ("role", "final", "options"),
    [
        ("user", True, {}),
        ("assistant", False, {}),
        ("assistant", True, {"tool_recovery": False}),
    ],
    ids=["the-callers-speech", "a-partial-transcript", "recovery-off"],
)
async def test_a_transcript_that_does_not_count_calls_nothing(
    make: MakeVoice, role: str, final: bool, options: dict[str, Any]
) -> None:
    h = await make(tool_handler=lookup_handler, **options)
    text = 'call:lookup{key: "k"}'
    await h.provider.simulate_transcription(h.session, text, role=role, final=final)
    # A marker call that does count, served after anything the first transcript started.
    await h.provider.simulate_tool_call(h.session, "marker", "lookup", {"key": "m"})
    await h.provider.wait_for_tool_result("marker")
    await h.kit.hooks.drain()

    assert h.provider.injected == []
    assert [event.tool_call_id for event in h.reports] == ["marker"]


def test_a_call_nested_too_deeply_is_skipped_and_the_others_are_kept() -> None:
    """Nesting past what the parser reads is unreadable, never an error that loses the
    utterance's other calls."""
    deep = "[" * 100_000 + "]" * 100_000
    braces = "{a: " * 5_000 + "1" + "}" * 5_000
    text = (
        f'call:lookup{{key: a}} call:Ask{{question: {deep}}} call:Ask{{"q": {deep}}} '
        f"call:Ask{{question: {braces}}} call:lookup{{key: b}}"
    )
    assert recover_calls(text) == [
        RecoveredCall("lookup", {"key": "a"}),
        RecoveredCall("lookup", {"key": "b"}),
    ]

"""Answering from a terminal without guesswork: ``roomkit pending show``, answers typed as a
person types them (labels, numbers, a list for a list of questions), errors with examples."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from typing import Any

import pytest
from desk_harness import World, bearer, serve, token

from roomkit.cli import main
from roomkit.desk.demo_model import TRIP_KINDS
from roomkit.desk.forms import typed_body

PLAN = {
    "questions": [
        {
            "question": "When do you want to leave?",
            "header": "Dates",
            "options": [
                {"label": "This weekend", "description": "Leave on Friday evening"},
                {"label": "Next month"},
            ],
            "multiSelect": False,
        },
        {
            "question": "What is your budget per person?",
            "header": "Budget",
            "options": [{"label": "Under 500 EUR"}, {"label": "No limit"}],
            "multiSelect": False,
        },
        {
            "question": "Who is coming?",
            "header": "Travellers",
            "options": [{"label": "Just me"}, {"label": "Two of us"}],
            "multiSelect": False,
        },
    ]
}
EXTRAS = {"question": "Include?", "options": ["Flights", "Hotel", "Car hire"], "multiSelect": True}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_TOKEN", "ROOMKIT_DESK_URL", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ROOMKIT_TOKEN", token("alice"))


@pytest.fixture
async def world() -> World:
    world = World()
    await world.room("room", "alice")
    return world


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def plan_answers(*answers: str) -> dict[str, Any]:
    questions = [question["question"] for question in PLAN["questions"]]
    return {
        "answers": [
            {"question": question, "answer": answer}
            for question, answer in zip(questions, answers, strict=True)
        ]
    }


# -- what a person types, turned into the body ------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "body"),
    [
        ('["Next month","No limit","Just me"]', plan_answers("Next month", "No limit", "Just me")),
        ("[2, 1, 2]", plan_answers("Next month", "Under 500 EUR", "Two of us")),
        ('["1", "no limit", 1]', plan_answers("This weekend", "No limit", "Just me")),
        ('{"answers": []}', {"answers": []}),
    ],
)
def test_a_list_of_questions_takes_a_list_of_labels_or_numbers(typed: str, body: dict) -> None:
    assert typed_body("questions", PLAN, typed) == body


@pytest.mark.parametrize(
    ("typed", "answer"),
    [
        ("Road trip", "Road trip"),
        ("4", "Road trip"),
        ("road trip", "Road trip"),
        ("1", "City break"),
    ],
)
def test_one_choice_takes_its_label_or_its_number(typed: str, answer: str) -> None:
    arguments = {"question": "Kind?", "options": TRIP_KINDS}
    assert typed_body("question", arguments, typed) == {"answer": answer}


def test_an_exact_label_wins_over_a_number() -> None:
    arguments = {"question": "How many?", "options": ["3", "1", "2"]}
    assert typed_body("question", arguments, "1") == {"answer": "1"}
    assert typed_body("question", arguments, "3") == {"answer": "3"}


@pytest.mark.parametrize(
    ("typed", "answer"),
    [
        ('["Flights", "Hotel"]', ["Flights", "Hotel"]),
        ("1,3", ["Flights", "Car hire"]),
        ("Hotel, car hire", ["Hotel", "Car hire"]),
        ("Hotel", ["Hotel"]),
        ("[2, 1]", ["Hotel", "Flights"]),
    ],
)
def test_several_choices_take_a_list_or_commas(typed: str, answer: list[str]) -> None:
    assert typed_body("question", EXTRAS, typed) == {"answer": answer}


@pytest.mark.parametrize(
    ("arguments", "typed", "says"),
    [
        (
            PLAN,
            '["Next month", "No limit"]',
            "this request asks 3 questions: answer with a JSON list of 3 answers, one per "
            'question (got 2), e.g. \'["This weekend", "Under 500 EUR", "Just me"]\'',
        ),
        (
            PLAN,
            "Next month",
            "this request asks 3 questions: answer with a JSON list of 3 answers, one per "
            'question (got \'Next month\'), e.g. \'["This weekend", "Under 500 EUR", "Just me"]\'',
        ),
        (
            PLAN,
            '["Next month", "Soon", "Just me"]',
            "answer 2 ('What is your budget per person?'): 'Soon' is not one of the options: "
            "type a label or its number, 1-2: 1) Under 500 EUR, 2) No limit",
        ),
        (
            {"question": "Kind?", "options": TRIP_KINDS},
            "7",
            "there is no option 7: type a label or its number, 1-4: 1) City break, "
            "2) Beach holiday, 3) Mountain hiking, 4) Road trip",
        ),
        (
            {"question": "Kind?", "options": TRIP_KINDS},
            '["City break", "Road trip"]',
            "this question takes one option, e.g. 'City break' or 1",
        ),
    ],
)
def test_an_answer_that_does_not_fit_says_what_would(
    arguments: dict, typed: str, says: str
) -> None:
    kind = "questions" if "questions" in arguments else "question"
    with pytest.raises(ValueError, match=f"^{re.escape(says)}$"):
        typed_body(kind, arguments, typed)


# -- against a running desk ------------------------------------------------------------------


async def test_pending_show_prints_the_form_and_an_answer_that_works(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await world.ask(PLAN)
    async with serve(world.app) as base:
        code, shown, _ = await run(capsys, "pending", "show", pending_id, "--url", base)
        example = shown.strip().splitlines()[-1]
        argv = shlex.split(example)
        answered = await run(capsys, *argv[1:], "--url", base)
    assert code == 0
    assert shown.splitlines()[2:] == [
        "1. When do you want to leave?  [Dates]",
        "   1) This weekend: Leave on Friday evening",
        "   2) Next month",
        "2. What is your budget per person?  [Budget]",
        "   1) Under 500 EUR",
        "   2) No limit",
        "3. Who is coming?  [Travellers]",
        "   1) Just me",
        "   2) Two of us",
        "",
        "Answer the 3 questions with a JSON list, one answer per question: an option's label "
        "or number (a list of them where several may be picked). For example:",
        f'  roomkit pending answer {pending_id} \'["This weekend", "Under 500 EUR", "Just me"]\'',
    ]
    assert answered[0] == 0
    assert json.loads(await world.handler.wait(pending_id)) == plan_answers(
        "This weekend", "Under 500 EUR", "Just me"
    )


@pytest.mark.parametrize(
    ("arguments", "tool", "lines", "example"),
    [
        (
            {"question": "Kind?", "options": TRIP_KINDS},
            "AskUserQuestion",
            ["Kind?", "  1) City break", "  2) Beach holiday", "  3) Mountain hiking",
             "  4) Road trip"],
            "'City break'",
        ),
        (
            EXTRAS,
            "AskUserQuestion",
            ["Include?", "  1) Flights", "  2) Hotel", "  3) Car hire", "  (pick one or more)"],
            "'[\"Flights\", \"Hotel\"]'",
        ),
        ({"question": "Where to?"}, "AskUserQuestion", ["Where to?"], "'your answer'"),
        # A label holding an escape sequence is shown escaped, and the example takes its number.
        (
            {"question": "Colour?", "options": ["Red\x1b[2J", "Blue"]},
            "AskUserQuestion",
            ["Colour?", "  1) Red\\x1b[2J", "  2) Blue"],
            "1",
        ),
        (
            {"action": "Book it", "details": {"Trip": "Lisbon"}},
            "ConfirmAction",
            ["Confirm: Book it", "  Trip: Lisbon"],
            "yes",
        ),
    ],
)  # fmt: skip
async def test_pending_show_gives_each_kind_an_example_that_is_accepted(
    world: World,
    capsys: pytest.CaptureFixture[str],
    arguments: dict,
    tool: str,
    lines: list[str],
    example: str,
) -> None:
    pending_id = await world.ask(arguments, tool_name=tool)
    async with serve(world.app) as base:
        _, shown, _ = await run(capsys, "pending", "show", pending_id, "--url", base)
        printed = shown.strip().splitlines()
        answered = await run(capsys, *shlex.split(printed[-1])[1:], "--url", base)
    assert printed[2:-2] == [*lines, ""]
    assert printed[-1] == f"  roomkit pending answer {pending_id} {example}"
    assert answered[0] == 0
    assert (await world.handler.get_request(pending_id)).status == "resolved"


async def test_pending_answer_takes_a_list_for_a_list_of_questions(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await world.ask(PLAN)
    async with serve(world.app) as base:
        code, out, err = await run(
            capsys, "pending", "answer", pending_id, '["Next month","No limit","Just me"]',
            "--url", base,
        )  # fmt: skip
    assert (code, out, err) == (0, f"Answered {pending_id}\n", "")
    assert json.loads(await world.handler.wait(pending_id)) == plan_answers(
        "Next month", "No limit", "Just me"
    )


async def test_pending_answer_by_number_and_its_errors_point_to_show(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await world.ask({"question": "Kind?", "options": TRIP_KINDS})
    async with serve(world.app) as base:
        wrong = await run(capsys, "pending", "answer", pending_id, "Mars", "--url", base)
        right = await run(capsys, "pending", "answer", pending_id, "3", "--url", base)
    assert wrong[0] == 2
    assert wrong[2] == (
        "roomkit: 'Mars' is not one of the options: type a label or its number, 1-4: "
        "1) City break, 2) Beach holiday, 3) Mountain hiking, 4) Road trip "
        f"(`roomkit pending show {pending_id}` shows the question)\n"
    )
    assert right[0] == 0
    assert await world.handler.wait(pending_id) == "Mountain hiking"


# -- the desk's own shape errors ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "tool", "body", "example"),
    [
        (
            PLAN,
            "AskUserQuestion",
            {"answer": ["Next month", "No limit", "Just me"]},
            '{"answers": [{"question": "When do you want to leave?", "answer": "This weekend"}, '
            '{"question": "What is your budget per person?", "answer": "Under 500 EUR"}, '
            '{"question": "Who is coming?", "answer": "Just me"}]}',
        ),
        (EXTRAS, "AskUserQuestion", {"answer": "Flights"}, '{"answer": ["Flights", "Hotel"]}'),
        ({"question": "Kind?", "options": TRIP_KINDS}, "AskUserQuestion", {"answer": "Mars"},
         '{"answer": "City break"}'),
        ({"question": "Where?"}, "AskUserQuestion", {"answer": " "}, '{"answer": "your answer"}'),
        ({"action": "Go"}, "ConfirmAction", {"answer": "yes"},
         '{"confirmed": true} or {"confirmed": false, "reason": "why not"}'),
    ],
)  # fmt: skip
async def test_a_shape_error_from_the_desk_shows_a_body_that_fits(
    world: World, arguments: dict, tool: str, body: dict, example: str
) -> None:
    pending_id = await world.ask(arguments, tool_name=tool)
    async with world.client() as client:
        refused = await client.post(
            f"/api/requests/{pending_id}/answer", json=body, headers=bearer("alice")
        )
    assert refused.status_code == 422
    assert refused.json()["detail"].endswith(f"; for example: {example}")


async def test_a_body_the_desk_refuses_is_printed_with_its_whole_example(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await world.ask(PLAN)
    body = '{"answer": ["Next month", "No limit", "Just me"]}'
    async with serve(world.app) as base:
        code, _, err = await run(capsys, "pending", "answer", pending_id, body, "--url", base)
    assert code == 1
    assert err.startswith(
        "roomkit: The desk refused it: a questions request takes ['answers'], not ['answer']; "
        'for example: {"answers": [{"question": "When do you want to leave?", '
    )
    assert err.endswith('{"question": "Who is coming?", "answer": "Just me"}]}\n')

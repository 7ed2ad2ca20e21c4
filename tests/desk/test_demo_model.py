"""The demo's scripted trip planner: its questions, their shapes, and what it makes of answers."""

from __future__ import annotations

import json

import pytest

from roomkit.desk.demo import book_trip, pick_provider
from roomkit.desk.demo_model import BOOK_TRIP, TRIP_KINDS, TripPlannerModel
from roomkit.desk.shapes import kind_of
from roomkit.providers.ai.base import (
    AIContext,
    AIMessage,
    AIResponse,
    AIToolResultPart,
)
from roomkit.tools import texts
from roomkit.tools.human_input import ASK_USER_QUESTION
from roomkit.tools.validation import check_tool_schema, validate_tool_arguments

SCHEMAS = {
    ASK_USER_QUESTION["name"]: ASK_USER_QUESTION["parameters"],
    BOOK_TRIP["name"]: BOOK_TRIP["parameters"],
}

ANSWERS = [
    "Beach holiday",
    "Crete",
    json.dumps({"answer": ["Flights", "Hotel"]}),
    json.dumps(
        {
            "answers": [
                {"question": "When do you want to leave?", "answer": "Next month"},
                {"question": "What is your budget per person?", "answer": "No limit"},
                {"question": "Who is coming?", "answer": "Two of us"},
            ]
        }
    ),
]


async def converse(
    answers: list[str], *, error: bool = False
) -> tuple[list[AIResponse], AIContext]:
    """Play a turn: the model's responses to "plan a trip" and then to each answer."""
    model = TripPlannerModel()
    messages = [AIMessage.user("Plan a trip", name="demo-user")]
    responses = [await model.generate(AIContext(messages=list(messages)))]
    for index, answer in enumerate(answers):
        call = responses[-1].tool_calls[0]
        last = error and index == len(answers) - 1
        result = AIToolResultPart(
            tool_call_id=call.id, name=call.name, content=answer, is_error=last
        )
        messages += [
            AIMessage.assistant(responses[-1].content, [call]),
            AIMessage.tool_results([result]),
        ]
        responses.append(await model.generate(AIContext(messages=list(messages))))
    return responses, AIContext(messages=messages)


def test_tool_definitions_are_valid_json_schemas() -> None:
    for name, schema in SCHEMAS.items():
        check_tool_schema(name, schema)


async def test_the_planner_asks_every_question_shape_in_turn() -> None:
    responses, _ = await converse(ANSWERS)
    calls = [response.tool_calls[0] for response in responses]
    assert [str(kind_of(call.name, call.arguments)) for call in calls] == [
        "question",
        "question",
        "question",
        "questions",
        "custom",
    ]
    assert calls[4].name == "book_trip"
    first, free, several = (call.arguments for call in calls[:3])
    assert first["options"] == TRIP_KINDS
    assert "multiSelect" not in first
    assert "options" not in free
    assert several["multiSelect"] is True
    assert free["question"] == "Beach holiday it is. Where would you like to go?"


async def test_every_call_the_planner_makes_passes_its_tool_schema() -> None:
    responses, _ = await converse(ANSWERS)
    for response in responses:
        for call in response.tool_calls:
            assert validate_tool_arguments(SCHEMAS[call.name], call.arguments) is None


PLAN = {
    "trip": "beach holiday to Crete",
    "dates": "Next month",
    "travellers": 2,
    "includes": ["Flights", "Hotel"],
    "budget_eur": 10000,
}


async def booked(arguments: dict[str, object]) -> str:
    """What the demo's booking tool returns for ``arguments``."""
    return await book_trip("book_trip", dict(arguments))


async def test_the_booking_carries_the_answers_gathered_and_a_budget() -> None:
    responses, _ = await converse(ANSWERS)
    assert responses[4].tool_calls[0].arguments == PLAN


async def test_an_approved_booking_is_booked_with_a_summary_of_what_ran() -> None:
    responses, _ = await converse([*ANSWERS, await booked(PLAN)])
    reply = responses[-1]
    assert reply.tool_calls == []
    assert reply.content == (
        "Booked: a beach holiday to Crete, next month, for two, up to 10000 EUR per person, "
        "with flights and hotel. Enjoy the trip!"
    )


async def test_an_edited_booking_says_what_the_person_changed_and_what_ran() -> None:
    ran = {**PLAN, "budget_eur": 800}
    changed = {"budget_eur": {"from": 10000, "to": 800}}
    content = texts.approval_edited("book_trip", await booked(ran), ran, changed)
    responses, _ = await converse([*ANSWERS, content])
    assert responses[-1].content == (
        "Booked (as you edited it: budget_eur): a beach holiday to Crete, next month, for two, "
        "up to 800 EUR per person, with flights and hotel. Enjoy the trip!"
    )


async def test_a_rejected_booking_books_nothing_and_says_why() -> None:
    refusal = texts.approval_rejected("book_trip", "too pricey")
    responses, _ = await converse([*ANSWERS, refusal], error=True)
    assert responses[-1].content.startswith("Nothing booked (too pricey). Your plan stays ready")


async def test_a_booking_nobody_approved_in_time_books_nothing() -> None:
    expired = texts.approval_expired("book_trip", 5)
    responses, _ = await converse([*ANSWERS, expired], error=True)
    assert responses[-1].content.startswith("Nothing booked (nobody approved it in time).")


async def test_an_answer_instead_of_the_booking_books_nothing_and_quotes_it() -> None:
    answer = texts.approval_responded("book_trip", "I booked it myself")
    responses, _ = await converse([*ANSWERS, answer])
    assert responses[-1].content.startswith(
        'Nothing booked: you answered instead ("I booked it myself").'
    )


async def test_a_declined_question_ends_the_turn_with_the_reason_in_plain_words() -> None:
    refusal = json.dumps({"error": "Human input rejected: not now"})
    responses, _ = await converse(["City break", refusal], error=True)
    assert responses[-1].tool_calls == []
    assert responses[-1].content == (
        "Understood, you would rather not answer, so I stopped planning. "
        'You said: "not now". Write again to start over.'
    )
    silent = json.dumps({"error": "Human input rejected: "})
    responses, _ = await converse([silent], error=True)
    assert responses[-1].content == (
        "Understood, you would rather not answer, so I stopped planning. Write again to start over."
    )


@pytest.mark.parametrize(
    ("kind", "trip"),
    [
        ("City break", "a city break"),
        ("Beach holiday", "a beach holiday"),
        ("Mountain hiking", "a mountain hiking trip"),
        ("Road trip", "a road trip"),
    ],
)
async def test_the_planner_names_each_kind_of_trip_in_plain_words(kind: str, trip: str) -> None:
    plan = [
        kind,
        "the Alps",
        json.dumps({"answer": ["Flights", "Hotel", "Car hire"]}),
        json.dumps(
            {
                "answers": [
                    {"question": "When do you want to leave?", "answer": "This weekend"},
                    {"question": "What is your budget per person?", "answer": "Under 500 EUR"},
                    {"question": "Who is coming?", "answer": "Just me"},
                ]
            }
        ),
    ]
    responses, _ = await converse(plan)
    booking = responses[4].tool_calls[0].arguments
    assert booking["trip"] == f"{trip.removeprefix('a ').removeprefix('an ')} to the Alps"
    responses, _ = await converse([*plan, await booked(booking)])
    assert responses[1].tool_calls[0].arguments["question"] == (
        f"{kind} it is. Where would you like to go?"
    )
    assert responses[5].content == (
        f"Booked: {trip} to the Alps, this weekend, for one, up to 500 EUR per person, "
        "with flights, hotel and car hire. Enjoy the trip!"
    )


async def test_a_timed_out_question_ends_the_turn() -> None:
    timeout = json.dumps({"error": "Human input timed out after 5s for tool 'AskUserQuestion'"})
    responses, _ = await converse([timeout], error=True)
    assert responses[-1].content.startswith("Nobody answered in time")


async def test_the_same_conversation_gives_the_same_call() -> None:
    """A turn re-run after a restart reaches the same tool call, with the same id."""
    _, context = await converse(ANSWERS[:2])
    first = await TripPlannerModel().generate(context)
    again = await TripPlannerModel().generate(context)
    assert first == again
    assert first.tool_calls[0].id.endswith("-2")


async def test_a_new_message_starts_a_new_plan_with_new_call_ids() -> None:
    _, context = await converse([*ANSWERS, await booked(PLAN)])
    messages = [*context.messages, AIMessage.assistant("Booked."), AIMessage.user("Again")]
    response = await TripPlannerModel().generate(AIContext(messages=messages))
    assert response.tool_calls[0].arguments["options"] == TRIP_KINDS
    first_plan = {part.id for message in context.messages for part in message.tool_call_parts}
    assert response.tool_calls[0].id.endswith("-0")
    assert response.tool_calls[0].id not in first_plan


async def test_plans_with_as_many_messages_in_view_get_different_call_ids() -> None:
    """Once the history window slides, two plans can see as many person messages."""
    one = AIContext(messages=[AIMessage.user("Plan a trip")])
    other = AIContext(messages=[AIMessage.assistant("Booked."), AIMessage.user("Again")])
    first = await TripPlannerModel().generate(one)
    second = await TripPlannerModel().generate(other)
    assert first.tool_calls[0].id != second.tool_calls[0].id


async def test_without_a_user_message_the_planner_invites_one() -> None:
    response = await TripPlannerModel().generate(AIContext())
    assert response.tool_calls == []
    assert "hello" in response.content


@pytest.mark.parametrize(
    ("environ", "model_name"),
    [
        ({}, "trip-planner"),
        ({"ANTHROPIC_API_KEY": "k", "ROOMKIT_DEMO_MODEL": "claude-x"}, "claude-x"),
        ({"OPENAI_API_KEY": "k"}, "gpt-4.1"),
    ],
)
def test_the_model_follows_the_api_keys_in_the_environment(
    environ: dict[str, str], model_name: str
) -> None:
    assert pick_provider(environ).model_name == model_name

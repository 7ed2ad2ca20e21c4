"""The demo agent's scripted model, which plays it without an API key.

The agent asks with the library's human-input tool
(:data:`roomkit.tools.human_input.ASK_USER_QUESTION`) and books with :data:`BOOK_TRIP`, a
tool the demo holds for the person's approval (they may approve it, edit its arguments, the
budget first, reject it or answer in its place). :class:`TripPlannerModel` plans a trip by
asking those questions, one per round, then calls ``book_trip``. It reads nothing but the
conversation it is given: the same conversation always gives the same response, so a turn
re-run after a restart reaches the same tool call with the same id.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from roomkit.providers.ai.base import (
    AIContext,
    AIMessage,
    AIProvider,
    AIResponse,
    AIToolCall,
    AIToolResultPart,
)

__all__ = [
    "BOOK_TRIP",
    "BUDGETS",
    "SYSTEM_PROMPT",
    "TRIP_KINDS",
    "TripPlannerModel",
]

SYSTEM_PROMPT = (
    "You are a trip planner. Plan the user's trip by asking them, with AskUserQuestion, what "
    "kind of trip they want, where to, what to include, and when, for how much and for whom. "
    "Prefer questions with options. Then book the trip with book_trip (the user approves, edits "
    "or rejects the booking before it runs). Finish with a short summary of the plan."
)

BOOK_TRIP: dict[str, Any] = {
    "name": "book_trip",
    "description": "Book the planned trip (transport, stays and extras) within a budget per "
    "person. It runs only once a person approves it, as it is or as they edit it.",
    "parameters": {
        "type": "object",
        "properties": {
            "trip": {"type": "string", "description": "What and where, in a few words"},
            "dates": {"type": "string", "description": "When to travel"},
            "travellers": {"type": "integer", "minimum": 1, "maximum": 12},
            "includes": {"type": "array", "items": {"type": "string"}},
            "budget_eur": {
                "type": "number",
                "minimum": 50,
                "maximum": 20000,
                "description": "Most to spend per person, in EUR",
            },
        },
        "required": ["trip", "dates", "travellers", "budget_eur"],
        "additionalProperties": False,
    },
}
"""The booking tool (the arguments of :class:`~roomkit.providers.ai.base.AITool`)."""

BUDGETS = {"Under 500 EUR": 500, "500-1500 EUR": 1500, "No limit": 10000}
"""The budget per person the planner proposes for each answer to the budget question."""

TRIP_KINDS = ["City break", "Beach holiday", "Mountain hiking", "Road trip"]
_EXTRAS = ["Flights", "Hotel", "Car hire", "Guided tours", "Restaurant bookings"]
_PLAN_QUESTIONS: list[dict[str, Any]] = [
    {
        "question": "When do you want to leave?",
        "header": "Dates",
        "options": [
            {"label": "This weekend", "description": "Leave on Friday evening"},
            {"label": "Next month"},
            {"label": "In the autumn", "description": "September or October"},
        ],
        "multiSelect": False,
    },
    {
        "question": "What is your budget per person?",
        "header": "Budget",
        "options": [{"label": "Under 500 EUR"}, {"label": "500-1500 EUR"}, {"label": "No limit"}],
        "multiSelect": False,
    },
    {
        "question": "Who is coming?",
        "header": "Travellers",
        "options": [{"label": "Just me"}, {"label": "Two of us"}, {"label": "Family with kids"}],
        "multiSelect": False,
    },
]


def _decoded(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return content


def _answer(content: str) -> Any:
    """The answer in a tool result: the bare text, or the ``answer`` of a JSON body."""
    value = _decoded(content)
    if isinstance(value, dict) and "answer" in value:
        return value["answer"]
    return value


def _words(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value) or "nothing extra"
    return str(value).strip() or "-"


def _plan_answers(content: str) -> dict[str, str]:
    """The list form's answers by header (Dates, Budget, Travellers)."""
    value = _decoded(content)
    given = value.get("answers") if isinstance(value, dict) else None
    by_question = {}
    if isinstance(given, list):
        for item in given:
            if isinstance(item, dict):
                by_question[str(item.get("question", ""))] = _words(item.get("answer", ""))
    return {
        str(question["header"]): by_question.get(str(question["question"]), "-")
        for question in _PLAN_QUESTIONS
    }


def _thread(messages: list[AIMessage]) -> str:
    """A digest of the conversation up to the message that started the plan.

    The same conversation gives the same digest (a turn re-run reaches the same call id),
    and no two plans of a room share one, even once the history window has slid: the
    earlier calls' ids are part of what is digested.
    """
    digest = hashlib.sha256()
    for message in messages:
        calls = ",".join(part.id for part in message.tool_call_parts)
        digest.update(
            f"{message.role}\x1f{message.name}\x1f{message.text}\x1f{calls}\x1e".encode(
                "utf-8", "surrogatepass"
            )
        )
    return digest.hexdigest()[:12]


class TripPlannerModel(AIProvider):
    """A scripted trip planner: four rounds of questions, then a booking held for approval.

    The rounds of a turn, counted from the last user message: what kind of trip (one
    option), where to (free text), what to include (several options), dates, budget and
    travellers (the list form), then ``book_trip`` with the plan and the budget the answer
    suggests, then a reply from what the booking says (booked, booked as the person edited
    it, answered in its place, rejected). A refused, failed or timed-out question ends the
    turn with a reply saying so.
    """

    @property
    def model_name(self) -> str:
        """``"trip-planner"``."""
        return "trip-planner"

    async def generate(self, context: AIContext) -> AIResponse:
        """The next step of the plan, from the conversation alone."""
        messages = context.messages
        users = [i for i, message in enumerate(messages) if message.role == "user"]
        if not users:
            return AIResponse(content="Say hello to start planning a trip.")
        results: list[AIToolResultPart] = []
        for message in messages[users[-1] + 1 :]:
            results.extend(message.tool_result_parts)
        step = len(results)
        if results and results[-1].is_error:
            if step == 5:
                return AIResponse(content=_not_booked(results[-1], _summary(results)))
            return AIResponse(content=_stopped(results[-1]))
        call_id = f"plan-{_thread(messages[: users[-1] + 1])}-{step}"
        answers = [result.content for result in results]
        if step == 0:
            return _ask(
                call_id,
                "AskUserQuestion",
                {"question": "What kind of trip are you planning?", "options": TRIP_KINDS},
                "Happy to help you plan a trip.",
            )
        if step == 1:
            kind = _words(_answer(answers[0]))
            question = f"{kind} it is. Where would you like to go?"
            return _ask(call_id, "AskUserQuestion", {"question": question})
        if step == 2:
            arguments = {
                "question": "What should I include?",
                "options": _EXTRAS,
                "multiSelect": True,
            }
            return _ask(call_id, "AskUserQuestion", arguments)
        if step == 3:
            return _ask(call_id, "AskUserQuestion", {"questions": _PLAN_QUESTIONS})
        plan = _summary(results)
        if step == 4:
            return _ask(call_id, "book_trip", plan, f"Here is the plan: {plan['trip']}.")
        return AIResponse(content=_booked(answers[4], plan))


def _ask(call_id: str, tool: str, arguments: dict[str, Any], text: str = "") -> AIResponse:
    call = AIToolCall(id=call_id, name=tool, arguments=arguments)
    return AIResponse(content=text, finish_reason="tool_use", tool_calls=[call])


def _summary(results: list[AIToolResultPart]) -> dict[str, Any]:
    """The booking the answers call for: ``book_trip``'s arguments."""
    answers = [result.content for result in results]
    kind = _words(_answer(answers[0]))
    place = _words(_answer(answers[1]))
    extras = _answer(answers[2])
    plan = _plan_answers(answers[3])
    return {
        "trip": f"{_TRIP_NOUNS.get(kind, kind.lower())} to {place}",
        "dates": plan["Dates"],
        "travellers": _TRAVELLERS.get(plan["Travellers"], 1),
        "includes": [str(item) for item in extras] if isinstance(extras, list) else [],
        "budget_eur": BUDGETS.get(plan["Budget"], BUDGETS["No limit"]),
    }


def _line(booking: dict[str, Any]) -> str:
    """A booking as a sentence: "a beach holiday to Crete, next month, for two, ..."."""
    trip = str(booking.get("trip", "trip"))
    travellers = booking.get("travellers")
    count = _COUNTS.get(travellers, str(travellers)) if isinstance(travellers, int) else "-"
    budget = booking.get("budget_eur")
    parts = [
        f"{_article(trip)} {trip}",
        str(booking.get("dates", "-")).lower(),
        f"for {count}",
        f"up to {budget:g} EUR per person" if isinstance(budget, int | float) else "",
        f"with {_listed(booking.get('includes') or [])}",
    ]
    return ", ".join(part for part in parts if part)


def _booked(content: str, plan: dict[str, Any]) -> str:
    """The reply to what ``book_trip`` returned: it ran (as proposed or as edited), or a
    person answered in its place."""
    value = _decoded(content)
    if isinstance(value, dict) and value.get("source") == "person":
        return (
            f'Nothing booked: you answered instead ("{value.get("result", "")}"). Your plan '
            f"stays ready: {_line(plan)}. Say the word when you want to go ahead."
        )
    edited = isinstance(value, dict) and "changed" in value
    booking = _decoded(value["result"]) if edited else value
    if not isinstance(booking, dict):
        booking = plan
    changes = ""
    if edited and isinstance(value["changed"], dict):
        changes = " (as you edited it: " + ", ".join(sorted(value["changed"])) + ")"
    return f"Booked{changes}: {_line(booking)}. Enjoy the trip!"


def _not_booked(result: AIToolResultPart, plan: dict[str, Any]) -> str:
    """The reply to a booking that did not run: rejected, or nobody approved it in time."""
    error = _decoded(result.content)
    reason = error.get("reason") if isinstance(error, dict) else None
    message = str(error.get("error", "")) if isinstance(error, dict) else str(error)
    if "expired" in message:
        why = " (nobody approved it in time)"
    else:
        why = f" ({reason})" if reason and reason != "none given" else ""
    return (
        f"Nothing booked{why}. Your plan stays ready: {_line(plan)}. "
        "Say the word when you want to go ahead."
    )


_TRIP_NOUNS = {"Mountain hiking": "mountain hiking trip"}
"""A trip kind as a noun, where its label is not one ("a mountain hiking trip")."""
_TRAVELLERS = {"Just me": 1, "Two of us": 2, "Family with kids": 4}
_COUNTS = {1: "one", 2: "two", 3: "three", 4: "four"}


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _listed(value: Any) -> str:
    """Options picked, as a sentence says them: "flights, hotel and car hire"."""
    items = [str(item).lower() for item in value] if isinstance(value, list) else [_words(value)]
    if not items:
        return "nothing extra"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _stopped(result: AIToolResultPart) -> str:
    error = _decoded(result.content)
    message = error.get("error") if isinstance(error, dict) else None
    text = str(message or result.content or "")
    again = "Write again to start over."
    if "timed out" in text:
        return f"Nobody answered in time, so I stopped planning. {again}"
    if text.startswith(_REJECTED):
        reason = text.removeprefix(_REJECTED).strip()
        said = f' You said: "{reason}".' if reason else ""
        return f"Understood, you would rather not answer, so I stopped planning.{said} {again}"
    return f"That question was withdrawn, so I stopped planning. {again}"


_REJECTED = "Human input rejected:"
"""How a tool result starts when the person declined to answer."""

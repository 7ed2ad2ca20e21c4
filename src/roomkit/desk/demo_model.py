"""The demo agent's scripted model, which plays it without an API key.

The agent asks with the library's human-input tools
(:data:`roomkit.tools.human_input.ASK_USER_QUESTION` and
:data:`~roomkit.tools.human_input.CONFIRM_ACTION`). :class:`TripPlannerModel` plans a trip
by asking those questions, one per round, and books it once the person confirms. It reads
nothing but the conversation it is given: the same conversation always gives the same
response, so a turn re-run after a restart reaches the same tool call with the same id.
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
    "SYSTEM_PROMPT",
    "TRIP_KINDS",
    "TripPlannerModel",
]

SYSTEM_PROMPT = (
    "You are a trip planner. Plan the user's trip by asking them, with AskUserQuestion, what "
    "kind of trip they want, where to, what to include, and when, for how much and for whom. "
    "Prefer questions with options. Before booking anything, ask ConfirmAction and book only "
    "when the user confirms. Finish with a short summary of the plan."
)

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


def _confirmed(content: str) -> tuple[bool, str]:
    value = _decoded(content)
    if isinstance(value, dict):
        return value.get("confirmed") is True, str(value.get("reason") or "")
    return str(value).strip().lower() in {"yes", "true", "confirmed"}, ""


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
    """A scripted trip planner: five questions, one per round, then a booking or not.

    The rounds of a turn, counted from the last user message: what kind of trip (one
    option), where to (free text), what to include (several options), dates, budget and
    travellers (the list form), then ConfirmAction before "booking", then a summary built
    from the answers. A refused, failed or timed-out question ends the turn with a reply
    saying so.
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
        if results and results[-1].is_error:
            return AIResponse(content=_stopped(results[-1]))
        step = len(results)
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
        plan = _summary(answers)
        if step == 4:
            arguments = {"action": f"Book {plan['what']}", "details": plan["details"]}
            return _ask(call_id, "ConfirmAction", arguments)
        confirmed, reason = _confirmed(answers[4])
        if confirmed:
            return AIResponse(content=f"Booked: {plan['what']}, {plan['line']}. Enjoy the trip!")
        why = f" ({reason})" if reason else ""
        return AIResponse(
            content=f"Nothing booked{why}. Your plan stays ready: {plan['what']}, "
            f"{plan['line']}. Say the word when you want to go ahead."
        )


def _ask(call_id: str, tool: str, arguments: dict[str, Any], text: str = "") -> AIResponse:
    call = AIToolCall(id=call_id, name=tool, arguments=arguments)
    return AIResponse(content=text, finish_reason="tool_use", tool_calls=[call])


def _summary(answers: list[str]) -> dict[str, Any]:
    kind = _words(_answer(answers[0]))
    place = _words(_answer(answers[1]))
    extras = _answer(answers[2])
    plan = _plan_answers(answers[3])
    trip = f"{_TRIP_NOUNS.get(kind, kind.lower())} to {place}"
    details = {"Trip": trip, "Includes": _words(extras), **plan}
    line = ", ".join(
        [
            plan["Dates"].lower(),
            _TRAVELLERS.get(plan["Travellers"], f"for {plan['Travellers'].lower()}"),
            _BUDGETS.get(plan["Budget"], f"a budget of {plan['Budget']}"),
            f"with {_listed(extras)}",
        ]
    )
    return {"what": f"{_article(trip)} {trip}", "details": details, "line": line}


_TRIP_NOUNS = {"Mountain hiking": "mountain hiking trip"}
"""A trip kind as a noun, where its label is not one ("a mountain hiking trip")."""
_TRAVELLERS = {"Just me": "for one", "Two of us": "for two", "Family with kids": "for a family"}
_BUDGETS = {
    "Under 500 EUR": "under 500 EUR per person",
    "500-1500 EUR": "500-1500 EUR per person",
    "No limit": "no budget limit",
}


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

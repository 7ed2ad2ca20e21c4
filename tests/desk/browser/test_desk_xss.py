"""Nothing a model writes runs in the page: 500 payloads in every field the desk shows."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from desk_page import OpenPage, settled, wait_live
from desk_server import DeskServer
from playwright.sync_api import expect
from xss_payloads import payloads

from roomkit.desk.demo import DEMO_PERSON
from roomkit.notify.wording import shown

Take = Callable[[], str]

# Elements the page never makes: one of them under #desk means markup was parsed from data.
FOREIGN = (
    "script, img, svg, iframe, object, embed, video, audio, source, math, style, link, meta, "
    "base, a, marquee, noscript, select, body, title, textarea:not(.card textarea)"
)

# Event handlers anywhere in the body, and URL attributes holding a script or a document.
FIND_LIVE_CODE = """() => {
  const urls = ['href', 'src', 'action', 'formaction', 'xlink:href', 'data', 'srcdoc', 'poster'];
  const found = [];
  for (const node of document.body.querySelectorAll('*')) {
    for (const attribute of node.attributes) {
      const name = attribute.name.toLowerCase();
      const value = attribute.value.replace(/[\\s\\u0000-\\u001f]/g, '').toLowerCase();
      const scripted = value.startsWith('javascript:') || value.startsWith('data:');
      if (name.startsWith('on') || (urls.includes(name) && scripted)) {
        found.push(node.tagName + ' ' + name);
      }
    }
  }
  return found;
}"""


def _question(take: Take) -> tuple[str, dict[str, Any]]:
    return take(), {"question": take(), "options": [take(), take(), take()]}


def _several(take: Take) -> tuple[str, dict[str, Any]]:
    return take(), {"question": take(), "options": [take(), take()], "multiSelect": True}


def _free(take: Take) -> tuple[str, dict[str, Any]]:
    return take(), {"question": take()}


def _questions(take: Take) -> tuple[str, dict[str, Any]]:
    first = {
        "question": take(),
        "header": take(),
        "options": [{"label": take(), "description": take()}, {"label": take()}],
        "multiSelect": False,
    }
    second = {"question": take(), "options": [take(), take()], "multiSelect": True}
    return take(), {"questions": [first, second]}


def _confirm(take: Take) -> tuple[str, dict[str, Any]]:
    return take(), {"action": take(), "details": {take(): take(), "plain": take()}}


def _custom(take: Take) -> tuple[str, dict[str, Any]]:
    return take(), {"anything": take(), "nested": {"list": [take(), {"deep": take()}]}}


SHAPES = [_question, _several, _free, _questions, _confirm, _custom]


@pytest.fixture
def chat_room(desk: DeskServer) -> Iterator[str]:
    """A room with the chat and ``demo-user``, no agent: posted payloads stay as they are."""
    room_id = f"xss-{desk.new_room()}"

    async def setup() -> None:
        kit = desk.demo.kit
        await kit.create_room(room_id)
        await kit.add_participant(room_id, DEMO_PERSON)

    desk.run(setup())
    yield room_id
    desk.withdraw_open(room_id)


def _shown_as_json(payload: str) -> str:
    """The payload as the page prints it inside pretty-printed JSON."""
    return shown(json.dumps(payload, ensure_ascii=False)[1:-1])


@pytest.mark.parametrize("bypass_csp", [True, False], ids=["page-alone", "with-csp"])
def test_no_payload_runs_or_becomes_markup(
    desk: DeskServer, chat_room: str, open_page: OpenPage, bypass_csp: bool
) -> None:
    """Payloads in chat messages, question texts, options, headers, descriptions, actions,
    details, custom arguments, answer formats, tool names, refusal reasons and actor ids.

    ``page-alone`` switches the CSP off, so only the page's own text-only rendering stands
    between a payload and the trap.
    """
    remaining = iter(payloads(500))
    used: list[str] = []

    def take() -> str:
        used.append(next(remaining))
        return used[-1]

    person = {"Authorization": f"Bearer {desk.token(DEMO_PERSON)}"}
    chat = [f"{take()}\n{take()}" for _ in range(20)]
    with httpx.Client(base_url=desk.url, headers=person, timeout=30) as api:
        for text in chat:
            posted = api.post(f"/api/rooms/{chat_room}/messages", json={"text": text})
            assert posted.status_code == 202
    reasons = [take() for _ in range(10)]
    deciders = [take() for _ in range(5)]
    asked: dict[str, list[str]] = {}
    handler = desk.demo.handler
    for index in itertools.count():
        before = len(used)
        try:
            tool_name, arguments = SHAPES[index % len(SHAPES)](take)
            schema = {"type": "string", "description": take()} if index % 7 == 6 else None
        except StopIteration:
            break
        request = desk.run(
            handler.create_detached(
                tool_name, arguments, room_id=chat_room, actor_id=DEMO_PERSON, answer_schema=schema
            )
        )
        asked[request.pending_id] = used[before:]
    assert len(set(used)) == 500

    opened = open_page(desk.link(chat_room), bypass_csp=bypass_csp)
    page = opened.page
    wait_live(page)
    expect(page.locator(".card")).to_have_count(len(asked))
    expect(page.locator(".message")).to_have_count(len(chat))
    requests = list(asked)
    refusals = [
        (pending_id, "root", reason) for pending_id, reason in zip(requests, reasons, strict=False)
    ]
    refusals += [
        (pending_id, decider, "as someone else")
        for pending_id, decider in zip(requests[len(reasons) :], deciders, strict=False)
    ]
    with httpx.Client(base_url=desk.url, timeout=30) as api:
        for pending_id, actor, reason in refusals:
            headers = {"Authorization": f"Bearer {desk.token(actor, admin=True)}"}
            refused = api.post(
                f"/api/requests/{pending_id}/reject", json={"reason": reason}, headers=headers
            )
            assert refused.status_code == 200
    outcomes = settled(page, chat_room)
    expect(outcomes).to_have_count(len(refusals))
    page.locator(".card[data-kind=question] .choice").first.click()
    expect(outcomes).to_have_count(len(refusals) + 1)

    assert opened.xss_calls() == 0
    assert opened.dialogs == []
    assert page.locator('a[href^="javascript:" i]').count() == 0
    assert page.locator(f"#desk :is({FOREIGN})").count() == 0
    assert page.evaluate(FIND_LIVE_CODE) == []
    assert page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))") == ["desk.js"]
    hows = outcomes.locator(".settled-how").all_text_contents()
    declined = [shown(f"Declined by {actor}: {reason}") for _, actor, reason in refusals]
    assert declined == hows[:0:-1]
    still_open = page.locator(".card").evaluate_all("cards => cards.map(c => c.dataset.requestId)")
    text = page.evaluate("document.getElementById('desk').textContent")
    expected = [payload for pending_id in still_open for payload in asked[pending_id]]
    expected += chat
    missing = [p for p in expected if shown(p) not in text and _shown_as_json(p) not in text]
    assert missing == [], f"not shown as text: {missing!r}"


def test_no_answer_or_reason_in_the_history_runs_or_becomes_markup(
    desk: DeskServer, chat_room: str, open_page: OpenPage
) -> None:
    """Answers, option labels picked, confirmation reasons, refusal reasons and the actors
    who settled, all payloads, as the page's history shows them after a reload."""
    remaining = iter(payloads(60))
    handler = desk.demo.handler
    settled_as: list[str] = []

    async def ask_and_settle() -> None:
        async def ask(tool_name: str, arguments: dict[str, Any]) -> str:
            request = await handler.create_detached(
                tool_name, arguments, room_id=chat_room, actor_id=DEMO_PERSON
            )
            return request.pending_id

        for payload in itertools.islice(remaining, 10):
            free = await ask("AskUserQuestion", {"question": "Why?"})
            assert await handler.aresolve(free, payload, by=DEMO_PERSON)
            settled_as.append(payload)
        for first, second in itertools.islice(zip(remaining, remaining, strict=False), 5):
            question = {"question": "Pick", "options": [first, second], "multiSelect": True}
            several = await ask("AskUserQuestion", question)
            picked = json.dumps({"answer": [first, second]})
            assert await handler.aresolve(several, picked, by=DEMO_PERSON)
            settled_as.append(f"{first}, {second}")
        for reason, actor in itertools.islice(zip(remaining, remaining, strict=False), 5):
            confirm = await ask("ConfirmAction", {"action": "Go?"})
            reply = json.dumps({"confirmed": False, "reason": reason})
            assert await handler.aresolve(confirm, reply, by=actor)
            refused = await ask("AskUserQuestion", {"question": "Q?"})
            assert await handler.areject(refused, reason, by=actor)
            settled_as.extend([f"Declined by {actor}: {reason}"] * 2)

    desk.run(ask_and_settle())
    opened = open_page(desk.link(chat_room))
    page = opened.page
    wait_live(page)
    expect(settled(page, chat_room)).to_have_count(20)
    page.reload()
    wait_live(page)
    outcomes = settled(page, chat_room)
    expect(outcomes).to_have_count(20)

    assert opened.xss_calls() == 0
    assert opened.dialogs == []
    assert page.locator(f"#desk :is({FOREIGN})").count() == 0
    assert page.evaluate(FIND_LIVE_CODE) == []
    texts = outcomes.evaluate_all(
        "items => items.map(i => (i.querySelector('.settled-answer') || "
        "i.querySelector('.settled-how')).textContent)"
    )
    clipped = [shown(line if len(line) <= 200 else line[:199] + "…") for line in settled_as]
    assert texts == clipped[::-1][:20]


def _approval(take: Take, drawable: bool) -> tuple[str, dict[str, Any], dict[str, Any], str]:
    """A held call: tool name, arguments, the tool's schema and its description, payloads
    in every text (property names, titles, descriptions, enum values, argument values)."""
    key, flag, choice, listed = take(), take(), take(), take()
    options = [take(), take()]
    properties: dict[str, Any] = {
        key: {"type": "string", "title": take(), "description": take()},
        flag: {"type": "boolean"},
        choice: {"enum": options},
        listed: {"type": "array", "items": {"type": "string"}},
        "amount": {"type": "number", "minimum": 0, "description": take()},
    }
    if not drawable:
        properties["either"] = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    arguments = {
        key: take(),
        flag: True,
        choice: options[1],
        listed: [take(), take()],
        "amount": 3,
        "extra": {take(): take()},
    }
    schema = {"type": "object", "properties": properties, "required": [key]}
    return take(), arguments, schema, take()


@pytest.mark.parametrize("bypass_csp", [True, False], ids=["page-alone", "with-csp"])
def test_no_payload_in_an_approval_runs_or_becomes_markup(
    desk: DeskServer, chat_room: str, open_page: OpenPage, bypass_csp: bool
) -> None:
    """Payloads in tool names, descriptions, arguments, schemas (drawn as the edit form or
    the JSON editor), approvers and history entries, and in the decisions sent back."""
    remaining = iter(payloads(400))
    used: list[str] = []

    def take() -> str:
        used.append(next(remaining))
        return used[-1]

    handler = desk.demo.handler
    held: list[str] = []
    required: list[str] = []

    async def hold_all() -> None:
        for index in range(18):
            tool, arguments, schema, description = _approval(take, drawable=index % 3 != 2)
            request = await handler.create_approval(
                tool,
                arguments,
                approvers=(DEMO_PERSON, take()),
                tool_schema=schema,
                room_id=chat_room,
                actor_id=DEMO_PERSON,
                description=description,
            )
            await handler.add_approvers(request.pending_id, [take()], by=take(), surface=take())
            held.append(request.pending_id)
            required.append(schema["required"][0])

    desk.run(hold_all())
    opened = open_page(desk.link(chat_room), bypass_csp=bypass_csp)
    page = opened.page
    wait_live(page)
    cards = page.locator(".card[data-kind=approval]")
    expect(cards).to_have_count(len(held))
    expect(page.locator(".history-list li[data-type=escalated]")).to_have_count(len(held))
    for index in range(len(held)):
        one = cards.nth(index)
        one.locator(".history summary").click()
        one.get_by_role("button", name="Edit…").click()
    expect(page.locator(".edit-panel .object-field")).to_have_count(12)
    expect(page.locator(".edit-panel .json-editor")).to_have_count(6)
    first, second, third = (page.locator(f'.card[data-request-id="{i}"]') for i in held[:3])
    first.get_by_role("button", name="Edit as JSON").click()
    first.get_by_label("Arguments as JSON").fill(json.dumps({required[0]: take()}))
    first.get_by_role("button", name="Run with these arguments").click()
    second.get_by_role("button", name="Reject…").click()
    second.get_by_label("Why you reject it").fill(take())
    second.get_by_role("button", name="Reject", exact=True).click()
    third.get_by_role("button", name="Answer instead…").click()
    third.get_by_label("Your answer instead").fill(take())
    third.get_by_role("button", name="Send instead of running").click()
    expect(settled(page, chat_room)).to_have_count(3)

    assert opened.xss_calls() == 0
    assert opened.dialogs == []
    assert page.locator('a[href^="javascript:" i]').count() == 0
    assert page.locator(f"#desk :is({FOREIGN})").count() == 0
    assert page.evaluate(FIND_LIVE_CODE) == []
    assert page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))") == ["desk.js"]
    text = page.evaluate("document.getElementById('desk').textContent")
    shown_names = page.locator(".tool-name").all_text_contents()
    shown_descriptions = page.locator(".tool-description").all_text_contents()
    assert len(shown_names) == len(shown_descriptions) == len(held) - 3
    assert all(name in map(shown, used) for name in shown_names)
    assert all(description in map(shown, used) for description in shown_descriptions)
    missing = [p for p in used[-2:] if shown(p) not in text and _shown_as_json(p) not in text]
    assert missing == [], f"not shown as text: {missing!r}"

"""OpenAIAIProvider against a loopback fake of the Chat Completions API, through the real SDK."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fake_http import Reply, Sleeps, split_evenly, sse
from fake_openai import API_KEY, MODEL, FakeOpenAI, chunks, completion, error, streamed
from tests.providers.provider_kit import (
    ASK,
    LOOKUP,
    ask_context,
    closed_port,
    import_without_sdk,
    orphan_result_context,
    providers,
    unanswered_call_context,
)

from roomkit._extras import install_command
from roomkit.core.exceptions import (
    ProviderAuthError,
    ProviderOverloadedError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from roomkit.providers.ai.base import (
    AIContext,
    AIMessage,
    AIToolCall,
    AIToolResultPart,
)
from roomkit.providers.ai.openai import OpenAIAIProvider, OpenAIConfig

Make = Callable[..., OpenAIAIProvider]


@pytest.fixture
async def gpt(openai_api: FakeOpenAI, sleeps: Sleeps) -> AsyncIterator[Make]:
    settings = {"model": MODEL, "sleep": sleeps, "api_key": API_KEY, "base_url": openai_api.url}
    async with providers(OpenAIAIProvider, **settings) as make:
        yield make


async def test_context_becomes_a_chat_completions_request(
    gpt: Make, openai_api: FakeOpenAI
) -> None:
    lookup = AIToolCall(id="call_a", name="lookup", arguments={"q": "logo"})
    question = AIToolCall(id="call_b", name="AskUserQuestion", arguments={"question": "Colour?"})
    context = AIContext(
        system_prompt="Be brief.",
        messages=[
            AIMessage.user("Make me a logo", name="alice@example.com"),
            AIMessage.assistant("Let me check.", [lookup, question]),
            AIMessage.tool_results(
                [
                    AIToolResultPart(
                        tool_call_id="call_a",
                        name="lookup",
                        content='{"error": "Tool \'lookup\' failed"}',
                        is_error=True,
                    ),
                    AIToolResultPart(
                        tool_call_id="call_b", name="AskUserQuestion", content='{"answer": "blue"}'
                    ),
                ]
            ),
        ],
        tools=[ASK, LOOKUP],
        max_tokens=300,
        temperature=0.2,
    )
    openai_api.queue(completion("Done."))

    response = await gpt().generate(context)

    assert response.content == "Done."
    [body] = openai_api.bodies
    assert body["model"] == MODEL
    assert body["max_completion_tokens"] == 300
    assert body["temperature"] == 0.2
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Make me a logo", "name": "alice_example_com"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "logo"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {
                        "name": "AskUserQuestion",
                        "arguments": '{"question": "Colour?"}',
                    },
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "content": 'Error: {"error": "Tool \'lookup\' failed"}',
        },
        {"role": "tool", "tool_call_id": "call_b", "content": '{"answer": "blue"}'},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "AskUserQuestion",
                "parameters": ASK.parameters,
                "description": ASK.description,
            },
        },
        {"type": "function", "function": {"name": "lookup", "parameters": LOOKUP.parameters}},
    ]
    assert "stream" not in body


async def test_legacy_servers_get_max_tokens(gpt: Make, openai_api: FakeOpenAI) -> None:
    openai_api.queue(completion("ok"))
    provider = OpenAIAIProvider(
        OpenAIConfig(MODEL, api_key=API_KEY, base_url=openai_api.url, legacy_max_tokens=True),
        max_tokens=64,
    )
    try:
        await provider.generate(ask_context())
    finally:
        await provider.close()

    [body] = openai_api.bodies
    assert body["max_tokens"] == 64
    assert "max_completion_tokens" not in body


async def test_text_and_parallel_tool_calls_come_back(gpt: Make, openai_api: FakeOpenAI) -> None:
    openai_api.queue(
        completion(
            "Two things first.",
            calls=[
                ("call_1", "AskUserQuestion", '{"question": "Colour?"}'),
                ("call_2", "lookup", '{"q": "fonts"}'),
            ],
        )
    )

    response = await gpt().generate(ask_context())

    assert response.content == "Two things first."
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments, c.partial) for c in response.tool_calls] == [
        ("call_1", "AskUserQuestion", {"question": "Colour?"}, False),
        ("call_2", "lookup", {"q": "fonts"}, False),
    ]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (20, 9)


@pytest.mark.parametrize(
    ("arguments", "finish_reason"),
    [
        ('{"question": "Colo', "tool_calls"),
        ('["not", "an", "object"]', "tool_calls"),
        ('{"question": "Colour?"}', "length"),
    ],
    ids=["not-json", "not-an-object", "cut-by-length"],
)
async def test_unusable_call_arguments_come_back_partial(
    gpt: Make, openai_api: FakeOpenAI, arguments: str, finish_reason: str
) -> None:
    openai_api.queue(
        completion(calls=[("call_1", "AskUserQuestion", arguments)], finish_reason=finish_reason)
    )

    response = await gpt().generate(ask_context())

    [call] = response.tool_calls
    assert call.partial


async def test_rate_limit_is_retried_after_the_wait_the_vendor_asks(
    gpt: Make, openai_api: FakeOpenAI, sleeps: Sleeps
) -> None:
    openai_api.queue(
        error(
            429,
            "Rate limit reached",
            kind="requests",
            code="rate_limit_exceeded",
            headers={"retry-after-ms": "1500"},
        ),
        completion("Here now."),
    )

    response = await gpt().generate(ask_context())

    assert response.content == "Here now."
    assert sleeps.delays == [1.5]
    assert len(openai_api.requests) == 2


async def test_bad_key_is_an_auth_error_and_is_not_retried(
    gpt: Make, openai_api: FakeOpenAI, sleeps: Sleeps
) -> None:
    with pytest.raises(ProviderAuthError, match="Incorrect API key provided") as caught:
        await gpt(api_key="sk-wrong").generate(ask_context())

    assert (caught.value.provider, caught.value.status_code) == ("openai", 401)
    assert len(openai_api.requests) == 1
    assert sleeps.delays == []


async def test_server_errors_that_persist_raise_overloaded_after_bounded_backoff(
    gpt: Make, openai_api: FakeOpenAI, sleeps: Sleeps
) -> None:
    openai_api.queue(*[error(503, "The server is overloaded", kind="server_error")] * 4)

    with pytest.raises(ProviderOverloadedError, match="The server is overloaded"):
        await gpt(max_retries=3).generate(ask_context())

    assert len(openai_api.requests) == 4
    assert len(sleeps.delays) == 3
    assert all(0.25 <= delay <= 2.0 for delay in sleeps.delays)


async def test_tool_message_without_its_call_is_refused_as_a_request_error(
    gpt: Make, openai_api: FakeOpenAI, sleeps: Sleeps
) -> None:
    context = orphan_result_context("call_gone")

    with pytest.raises(ProviderRequestError, match="messages with role 'tool'") as caught:
        await gpt().generate(context)

    assert caught.value.status_code == 400
    assert sleeps.delays == []


async def test_tool_call_left_unanswered_is_refused_as_a_request_error(
    gpt: Make, openai_api: FakeOpenAI
) -> None:
    context = unanswered_call_context("call_1")

    with pytest.raises(ProviderRequestError, match="did not have response messages: call_1"):
        await gpt().generate(context)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"{not json"),
        Reply.json({"id": "chatcmpl-1", "object": "chat.completion", "choices": []}),
        Reply.json({"id": "chatcmpl-1", "choices": [{"index": 0}]}),
        Reply(body=b"<html>Bad gateway</html>", content_type="text/html"),
    ],
    ids=["invalid-json", "no-choice", "choice-without-message", "not-json-at-all"],
)
async def test_malformed_response_is_a_response_error(
    gpt: Make, openai_api: FakeOpenAI, reply: Reply, sleeps: Sleeps
) -> None:
    openai_api.queue(reply)

    with pytest.raises(ProviderResponseError):
        await gpt().generate(ask_context())

    assert sleeps.delays == []


async def test_unreachable_server_is_a_timeout_error_after_retries(
    gpt: Make, sleeps: Sleeps
) -> None:
    with pytest.raises(ProviderTimeoutError):
        await gpt(base_url=f"http://127.0.0.1:{closed_port()}/v1").generate(ask_context())

    assert len(sleeps.delays) == 2


async def test_streamed_tool_calls_split_across_chunks_are_assembled(
    gpt: Make, openai_api: FakeOpenAI
) -> None:
    events = chunks(
        ["Let me ", "ask."],
        calls=[
            ("call_1", "AskUserQuestion", ['{"ques', 'tion": "Wh', "ich col", 'our?"}']),
            ("call_2", "lookup", ['{"q"', ': "fonts"', "}"]),
        ],
    )
    # Cut every 11 bytes too, so chunks and JSON fragments straddle network reads.
    openai_api.queue(Reply.stream(split_evenly(sse(events), 11)))

    response = await gpt(stream=True).generate(ask_context())

    [body] = openai_api.bodies
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert response.content == "Let me ask."
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments, c.partial) for c in response.tool_calls] == [
        ("call_1", "AskUserQuestion", {"question": "Which colour?"}, False),
        ("call_2", "lookup", {"q": "fonts"}, False),
    ]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (33, 44)


async def test_streamed_call_cut_by_length_is_partial(gpt: Make, openai_api: FakeOpenAI) -> None:
    openai_api.queue(
        streamed(
            calls=[("call_1", "AskUserQuestion", ['{"question": "Which col'])],
            finish_reason="length",
        )
    )

    response = await gpt(stream=True).generate(ask_context())

    [call] = response.tool_calls
    assert call.partial
    assert call.metadata["raw_arguments"] == '{"question": "Which col'


async def test_stream_that_ends_unfinished_is_a_response_error(
    gpt: Make, openai_api: FakeOpenAI
) -> None:
    openai_api.queue(streamed(["Hel"], finish=False))

    with pytest.raises(ProviderResponseError, match="before the completion was finished"):
        await gpt(stream=True).generate(ask_context())


async def test_server_error_inside_a_stream_is_retried(
    gpt: Make, openai_api: FakeOpenAI, sleeps: Sleeps
) -> None:
    failed = {"error": {"message": "The server had an error", "type": "server_error"}}
    cut = [*chunks(["Hel"], finish=False), (None, failed)]
    openai_api.queue(Reply.stream(sse(cut)), streamed(["Hello."]))

    response = await gpt(stream=True).generate(ask_context())

    assert response.content == "Hello."
    assert len(sleeps.delays) == 1


async def test_stream_yields_text_as_it_arrives(gpt: Make, openai_api: FakeOpenAI) -> None:
    openai_api.queue(streamed(["Hel", "lo", " there."]))

    pieces = [piece async for piece in gpt().stream(ask_context())]

    assert pieces == ["Hel", "lo", " there."]


async def test_base_url_and_key_come_from_the_sdk_environment_variables(
    openai_api: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_api.url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    openai_api.queue(completion("From the environment."))
    provider = OpenAIAIProvider(model=MODEL)
    try:
        response = await provider.generate(ask_context())
    finally:
        await provider.close()

    assert response.content == "From the environment."


async def test_keywords_override_the_config() -> None:
    config = OpenAIConfig(MODEL, api_key="k", temperature=0.5, max_retries=4)
    provider = OpenAIAIProvider(config, temperature=0.1, stream=True)
    try:
        assert provider.config == OpenAIConfig(
            MODEL, api_key="k", temperature=0.1, max_retries=4, stream=True
        )
        assert provider.model_name == MODEL
    finally:
        await provider.close()


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"timeout": -1}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"model": ""}, "needs a model"),
    ],
)
def test_bad_settings_are_refused_at_once(settings: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        OpenAIConfig(**{"model": MODEL, **settings})


def test_missing_credentials_are_refused_at_once(clean_vendor_env: None) -> None:
    """The message names what this constructor takes, not the SDK's other arguments."""
    with pytest.raises(ProviderAuthError) as caught:
        OpenAIAIProvider(model=MODEL)

    assert caught.value.args[0] == "No OpenAI API key: pass api_key= or set OPENAI_API_KEY"


def test_a_model_is_required() -> None:
    with pytest.raises(TypeError, match="model="):
        OpenAIAIProvider(api_key="k")


@pytest.mark.parametrize("keyword", ["modle", "legacy_max_tokens"])
def test_a_keyword_that_is_no_setting_is_refused(keyword: str) -> None:
    """Only the settings the constructor names are taken; the rest go through the config."""
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
        OpenAIAIProvider(model=MODEL, api_key="k", **{keyword: 1})


def test_importing_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    needed = r"needs the openai extra .*: " + re.escape(install_command("openai"))
    with pytest.raises(ImportError, match=needed):
        import_without_sdk(monkeypatch, "openai", "roomkit.providers.ai.openai")

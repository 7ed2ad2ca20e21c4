"""AnthropicAIProvider against a loopback fake of the Messages API, through the real SDK."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import API_KEY, MODEL, FakeAnthropic, error, message, stream_events, streamed
from fake_http import Reply, Sleeps, split_evenly, sse
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
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from roomkit.providers.ai.anthropic import AnthropicAIProvider, AnthropicConfig
from roomkit.providers.ai.base import (
    AIContext,
    AIMessage,
    AIToolCall,
    AIToolResultPart,
)

Make = Callable[..., AnthropicAIProvider]


@pytest.fixture
async def claude(anthropic_api: FakeAnthropic, sleeps: Sleeps) -> AsyncIterator[Make]:
    settings = {"model": MODEL, "sleep": sleeps, "api_key": API_KEY, "base_url": anthropic_api.url}
    async with providers(AnthropicAIProvider, **settings) as make:
        yield make


async def test_context_becomes_a_messages_request(
    claude: Make, anthropic_api: FakeAnthropic
) -> None:
    lookup = AIToolCall(id="toolu_a", name="lookup", arguments={"q": "logo"})
    question = AIToolCall(id="toolu_b", name="AskUserQuestion", arguments={"question": "Colour?"})
    context = AIContext(
        system_prompt="Be brief.",
        messages=[
            AIMessage(role="system", content="Answer in English."),
            AIMessage.user("Make me a logo", name="alice"),
            AIMessage.assistant("Let me check.", [lookup, question]),
            AIMessage.tool_results(
                [
                    AIToolResultPart(
                        tool_call_id="toolu_a",
                        name="lookup",
                        content='{"error": "Tool \'lookup\' failed"}',
                        is_error=True,
                    ),
                    AIToolResultPart(
                        tool_call_id="toolu_b", name="AskUserQuestion", content='{"answer": "blue"}'
                    ),
                ]
            ),
            AIMessage.user("Make it round too.", name="alice"),
        ],
        tools=[ASK, LOOKUP],
        max_tokens=512,
    )
    anthropic_api.queue(message("Done."))

    response = await claude().generate(context)

    assert response.content == "Done."
    [body] = anthropic_api.bodies
    assert body["model"] == MODEL
    assert body["max_tokens"] == 512
    assert body["system"] == "Be brief.\n\nAnswer in English."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Make me a logo"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_a", "name": "lookup", "input": {"q": "logo"}},
                {
                    "type": "tool_use",
                    "id": "toolu_b",
                    "name": "AskUserQuestion",
                    "input": {"question": "Colour?"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": '{"error": "Tool \'lookup\' failed"}',
                    "is_error": True,
                },
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": '{"answer": "blue"}'},
                {"type": "text", "text": "Make it round too."},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "AskUserQuestion", "input_schema": ASK.parameters, "description": ASK.description},
        {"name": "lookup", "input_schema": LOOKUP.parameters},
    ]
    assert "stream" not in body


async def test_text_and_parallel_tool_calls_come_back(
    claude: Make, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.queue(
        message(
            "Two things first.",
            tool_uses=[
                ("toolu_1", "AskUserQuestion", {"question": "Colour?"}),
                ("toolu_2", "lookup", {"q": "fonts"}),
            ],
        )
    )

    response = await claude().generate(ask_context())

    assert response.content == "Two things first."
    assert response.finish_reason == "tool_use"
    assert [(c.id, c.name, c.arguments, c.partial) for c in response.tool_calls] == [
        ("toolu_1", "AskUserQuestion", {"question": "Colour?"}, False),
        ("toolu_2", "lookup", {"q": "fonts"}, False),
    ]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (25, 12)
    assert response.metadata == {"id": "msg_01", "model": MODEL}


async def test_tool_call_cut_at_max_tokens_is_partial(
    claude: Make, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.queue(
        message(tool_uses=[("toolu_1", "AskUserQuestion", {"quest": ""})], stop_reason="max_tokens")
    )

    response = await claude().generate(ask_context())

    assert response.finish_reason == "max_tokens"
    assert response.tool_calls[0].partial


async def test_rate_limit_is_retried_after_the_wait_the_vendor_asks(
    claude: Make, anthropic_api: FakeAnthropic, sleeps: Sleeps
) -> None:
    anthropic_api.queue(
        error(
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
            headers={"retry-after": "3"},
        ),
        message("Here now."),
    )

    response = await claude().generate(ask_context())

    assert response.content == "Here now."
    assert sleeps.delays == [3.0]
    assert len(anthropic_api.requests) == 2


async def test_rate_limit_that_persists_raises_the_typed_error(
    claude: Make, anthropic_api: FakeAnthropic, sleeps: Sleeps
) -> None:
    anthropic_api.queue(*[error(429, "rate_limit_error", "Slow down")] * 3)

    with pytest.raises(ProviderRateLimitError, match="Slow down") as caught:
        await claude().generate(ask_context())

    assert caught.value.status_code == 429
    assert len(anthropic_api.requests) == 3


async def test_bad_key_is_an_auth_error_and_is_not_retried(
    claude: Make, anthropic_api: FakeAnthropic, sleeps: Sleeps
) -> None:
    with pytest.raises(ProviderAuthError, match="invalid x-api-key") as caught:
        await claude(api_key="sk-ant-wrong").generate(ask_context())

    assert (caught.value.provider, caught.value.status_code) == ("anthropic", 401)
    assert len(anthropic_api.requests) == 1
    assert sleeps.delays == []


async def test_overload_that_persists_raises_overloaded_after_bounded_backoff(
    claude: Make, anthropic_api: FakeAnthropic, sleeps: Sleeps
) -> None:
    anthropic_api.queue(*[error(529, "overloaded_error", "Overloaded")] * 3)

    with pytest.raises(ProviderOverloadedError, match="Overloaded") as caught:
        await claude().generate(ask_context())

    assert caught.value.status_code == 529
    assert caught.value.retryable
    assert len(anthropic_api.requests) == 3
    first, second = sleeps.delays
    assert 0.25 <= first <= 0.5
    assert 0.5 <= second <= 1.0


async def test_server_error_is_an_overload(claude: Make, anthropic_api: FakeAnthropic) -> None:
    anthropic_api.queue(error(500, "api_error", "Internal server error"))

    with pytest.raises(ProviderOverloadedError, match="Internal server error"):
        await claude(max_retries=0).generate(ask_context())


async def test_tool_result_without_its_call_is_refused_as_a_request_error(
    claude: Make, anthropic_api: FakeAnthropic, sleeps: Sleeps
) -> None:
    context = orphan_result_context("toolu_gone")

    with pytest.raises(ProviderRequestError, match="unexpected `tool_use_id`") as caught:
        await claude().generate(context)

    assert caught.value.status_code == 400
    assert sleeps.delays == []


async def test_tool_call_left_unanswered_is_refused_as_a_request_error(
    claude: Make, anthropic_api: FakeAnthropic
) -> None:
    context = unanswered_call_context("toolu_1")

    with pytest.raises(ProviderRequestError, match="without `tool_result` blocks"):
        await claude().generate(context)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"{not json"),
        Reply.json({"id": "msg_1", "content": "not a list of blocks"}),
        Reply.json(
            {"type": "message", "content": [{"type": "tool_use", "name": "AskUserQuestion"}]}
        ),
        Reply(body=b"<html>Bad gateway</html>", content_type="text/html"),
    ],
    ids=["invalid-json", "content-not-a-list", "tool-use-without-id", "not-json-at-all"],
)
async def test_malformed_response_is_a_response_error(
    claude: Make, anthropic_api: FakeAnthropic, reply: Reply, sleeps: Sleeps
) -> None:
    anthropic_api.queue(reply)

    with pytest.raises(ProviderResponseError):
        await claude().generate(ask_context())

    assert sleeps.delays == []


async def test_unreachable_server_is_a_timeout_error_after_retries(
    claude: Make, sleeps: Sleeps
) -> None:
    with pytest.raises(ProviderTimeoutError) as caught:
        await claude(base_url=f"http://127.0.0.1:{closed_port()}").generate(ask_context())

    assert isinstance(caught.value, TimeoutError)
    assert len(sleeps.delays) == 2


async def test_streamed_tool_calls_split_across_chunks_are_assembled(
    claude: Make, anthropic_api: FakeAnthropic
) -> None:
    events = stream_events(
        ["Let me ", "ask."],
        tool_uses=[
            ("toolu_1", "AskUserQuestion", ['{"ques', 'tion": "Wh', "ich col", 'our?"}']),
            ("toolu_2", "lookup", ["", '{"q"', ': "fonts"', "}"]),
        ],
    )
    # Cut every 7 bytes too, so events and JSON fragments straddle network chunks.
    anthropic_api.queue(Reply.stream(split_evenly(sse(events), 7)))

    response = await claude(stream=True).generate(ask_context())

    assert anthropic_api.bodies[0]["stream"] is True
    assert response.content == "Let me ask."
    assert response.finish_reason == "tool_use"
    assert [(c.id, c.name, c.arguments, c.partial) for c in response.tool_calls] == [
        ("toolu_1", "AskUserQuestion", {"question": "Which colour?"}, False),
        ("toolu_2", "lookup", {"q": "fonts"}, False),
    ]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 40)


async def test_streamed_call_cut_by_max_tokens_is_partial(
    claude: Make, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.queue(
        streamed(
            tool_uses=[("toolu_1", "AskUserQuestion", ['{"question": "Which col'])],
            stop_reason="max_tokens",
        )
    )

    response = await claude(stream=True).generate(ask_context())

    [call] = response.tool_calls
    assert call.partial
    assert call.metadata["raw_arguments"] == '{"question": "Which col'


async def test_stream_that_ends_before_the_message_is_a_response_error(
    claude: Make, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.queue(streamed(["Hel"], finish=False))

    with pytest.raises(ProviderResponseError, match="ended before"):
        await claude(stream=True).generate(ask_context())


async def test_overload_reported_inside_a_stream_is_retried(
    claude: Make, anthropic_api: FakeAnthropic, sleeps: Sleeps
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    cut = [*stream_events(["Hel"], finish=False)[:3], ("error", overloaded)]
    anthropic_api.queue(Reply.stream(sse(cut)), streamed(["Hello."]))

    response = await claude(stream=True).generate(ask_context())

    assert response.content == "Hello."
    assert len(sleeps.delays) == 1


async def test_stream_yields_text_as_it_arrives(claude: Make, anthropic_api: FakeAnthropic) -> None:
    anthropic_api.queue(streamed(["Hel", "lo", " there."]))

    pieces = [piece async for piece in claude().stream(ask_context())]

    assert pieces == ["Hel", "lo", " there."]


async def test_base_url_comes_from_the_sdk_environment_variable(
    anthropic_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_api.url)
    anthropic_api.queue(message("From the environment."))
    provider = AnthropicAIProvider(model=MODEL, api_key=API_KEY)
    try:
        response = await provider.generate(ask_context())
    finally:
        await provider.close()

    assert response.content == "From the environment."
    assert len(anthropic_api.requests) == 1


async def test_api_key_comes_from_the_sdk_environment_variable(
    anthropic_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    anthropic_api.queue(message("Key from the environment."))
    provider = AnthropicAIProvider(model=MODEL, base_url=anthropic_api.url)
    try:
        response = await provider.generate(ask_context())
    finally:
        await provider.close()

    assert response.content == "Key from the environment."


async def test_keywords_override_the_config() -> None:
    config = AnthropicConfig(MODEL, api_key="k", max_tokens=100, max_retries=5)
    provider = AnthropicAIProvider(config, stream=True, max_tokens=200)
    try:
        assert provider.config == AnthropicConfig(
            MODEL, api_key="k", max_tokens=200, max_retries=5, stream=True
        )
        assert provider.model_name == MODEL
        assert provider.supports_streaming
    finally:
        await provider.close()


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"timeout": 0}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"retry_max_wait": -1.0}, "max_wait"),
        ({"model": ""}, "needs a model"),
    ],
)
def test_bad_settings_are_refused_at_once(settings: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        AnthropicConfig(**{"model": MODEL, **settings})


def test_missing_credentials_are_refused_at_once(
    clean_vendor_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No key given, none in the environment, no profile on disk: the provider says so."""
    monkeypatch.setenv("HOME", str(tmp_path))

    with pytest.raises(ProviderAuthError, match="ANTHROPIC_API_KEY"):
        AnthropicAIProvider(model=MODEL)


def test_a_model_is_required() -> None:
    with pytest.raises(TypeError, match="model="):
        AnthropicAIProvider(api_key="k")


@pytest.mark.parametrize("keyword", ["modle", "retry_max_wait"])
def test_a_keyword_that_is_no_setting_is_refused(keyword: str) -> None:
    """Only the settings the constructor names are taken; the rest go through the config."""
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
        AnthropicAIProvider(model=MODEL, api_key="k", **{keyword: 1})


def test_importing_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    needed = r"needs the anthropic extra .*: " + re.escape(install_command("anthropic"))
    with pytest.raises(ImportError, match=needed):
        import_without_sdk(monkeypatch, "anthropic", "roomkit.providers.ai.anthropic")

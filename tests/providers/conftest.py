"""Fixtures for the vendor providers: loopback fakes of each API, and a sleep that does not wait."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_anthropic import FakeAnthropic
from fake_http import Sleeps
from fake_openai import FakeOpenAI

_VENDOR_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CONFIG_DIR",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_FEDERATION_RULE_ID",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "ANTHROPIC_ORGANIZATION_ID",
    "ANTHROPIC_PROFILE",
    "OPENAI_ADMIN_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_CUSTOM_HEADERS",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
)


@pytest.fixture
def clean_vendor_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No vendor variable from the machine's environment reaches the SDKs."""
    for name in _VENDOR_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def anthropic_api(clean_vendor_env: None) -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def openai_api(clean_vendor_env: None) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake

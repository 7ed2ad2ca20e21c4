"""Fixtures for the realtime voice channel tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.channels.realtime_voice.voice_harness import MakeVoice, voice_kits


@pytest.fixture
async def make() -> AsyncIterator[MakeVoice]:
    """``await make(human=..., provider=..., **channel_options)`` builds a voice harness."""
    async with voice_kits() as builder:
        yield builder

"""The AG-UI tests' front: a desk and the AG-UI router on one app, asking one question."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from agui_front import DONE, Front, ask


@pytest.fixture
async def front() -> AsyncIterator[Front]:
    made = Front([ask(), DONE])
    yield made
    await made.close()

"""Each adapter, its framework missing, says which extra to install."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

from roomkit._extras import install_command


@pytest.mark.parametrize(
    ("adapter", "framework", "extra"),
    [
        ("roomkit.adapters.langgraph", "langgraph.types", "langgraph"),
        ("roomkit.adapters.openai_agents", "agents", "openai-agents"),
        ("roomkit.adapters.pydantic_ai", "pydantic_ai.tools", "pydantic-ai"),
    ],
)
def test_a_missing_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, adapter: str, framework: str, extra: str
) -> None:
    for name in [name for name in sys.modules if name == adapter or name.startswith(adapter + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, framework, None)
    with pytest.raises(ImportError, match=re.escape(install_command(extra))):
        importlib.import_module(adapter)

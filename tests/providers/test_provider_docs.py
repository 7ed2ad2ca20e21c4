"""docs/how-to/real-models.md: its Python blocks run, in order, in one namespace (nothing is
sent)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roomkit.providers.ai.base import AIProvider

DOC = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "real-models.md"


async def test_provider_docs_blocks_build_the_providers_they_show(clean_vendor_env: None) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    namespace: dict[str, object] = {"__name__": "providers_doc"}
    try:
        for index, block in enumerate(blocks):
            exec(compile(block, f"real-models.md block {index}", "exec"), namespace)
        providers = {name for name, value in namespace.items() if isinstance(value, AIProvider)}
        assert providers == {"claude", "streaming", "gpt", "local", "vllm", "test_provider"}
        assert namespace["streaming"].config.stream  # type: ignore[attr-defined]
        assert namespace["vllm"].config.legacy_max_tokens  # type: ignore[attr-defined]
    finally:
        for value in namespace.values():
            if isinstance(value, AIProvider):
                await value.close()


@pytest.mark.parametrize("module", ["anthropic", "openai"])
def test_provider_docs_name_the_extra_to_install(module: str) -> None:
    assert f"pip install -e '.[{module}]'" in DOC.read_text()

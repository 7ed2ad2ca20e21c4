"""The code blocks of the Temporal how-to run: the workflow and the worker below it as one
module, as the page has them, each other block in a fresh namespace; and that module books a
trip on the dev server."""

from __future__ import annotations

import asyncio
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from temporalio.client import Client
from tests.adapters.temporal.conftest import Created
from tests.adapters.temporal.temporal_server import TemporalServer

from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

PAGE = Path(__file__).resolve().parents[3] / "docs" / "how-to" / "temporal.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
MODULE = f"{BLOCKS[0]}\n\n{BLOCKS[1]}"
"""The workflow's block and the worker's, which names the workflow, in one module."""
PIECES = [MODULE, *BLOCKS[2:]]
UNPASSED = re.sub(
    r"with workflow\.unsafe\.imports_passed_through\(\):\n((?:    .*\n)+)",
    lambda found: "".join(line[4:] + "\n" for line in found.group(1).splitlines()),
    MODULE,
)
"""The same module with its roomkit imports made in the sandbox, not passed through."""


@pytest.fixture
def host_modules() -> Iterator[None]:
    """The sandbox imports roomkit's modules afresh, and each import binds the new module
    to its parent package, which may be the host's: the host's packages get their own
    modules back, so that later tests see one class per name."""
    yield
    for name, module in list(sys.modules.items()):
        parent, _, child = name.rpartition(".")
        package = sys.modules.get(parent)
        if name.startswith("roomkit.") and isinstance(package, ModuleType):
            bound = vars(package).get(child)
            if isinstance(bound, ModuleType) and bound is not module:
                setattr(package, child, module)


@pytest.mark.parametrize("index", range(len(PIECES)))
def test_the_how_to_block_runs(index: int) -> None:
    exec(compile(PIECES[index], f"{PAGE.name} piece {index}", "exec"), {"__name__": "docs"})


@pytest.mark.usefixtures("host_modules")
@pytest.mark.parametrize(("name", "module"), [("trip_how_to", MODULE), ("trip_unpassed", UNPASSED)])
async def test_the_how_to_workflow_and_worker_in_one_module_book_a_trip(
    name: str,
    module: str,
    temporal_server: TemporalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker's sandbox re-imports the module: with every roomkit import in it passed
    through, as the page has it, and with none (importing roomkit touches nothing the
    sandbox refuses, such as the home folder)."""
    assert "imports_passed_through" not in UNPASSED
    (tmp_path / f"{name}.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    page = importlib.import_module(name)
    path = str(tmp_path / "kit.db")
    client = await Client.connect(temporal_server.address)
    desk_store = SQLiteStore(path)
    desk = HumanInputHandler(store=desk_store)
    created = Created(desk)
    serving = asyncio.create_task(page.serve(client, path))

    async def asked() -> str:
        """The next request made, unless the worker stopped first (its error, then)."""
        waiting = asyncio.ensure_future(created.next())
        await asyncio.wait({waiting, serving}, return_when=asyncio.FIRST_COMPLETED)
        if serving.done():
            waiting.cancel()
            serving.result()
        return await waiting

    try:
        handle = await client.start_workflow(
            page.TripWorkflow.run, {"to": "Lisbon"}, id=f"how-to-{name}", task_queue="trips"
        )
        hotel = await asked()
        assert await desk.aresolve(hotel, "Avenida", by="alice")
        booking = await asked()
        assert await desk.aresolve(booking, approve(), by="alice")
        assert await desk.aresolve(booking, approve(), by="bob")
        async with asyncio.timeout(60):
            assert await handle.result() == "booking {'to': 'Lisbon'} at Avenida"
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        created.undo()
        await desk_store.close()

"""The loop every durable store batches its calls by, with a step of the test's own: the
in-flight limit, a fault of a whole batch, a batch cancelled, a caller cancelled before its
turn. What each store's step does with its batch is in that store's tests (one bad call
failing alone: ``test_store_text.py``, ``test_postgres_settles.py``)."""

from __future__ import annotations

import asyncio

import pytest

from roomkit.stores._batching import Batcher, Call


class Steps:
    """A step that records each batch it is handed and holds it until released."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.started = asyncio.Event()
        self.release: asyncio.Future[None] | None = None

    async def __call__(self, batch: list[Call[str, str]]) -> None:
        self.batches.append([call.value for call in batch])
        self.started.set()
        if self.release is not None:
            await self.release
        for call in batch:
            if call.value.startswith("bad"):
                call.fail(ValueError(call.value))
            else:
                call.resolve(call.value.upper())


async def test_calls_of_one_loop_turn_share_a_batch_and_each_hears_its_own() -> None:
    steps = Steps()
    batcher = Batcher(steps, max_batch=8, max_in_flight=1)

    outcomes = await asyncio.gather(
        batcher.submit("a"), batcher.submit("bad b"), batcher.submit("c"), return_exceptions=True
    )

    assert steps.batches == [["a", "bad b", "c"]]
    assert outcomes[0] == "A"
    assert isinstance(outcomes[1], ValueError)
    assert outcomes[2] == "C"


async def test_no_more_batches_run_at_once_than_max_in_flight() -> None:
    steps = Steps()
    steps.release = asyncio.get_running_loop().create_future()
    batcher = Batcher(steps, max_batch=2, max_in_flight=2)
    calls = [asyncio.ensure_future(batcher.submit(value)) for value in "abcde"]

    while len(steps.batches) < 2:
        steps.started.clear()
        await steps.started.wait()
    assert steps.batches == [["a", "b"], ["c", "d"]]  # "e" waits for one of them to end

    steps.release.set_result(None)
    assert await asyncio.gather(*calls) == ["A", "B", "C", "D", "E"]
    assert steps.batches == [["a", "b"], ["c", "d"], ["e"]]


async def test_a_fault_of_the_whole_batch_fails_its_calls_and_spares_the_next() -> None:
    async def step(batch: list[Call[str, str]]) -> None:
        batch[0].resolve("settled first")
        if batch[0].value == "broken":
            raise ConnectionError("the server went away")

    batcher = Batcher(step, max_batch=8, max_in_flight=1)

    outcomes = await asyncio.gather(
        batcher.submit("broken"), batcher.submit("x"), return_exceptions=True
    )

    assert outcomes[0] == "settled first"  # what the step settled before the fault stands
    assert isinstance(outcomes[1], ConnectionError)
    assert await batcher.submit("later") == "settled first"


async def test_a_cancelled_batch_cancels_its_calls_and_those_queued() -> None:
    async def step(batch: list[Call[str, str]]) -> None:
        if batch[0].value == "shutdown":
            raise asyncio.CancelledError
        for call in batch:
            call.resolve(call.value)

    batcher = Batcher(step, max_batch=1, max_in_flight=1)
    running = asyncio.ensure_future(batcher.submit("shutdown"))
    queued = asyncio.ensure_future(batcher.submit("queued"))

    for call in (running, queued):
        with pytest.raises(asyncio.CancelledError):
            await call
    await batcher.wait_idle()
    assert await batcher.submit("after") == "after"


async def test_a_call_cancelled_before_its_batch_is_taken_never_runs() -> None:
    steps = Steps()
    batcher = Batcher(steps, max_batch=8, max_in_flight=1)
    kept = asyncio.ensure_future(batcher.submit("kept"))
    dropped = asyncio.ensure_future(batcher.submit("dropped"))
    await asyncio.sleep(0)  # both are queued; the batch is taken on the next turn
    dropped.cancel()

    assert await kept == "KEPT"
    assert steps.batches == [["kept"]]
    assert dropped.cancelled()


async def test_two_calls_with_one_key_never_share_a_batch() -> None:
    steps = Steps()
    batcher = Batcher(steps, max_batch=8, max_in_flight=1, key=lambda value: value[0])

    outcomes = await asyncio.gather(
        batcher.submit("a1"), batcher.submit("b1"), batcher.submit("a2")
    )

    assert outcomes == ["A1", "B1", "A2"]
    assert steps.batches == [["a1", "b1"], ["a2"]]


async def test_wait_idle_returns_once_the_queued_calls_have_run() -> None:
    steps = Steps()
    batcher = Batcher(steps, max_batch=1, max_in_flight=1)
    calls = [asyncio.ensure_future(batcher.submit(value)) for value in "ab"]
    await asyncio.sleep(0)  # both are queued

    await batcher.wait_idle()

    assert all(call.done() for call in calls)
    assert steps.batches == [["a"], ["b"]]

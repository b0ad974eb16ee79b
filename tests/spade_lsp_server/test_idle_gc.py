"""Full garbage collections run when the client pauses, never on their own in the middle of a request."""

from __future__ import annotations

import asyncio
import gc

from spade_lsp_server._idle_gc import IdleCollector


def _full_collections() -> int:
    return int(gc.get_stats()[2]["collections"])


def _make_due(collector: IdleCollector) -> None:
    while not collector.due():
        gc.collect(1)  # what allocations do over time: collections of the middle generation


def test_a_due_full_collection_waits_for_a_pause_and_the_thresholds_come_back() -> None:
    before = gc.get_threshold()

    async def scenario() -> tuple[int, int, int]:
        collector = IdleCollector(asyncio.get_running_loop(), idle_s=0.05, max_delay_s=3600)
        try:
            assert gc.get_threshold()[2] > 10**9  # CPython's own full passes are off
            _make_due(collector)
            start = _full_collections()
            for _ in range(5):  # a burst of messages, closer together than the pause
                collector.activity()
                await asyncio.sleep(0.01)
            during = _full_collections() - start
            await asyncio.sleep(0.2)  # the client pauses
            after_pause = _full_collections() - start
            assert not collector.due()
            collector.activity()
            await asyncio.sleep(0.2)  # another pause, nothing due: no needless pass
            return during, after_pause, _full_collections() - start
        finally:
            collector.close()

    during, after_pause, finally_ = asyncio.run(scenario())
    assert (during, after_pause, finally_) == (0, 1, 1)
    assert gc.get_threshold() == before


def test_a_burst_that_never_pauses_still_gets_its_full_collection() -> None:
    async def scenario() -> int:
        collector = IdleCollector(asyncio.get_running_loop(), idle_s=3600, max_delay_s=0)
        try:
            _make_due(collector)
            start = _full_collections()
            collector.activity()  # due, and waited long enough: collected now
            return _full_collections() - start
        finally:
            collector.close()

    assert asyncio.run(scenario()) == 1

"""Benchmark: ten clients of one daemon each submit a synthesis job for a prompt of its own; the jobs run side by
side and all ten are done in under 15 s (submission to the last job's end, the clients' view). The functional
side (every client hears about every job, the daemon counts ten clients) is
tests/spade_lsp_server/daemon/test_daemon.py::test_ten_clients_all_get_every_notification_and_their_jobs_done.
Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_daemon_bench.py``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from spade_lsp_client import DaemonClient
from tests.spade_lsp_client.daemons import Daemons, daemons, make_workspace
from tests.support.floors import below

__all__ = ["daemons"]

CLIENTS = 10
FLOOR_S = 15.0

pytestmark = pytest.mark.benchmark


async def test_ten_clients_ten_synthesis_jobs(tmp_path: Path, daemons: Daemons) -> None:
    root = (tmp_path / "ws").resolve()
    make_workspace(root)
    for number in range(CLIENTS):  # one prompt each: their jobs may run side by side
        (root / f"p{number}.prompt").write_text(f"Keep it under {number + 5} words.\n", encoding="utf-8")
    daemons.start(root)
    clients = await asyncio.gather(
        *(DaemonClient.connect(root, client_name=f"c{n}", start=False) for n in range(CLIENTS))
    )
    try:
        started = time.perf_counter()
        jobs = await asyncio.gather(
            *(c.submit_job("synthesize", f"p{n}.prompt", {"write": False}) for n, c in enumerate(clients))
        )
        finished = await asyncio.gather(
            *(c.wait_job(j["id"], timeout_s=120) for c, j in zip(clients, jobs, strict=True))
        )
        elapsed = time.perf_counter() - started
    finally:
        await asyncio.gather(*(client.close() for client in clients))
    assert [job["status"] for job in finished] == ["done"] * CLIENTS, [job["error"] for job in finished]
    print(f"\n{CLIENTS} clients, {CLIENTS} synthesis jobs side by side: all done in {elapsed:.2f} s")
    below("ten_clients_ten_synthesis_jobs_s", elapsed, FLOOR_S, "s")

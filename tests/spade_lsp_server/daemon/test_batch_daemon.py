"""A ``--batch`` sampling job survives a SIGKILL of the daemon mid-batch: the next daemon resumes the job, which
finds the stored batch and polls it; nothing is lost and nothing is uploaded or submitted twice."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from spade_lsp_client import DaemonClient
from tests.spade_lsp_client.daemons import SETTINGS, Daemons, daemons, wait_until
from tests.support.batch_stub import BatchStub
from tests.support.blurb import sampling_workspace

__all__ = ["daemons"]

pytestmark = pytest.mark.timeout(180)

INPUTS, SAMPLES = 4, 4


def _query(root: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        return db.execute(sql, args).fetchall()


def test_a_daemon_killed_mid_batch_resumes_polling_and_resubmits_nothing(tmp_path: Path, daemons: Daemons) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    sampling_workspace(root)
    (root / "spade.toml").write_text(SETTINGS, encoding="utf-8")
    with BatchStub(lambda body: "A lovely thing for you.", complete_after_s=4.0) as stub:
        params = {
            "inputs": INPUTS,
            "samples": SAMPLES,
            "early_stopping": False,
            "settings": {"model": "openai/stub", "api_base": stub.api_base, "batch": True, "batch_poll_s": 0.1},
        }

        async def submit() -> int:
            async with await DaemonClient.connect(root, client_name="test", start=False) as client:
                return int((await client.submit_job("sample", "blurb.prompt", params))["id"])

        async def wait(job_id: int) -> dict[str, Any]:
            async with await DaemonClient.connect(root, client_name="test", start=False) as client:
                return await client.wait_job(job_id, timeout_s=90)

        first = daemons.start(root)
        job_id = asyncio.run(submit())
        wait_until(
            lambda: _query(root, "SELECT batch_id, status FROM llm_batches"),
            timeout_s=60,
            what="the batch stored",
        )
        wait_until(
            lambda: _query(root, "SELECT status FROM llm_batches") == [("in_progress",)],
            timeout_s=30,
            what="the batch in progress",
        )
        assert stub.counts["create"] == 1
        daemons.kill(first)  # SIGKILL, mid-batch
        assert _query(root, "SELECT COUNT(*) FROM llm_cache") == [(0,)]

        daemons.start(root)
        resumed = asyncio.run(wait(job_id))
        assert resumed["status"] == "done" and resumed["attempts"] == 2, resumed
        document = resumed["result"]
        assert stub.counts["upload"] == 1 and stub.counts["create"] == 1 and stub.counts["chat"] == 0
        assert document["calls"] == INPUTS * SAMPLES and document["calls_failed"] == 0
        [batch] = document["batches"]
        assert batch["id"] == "batch-000002" and batch["status"] == "completed" and batch["completed"] == 16

    assert _query(root, "SELECT batch_id, status, collected_at IS NOT NULL FROM llm_batches") == [
        ("batch-000002", "completed", 1)
    ]
    assert _query(root, "SELECT COUNT(*) FROM llm_cache") == [(INPUTS * SAMPLES,)]
    outputs = _query(root, "SELECT run_id, COUNT(*) FROM sample_outputs GROUP BY run_id ORDER BY run_id")
    assert outputs == [(2, INPUTS * SAMPLES)]

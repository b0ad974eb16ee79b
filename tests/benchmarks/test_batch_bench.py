"""Benchmark: 10,000 requests through the loopback batch server on ``spade sample --batch``'s path (issue 21):
100 inputs x 100 samples of the blurb prompt with its two checks, sent as one provider batch, polled, collected,
validated in the sandbox and stored.

The batch server runs in a process of its own and finishes the batch ``PROVIDER_S`` after it was created (a
real provider takes minutes to hours: that wait is not spade-lsp's). The figures are the run's wall time, the
time spade-lsp itself spent (the wall time minus the provider's), and its phases from the store's timestamps:
submit (render, cache lookup, JSONL, upload, create), wait and collect (poll, download, cache in one
transaction), validate and store: the run's start to the batch's ``submitted_at`` (the provider accepted it),
to its ``collected_at``, to the run's end. Run with ``make bench`` or
``.venv/bin/pytest -q -s -m benchmark tests/benchmarks/test_batch_bench.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from spade_lsp.config import resolve_file
from spade_lsp.llm import _import_litellm
from spade_lsp.reliability import SampleOptions, sample_prompt
from spade_lsp.workspace import Workspace
from tests.support.blurb import SAMPLING_SIDECAR, V3
from tests.support.floors import at_least, below
from tests.support.openai_stub import server_process
from tests.support.sampling import with_knobs

INPUTS, SAMPLES = 100, 100
REQUESTS = INPUTS * SAMPLES
PROVIDER_S = 2.0
POLL_S = 0.25
OVERHEAD_FLOOR_S = 60.0

pytestmark = [pytest.mark.benchmark, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def batch_server() -> Iterator[str]:
    with server_process("tests.support.batch_stub", "--complete-after", str(PROVIDER_S)) as api_base:
        yield api_base


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def test_10000_requests_through_one_provider_batch(batch_server: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    prompt = root / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    (root / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
    examples = [{"id": f"e{i}", "inputs": {"product": f"Kettle {i}"}} for i in range(INPUTS)]
    (root / "blurb.examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
    (root / "spade.toml").write_text("", encoding="utf-8")
    overrides = {"model": "openai/stub", "api_base": batch_server, "batch": True, "batch_poll_s": POLL_S}
    with Workspace(root, overrides=overrides) as workspace:
        _import_litellm()  # its import is not part of the run

        started = time.perf_counter()
        knobs = with_knobs(resolve_file(root, prompt, overrides), inputs=INPUTS, samples=SAMPLES, early_stopping=False)
        document = sample_prompt(workspace, prompt, SampleOptions(), settings=knobs)
        seconds = time.perf_counter() - started
        batch_row = workspace.store.db.execute(
            "SELECT requested, status, submitted_at, updated_at, collected_at FROM llm_batches"
        ).fetchall()
        run_row = workspace.store.db.execute("SELECT started_at, finished_at FROM sample_runs").fetchone()
        stored = workspace.store.db.execute("SELECT COUNT(*) FROM sample_outputs WHERE output IS NOT NULL").fetchone()
        cached = workspace.store.db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()
    [(requested, status, submitted_at, _, collected_at)] = batch_row
    assert requested == REQUESTS and status == "completed"
    assert document["calls"] == REQUESTS and document["calls_failed"] == 0 and stored[0] == REQUESTS
    assert cached[0] == REQUESTS
    assert document["batches"][0]["completed"] == REQUESTS
    submit = _seconds(run_row[0], submitted_at)  # render, cache lookup, JSONL, upload, create
    wait_collect = _seconds(submitted_at, collected_at)  # poll, download, cache
    validate_store = _seconds(collected_at, run_row[1])
    print(
        f"\n{REQUESTS} requests in one batch: {seconds:.2f} s wall ({REQUESTS / seconds:.0f} requests/s), "
        f"the provider's {PROVIDER_S:g} s included; submit {submit:.2f} s, wait and collect {wait_collect:.2f} s, "
        f"validate and store {validate_store:.2f} s"
    )
    below("batch_10k_overhead_s", seconds - PROVIDER_S, OVERHEAD_FLOOR_S, "s")
    at_least("batch_10k_requests_per_s", REQUESTS / seconds, REQUESTS / (OVERHEAD_FLOOR_S + PROVIDER_S), "requests/s")

"""The language server under load and faults, over stdio with the raw JSON-RPC client of
``tests/spade_lsp_server/test_lsp_faults.py``:

- 10,000 random incremental edits (ranges past line ends, past the last line, reversed), with hover, codeLens
  and codeAction requests interleaved: edits per second, requests answered, and the server's text against the
  model (a mismatch fails);
- a stream of 300 framing faults (Content-Length too small or too large, missing or not a number, bodies cut
  short, garbage between frames), each followed by a well-framed request: every well-framed request served
  and every broken one answered with an error (strict: nothing lost, whatever the machine's speed);
- a 5 MB prompt: open, three edits, hover latency.

Run with ``make bench`` or ``.venv/bin/pytest -q -s tests/benchmarks/test_lsp_faults_bench.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spade_lsp_server.test_lsp_faults import (
    RawClient,
    _served,
    framing_storm,
    open_and_edit_a_5_mb_document,
    run_random_edits,
)
from tests.support.floors import at_least, at_most, below

pytestmark = pytest.mark.benchmark

EDITS = 10_000
EDITS_FLOOR_PER_S = 1_000.0
FAULTS = 300
HOVER_5MB_FLOOR_S = 2.0


@pytest.fixture
def lsp(tmp_path: Path) -> Iterator[RawClient]:
    (tmp_path / "spade.toml").write_text("", encoding="utf-8")
    client = RawClient(tmp_path)
    try:
        client.initialize()
        yield client
    finally:
        client.stop()


def test_random_edits_under_load(lsp: RawClient) -> None:
    figures = run_random_edits(lsp, EDITS, seed=1)
    print(
        f"\nlsp faults: {figures['edits']} edits in {figures['notifications']} didChange notifications, "
        f"{figures['seconds']:.2f} s, {figures['requests']} requests, {figures['answered']} answered, "
        f"final text {figures['final_length']} characters equal to the model"
    )
    at_least("edits_per_s", figures["edits_per_s"], EDITS_FLOOR_PER_S, "edits/s")
    at_most("requests_unanswered", figures["requests"] - figures["answered"], 0, "requests", strict=True)


def test_framing_fault_storm(lsp: RawClient) -> None:
    figures = framing_storm(lsp, FAULTS, seed=11, first_id=10_000)
    print(
        f"\nlsp faults: {FAULTS} framing faults {figures['kinds']} in {figures['seconds']:.2f} s: "
        f"{figures['served']}/{FAULTS} well-framed requests served, {figures['errors']}/{FAULTS} broken ones "
        "answered with an error"
    )
    at_most("framed_requests_lost", FAULTS - figures["served"], 0, "requests", strict=True)
    at_most("broken_requests_unanswered", FAULTS - figures["errors"], 0, "requests", strict=True)


def test_hover_on_a_5_mb_document(lsp: RawClient) -> None:
    started = time.perf_counter()
    uri, _, lines = open_and_edit_a_5_mb_document(lsp)
    synced = time.perf_counter() - started
    started = time.perf_counter()
    position = {"line": lines // 2, "character": 3}
    hover = lsp.answer(lsp.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position}), 60)
    elapsed = time.perf_counter() - started
    assert _served(hover)
    print(f"\nlsp faults: 5 MB document opened and edited 3 times in {synced:.2f} s; hover in {elapsed * 1e3:.0f} ms")
    below("hover_5mb_s", elapsed, HOVER_5MB_FLOOR_S, "s")

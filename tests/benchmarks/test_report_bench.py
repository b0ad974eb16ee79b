"""Benchmark: the HTML reliability report of 200 inputs x 20 samples x 10 checks (exactly the cell budget, every
cell drawn) renders in under 2 s. Its functional checks are in tests/spade_lsp/reliability/test_html.py, on the
same document. Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_report_bench.py``.
"""

from __future__ import annotations

import statistics
import time

import pytest

from spade_lsp.reliability import render_html
from tests.spade_lsp.reliability.test_html import large_document
from tests.support.floors import below

FLOOR_S = 2.0
RUNS = 3

pytestmark = pytest.mark.benchmark


def test_200_by_20_by_10_report_renders() -> None:
    document = large_document()
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        page = render_html(document)
        timings.append(time.perf_counter() - started)
        assert page.count('class="cell ') == 200 * 20 * 10
    median = statistics.median(timings)
    print(f"\nHTML report, 200 x 20 x 10 cells, {len(page) / 1e6:.1f} MB: median {median:.3f} s over {RUNS} runs")
    below("html_report_200x20x10_s", median, FLOOR_S, "s", runs=timings)

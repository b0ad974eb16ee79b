"""Benchmark: the splitter and the sentence diff on a 2,000-sentence prompt (the Foundation issue's building
blocks of the history floor; their functional checks are in tests/spade_lsp/test_sentences.py and
tests/spade_lsp/test_deltas.py, on the same inputs).

- splitting a 2,000-sentence prompt (lists, prose, abbreviations): under 2 s (measured about 0.25 s);
- diffing consecutive versions of a 2,000-unit prompt, one sentence edited each time: under 50 ms a step
  (measured 1-2 ms).
Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_text_bench.py``.
"""

from __future__ import annotations

import itertools
import statistics
import time

import pytest

from spade_lsp._deltas import diff_texts
from spade_lsp._sentences import split_sentences
from spade_lsp._types import ChangeKind
from tests.spade_lsp.test_deltas import big_prompt_history
from tests.spade_lsp.test_sentences import _big_prompt
from tests.support.floors import below

SPLIT_FLOOR_S = 2.0
DIFF_STEP_FLOOR_S = 0.050
RUNS = 5

pytestmark = pytest.mark.benchmark


def _fresh_caches() -> None:
    """A fresh process's state: nothing split or diffed before (the splitter and the diff memoise)."""
    from spade_lsp import _deltas, _sentences

    for module in (_sentences, _deltas):
        for value in vars(module).values():
            if hasattr(value, "cache_clear"):
                value.cache_clear()


def test_splitting_2000_sentences() -> None:
    text = _big_prompt(2000, seed=7)
    timings = []
    for _ in range(RUNS):
        _fresh_caches()
        started = time.perf_counter()
        units = split_sentences(text)
        timings.append(time.perf_counter() - started)
        assert len(units) >= 2000
    median = statistics.median(timings)
    print(f"\nsplit {len(text):,} characters into {len(units)} units: median {median:.3f} s over {RUNS} runs")
    below("split_2000_sentences_s", median, SPLIT_FLOOR_S, "s", runs=timings)


def test_diff_per_step_of_a_big_prompt() -> None:
    versions = big_prompt_history()
    steps = len(versions) - 1
    timings = []
    for _ in range(RUNS):
        _fresh_caches()
        split_sentences(versions[0])  # the first version, split once: each step splits only its new text
        started = time.perf_counter()
        for before, after in itertools.pairwise(versions):
            changes = diff_texts(before, after)
            assert [c.kind for c in changes] == [ChangeKind.MODIFIED]
        timings.append((time.perf_counter() - started) / steps)
    median = statistics.median(timings)
    print(f"\ndiff of a 2,000-unit prompt, {steps} one-sentence edits: median {median * 1000:.2f} ms a step")
    below("diff_step_2000_units_s", median, DIFF_STEP_FLOOR_S, "s", runs=timings)

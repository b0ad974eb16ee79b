"""Benchmark: the offline classifier's first pass over a 2,000-sentence prompt (nothing cached yet).

Opening or importing a big prompt classifies every sentence once; the Foundation issue's history floor (200
versions in under 2 s) leaves this pass a fraction of it. The bound, 0.3 s, is the one this classifier has
held since it was written; the figure is the median of five fresh passes. Run with
``pytest -q -s tests/benchmarks/test_taxonomy_bench.py``.
"""

from __future__ import annotations

import statistics
import time

import pytest

from spade_lsp.taxonomy._offline import OfflineClassifier, _classify_text
from tests.support.floors import below

FLOOR_S = 0.3
RUNS = 5

pytestmark = pytest.mark.benchmark

_STEMS = [
    "Always include a short summary of the ticket",
    "You are a support agent for an online shop",
    "Do not mention internal tooling or colleagues by name",
    "Answer in JSON with the keys reply and urgency",
    "Keep the reply under 120 words and be friendly",
    "For example, thank the customer for their patience",
    "First read the ticket, then check the order status",
    "The customer's message is {message}",
]


def test_first_pass_over_2000_sentences() -> None:
    classifier = OfflineClassifier()
    sentences = [f"{_STEMS[i % len(_STEMS)]} (case {i})." for i in range(2000)]
    timings = []
    for _ in range(RUNS):
        _classify_text.cache_clear()
        started = time.perf_counter()
        labels = [classifier.classify_sentence(text) for text in sentences]
        timings.append(time.perf_counter() - started)
        assert all(labels[: len(_STEMS)])  # every stem names at least one category
    median = statistics.median(timings)
    print(f"\noffline classifier, 2,000 fresh sentences: median {median * 1000:.0f} ms over {RUNS} runs")
    below("offline_first_pass_2000_sentences_s", median, FLOOR_S, "s", runs=timings)

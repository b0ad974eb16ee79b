"""Benchmark: the offline classifier's first pass over a 2,000-sentence prompt (nothing cached yet), and what
its delta model costs.

Opening or importing a big prompt classifies every sentence once; the Foundation issue's history floor (200
versions in under 2 s) leaves this pass a fraction of it. The bound, 0.3 s, is the one this classifier has
held since it was written; the figure is the median of five fresh passes (every cache cleared, the sentence
head's weights re-read from ``model.json`` included). A sentence read on its own goes through the sentence head
(plain Python: rules' categories and surface cues, no embedding), as the editor's per-sentence view does.

Deltas go through the delta model, which also reads wordllama embeddings: its table and tokenizer are loaded
once per process on the first delta. Both are measured and printed beside the floor, without a floor of their
own: the load (a fresh ``Embedder()``, the seed neighbours and the weights) and one delta that adds the same
2,000 sentences, labelled with every per-text cache cleared (the load not included). Run with
``pytest -q -s tests/benchmarks/test_taxonomy_bench.py``.
"""

from __future__ import annotations

import statistics
import time

import pytest

from spade_lsp._types import ChangeKind, Position, Range, Sentence, SentenceChange
from spade_lsp.taxonomy import OfflineClassifier, _embed, _features, _model, _offline
from tests.support.floors import below, figure

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


def _clear_sentence_caches() -> None:
    """Every per-text cache (sentence labels, rules, features) and the sentence head; not the loaded embedder."""
    for module in (_offline, _features):
        for value in vars(module).values():
            if hasattr(value, "cache_clear") and value is not _features._neighbours:
                value.cache_clear()


def _load_model() -> float:
    """A fresh load of everything the delta model reads from disk: embedder, seed neighbours, weights."""
    started = time.perf_counter()
    _embed.Embedder()
    _features._neighbours.cache_clear()
    _features._neighbours()
    _model.shipped_model.cache_clear()
    _model.shipped_model()
    return time.perf_counter() - started


def _added(text: str) -> SentenceChange:
    return SentenceChange(ChangeKind.ADDED, None, Sentence(text, 0, len(text), Range(Position(0, 0), Position(0, 0))))


def test_first_pass_over_2000_sentences() -> None:
    classifier = OfflineClassifier()
    sentences = [f"{_STEMS[i % len(_STEMS)]} (case {i})." for i in range(2000)]
    timings = []
    for _ in range(RUNS):
        _clear_sentence_caches()
        started = time.perf_counter()
        labels = [classifier.classify_sentence(text) for text in sentences]
        timings.append(time.perf_counter() - started)
        assert all(labels[: len(_STEMS)])  # every stem names at least one category
    median = statistics.median(timings)

    loads = [_load_model() for _ in range(3)]
    delta = [_added(text) for text in sentences]
    delta_timings = []
    for _ in range(3):
        _clear_sentence_caches()
        started = time.perf_counter()
        per_change = classifier.classify_changes(delta)
        delta_timings.append(time.perf_counter() - started)
        assert all(per_change[: len(_STEMS)])
    load, delta_median = statistics.median(loads), statistics.median(delta_timings)
    print(
        f"\noffline classifier, 2,000 fresh sentences: median {median * 1000:.0f} ms over {RUNS} runs; "
        f"delta model: load {load * 1000:.0f} ms (median of 3), one delta adding the 2,000 sentences "
        f"{delta_median * 1000:.0f} ms (median of 3, load excluded)"
    )
    below("offline_first_pass_2000_sentences_s", median, FLOOR_S, "s", runs=timings)
    figure("offline_delta_model_load_s", load, "s", runs=loads)
    figure("offline_delta_of_2000_added_sentences_s", delta_median, "s", runs=delta_timings)

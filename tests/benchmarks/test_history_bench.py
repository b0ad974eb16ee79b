"""Benchmark: a 2,000-sentence prompt with 200 versions.

Floors from the Foundation issue: the full history's deltas and categories in under 2 s; one new version in
under 20 ms (median of 20). "Full history" is everything `spade import` does: record the 200 versions, split
and diff every consecutive pair, classify every change and the newest version's sentences, store it all.
Run with ``make bench`` or ``pytest -q -s tests/benchmarks/test_history_bench.py``.
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path

import pytest

from spade_lsp._history import Revision
from spade_lsp.workspace import Workspace
from tests.support.floors import below

SENTENCES = 2_000
VERSIONS = 200
FULL_FLOOR_S = 2.0
ONE_VERSION_FLOOR_S = 0.020
FULL_RUNS = 5

pytestmark = pytest.mark.benchmark

_SUBJECTS = ["the summary", "each answer", "the email", "the review", "your reply", "the list", "the report"]
_TEMPLATES = [
    "Keep {s} under {n} words.",
    "Do not mention {w} in {s}.",
    "Always include the {w} in {s}.",
    "Write {s} in a friendly, professional tone.",
    "Format {s} as JSON with the key {w}.",
    "First read the {w}, then write {s}.",
    "Use the {w} from {{context_{n}}} when writing {s}.",
    "For example, {s} could start with the {w}.",
    "Make sure {s} is clear about the {w}.",
    "- List {n} facts about the {w}.",
]
_WORDS = ["price", "deadline", "customer", "warranty", "author", "source", "title", "date", "risk", "goal"]


def _sentence(rng: random.Random) -> str:
    template = rng.choice(_TEMPLATES)
    return template.format(s=rng.choice(_SUBJECTS), w=rng.choice(_WORDS), n=rng.randint(2, 300))


def _versions(seed: int = 7) -> list[str]:
    """200 versions of a 2,000-sentence prompt in 200 paragraphs; each version edits, adds or removes a few
    sentences inside a paragraph (an edit does not reflow the rest of the prompt)."""
    rng = random.Random(seed)
    paragraphs = [[_sentence(rng) for _ in range(SENTENCES // 200)] for _ in range(200)]
    out = []
    while len(out) < VERSIONS:
        for _ in range(rng.randint(1, 4)):
            paragraph = rng.choice(paragraphs)
            i = rng.randrange(len(paragraph))
            action = rng.random()
            if action < 0.5:
                paragraph[i] = _sentence(rng)
            elif action < 0.75:
                paragraph.insert(i, _sentence(rng))
            elif len(paragraph) > 5:
                del paragraph[i]
        text = _render(paragraphs)
        if not out or text != out[-1]:
            out.append(text)
    return out


def _render(paragraphs: list[list[str]]) -> str:
    """Prose paragraphs separated by blank lines, list items on their own lines, as prompts are written."""
    lines: list[str] = []
    for paragraph in paragraphs:
        lines.append(" ".join(s for s in paragraph if not s.startswith("- ")))
        lines.extend(s for s in paragraph if s.startswith("- "))
        lines.append("")
    return "\n".join(lines)


def test_full_history_of_200_versions(tmp_path: Path) -> None:
    versions = _versions()
    timings = []
    for run in range(FULL_RUNS):
        root = tmp_path / f"ws{run}"
        root.mkdir()
        with Workspace(root, overrides={"classifier": "offline"}) as workspace:
            # a fresh process's caches: nothing split or classified before
            from spade_lsp import _sentences
            from spade_lsp.taxonomy import _offline

            for module in (_sentences, _offline):
                for value in vars(module).values():
                    if hasattr(value, "cache_clear"):
                        value.cache_clear()
            prompt = root / "big.prompt"
            started = time.perf_counter()
            workspace.history.record_revisions(prompt, [Revision(text=t) for t in versions])
            deltas = workspace.history.deltas(prompt)
            timings.append(time.perf_counter() - started)
            assert len(deltas) == VERSIONS
            assert len(workspace.history.sentences(prompt)) >= SENTENCES - 50
            assert all(d.changes for d in deltas)
    median = statistics.median(timings)
    print(f"\nfull history, {VERSIONS} versions x ~{SENTENCES} sentences: median {median:.3f} s over {FULL_RUNS} runs")
    below("full_history_200_versions_s", median, FULL_FLOOR_S, "s", runs=timings)


def test_one_new_version(tmp_path: Path) -> None:
    versions = _versions()
    extra = _versions(seed=8)
    with Workspace(tmp_path, overrides={"classifier": "offline"}) as workspace:
        prompt = tmp_path / "big.prompt"
        workspace.history.record_revisions(prompt, [Revision(text=t) for t in versions])
        rng = random.Random(3)
        base = versions[-1].split("\n")
        timings = []
        for i in range(20):
            lines = list(base)
            lines[rng.randrange(len(lines))] += f" Never exceed {i + 10} items. {extra[i][:40]}"
            text = "\n".join(lines)
            started = time.perf_counter()
            recorded = workspace.history.record(prompt, text)
            timings.append(time.perf_counter() - started)
            assert recorded is not None
    median = statistics.median(timings)
    print(f"\none new version of a ~{SENTENCES}-sentence prompt: median {median * 1000:.1f} ms of 20")
    below("one_new_version_s", median, ONE_VERSION_FLOOR_S, "s", runs=timings)

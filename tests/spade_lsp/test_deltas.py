"""Sentence-level deltas: alignment, fuzzy pairing into MODIFIED changes, whitespace-only edits, moves,
ordering, and ranges that point into the newer text."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

from spade_lsp._deltas import PAIRING_THRESHOLD, diff_sentences, diff_texts, normalise
from spade_lsp._sentences import split_sentences
from spade_lsp._types import ChangeKind, Position, SentenceChange

BENCH = Path(__file__).resolve().parents[3] / "shared" / "bench" / "spade"


def summary(changes: tuple[SentenceChange, ...]) -> list[tuple[str, str | None, str | None]]:
    return [(c.kind.value, c.old.text if c.old else None, c.new.text if c.new else None) for c in changes]


def check_ranges(before: str, after: str, changes: tuple[SentenceChange, ...]) -> None:
    """Every ``new`` points into ``after`` and every ``old`` into ``before``, with matching LSP ranges."""
    fresh_new = {(s.start, s.end): s for s in split_sentences(after)}
    fresh_old = {(s.start, s.end): s for s in split_sentences(before)}
    for c in changes:
        assert (c.old is None) == (c.kind is ChangeKind.ADDED)
        assert (c.new is None) == (c.kind is ChangeKind.REMOVED)
        assert 0.0 <= c.similarity <= 1.0
        if c.new is not None:
            assert after[c.new.start : c.new.end] == c.new.text
            assert fresh_new[(c.new.start, c.new.end)] == c.new
        if c.old is not None:
            assert before[c.old.start : c.old.end] == c.old.text
            assert fresh_old[(c.old.start, c.old.end)] == c.old


def diff(before: str, after: str) -> tuple[SentenceChange, ...]:
    changes = diff_texts(before, after)
    check_ranges(before, after, changes)
    # the offsets-only fast path and the public Sentence path agree
    assert diff_sentences(split_sentences(before), split_sentences(after)) == changes
    return changes


def test_identical_and_empty() -> None:
    assert diff("", "") == ()
    assert diff("Be concise. Answer in JSON.", "Be concise. Answer in JSON.") == ()
    assert summary(diff("", "Be concise.")) == [("added", None, "Be concise.")]
    assert summary(diff("Be concise.", "")) == [("removed", "Be concise.", None)]


def test_modification_is_paired_with_similarity() -> None:
    before = "You are a helpful assistant. Be concise. Answer in JSON."
    after = "You are a helpful assistant. Be concise and friendly. Answer in JSON."
    (change,) = diff(before, after)
    assert change.kind is ChangeKind.MODIFIED
    assert change.old is not None and change.new is not None
    assert (change.old.text, change.new.text) == ("Be concise.", "Be concise and friendly.")
    assert PAIRING_THRESHOLD <= change.similarity < 1.0
    assert change.new.start == after.index("Be concise and friendly.")
    assert change.new.range.start == Position(0, after.index("Be concise and friendly."))


def test_unrelated_replacement_is_remove_plus_add() -> None:
    changes = diff("Intro here.\nAnswer in JSON.\nOutro.", "Intro here.\nNever mention the competitor.\nOutro.")
    assert summary(changes) == [
        ("removed", "Answer in JSON.", None),
        ("added", None, "Never mention the competitor."),
    ]
    assert all(c.similarity == 1.0 for c in changes)


def test_pairing_is_one_to_one_best_first() -> None:
    before = "- Use at most 100 words.\n- Use at most 10 words."
    after = "- Use at most 100 words please."
    changes = diff(before, after)
    assert summary(changes) == [
        ("modified", "- Use at most 100 words.", "- Use at most 100 words please."),
        ("removed", "- Use at most 10 words.", None),
    ]


def test_whitespace_only_edits_are_not_changes() -> None:
    before = "Be concise.\n- Use markdown\n- Cite  sources\nAnswer the question using\nthe context."
    after = "Be concise.   \n    - Use markdown\t\n- Cite sources\r\nAnswer the question using the\ncontext."
    # indentation, trailing spaces, doubled spaces, line endings and re-wrapping inside a unit
    assert diff(before, after) == ()
    assert diff(before, before.replace("\n", "\r\n")) == ()


def test_reordered_sentence_is_a_move_not_an_add() -> None:
    before = "Be concise.\nAnswer in JSON.\nCite sources.\nNever guess."
    after = "Answer in JSON.\nCite sources.\nNever guess.\nBe concise."
    changes = diff(before, after)
    assert len(changes) == 1
    (move,) = changes
    assert move.kind is ChangeKind.MODIFIED and move.similarity == 1.0
    assert move.old is not None and move.new is not None
    assert move.old.text == move.new.text == "Be concise."
    assert move.old.range.start == Position(0, 0)
    assert move.new.range.start == Position(3, 0)  # the range is in the newer text


def test_order_follows_new_text_with_removed_units_in_place() -> None:
    before = "Alpha one. Bravo two. Charlie three. Delta four."
    after = "Alpha one. Charlie three. Delta four has changed. Echo five."
    changes = diff(before, after)
    assert summary(changes) == [
        ("removed", "Bravo two.", None),
        ("modified", "Delta four.", "Delta four has changed."),
        ("added", None, "Echo five."),
    ]


def test_changes_point_into_the_newer_text_after_line_shifts() -> None:
    before = "# Task\nSummarise the text.\n\nKeep it short."
    after = "# Task\n\nYou are an editor 😀.\nSummarise the text.\n\nKeep it very short."
    changes = diff(before, after)
    assert summary(changes) == [
        ("added", None, "You are an editor 😀."),
        ("modified", "Keep it short.", "Keep it very short."),
    ]
    modified = changes[1]
    assert modified.new is not None and modified.old is not None
    assert modified.new.range.start == Position(5, 0)
    assert modified.old.range.start == Position(3, 0)


def test_structural_units_diff_whole() -> None:
    before = "Example:\n```\nx = 1\n```\n> Quoted example."
    after = "Example:\n```\nx = 2\n```\n> Quoted example."
    changes = diff(before, after)
    assert [(c.kind, c.new.kind if c.new else None) for c in changes] == [(ChangeKind.MODIFIED, "code")]


def test_normalise() -> None:
    assert normalise("  a\t b\r\n c  ") == "a b c"


def test_property_random_edits() -> None:
    rng = random.Random(99)
    pool = [
        "Be concise.",
        "Answer in JSON.",
        "- Cite your sources.",
        "Never mention {competitor}.",
        "## Output",
        "Use at most 100 words.",
        "Think step by step.",
        "Always include a call to action.",
    ]
    for _ in range(200):
        old_units = [rng.choice(pool) for _ in range(rng.randint(0, 8))]
        new_units = list(old_units)
        for _ in range(rng.randint(0, 3)):
            op = rng.random()
            if op < 0.3 and new_units:
                new_units.pop(rng.randrange(len(new_units)))
            elif op < 0.6:
                new_units.insert(rng.randint(0, len(new_units)), rng.choice(pool))
            elif new_units:
                k = rng.randrange(len(new_units))
                new_units[k] = new_units[k].rstrip(".") + " always."
        before, after = "\n".join(old_units), "\n".join(new_units)
        changes = diff(before, after)
        new_positions = [c.new.start for c in changes if c.new is not None]
        assert new_positions == sorted(new_positions)
        # applying the change counts reproduces the new unit count
        added = sum(c.kind is ChangeKind.ADDED for c in changes)
        removed = sum(c.kind is ChangeKind.REMOVED for c in changes)
        assert len(split_sentences(after)) - len(split_sentences(before)) == added - removed
        if before == after:
            assert changes == ()


def _big_prompt(seed: int) -> str:
    rng = random.Random(seed)
    words = [
        "the",
        "model",
        "should",
        "answer",
        "every",
        "user",
        "question",
        "with",
        "care",
        "and",
        "cite",
        "its",
        "sources",
    ]
    paragraphs = []
    for _ in range(500):
        sentences = [
            " ".join(rng.choice(words) for _ in range(rng.randint(5, 14))).capitalize() + "." for _ in range(4)
        ]
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def big_prompt_history(steps: int = 30) -> list[str]:
    """A 2,000-sentence prompt and ``steps`` versions, each editing one sentence (the benchmark's input too)."""
    rng = random.Random(3)
    versions = [_big_prompt(1)]
    for _ in range(steps):
        paragraphs = versions[-1].split("\n\n")
        k = rng.randrange(len(paragraphs))
        paragraphs[k] = paragraphs[k].replace(".", " today.", 1)
        versions.append("\n\n".join(paragraphs))
    return versions


def test_history_of_big_prompt_is_one_modification_per_step() -> None:
    """Each one-sentence edit of a big prompt is exactly one MODIFIED change (its speed: test_text_bench.py)."""
    for before, after in itertools.pairwise(big_prompt_history()):
        changes = diff_texts(before, after)
        assert [c.kind for c in changes] == [ChangeKind.MODIFIED]


def test_real_prompt_histories(shared_bench: Path) -> None:
    total = 0
    for path in sorted(BENCH.glob("*/versions.json")):
        versions = json.loads(path.read_text())
        for before, after in itertools.pairwise(versions):
            changes = diff(before, after)
            total += len(changes)
            positions = [c.new.start for c in changes if c.new is not None]
            assert positions == sorted(positions)
            for c in changes:
                if c.kind is ChangeKind.MODIFIED:
                    assert c.similarity >= PAIRING_THRESHOLD
    assert total > 50

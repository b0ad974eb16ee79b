"""Sentence-level deltas between two versions. PLACEHOLDER: being replaced by the real implementation."""

from __future__ import annotations

from collections.abc import Sequence

from spade_lsp._types import Sentence, SentenceChange


def diff_sentences(old: Sequence[Sentence], new: Sequence[Sentence]) -> tuple[SentenceChange, ...]:
    """Added, removed and modified units; ranges of added/modified units are in ``new``'s text."""
    raise NotImplementedError


def diff_texts(before: str, after: str) -> tuple[SentenceChange, ...]:
    """Split both texts and diff their units."""
    raise NotImplementedError

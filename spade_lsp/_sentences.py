"""Prompt-aware sentence splitting. PLACEHOLDER: being replaced by the real splitter."""

from __future__ import annotations

from spade_lsp._types import Sentence


def split_sentences(text: str) -> list[Sentence]:
    """Split a prompt into units (sentences, list items, headings, whole code fences and quoted examples)."""
    raise NotImplementedError

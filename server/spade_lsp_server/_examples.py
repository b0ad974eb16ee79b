"""The examples file beside a prompt (``NAME.examples.jsonl``) in the editor: each line read as the engine
reads it (so a line the engine skips, or reads with a change, is marked where it is), and the judgement
history of an example's grading note, read from the store for its hover.

Line numbers here are the editor's (0-based); an example without an ``id`` takes its 1-based line number as
its id, as :func:`spade_lsp._examples.read_examples` gives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_lsp import load_user_json, read_example_row
from spade_lsp.errors import InputError
from spade_lsp.store import DatabaseError, HistoryRepository, prompt_key
from spade_lsp.store import note_history as stored_history

if TYPE_CHECKING:
    from spade_lsp.store import Store

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # LSP's line breaks (str.splitlines knows more)


def lines_of(source: str) -> list[str]:
    """The document's lines as the editor counts them."""
    return _LINE_BREAK.split(source)


@dataclass(frozen=True, slots=True)
class ExampleLine:
    """One non-blank line: the example it holds, or why the engine skips it (``problem``); ``warnings``: how
    the engine reads a usable line differently from what it says (null ``inputs`` as none, say)."""

    line: int
    id: str | None = None
    label: int | None = None
    note: str | None = None
    has_output: bool = False
    problem: str | None = None
    warnings: tuple[str, ...] = ()


def read_line(text: str, line: int) -> ExampleLine | None:
    """The example on one line of the file (None for a blank line)."""
    body = text.lstrip("\ufeff") if line == 0 else text
    if not body.strip():
        return None
    try:
        row = load_user_json(body, where=f"line {line + 1}")  # as the engine reads it: deep nesting is refused too
    except InputError as error:
        return ExampleLine(line, problem=str(error).removeprefix(f"line {line + 1}: "))
    if not isinstance(row, dict):
        return ExampleLine(line, problem=f"expected a JSON object, got {type(row).__name__}")
    example, problems = read_example_row(row, default_id=str(line + 1))
    if example is None:
        return ExampleLine(line, problem="; ".join(problem.message for problem in problems))
    warnings = tuple(f"{problem.message}; {problem.outcome}" for problem in problems)
    has_output = example.output is not None
    return ExampleLine(line, example.id, example.label, example.grading_note, has_output, warnings=warnings)


def read_lines(source: str) -> list[ExampleLine]:
    """Every non-blank line, with the problems the engine would stop at (a repeated id included)."""
    out: list[ExampleLine] = []
    seen: dict[str, int] = {}
    for number, text in enumerate(lines_of(source)):
        example = read_line(text, number)
        if example is None:
            continue
        if example.id is not None:
            first = seen.setdefault(example.id, number)
            if first != number:
                example = ExampleLine(number, problem=f"id {example.id!r} already used on line {first + 1}")
        out.append(example)
    return out


def note_history(store: Store | None, root: Path, prompt: Path, example_id: str) -> list[dict[str, Any]] | None:
    """The example's grading-note judgements, newest first (:func:`spade_lsp.store.note_history`); None
    while the store cannot be read. An empty list when the prompt or the example was never judged."""
    if store is None:
        return None
    try:
        prompt_id = HistoryRepository(store).prompt_id(prompt_key(root, prompt))
        if prompt_id is None:
            return []
        return stored_history(store, prompt_id, example_id)
    except DatabaseError:  # a store written by an older daemon (no judge tables yet), or one being replaced
        return None

"""Labelled examples: ``NAME.examples.jsonl`` beside a prompt, and importing them from other formats.

One JSON object per line: ``{"id", "inputs": {...}, "output", "label": "good"|"bad", "grading_note"}``; every
field but ``inputs`` is optional. ``prompt`` (the rendered prompt that produced the output) is kept when an
import carries it. Imports merge: existing lines are never dropped, identical rows are skipped, and an id
that already holds a different example is an error that writes nothing.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from spade_lsp._files import MAX_EXAMPLES_BYTES, atomic_write_text, read_limited_text
from spade_lsp._inputs import read_jsonl
from spade_lsp.errors import InputError

_LABELS: Final[dict[Any, int]] = {
    "good": 1, "bad": 0, "pass": 1, "fail": 0, "1": 1, "0": 0, 1: 1, 0: 0, "true": 1, "false": 0,
}  # fmt: skip
_FIELD_ORDER: Final = ("id", "inputs", "output", "label", "grading_note", "prompt")


@dataclass(frozen=True, slots=True)
class Example:
    """One example; ``label`` is 1 (good), 0 (bad) or None (unlabelled)."""

    id: str
    inputs: Mapping[str, Any]
    output: str | None = None
    label: int | None = None
    grading_note: str | None = None
    prompt: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": self.id,
            "inputs": dict(self.inputs),
            "output": self.output,
            "label": None if self.label is None else ("good" if self.label else "bad"),
            "grading_note": self.grading_note,
            "prompt": self.prompt,
        }
        return {key: row[key] for key in _FIELD_ORDER if row[key] is not None} | dict(self.extra)


def _label(value: Any, where: str) -> int | None:
    if value is None or value == "":
        return None
    key = value.strip().lower() if isinstance(value, str) else value
    if isinstance(key, float) and key in (0.0, 1.0):
        key = int(key)
    if key not in _LABELS:
        raise InputError(f"{where}: label {value!r} is not one of good, bad (or 1, 0)")
    return _LABELS[key]


def _text(value: Any, name: str, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InputError(f"{where}: `{name}` must be a string, got {type(value).__name__}")


def example_from_row(row: Mapping[str, Any], *, default_id: str, where: str) -> Example:
    """Our format or the SPADE benchmark's (``response`` for ``output``, labels 1/0)."""
    inputs = row.get("inputs")
    if not isinstance(inputs, Mapping):
        raise InputError(f"{where}: missing `inputs` (an object of the prompt's input fields)")
    output = row["output"] if "output" in row else row.get("response")
    known = {"id", "inputs", "output", "response", "label", "grading_note", "prompt"}
    identifier = row.get("id", default_id)
    if not isinstance(identifier, str | int) or isinstance(identifier, bool):
        raise InputError(f"{where}: `id` must be a string or an integer")
    return Example(
        id=str(identifier),
        inputs=dict(inputs),
        output=_text(output, "output", where),
        label=_label(row.get("label"), where),
        grading_note=_text(row.get("grading_note"), "grading_note", where),
        prompt=_text(row.get("prompt"), "prompt", where),
        extra={key: value for key, value in row.items() if key not in known},
    )


def read_examples(path: Path) -> list[Example]:
    """The examples of a ``.examples.jsonl`` file; errors name the file and line."""
    examples: list[Example] = []
    seen: dict[str, int] = {}
    for number, row in read_jsonl(path, limit=MAX_EXAMPLES_BYTES, what="an examples file"):
        example = example_from_row(row, default_id=str(number), where=f"{path}:{number}")
        if example.id in seen:
            raise InputError(f"{path}:{number}: id {example.id!r} already used on line {seen[example.id]}")
        seen[example.id] = number
        examples.append(example)
    return examples


def _read_csv(path: Path) -> list[Example]:
    text = read_limited_text(path, limit=MAX_EXAMPLES_BYTES, what="an examples file", encoding="utf-8-sig")
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as error:
        raise InputError(f"{path}: cannot read as CSV: {error}") from error
    if not rows:
        raise InputError(f"{path}: no rows")
    columns = set(rows[0])
    output_column = "response" if "response" in columns else "output" if "output" in columns else None
    if output_column is None or "label" not in columns:
        raise InputError(f"{path}: needs a `response` (or `output`) column and a `label` column; has {sorted(columns)}")
    reserved = {"id", output_column, "label", "grading_note", "prompt"}
    examples = []
    for number, row in enumerate(rows, 2):  # line 1 is the header
        where = f"{path}:{number}"
        inputs = {key: value for key, value in row.items() if key not in reserved and key is not None}
        examples.append(
            Example(
                id=row.get("id") or str(number - 1),
                inputs=inputs,
                output=row[output_column],
                label=_label(row["label"], where),
                grading_note=row.get("grading_note") or None,
                prompt=row.get("prompt") or None,
            )
        )
    return examples


def load_examples_file(path: Path) -> list[Example]:
    """Examples from a ``.jsonl`` (ours or the SPADE benchmark's) or a ``.csv`` file."""
    if path.suffix.lower() == ".csv":
        return _read_csv(path)
    return read_examples(path)


@dataclass(frozen=True, slots=True)
class ExamplesImport:
    path: Path
    added: int
    skipped: int
    total: int


def merge_examples(destination: Path, incoming: Iterable[Example]) -> ExamplesImport:
    """Append ``incoming`` to ``destination``; see the module docstring for the rules."""
    existing = read_examples(destination) if os.path.lexists(destination) else []
    by_id = {example.id: example for example in existing}
    added: list[Example] = []
    skipped = 0
    conflicts: list[str] = []
    for example in incoming:
        current = by_id.get(example.id)
        if current is None:
            by_id[example.id] = example
            added.append(example)
        elif current.to_json() == example.to_json():
            skipped += 1
        else:
            conflicts.append(example.id)
    if conflicts:
        shown = ", ".join(conflicts[:5]) + (" ..." if len(conflicts) > 5 else "")
        raise InputError(
            f"{destination}: {len(conflicts)} imported example(s) reuse an id that holds a different example "
            f"({shown}); nothing was written. Give them new ids or edit the file."
        )
    if added:
        lines = [json.dumps(example.to_json(), ensure_ascii=False) for example in [*existing, *added]]
        atomic_write_text(destination, "\n".join(lines) + "\n")
    return ExamplesImport(destination, len(added), skipped, len(existing) + len(added))

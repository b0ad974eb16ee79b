"""The outputs grid (the VS Code extension's webview): what the checks said about each output, and grading.

Rows are the prompt's labelled examples (with the newest evaluation's verdicts) and the outputs of the newest
sampling run of each version and model (with that run's verdicts); columns are the sidecar's checks. A cell is 1
(passed), 0 (failed) or None (not run on it), with why when the check raised or did not apply. Grading writes a
label into the examples file as one line's edit, which the editor applies, so undo works and nothing else in the
file moves.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from spade_lsp import iter_examples, load_user_json
from spade_lsp.errors import InputError
from spade_lsp.store import newest_finished_eval_run, recent_sampled_outputs, stored_document
from spade_lsp_server._examples import lines_of, read_lines

if TYPE_CHECKING:
    from spade_lsp import Example

#: Rows of each kind sent to the grid; a larger file or run says how many were left out.
MAX_ROWS: Final = 500
#: Sampling runs shown side by side: the newest of each version and model, as many as a comparison of two
#: versions on two models has.
MAX_SAMPLED_RUNS: Final = 4
#: The label words the examples file gets when its line had none to follow.
_WORDS: Final = {1: "good", 0: "bad"}


def _cells(names: Sequence[str], verdicts: Mapping[str, Any]) -> list[int | None]:
    return [None if verdicts.get(name) is None else int(bool(verdicts[name])) for name in names]


def examples_by_id(path: Path, ids: Collection[str]) -> dict[str, Example]:
    """The examples of the file with these ids (the first line of each, as the engine reads it), reading no
    further than the last one wanted."""
    found: dict[str, Example] = {}
    if not path.exists() or not ids:
        return found
    for _, example, _ in iter_examples(path):
        if example is not None and example.id in ids and example.id not in found:
            found[example.id] = example
            if len(found) == len(ids):
                break
    return found


def _example_rows(
    store: Any, key: str, examples_file: Path, names: Sequence[str]
) -> tuple[list[dict[str, Any]], int, int | None]:
    """The newest evaluation's examples, in its order: (rows, how many were left out, the run's id)."""
    from spade_lsp.store import prompt_id  # loads numpy: only when the grid is asked for, never at start

    found = prompt_id(store, key)
    run = newest_finished_eval_run(store, found) if found is not None else None
    if run is None:
        return [], 0, None
    ids = [str(i) for i in json.loads(run.examples)]
    labels, matrix = json.loads(run.y), json.loads(run.m)
    columns = [str(a["name"]) for a in json.loads(run.assertions)]
    why: dict[tuple[str, str], str] = {}
    for error in json.loads(run.errors or "[]"):
        why[(str(error.get("example")), str(error.get("assertion")))] = str(error.get("message") or error.get("kind"))
    wanted = dict.fromkeys(ids[:MAX_ROWS])
    in_file = examples_by_id(examples_file, wanted)  # the file's labels: a grade since the run shows at once
    rows = []
    for index, example_id in enumerate(wanted):
        label: int | None = in_file[example_id].label if example_id in in_file else labels[index]
        verdicts = dict(zip(columns, matrix[index], strict=False))
        rows.append(
            {
                "key": f"example:{example_id}",
                "source": "examples",
                "id": example_id,
                "label": None if label is None else _WORDS[label],
                "text": in_file[example_id].output if example_id in in_file else None,
                "cells": _cells(names, verdicts),
                "why": {name: why[(example_id, name)] for name in names if (example_id, name) in why},
            }
        )
    return rows, max(0, len(ids) - MAX_ROWS), run.id


def _sampled_rows(store: Any, key: str, names: Sequence[str]) -> tuple[list[dict[str, Any]], int, list[int]]:
    """The outputs of the newest run of each version and model sampled (the two sides of a comparison side by
    side, each its own source to filter by), newest run first: (rows, how many were left out, the runs' ids)."""
    runs = recent_sampled_outputs(store, key, limit=MAX_SAMPLED_RUNS)
    several_models = len({outputs.model for outputs in runs}) > 1
    rows: list[dict[str, Any]] = []
    left_out = 0
    for outputs in runs:
        document = stored_document(store, key, run_id=outputs.run_id) or {}
        columns = [str(v["name"]) for v in document.get("validators") or []]
        tensor = document.get("tensor") or []
        version = f"v{outputs.version}" if outputs.version is not None else "sampled"
        model = f" with {outputs.model}" if several_models else ""
        room = max(0, MAX_ROWS - len(rows))
        for index, sample, text in outputs.outputs[:room]:
            observed = tensor[index][sample] if index < len(tensor) and sample < len(tensor[index]) else []
            rows.append(
                {
                    "key": f"sample:{outputs.run_id}:{index}:{sample}",
                    "source": f"{version} sampled{model} (run {outputs.run_id})",
                    "id": outputs.inputs[index] if index < len(outputs.inputs) else str(index),
                    "sample": sample,
                    "label": None,
                    "text": text,
                    "cells": _cells(names, dict(zip(columns, observed, strict=False))),
                    "why": {},
                }
            )
        left_out += max(0, len(outputs.outputs) - room)
    return rows, left_out, [outputs.run_id for outputs in runs]


def outputs_grid(
    store: Any | None, key: str | None, prompt: Path, examples_file: Path, checks: Sequence[tuple[str, int, str]]
) -> dict[str, Any]:
    """The grid's data. ``checks``: the sidecar's (name, 0-based line, source) in module order."""
    names = [name for name, _, _ in checks]
    examples: list[dict[str, Any]] = []
    sampled: list[dict[str, Any]] = []
    left_out = 0
    eval_run = None
    sample_runs: list[int] = []
    if store is not None and key is not None:
        examples, more, eval_run = _example_rows(store, key, examples_file, names)
        sampled, later, sample_runs = _sampled_rows(store, key, names)
        left_out = more + later
    return {
        "prompt": str(prompt),
        "examples_file": str(examples_file),
        "checks": [{"name": name, "line": line, "code": code} for name, line, code in checks],
        "rows": examples + sampled,
        "left_out": left_out,
        "eval_run": eval_run,
        "sample_runs": sample_runs,
    }


@dataclass(frozen=True, slots=True)
class LineEdit:
    """Replace line ``line`` (0-based) of the examples file with ``text``; ``line`` past the end appends it."""

    line: int
    text: str
    replaces: bool
    example_id: str


def _label_like(old: Any, label: int) -> Any:
    """The new label in the form the line already uses (1/0, true/false, or words)."""
    if isinstance(old, bool):
        return bool(label)
    if isinstance(old, int | float):
        return label
    if isinstance(old, str) and old.strip().lower() in ("1", "0"):
        return str(label)
    return _WORDS[label]


def grade_example(source: str, example_id: str, label: int) -> LineEdit:
    """The edit that gives the example ``example_id`` of the examples file ``source`` the ``label``."""
    for line in read_lines(source):
        if line.id == example_id and line.problem is None:
            text = lines_of(source)[line.line]
            row = load_user_json(text.lstrip("\ufeff"), where=f"line {line.line + 1}")
            assert isinstance(row, dict)  # read_lines read it as an example
            row["label"] = _label_like(row.get("label"), label)
            return LineEdit(line.line, json.dumps(row, ensure_ascii=False), True, example_id)
    raise InputError(f"no example with id {example_id!r} in the examples file (was it renamed or removed?)")


def grade_output(
    source: str, *, inputs: Mapping[str, Any], output: str, label: int, run_id: int, input_id: str, sample: int
) -> LineEdit:
    """The edit that adds a sampled output, labelled, as a new example with the inputs it was sampled on."""
    taken = {line.id for line in read_lines(source) if line.id is not None}
    base = f"sampled-{run_id}-{input_id}-{sample}"
    example_id, number = base, 1
    while example_id in taken:
        number += 1
        example_id = f"{base}-{number}"
    row = {"id": example_id, "inputs": dict(inputs), "output": output, "label": _WORDS[label]}
    lines = lines_of(source)
    last = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
    return LineEdit(last, json.dumps(row, ensure_ascii=False), False, example_id)

"""Labelled examples: ``NAME.examples.jsonl`` beside a prompt, and importing them from other formats.

One JSON object per line: ``{"id", "inputs": {...}, "output", "label": "good"|"bad", "grading_note"}``; every
field but ``inputs`` is optional. ``prompt`` (the rendered prompt that produced the output) is kept when an
import carries it.

Real files have bad lines, and one bad line never costs the others. Each line (a CSV: each row) is read on its
own; a problem with it is an :class:`ExampleWarning` naming the file and line. The example is read with a
change when it is still usable (null or missing ``inputs``: no inputs; an unknown label: unlabelled; a
non-string ``output``: its JSON text; an unusable ``id``: its line number), and skipped when it is not
(invalid JSON or UTF-8, not an object, ``inputs`` that is not an object, an id used on an earlier line).
``strict`` turns every warning into one error naming them all. A file with no usable example at all is an
error either way, and so is a file that cannot be read (too large, not a regular file, a CSV without its
columns).

Imports merge: the destination's lines are never dropped or rewritten (new examples are appended to its text),
identical rows are skipped, and an incoming example whose id holds a different example is skipped with a
warning (with ``strict``: an error that writes nothing).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from spade_lsp._columns import StringColumn
from spade_lsp._files import (
    MAX_EXAMPLES_BYTES,
    atomic_write_text,
    decode_text,
    examples_path,
    read_chunks,
    read_limited,
    read_limited_text,
)
from spade_lsp._inputs import loads
from spade_lsp.errors import InputError

if TYPE_CHECKING:
    from spade_lsp._prompts import PromptText

log = logging.getLogger(__name__)

_LABELS: Final[dict[Any, int]] = {
    "good": 1, "bad": 0, "pass": 1, "fail": 0, "1": 1, "0": 0, 1: 1, 0: 0, "true": 1, "false": 0,
}  # fmt: skip
_FIELD_ORDER: Final = ("id", "inputs", "output", "label", "grading_note", "prompt")
_LINE_BREAK: Final = re.compile(rb"\r\n|\r|\n")  # JSON lines end at these; U+2028 inside a string does not
_WHAT: Final = "an examples file"
SKIPPED: Final = "skipped"
UNLABELLED: Final = "imported unlabelled"
"""The outcome of a note rather than a problem (examples read whole, without a label): ``strict`` lets it pass."""
_KEPT: Final = "imported as it is"
_LEFT: Final = "not read; left in the file as it is"
_SHOWN_IN_ERRORS: Final = 200  # problems named in one strict error; the count says how many there were


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
    id_given: bool = field(default=True, compare=False)
    """False when the file gave no id and ``id`` is its line (or row) number: an import may renumber it."""

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


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong with one row (``message``) and what reading it did about it (``outcome``)."""

    message: str
    outcome: str

    @property
    def skipped(self) -> bool:
        return self.outcome == SKIPPED


@dataclass(frozen=True, slots=True)
class ExampleWarning:
    """A problem with one line of an examples file (``line`` is 1-based; a CSV's row starts on it, and ``row``
    counts the CSV's records, the header being row 1). ``line`` is None for a problem with no line of its own."""

    path: Path
    line: int | None
    message: str
    outcome: str
    row: int | None = None

    @property
    def skipped(self) -> bool:
        """The example is not read (an import's destination keeps the line, unread)."""
        return self.outcome in (SKIPPED, _LEFT)

    @property
    def where(self) -> str:
        where = str(self.path) if self.line is None else f"{self.path}:{self.line}"
        return where if self.row is None or self.row == self.line else f"{where} (row {self.row})"

    @property
    def problem(self) -> str:
        """Where and what, without the outcome: the text of a strict error."""
        return f"{self.where}: {self.message}"

    def __str__(self) -> str:
        return f"{self.problem}; {self.outcome}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": str(self.path), "line": self.line}
        if self.row is not None:
            out["row"] = self.row
        return out | {"message": self.message, "outcome": self.outcome, "skipped": self.skipped}


@dataclass(frozen=True, slots=True)
class ExamplesRead:
    """The usable examples of one file, the line each came from, and the warnings reading it gave."""

    path: Path
    examples: list[Example]
    lines: list[int]
    warnings: list[ExampleWarning]
    rows: list[int | None] = field(default_factory=list)  # a CSV's row of each example (else empty)

    def row_of(self, index: int) -> int | None:
        return self.rows[index] if index < len(self.rows) else None


def _kind(value: Any) -> str:
    return (
        "null"
        if value is None
        else {"dict": "an object", "list": "a list", "str": "a string"}.get(type(value).__name__, type(value).__name__)
    )


def _label(value: Any, problems: list[Problem]) -> int | None:
    if value is None or value == "":
        return None
    key = value.strip().lower() if isinstance(value, str) else value
    if isinstance(key, float) and key in (0.0, 1.0):
        key = int(key)
    try:
        return _LABELS[key]
    except (KeyError, TypeError):  # TypeError: a list or an object is not hashable
        problems.append(Problem(f"label {value!r} is not one of good, bad (or 1, 0)", "read as unlabelled"))
        return None


def _text(value: Any, name: str, problems: list[Problem]) -> str | None:
    if value is None or isinstance(value, str):
        return value
    problems.append(Problem(f"`{name}` must be a string, got {type(value).__name__}", "read as its JSON text"))
    return json.dumps(value, ensure_ascii=False)


def read_row(row: Mapping[str, Any], *, default_id: str) -> tuple[Example | None, list[Problem]]:
    """One row in our format or the SPADE benchmark's (``response`` for ``output``, labels 1/0): the example
    (None when it cannot be used) and its problems. Never raises."""
    problems: list[Problem] = []
    inputs = row.get("inputs")
    if "inputs" not in row:
        problems.append(Problem("missing `inputs` (an object of the prompt's input fields)", "read as no inputs"))
        inputs = {}
    elif inputs is None:
        problems.append(Problem("`inputs` is null", "read as no inputs"))
        inputs = {}
    elif not isinstance(inputs, Mapping):
        message = f"`inputs` must be an object of the prompt's input fields, got {_kind(inputs)}"
        return None, [Problem(message, SKIPPED)]
    identifier = row.get("id")
    if identifier is None or not isinstance(identifier, str | int) or isinstance(identifier, bool):
        if identifier is not None or "id" in row:
            problems.append(
                Problem(f"`id` must be a string or an integer, got {_kind(identifier)}", f"read as id {default_id!r}")
            )
        identifier, id_given = default_id, False
    else:
        id_given = True
    output = row["output"] if "output" in row else row.get("response")
    known = {"id", "inputs", "output", "response", "label", "grading_note", "prompt"}
    example = Example(
        id=str(identifier),
        inputs=dict(inputs),
        output=_text(output, "output", problems),
        label=_label(row.get("label"), problems),
        grading_note=_text(row.get("grading_note"), "grading_note", problems),
        prompt=_text(row.get("prompt"), "prompt", problems),
        extra={key: value for key, value in row.items() if key not in known},
        id_given=id_given,
    )
    return example, problems


class _Collector:
    """Examples in file order, each id once: a later line with a used id is skipped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.examples: list[Example] = []
        self.lines: list[int] = []
        self.rows: list[int | None] = []
        self.warnings: list[ExampleWarning] = []
        self._seen: dict[str, int] = {}

    def warn(self, line: int | None, problem: Problem, row: int | None = None) -> None:
        self.warnings.append(ExampleWarning(self.path, line, problem.message, problem.outcome, row))

    def add(self, example: Example | None, problems: Sequence[Problem], line: int, row: int | None = None) -> None:
        for problem in problems:
            self.warn(line, problem, row)
        if example is None:
            return
        first = self._seen.setdefault(example.id, line)
        if first != line:
            self.warn(line, Problem(f"id {example.id!r} already used on line {first}", SKIPPED), row)
            return
        self.examples.append(example)
        self.lines.append(line)
        self.rows.append(row)

    def result(self) -> ExamplesRead:
        rows = self.rows if any(row is not None for row in self.rows) else []
        return ExamplesRead(self.path, self.examples, self.lines, self.warnings, rows)


def _jsonl_row(raw: bytes, *, first: bool) -> dict[str, Any] | Problem | None:
    """The object on one line, what makes the line unusable, or None for a blank line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as invalid:
        return Problem(f"not valid UTF-8 (byte 0x{raw[invalid.start]:02x} at column {invalid.start + 1})", SKIPPED)
    if first:
        text = text.removeprefix("\ufeff")
    if not text.strip():
        return None
    try:
        value = loads(text, where="")
    except InputError as error:
        return Problem(str(error).removeprefix(": "), SKIPPED)
    if not isinstance(value, dict):
        return Problem(f"expected a JSON object, got {_kind(value)}", SKIPPED)
    return value


def _numbered_lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """JSON lines, numbered from 1, from the file's bytes a chunk at a time (a ``\\r\\n`` split across two
    chunks is still one line end)."""
    number = 0
    pending = b""
    for chunk in chunks:
        pending += chunk
        lines = _LINE_BREAK.split(pending[:-1] if pending.endswith(b"\r") else pending)
        pending = lines.pop() + (b"\r" if pending.endswith(b"\r") else b"")
        for line in lines:
            number += 1
            yield number, line
    for line in _LINE_BREAK.split(pending):
        number += 1
        yield number, line


def _parse_jsonl(path: Path, data: bytes | Iterable[bytes]) -> ExamplesRead:
    collector = _Collector(path)
    nonblank = 0
    for number, raw in _numbered_lines([data] if isinstance(data, bytes) else data):
        row = _jsonl_row(raw, first=number == 1)
        if row is None:
            continue
        nonblank += 1
        if isinstance(row, Problem):
            collector.warn(number, row)
        else:
            example, problems = read_row(row, default_id=str(number))
            collector.add(example, problems, number)
    if nonblank == 0:
        raise InputError(f"{path}: no JSON lines")
    return collector.result()


def _read_jsonl(path: Path) -> ExamplesRead:
    return _parse_jsonl(path, read_chunks(path, limit=MAX_EXAMPLES_BYTES, what=_WHAT))


def _read_csv(path: Path) -> ExamplesRead:
    text = read_limited_text(path, limit=MAX_EXAMPLES_BYTES, what=_WHAT, encoding="utf-8-sig")
    if csv.field_size_limit() < MAX_EXAMPLES_BYTES:  # the default (128 KiB) is shorter than a long output
        csv.field_size_limit(MAX_EXAMPLES_BYTES)
    physical = io.StringIO(text, newline="").readlines()  # as csv counts them: reader.line_num indexes this
    reader = csv.reader(physical)
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise InputError(f"{path}: cannot read the header as CSV: {error}") from error
    if not header:
        raise InputError(f"{path}: no rows")
    columns = set(header)
    output_column = "response" if "response" in columns else "output" if "output" in columns else None
    if output_column is None or "label" not in columns:
        raise InputError(f"{path}: needs a `response` (or `output`) column and a `label` column; has {sorted(columns)}")
    reserved = {"id", output_column, "label", "grading_note", "prompt"}
    collector = _Collector(path)
    rows = 0
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            rows += 1
            collector.warn(start, Problem(f"cannot read as CSV: {error}", SKIPPED), rows + 1)
            continue
        if not fields:  # a blank line
            continue
        rows += 1
        problems: list[Problem] = []
        end = reader.line_num
        if end > start and end == len(physical) and "".join(physical[start - 1 : end]).count('"') % 2:
            message = f"a quote opened in this row is never closed (lines {start}-{end} read as one row)"
            collector.warn(start, Problem(message, SKIPPED), rows + 1)
            continue
        if len(fields) > len(header) and any(value.strip() for value in fields[len(header) :]):
            message = f"{len(fields)} fields, the header has {len(header)} (a comma not in quotes?)"
            collector.warn(start, Problem(message, SKIPPED), rows + 1)
            continue
        if not any(value.strip() for value in fields):
            collector.warn(start, Problem("every field is empty", SKIPPED), rows + 1)
            continue
        if len(fields) < len(header):
            problems.append(
                Problem(f"{len(fields)} fields, the header has {len(header)}", "read with the missing ones empty")
            )
        row = dict(zip(header, fields, strict=False))
        example = Example(
            id=row.get("id") or str(rows),
            id_given=bool(row.get("id")),
            inputs={key: value for key, value in row.items() if key not in reserved},
            output=row.get(output_column),
            label=_label(row.get("label"), problems),
            grading_note=row.get("grading_note") or None,
            prompt=row.get("prompt") or None,
        )
        collector.add(example, problems, start, rows + 1)
    if rows == 0:
        raise InputError(f"{path}: no rows")
    return collector.result()


def parse_examples(path: Path, *, csv_by_suffix: bool = True) -> ExamplesRead:
    """Every usable example of ``path`` (a ``.csv`` by its suffix, else JSON lines) with a warning for each
    problem; only a file that cannot be read at all is an :class:`InputError`."""
    if csv_by_suffix and path.suffix.lower() == ".csv":
        return _read_csv(path)
    return _read_jsonl(path)


def problems_error(path: Path, warnings: Sequence[ExampleWarning], what: str) -> InputError:
    """One error (one line) naming every problem."""
    shown = "; ".join(warning.problem for warning in warnings[:_SHOWN_IN_ERRORS])
    more = f"; and {len(warnings) - _SHOWN_IN_ERRORS} more" if len(warnings) > _SHOWN_IN_ERRORS else ""
    return InputError(f"{path}: {len(warnings)} problem(s), {what}: {shown}{more}")


def _settle(read: ExamplesRead, warnings: list[str] | None, strict: bool) -> list[Example]:
    if read.warnings and strict:
        raise problems_error(read.path, read.warnings, "refused (strict)")
    if not read.examples:
        raise problems_error(read.path, read.warnings, "no usable example")
    for warning in read.warnings:
        if warnings is None:
            log.warning("%s", warning)
        else:
            warnings.append(str(warning))
    return read.examples


def read_examples(path: Path, warnings: list[str] | None = None, *, strict: bool = False) -> list[Example]:
    """The usable examples of a ``.examples.jsonl`` file. A problem with a line is a warning naming the file
    and line, appended to ``warnings`` (logged when it is None); ``strict`` makes any problem an error. A file
    with no usable example is an error."""
    return _settle(parse_examples(path, csv_by_suffix=False), warnings, strict)


PROMPTY_SAMPLE_ID: Final = "prompty-sample"


def _sampling_sources(prompt: Path, parsed: PromptText) -> tuple[Path, dict[str, Any] | None]:
    """Where a prompt's sampling inputs come from: its examples file (which may not exist) and a Prompty file's
    ``sample`` inputs; :class:`InputError` saying how to add some when there are neither."""
    from spade_lsp._prompts import prompty_sample

    source = examples_path(prompt)
    sample = prompty_sample(parsed.front_matter, prompt.parent, source=f"{prompt} front matter")
    if not source.exists() and sample is None:
        raise InputError(
            f"{source}: no examples to take inputs from; add lines like "
            '{"id": "a", "inputs": {"name": "..."}} or run `spade import PROMPT --examples FILE`'
        )
    return source, sample


def prompt_examples(prompt: Path, parsed: PromptText, warnings: list[str] | None = None) -> list[Example]:
    """The examples a prompt is sampled on: its examples file's (``NAME.examples.jsonl``), and a Prompty file's
    ``sample`` inputs as one more (unless an example already has exactly those inputs). :class:`InputError`
    saying how to add some when there are none."""
    source, sample = _sampling_sources(prompt, parsed)
    examples = read_examples(source, warnings) if source.exists() else []
    if sample is not None and all(dict(example.inputs) != sample for example in examples):
        examples.append(Example(PROMPTY_SAMPLE_ID, sample))
    return examples


_WARNINGS_KEPT: Final = 100  # a damaged file of a million lines says its first problems and how many there were


def draw_examples(
    prompt: Path,
    parsed: PromptText,
    *,
    wanted: int | None,
    seed: int,
    warnings: list[str],
) -> list[Example]:
    """:func:`prompt_examples` with one example per distinct set of inputs, then ``wanted`` of them drawn with
    ``seed`` (all when ``wanted`` is None or not fewer), without holding the file in memory: a first pass keeps
    8-byte digests of each line's id and inputs, a second reads the lines drawn. A million-line examples file
    costs tens of megabytes, not the file parsed whole. The draw is the one :func:`random.Random.sample` makes
    over the distinct inputs in file order, so a run is reproducible from its seed."""
    import random
    from array import array

    import numpy as np

    source, sample = _sampling_sources(prompt, parsed)
    ids, inputs, lines = array("Q"), array("Q"), array("Q")
    problems: list[str] = []
    problem_count = 0
    if source.exists():
        for number, example, trouble in iter_examples(source):
            problem_count += len(trouble)
            problems += [str(t) for t in trouble][: max(0, _WARNINGS_KEPT - len(problems))]
            if example is not None:
                ids.append(_digest(example.id))
                inputs.append(_digest(_inputs_key(example.inputs)))
                lines.append(number)
    order = np.arange(len(ids))
    first_of_id = np.sort(np.unique(np.frombuffer(ids, dtype=np.uint64), return_index=True)[1]) if ids else order
    reused = len(ids) - len(first_of_id)
    kept = np.frombuffer(inputs, dtype=np.uint64)[first_of_id] if ids else np.array([], dtype=np.uint64)
    first_of_inputs = np.sort(np.unique(kept, return_index=True)[1]) if len(kept) else order[:0]
    # the line of each distinct set of inputs, as 8-byte integers: a list of a million Python ints is 40 MB
    distinct = np.frombuffer(lines, dtype=np.uint64)[first_of_id[first_of_inputs]] if ids else order[:0]
    shared = len(first_of_id) - len(distinct)
    with_sample = sample is not None and not bool((kept == np.uint64(_digest(_inputs_key(sample)))).any())
    del ids, inputs, lines, order, first_of_id, kept  # not held through the second pass
    total = len(distinct) + int(with_sample)
    if total == 0:
        if not problems:
            raise InputError(f"{source}: no JSON lines")
        more = f"; and {problem_count - _SHOWN_IN_ERRORS} more" if problem_count > _SHOWN_IN_ERRORS else ""
        shown = "; ".join(problem.split(": ", 1)[-1] for problem in problems[:_SHOWN_IN_ERRORS])
        raise InputError(f"{source}: {problem_count} problem(s), no usable example: {shown}{more}")
    warnings += problems
    if problem_count > len(problems):
        warnings.append(f"{source}: and {problem_count - len(problems)} more problem(s)")
    if reused:
        warnings.append(f"{reused} line(s) reuse an id of an earlier line and were skipped")
    if shared:
        warnings.append(
            f"{shared} example(s) share their inputs with an earlier one: each distinct set of inputs is sampled "
            f"once ({total} input(s))"
        )
    if wanted is None or wanted >= total:
        if wanted is not None and wanted > total:
            warnings.append(f"asked for {wanted} inputs; the examples hold {total}, all used")
        chosen = list(range(total))
    else:
        chosen = sorted(random.Random(seed).sample(range(total), wanted))
    wanted_lines = {int(distinct[i]) for i in chosen if i < len(distinct)}
    drawn = [example for _, example, _ in iter_examples(source, only=wanted_lines) if example is not None]
    if with_sample and total - 1 in chosen:
        assert sample is not None
        drawn.append(Example(PROMPTY_SAMPLE_ID, sample))
    return drawn


def iter_examples(
    path: Path, *, only: set[int] | None = None
) -> Iterator[tuple[int, Example | None, list[ExampleWarning]]]:
    """Each line of a JSON-lines examples file as it is read (or only the lines numbered in ``only``, the others
    not even parsed): its number, its example (None when the line is unusable or blank) and its problems."""
    for number, raw in _numbered_lines(read_chunks(path, limit=MAX_EXAMPLES_BYTES, what=_WHAT)):
        if only is not None and number not in only:
            continue
        row = _jsonl_row(raw, first=number == 1)
        if row is None:
            continue
        if isinstance(row, Problem):
            yield number, None, [ExampleWarning(path, number, row.message, row.outcome, None)]
            continue
        example, problems = read_row(row, default_id=str(number))
        yield number, example, [ExampleWarning(path, number, p.message, p.outcome, None) for p in problems]


def example_chunks(
    path: Path, warnings: list[str], *, size: int, ids: StringColumn | None = None
) -> Iterator[list[Example]]:
    """:func:`read_examples`, ``size`` examples at a time, for work that goes example by example (an evaluation);
    pass ``ids`` to keep the examples' ids (compact, in file order). A later line with a used id is skipped, as
    :func:`read_examples` skips it: a first pass finds which ids repeat (an 8-byte digest per line, let go before
    the second), so the second holds only those. Problems are appended to ``warnings``, the first hundred with
    their line and then a count; a file with no usable example is an :class:`InputError`."""
    repeated = _repeated_ids(path)
    first_use: dict[str, int] = {}  # the line of each repeated id's first use
    problems: list[ExampleWarning] = []  # the first hundred, also named by the error when none is usable
    count = 0
    chunk: list[Example] = []
    yielded = False

    def note(found: Sequence[ExampleWarning]) -> None:
        nonlocal count
        count += len(found)
        room = max(0, _WARNINGS_KEPT - len(problems))
        problems.extend(found[:room])
        warnings.extend(str(problem) for problem in found[:room])

    for number, example, trouble in iter_examples(path):
        note(trouble)
        if example is None:
            continue
        if repeated and _digest(example.id) in repeated:
            first = first_use.setdefault(example.id, number)
            if first != number:
                note([ExampleWarning(path, number, f"id {example.id!r} already used on line {first}", SKIPPED)])
                continue
        if ids is not None:
            ids.append(example.id)
        chunk.append(example)
        if len(chunk) == size:
            yield chunk
            yielded, chunk = True, []
    if count > len(problems):
        warnings.append(f"{path}: and {count - len(problems)} more problem(s)")
    if chunk:
        yield chunk
    elif not yielded:
        raise problems_error(path, problems, "no usable example")


def _repeated_ids(path: Path) -> set[int]:
    """Digests of the ids that more than one usable line of the file has (a digest collision only costs a
    lookup: the second pass compares the ids themselves)."""
    import numpy as np

    digests = np.fromiter(
        (_digest(example.id) for _, example, _ in iter_examples(path) if example is not None), dtype=np.uint64
    )
    values, counts = np.unique(digests, return_counts=True)
    return {int(value) for value in values[counts > 1]}


def _inputs_key(inputs: Mapping[str, Any]) -> str:
    return json.dumps(inputs, sort_keys=True, default=str)


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def load_examples_file(path: Path, warnings: list[str] | None = None, *, strict: bool = False) -> list[Example]:
    """:func:`read_examples` for a ``.jsonl`` (ours or the SPADE benchmark's) or a ``.csv`` file."""
    return _settle(parse_examples(path), warnings, strict)


def placeholder_warnings(read: ExamplesRead, template: PromptText) -> list[ExampleWarning]:
    """A warning (the example is still read) for each example whose inputs lack a placeholder of the prompt's
    messages, or carry keys the prompt never names (as ``{key}``, ``{{key}}``, a Jinja2 variable or ``[key]``)."""
    from spade_lsp._prompts import template_placeholders

    used = template_placeholders(template)
    named = set(used) | set(re.findall(r"\[\s*([A-Za-z_]\w*)\s*\]", template.body))
    out: list[ExampleWarning] = []
    for index, (example, line) in enumerate(zip(read.examples, read.lines, strict=True)):
        row = read.row_of(index)
        missing = [name for name in used if name not in example.inputs]
        if missing:
            listed = ", ".join(f"{{{name}}}" for name in missing)
            out.append(ExampleWarning(read.path, line, f"inputs lack {listed}, used by the prompt", _KEPT, row))
        unused = [str(key) for key in example.inputs if key not in named]
        if unused:
            listed = ", ".join(unused)
            out.append(ExampleWarning(read.path, line, f"inputs the prompt does not use: {listed}", _KEPT, row))
    return out


@dataclass(frozen=True, slots=True)
class ExamplesImport:
    """``added`` new examples, ``skipped`` identical ones already there, ``rejected`` incoming lines not
    imported (each has a warning), ``total`` examples in the destination now."""

    path: Path
    added: int
    skipped: int
    total: int
    rejected: int = 0
    warnings: list[ExampleWarning] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "examples": str(self.path),
            "added": self.added,
            "skipped": self.skipped,
            "rejected": self.rejected,
            "total": self.total,
            "warnings": [warning.to_json() for warning in self.warnings],
        }


def _destination(path: Path) -> tuple[str, ExamplesRead | None]:
    """The destination's text (kept as it is: it is appended to, never rewritten) and its examples."""
    if not os.path.lexists(path):
        return "", None
    data = read_limited(path, limit=MAX_EXAMPLES_BYTES, what=_WHAT)
    text = decode_text(data, path)
    if not text.strip():
        return text, None
    return text, _parse_jsonl(path, data)


def _left_as_it_is(warning: ExampleWarning) -> ExampleWarning:
    """A problem in the destination: its line is kept (the import appends), though not read."""
    return dataclasses.replace(warning, outcome=_LEFT) if warning.skipped else warning


def _content(example: Example) -> str:
    """An example's content apart from its id, to recognise it under another id."""
    return json.dumps({k: v for k, v in example.to_json().items() if k != "id"}, sort_keys=True, ensure_ascii=False)


def _free_id(taken: Mapping[str, Any]) -> str:
    number = len(taken) + 1
    while str(number) in taken:
        number += 1
    return str(number)


def merge_examples(
    destination: Path,
    incoming: ExamplesRead | Iterable[Example],
    *,
    strict: bool = False,
    template: PromptText | None = None,
    write: bool = True,
) -> ExamplesImport:
    """Append ``incoming`` to ``destination``; see the module docstring for the rules. With ``template`` (the
    prompt, parsed), examples whose inputs do not fit its placeholders get a warning. With ``strict``, any
    warning (in either file; not a note of examples imported :data:`UNLABELLED`) is an error and nothing is
    written. ``write=False`` checks without writing."""
    if isinstance(incoming, ExamplesRead):
        read = incoming
    else:
        examples = list(incoming)
        read = ExamplesRead(destination, examples, [0] * len(examples), [])
    source_warnings = list(read.warnings)
    if template is not None:
        source_warnings += placeholder_warnings(read, template)
        source_warnings.sort(key=lambda warning: warning.line or 0)
    text, existing = _destination(destination)
    warnings = [] if existing is None else [_left_as_it_is(warning) for warning in existing.warnings]
    by_id = {} if existing is None else dict(zip((e.id for e in existing.examples), existing.lines, strict=True))
    current = {} if existing is None else {e.id: e for e in existing.examples}
    added: list[Example] = []
    skipped = 0
    contents = {_content(e): e.id for e in current.values()}
    for index, (example, line) in enumerate(zip(read.examples, read.lines, strict=True)):
        held = current.get(example.id)
        if held is not None and not example.id_given and held.to_json() != example.to_json():
            # an id the file never gave (its line number) that the destination already uses: the same content
            # under any id is already there; otherwise the example takes the next free number
            if _content(example) in contents:
                skipped += 1
                continue
            example, held = dataclasses.replace(example, id=_free_id(current)), None
        if held is None:
            contents[_content(example)] = example.id
            current[example.id] = example
            added.append(example)
        elif held.to_json() == example.to_json():
            skipped += 1
        else:
            where = f"{destination}:{by_id[example.id]}" if example.id in by_id else f"{destination} (imported now)"
            source_warnings.append(
                ExampleWarning(
                    read.path if line else destination,
                    line or None,
                    f"id {example.id!r} already holds a different example ({where}); give it a new id or edit the file",
                    SKIPPED,
                    read.row_of(index),
                )
            )
    warnings += source_warnings
    problems = [warning for warning in warnings if warning.outcome != UNLABELLED]
    if strict and problems:
        raise problems_error(read.path, problems, "nothing was written (--strict)")
    rejected = sum(1 for warning in source_warnings if warning.skipped)
    if not added and not skipped and rejected:
        raise problems_error(read.path, warnings, "no usable example; nothing was written")
    if added and write:
        ending = "\r\n" if "\r\n" in text else "\n"
        if text and not text.endswith(("\n", "\r")):
            text += ending
        text += "".join(json.dumps(example.to_json(), ensure_ascii=False) + ending for example in added)
        atomic_write_text(destination, text)
    total = (0 if existing is None else len(existing.examples)) + len(added)
    return ExamplesImport(destination, len(added), skipped, total, rejected, warnings)

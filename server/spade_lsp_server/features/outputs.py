"""The outputs grid's commands: ``spade.outputs`` (the rows, the checks and their verdicts) and ``spade.grade``
(a label written into the examples file as an edit the editor applies, so undo works)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from spade_lsp import MAX_EXAMPLES_BYTES, Position, Range
from spade_lsp.errors import InputError
from spade_lsp_server._convert import end_of
from spade_lsp_server._examples import lines_of
from spade_lsp_server._outputs import LineEdit, examples_by_id, grade_example, grade_output, outputs_grid
from spade_lsp_server.features.commands import (
    CommandError,
    _options,
    _target,
    apply_edit,
    buffer_or_disk_text,
    examples_file,
)
from spade_lsp_server.server import SpadeLanguageServer

_LABELS: Final = {"good": 1, "bad": 0}


def _checks(server: SpadeLanguageServer, ref: Any) -> list[tuple[str, int, str]]:
    """The sidecar's checks: name, line of the name, and the function's source (decorators included), from the
    text the overview parsed them from (read confined to the workspace, size-capped)."""
    sidecar = server.overview_of(ref).sidecar
    lines = lines_of(sidecar.text or "")
    return [
        (view.name, view.name_range.start.line, "\n".join(lines[view.range.start.line : view.end_line + 1]))
        for view in sidecar.assertions
    ]


def _sampled_output(server: SpadeLanguageServer, ref: Any, key: str) -> tuple[int, str, int, str]:
    """A grid row key ``sample:RUN:INPUT:SAMPLE`` as (run, input id, sample, output), from the store."""
    from spade_lsp.store import sampled_outputs_of_run

    try:
        run_id, index, sample = (int(part) for part in key.removeprefix("sample:").split(":"))
    except ValueError as error:
        raise CommandError(f"spade.grade: {key!r} is not an output of the grid") from error
    store = server.workspace_state(ref.root).store()
    key_of_prompt = server.overview_of(ref).key or ""
    outputs = sampled_outputs_of_run(store, key_of_prompt, run_id) if store is not None else None
    if outputs is None:
        raise CommandError(f"spade.grade: sampling run {run_id} is not a finished run of this prompt; refresh the grid")
    for at_index, at_sample, text in outputs.outputs:
        if (at_index, at_sample) == (index, sample) and index < len(outputs.inputs):
            return run_id, outputs.inputs[index], sample, text
    raise CommandError(f"spade.grade: no such output in sampling run {run_id}")


def _inputs_of(examples_file: Path, example_id: str) -> dict[str, Any]:
    found = examples_by_id(examples_file, {example_id})
    if example_id in found:
        return dict(found[example_id].inputs)
    raise CommandError(
        f"spade.grade: input {example_id!r} of that output is no longer in {examples_file.name}, so the output "
        "cannot be added with its inputs"
    )


def _range_of(edit: LineEdit, source: str) -> tuple[Range, str]:
    """Where the edit goes (code points) and what it writes: the whole line, or a new line at the end."""
    lines = lines_of(source)
    if edit.replaces:
        return Range(Position(edit.line, 0), Position(edit.line, len(lines[edit.line]))), edit.text
    if not source or source.endswith(("\n", "\r")):
        return Range(Position(edit.line, 0), Position(edit.line, 0)), edit.text + "\n"
    end = end_of(source)
    return Range(end, end), "\n" + edit.text + "\n"


def register(server: SpadeLanguageServer) -> None:
    @server.command("spade.outputs")
    async def outputs(*args: Any) -> dict[str, Any]:
        """The outputs grid: the examples, the newest sampled outputs of each version and model, the checks,
        and each verdict."""
        ref = _target(server, "spade.outputs", args)
        assert ref.path is not None
        overview = server.overview_of(ref)
        store = server.workspace_state(ref.root).store()
        examples = examples_file("spade.outputs", ref)
        return outputs_grid(store, overview.key, ref.path, examples, _checks(server, ref))

    @server.command("spade.grade")
    async def grade(*args: Any) -> dict[str, Any]:
        """``[prompt, {"row": key, "label": "good" | "bad"}]``: an example's label changed in place, or a sampled
        output added as a new labelled example with the inputs it was sampled on."""
        ref = _target(server, "spade.grade", args)
        assert ref.path is not None
        options = _options(args)
        label, row = _LABELS.get(str(options.get("label"))), options.get("row")
        if label is None or not isinstance(row, str):
            raise CommandError('spade.grade: pass {"row": <a row of the outputs grid>, "label": "good" or "bad"}')
        graded_file = examples_file("spade.grade", ref)
        source = buffer_or_disk_text(server, graded_file, MAX_EXAMPLES_BYTES)
        try:
            if row.startswith("example:"):
                edit = grade_example(source or "", row.removeprefix("example:"), label)
            else:
                run_id, input_id, sample, output = _sampled_output(server, ref, row)
                inputs = _inputs_of(graded_file, input_id)
                edit = grade_output(
                    source or "", inputs=inputs, output=output, label=label, run_id=run_id, input_id=input_id,
                    sample=sample,
                )  # fmt: skip
        except InputError as error:
            raise CommandError(f"spade.grade: {graded_file.name}: {error}") from error
        at, text = _range_of(edit, source or "")
        await apply_edit(server, graded_file, source, at, text, f"spade: label {edit.example_id} {options['label']}")
        return {
            "examples_file": str(graded_file),
            "id": edit.example_id,
            "line": edit.line,
            "added": not edit.replaces,
            "label": options["label"],
        }

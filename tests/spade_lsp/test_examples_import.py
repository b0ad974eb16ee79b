"""Real data imports: `spade import --examples` takes every usable line of a JSONL or CSV file, warns about each
bad one by file and line, never drops a line of the destination, and `--strict` is all or nothing. The
workspace's own examples file is read the same way by eval, and by the editor's diagnostics."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._examples import read_examples
from spade_lsp.errors import InputError
from spade_lsp.workspace import Workspace
from tests.support.blurb import SAMPLING_SIDECAR, V3
from tests.support.cli import run

PROMPT = "Write a product blurb for {product} in {tone} words.\n"
GOOD = [
    {"id": f"g{i}", "inputs": {"product": name, "tone": "warm"}, "output": f"A {name}.", "label": "good"}
    for i, name in enumerate(["Kettle", "Lamp", "Mug", "Shoe", "Desk"], 1)
]


@pytest.fixture
def prompt(workspace_dir: Path) -> Path:
    path = workspace_dir / "blurb.prompt"
    path.write_text(PROMPT, encoding="utf-8")
    return path


def _jsonl(rows: list[Any]) -> str:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)


def _csv(rows: list[dict[str, Any]], header: tuple[str, ...] = ("id", "product", "tone", "response", "label")) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        flat = {**row.get("inputs", {}), "response": row.get("output"), **row}
        writer.writerow([flat.get(column, "") for column in header])
    return out.getvalue()


def _import(
    capsys: pytest.CaptureFixture[str], prompt: Path, source: Path, *flags: str
) -> tuple[int, dict[str, Any], str]:
    code, out, err = run(capsys, "import", str(prompt), "--examples", str(source), "--json", *flags)
    return code, (json.loads(out) if out else {}), err


def _destination(prompt: Path) -> list[dict[str, Any]]:
    path = prompt.parent / "blurb.examples.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- JSONL ----------------------------------------------------------------------------------------------------


def test_null_inputs_on_the_first_line_imports_it_and_the_five_others(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    source = prompt.parent / "real.jsonl"
    source.write_text(_jsonl([{"id": "n", "inputs": None, "output": "Hi.", "label": "good"}, *GOOD]))
    code, result, err = _import(capsys, prompt, source)
    assert code == 0 and (result["added"], result["rejected"], result["total"]) == (6, 0, 6)
    rows = _destination(prompt)
    assert [row["id"] for row in rows] == ["n", "g1", "g2", "g3", "g4", "g5"] and rows[0]["inputs"] == {}
    assert [(w["line"], w["message"], w["skipped"]) for w in result["warnings"]] == [
        (1, "`inputs` is null", False),
        (1, "inputs lack {product}, {tone}, used by the prompt", False),
    ]
    assert f"{source}:1: `inputs` is null; read as no inputs" in err  # on stderr too, by file and line
    # the same file again: nothing new, nothing lost
    code, again, _ = _import(capsys, prompt, source)
    assert code == 0 and (again["added"], again["skipped"], again["total"]) == (0, 6, 6)


def test_bad_lines_mid_file_are_skipped_and_named_the_others_import(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    source = prompt.parent / "real.jsonl"
    lines: list[Any] = [
        GOOD[0],
        '{"id": "broken", "inputs": {',
        GOOD[1],
        "[1, 2]",
        {"id": "s", "inputs": "Kettle", "output": "x"},
        GOOD[2],
        {**GOOD[0], "output": "changed"},  # g1 again
        {"inputs": {"product": "Pen", "tone": "dry"}, "output": {"text": "A pen."}, "label": 1.0, "id": None},
    ]
    source.write_bytes(_jsonl(lines).encode() + b'{"id": "bytes", "inputs": {}, "output": "caf\xe9"}\n')
    code, out, err = run(capsys, "import", str(prompt), "--examples", str(source))
    assert code == 0
    assert out.endswith("4 example(s) added, 0 already there, 5 not imported (see the warnings); 4 in all\n")
    for expected in (
        f"{source}:2: invalid JSON: ",
        f"{source}:4: expected a JSON object, got a list; skipped",
        f"{source}:5: `inputs` must be an object of the prompt's input fields, got a string; skipped",
        f"{source}:7: id 'g1' already used on line 1; skipped",
        f"{source}:8: `id` must be a string or an integer, got null; read as id '8'",
        f"{source}:8: `output` must be a string, got dict; read as its JSON text",
        f"{source}:9: not valid UTF-8 (byte 0xe9 at column 45); skipped",
    ):
        assert expected in err, expected
    rows = _destination(prompt)
    assert [row["id"] for row in rows] == ["g1", "g2", "g3", "8"]
    assert rows[3] == {
        "id": "8",
        "inputs": {"product": "Pen", "tone": "dry"},
        "output": '{"text": "A pen."}',
        "label": "good",
    }


def test_unknown_label_imports_unlabelled_with_a_warning(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    source = prompt.parent / "real.jsonl"
    source.write_text(_jsonl([GOOD[0], {**GOOD[1], "label": "meh"}]))
    code, result, _ = _import(capsys, prompt, source)
    assert code == 0 and result["added"] == 2
    assert result["warnings"] == [
        {
            "file": str(source),
            "line": 2,
            "message": "label 'meh' is not one of good, bad (or 1, 0)",
            "outcome": "read as unlabelled",
            "skipped": False,
        }
    ]
    assert "label" not in _destination(prompt)[1]


def test_inputs_that_do_not_fit_the_placeholders_import_with_warnings(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    source = prompt.parent / "real.jsonl"
    source.write_text(
        _jsonl([GOOD[0], {"id": "m", "inputs": {"product": "Pen", "colour": "red", "size": 2}, "output": "A pen."}])
    )
    code, result, _ = _import(capsys, prompt, source)
    assert code == 0 and result["added"] == 2
    assert [(w["line"], w["message"]) for w in result["warnings"]] == [
        (2, "inputs lack {tone}, used by the prompt"),
        (2, "inputs the prompt does not use: colour, size"),
    ]
    # a bracketed name in the prompt ([context], as the SPADE pipelines write them) counts as used
    prompt.write_text("Write about [colour] and {product}; {size} and {tone}.\n", encoding="utf-8")
    source.write_text(_jsonl([{"id": "m2", "inputs": {"product": "Pen", "colour": "red", "size": 2, "tone": "x"}}]))
    code, result, _ = _import(capsys, prompt, source)
    assert code == 0 and result["added"] == 1 and result["warnings"] == []


def test_strict_writes_nothing_and_names_every_problem(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    destination = prompt.parent / "blurb.examples.jsonl"
    destination.write_text(_jsonl([GOOD[4]]))
    before = destination.read_bytes()
    source = prompt.parent / "real.jsonl"
    source.write_text(
        _jsonl(
            [{"id": "n", "inputs": None}, GOOD[0], "{oops", {**GOOD[1], "label": "meh"}, {**GOOD[4], "label": "bad"}]
        )
    )
    versions = prompt.parent / "versions.json"
    versions.write_text(json.dumps(["Write a blurb for {product}.", PROMPT]))
    code, out, err = run(
        capsys, "import", str(prompt), "--versions", str(versions), "--examples", str(source), "--strict"
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("spade: error: ")
    assert "nothing was written (--strict)" in err
    for expected in (
        f"{source}:1: `inputs` is null",
        f"{source}:1: inputs lack {{product}}, {{tone}}",
        f"{source}:3: invalid JSON",
        f"{source}:4: label 'meh'",
        f"{source}:5: id 'g5' already holds a different example ({destination}:1)",
    ):
        assert expected in err, expected
    assert destination.read_bytes() == before
    assert not (prompt.parent / ".spade" / "spade.db").exists()  # checked before any version was recorded
    code, result, _ = _import(capsys, prompt, source)  # lenient: the usable lines go in
    assert code == 0 and (result["added"], result["rejected"]) == (3, 2)
    assert destination.read_bytes().startswith(before)
    # a clean file passes --strict
    clean = prompt.parent / "clean.jsonl"
    clean.write_text(_jsonl([GOOD[0], GOOD[4]]))
    code, result, _ = _import(capsys, prompt, clean, "--strict")
    assert code == 0 and result["warnings"] == [] and result["skipped"] == 2


def test_a_file_with_no_usable_line_is_an_error(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    source = prompt.parent / "real.jsonl"
    source.write_text("{oops\n[1]\n")
    code, out, err = run(capsys, "import", str(prompt), "--examples", str(source))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{source}: 2 problem(s), no usable example; nothing was written: {source}:1: invalid JSON" in err
    assert not (prompt.parent / "blurb.examples.jsonl").exists()
    # with versions to import as well, nothing is recorded either: the examples are checked first
    versions = prompt.parent / "versions.json"
    versions.write_text(json.dumps(["Write a blurb for {product}.", PROMPT]))
    code, out, err = run(capsys, "import", str(prompt), "--versions", str(versions), "--examples", str(source))
    assert code == 2 and "no usable example" in err
    with Workspace(prompt.parent) as workspace:
        assert workspace.history.versions(prompt) == []


def test_the_destination_keeps_every_line_as_it_is(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    """Bad lines the user has in the examples file stay (the import appends); a line separator inside a string
    (U+2028, which json.dumps leaves raw with ensure_ascii=False) does not split a line."""
    destination = prompt.parent / "blurb.examples.jsonl"
    text = "\ufeff" + json.dumps(GOOD[0]) + "\r\n{half a line\r\n" + '{"id": "u", "inputs": {}, "output": "a\u2028b"}'
    destination.write_text(text, encoding="utf-8", newline="")
    source = prompt.parent / "real.jsonl"
    source.write_text(_jsonl([GOOD[1], {"id": "v", "inputs": {}, "output": "c\u2029d"}]), encoding="utf-8")
    code, result, _ = _import(capsys, prompt, source)
    assert code == 0 and (result["added"], result["total"]) == (2, 4)
    assert [(w["file"], w["line"], w["outcome"]) for w in result["warnings"] if w["file"] == str(destination)] == [
        (str(destination), 2, "not read; left in the file as it is")
    ]
    written = destination.read_bytes().decode("utf-8")
    assert written.startswith(text + "\r\n") and written.count("\r\n") == 5
    warnings: list[str] = []
    assert [e.output for e in read_examples(destination, warnings) if e.id in ("u", "v")] == ["a\u2028b", "c\u2029d"]
    assert warnings == [
        f"{destination}:2: invalid JSON: Expecting property name enclosed in double quotes (column 2); skipped"
    ]


# -- CSV --------------------------------------------------------------------------------------------------------


def test_csv_rows_with_problems_import_or_are_skipped_by_row(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    source = prompt.parent / "real.csv"
    text = _csv(GOOD)
    header, *rows = text.splitlines()
    bad = [
        "s1,Pen",  # short: the missing fields are empty (first data row)
        "x1,Cup,warm,A cup, with a comma,good",  # a comma not in quotes: the fields are off
        ",,,,",  # every field empty
        'q1,Jug,warm,"A jug\nover two lines",meh',  # unknown label; the row starts on its line
    ]
    source.write_text("\n".join([header, bad[0], rows[0], bad[1], rows[1], bad[2], rows[2], bad[3], *rows[3:]]) + "\n")
    code, result, err = _import(capsys, prompt, source)
    assert code == 0 and (result["added"], result["rejected"], result["total"]) == (7, 2, 7)
    assert [(w["line"], w.get("row"), w["message"], w["skipped"]) for w in result["warnings"]] == [
        (2, 2, "2 fields, the header has 5", False),
        (2, 2, "inputs lack {tone}, used by the prompt", False),
        (4, 4, "6 fields, the header has 5 (a comma not in quotes?)", True),
        (6, 6, "every field is empty", True),
        (8, 8, "label 'meh' is not one of good, bad (or 1, 0)", False),
    ]
    assert f"{source}:4: 6 fields, the header has 5 (a comma not in quotes?); skipped" in err
    rows_written = _destination(prompt)
    assert [row["id"] for row in rows_written] == ["s1", "g1", "g2", "g3", "q1", "g4", "g5"]
    assert rows_written[0] == {"id": "s1", "inputs": {"product": "Pen"}}
    assert rows_written[4]["output"] == "A jug\nover two lines" and "label" not in rows_written[4]
    # the row after a two-line row: its line and its row differ, and both are named
    source.write_text(text.splitlines()[0] + '\n"m1",Pot,warm,"two\nlines",good\nm2,Pan,warm,ok,maybe\n')
    code, result, err = _import(capsys, prompt, source)
    assert code == 0 and [(w["line"], w["row"]) for w in result["warnings"]] == [(4, 3)]
    assert f"{source}:4 (row 3): label 'maybe'" in err


def test_csv_strict_and_placeholders(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    source = prompt.parent / "real.csv"
    source.write_text(_csv([GOOD[0], {**GOOD[1], "label": "meh"}], ("id", "product", "colour", "response", "label")))
    code, out, err = run(capsys, "import", str(prompt), "--examples", str(source), "--strict")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{source}:2: inputs lack {{tone}}" in err and f"{source}:3: label 'meh'" in err
    assert f"{source}:2: inputs the prompt does not use: colour" in err
    assert not (prompt.parent / "blurb.examples.jsonl").exists()
    code, result, _ = _import(capsys, prompt, source)
    assert code == 0 and result["added"] == 2 and len(result["warnings"]) == 5


def test_a_quote_never_closed_is_named_with_the_lines_it_swallowed(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    source = prompt.parent / "real.csv"
    header, *rows = _csv(GOOD[:3]).splitlines()
    source.write_text("\n".join([header, rows[0], rows[1], 'x9,Pen,warm,"never closed,good', rows[2]]) + "\n")
    code, result, err = _import(capsys, prompt, source)
    assert code == 0 and (result["added"], result["rejected"]) == (2, 1)
    message = "a quote opened in this row is never closed (lines 4-5 read as one row)"
    assert [(w["line"], w["message"], w["skipped"]) for w in result["warnings"]] == [(4, message, True)]
    assert f"{source}:4: {message}; skipped" in err


def test_a_long_csv_field_is_read(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    """csv's default field limit (128 KiB) is shorter than a long real output."""
    source = prompt.parent / "real.csv"
    source.write_text(_csv([{**GOOD[0], "output": "word " * 60_000}]))
    code, result, _ = _import(capsys, prompt, source)
    assert code == 0 and result["added"] == 1 and result["warnings"] == []


# -- the workspace's own examples file --------------------------------------------------------------------


def test_eval_reads_the_usable_lines_of_a_file_with_a_bad_one(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path
) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    (workspace_dir / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
    examples = workspace_dir / "blurb.examples.jsonl"
    rows: list[Any] = [
        {"id": "g1", "inputs": {"product": "Kettle"}, "output": "A lovely kettle.", "label": "good"},
        "{not json",
        {"id": "b1", "inputs": None, "output": "A cheap mug.", "label": "bad"},
        {"id": "g1", "inputs": {"product": "Lamp"}, "output": "A lamp.", "label": "good"},
    ]
    examples.write_text(_jsonl(rows), encoding="utf-8")
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    matrix = json.loads(out)
    assert code == 0 and matrix["examples"] == ["g1", "b1"] and matrix["y"] == [1, 0]
    assert matrix["M"] == [[1, 1], [1, 0]]
    assert f"{examples}:2: invalid JSON: " in err and f"{examples}:3: `inputs` is null; read as no inputs" in err
    assert f"{examples}:4: id 'g1' already used on line 1; skipped" in err
    assert any(w.startswith(f"{examples}:2: invalid JSON") for w in matrix["warnings"])
    with pytest.raises(InputError, match=r"3 problem\(s\), refused \(strict\)"):
        read_examples(examples, strict=True)


def test_the_editor_marks_skipped_lines_as_errors_and_changed_ones_as_warnings() -> None:
    from spade_lsp_server._convert import Columns
    from spade_lsp_server.features.diagnostics import ERROR, WARNING, examples_diagnostics

    source = _jsonl([GOOD[0], "{oops", {"id": "n", "inputs": None}, {**GOOD[1], "label": "meh"}])
    found = [
        (d["range"]["start"]["line"], d["severity"], d["message"])
        for d in examples_diagnostics(source, Columns(source, None))
    ]
    assert found == [
        (1, ERROR, "example on line 2: invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        (2, WARNING, "example on line 3: `inputs` is null; read as no inputs"),
        (3, WARNING, "example on line 4: label 'meh' is not one of good, bad (or 1, 0); read as unlabelled"),
    ]


def test_rows_without_ids_are_numbered_after_the_destinations_and_not_imported_twice(
    capsys: pytest.CaptureFixture[str], prompt: Path
) -> None:
    first, second = prompt.parent / "first.jsonl", prompt.parent / "second.jsonl"
    rows = [{"inputs": {"product": p}, "output": f"A {p}.", "label": "good"} for p in ("mug", "lamp", "kettle")]
    first.write_text(_jsonl(rows[:2]))
    second.write_text(_jsonl(rows))  # lines 1-2 repeat the first file's rows, line 3 is new
    code, result, _ = _import(capsys, prompt, first)
    assert code == 0 and result["added"] == 2
    code, result, _ = _import(capsys, prompt, second)
    assert code == 0 and (result["added"], result["skipped"], result["rejected"]) == (1, 2, 0)
    third = prompt.parent / "third.jsonl"
    third.write_text(_jsonl([{"inputs": {"product": "shoe"}, "output": "A shoe.", "label": "bad"}] * 1 + rows[2:]))
    code, result, _ = _import(capsys, prompt, third)  # line 1 holds another example than id "1": renumbered
    assert code == 0 and (result["added"], result["skipped"], result["rejected"]) == (1, 1, 0)
    written = _destination(prompt)
    assert [row["id"] for row in written] == ["1", "2", "3", "4"]
    assert [row["inputs"]["product"] for row in written] == ["mug", "lamp", "kettle", "shoe"]
    code, result, _ = _import(capsys, prompt, third)  # again: nothing new
    assert code == 0 and (result["added"], result["skipped"]) == (0, 2)

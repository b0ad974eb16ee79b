"""Examples files: our format, the SPADE benchmark's, CSV; merging never loses a line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spade_lsp import examples_path, sidecar_path
from spade_lsp._examples import load_examples_file, merge_examples, parse_examples, read_examples
from spade_lsp.errors import InputError


def test_paths_beside_the_prompt() -> None:
    assert examples_path(Path("a/emails.prompt.md")) == Path("a/emails.examples.jsonl")
    assert sidecar_path(Path("a/my-mail.prompt")) == Path("a/my_mail_assertions.py")


def test_benchmark_format_is_read(shared_bench: Path) -> None:
    examples = load_examples_file(shared_bench / "spade" / "emails" / "examples.jsonl")
    assert len(examples) == 98 and {e.label for e in examples} == {0, 1}
    assert examples[0].output and examples[0].prompt and "word_count" in examples[0].inputs


def test_csv_with_response_and_label_columns(tmp_path: Path) -> None:
    source = tmp_path / "rows.csv"
    source.write_text("topic,response,label\ncats,Cats are great,good\ndogs,Meh,0\n")
    examples = load_examples_file(source)
    assert [(e.inputs, e.output, e.label) for e in examples] == [
        ({"topic": "cats"}, "Cats are great", 1),
        ({"topic": "dogs"}, "Meh", 0),
    ]
    (tmp_path / "bad.csv").write_text("topic,text\ncats,x\n")
    with pytest.raises(InputError, match="response"):
        load_examples_file(tmp_path / "bad.csv")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"output": "x"}', r"f\.jsonl:1: missing `inputs`"),
        ('{"inputs": {}, "label": "meh"}', r"f\.jsonl:1: label 'meh'"),
        ('{"inputs": {}, "output": 3}', r"`output` must be a string"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    """Strict: all or nothing, the problem named by file and line. Lenient (the default), each of these rows is
    still usable: read with a warning that names the file and line."""
    (tmp_path / "f.jsonl").write_text(line + "\n")
    with pytest.raises(InputError, match=message):
        read_examples(tmp_path / "f.jsonl", strict=True)
    warnings: list[str] = []
    assert len(read_examples(tmp_path / "f.jsonl", warnings)) == 1
    assert len(warnings) == 1 and re.search(message, warnings[0])


def test_merge_keeps_existing_lines_skips_duplicates_and_refuses_conflicts(tmp_path: Path) -> None:
    target = tmp_path / "p.examples.jsonl"
    target.write_text(json.dumps({"id": "a", "inputs": {}, "output": "x", "label": "good", "mine": 1}) + "\n")
    src = tmp_path / "new.jsonl"
    src.write_text(
        json.dumps({"id": "a", "inputs": {}, "output": "x", "label": "good", "mine": 1}) + "\n"
        + json.dumps({"id": "b", "inputs": {"t": 1}, "response": "y", "label": 0}) + "\n"
    )  # fmt: skip
    result = merge_examples(target, load_examples_file(src))
    assert (result.added, result.skipped, result.total) == (1, 1, 2)
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert rows[0]["mine"] == 1 and rows[1] == {"id": "b", "inputs": {"t": 1}, "output": "y", "label": "bad"}
    before = target.read_bytes()
    src.write_text(json.dumps({"id": "b", "inputs": {}, "output": "changed"}) + "\n")
    with pytest.raises(InputError, match="nothing was written"):
        merge_examples(target, parse_examples(src), strict=True)
    assert target.read_bytes() == before
    # lenient: the conflicting line is not imported, with a warning naming it; nothing else changes
    src.write_text(src.read_text() + json.dumps({"id": "c", "inputs": {}, "output": "new"}) + "\n")
    result = merge_examples(target, parse_examples(src))
    assert (result.added, result.skipped, result.rejected, result.total) == (1, 0, 1, 3)
    assert [str(w) for w in result.warnings] == [
        f"{src}:1: id 'b' already holds a different example ({target}:2); give it a new id or edit the file; skipped"
    ]
    assert target.read_bytes() == before + (json.dumps({"id": "c", "inputs": {}, "output": "new"}) + "\n").encode()


def test_examples_in_chunks_skip_a_reused_id_across_chunks_and_cap_warnings(tmp_path: Path) -> None:
    from spade_lsp._examples import example_chunks

    source = tmp_path / "x.examples.jsonl"
    rows = [{"id": f"e{n}", "inputs": {"n": n}, "output": "ok", "label": "good"} for n in range(5)]
    rows.append({"id": "e1", "inputs": {"n": 99}, "output": "again", "label": "bad"})  # reuses line 2's id
    lines = [json.dumps(row) for row in rows] + ["{not json"] * 150
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    warnings: list[str] = []
    chunks = list(example_chunks(source, warnings, size=2))
    assert [[e.id for e in chunk] for chunk in chunks] == [["e0", "e1"], ["e2", "e3"], ["e4"]]
    assert [e.id for e in read_examples(source, [])] == ["e0", "e1", "e2", "e3", "e4"]  # the same examples
    assert f"{source}:6: id 'e1' already used on line 2" in warnings[0]
    assert len(warnings) == 101 and warnings[-1] == f"{source}: and 51 more problem(s)"

    empty = tmp_path / "empty.examples.jsonl"
    empty.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match="no usable example"):
        list(example_chunks(empty, [], size=2))

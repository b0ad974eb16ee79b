"""The reader of a spade-experiments checkout that the candidate-quality benchmark uses for pipelines the shared
data lacks: it must hand the benchmark the same examples and labels the published files hold."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from spade_lsp import iter_examples
from tests.support.spade_experiments import ENV, convert, extra_pipelines, unseen_deltas


def _pipeline(root: Path, name: str, responses: list[tuple[str, str]], labelled: list[tuple[str, int]]) -> None:
    directory = root / "paper_experiments" / name
    directory.mkdir(parents=True)
    (directory / "prompt_templates.py").write_text(
        'TEMPLATES = ["old {topic}"]\nimport os\n'
        'TEMPLATES = [\n    "Write about {topic}.",\n    "Write about {topic} in {language}.",\n]\n'
    )
    with (directory / "0a1b.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["prompt", "example", "response", "model"])
        for topic, response in responses:
            inputs = repr({"topic": topic, "language": "French"})
            writer.writerow([f"user:\nWrite about {topic}.", inputs, response, "m"])
    with (directory / "labeled_responses.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["response", "label"])
        writer.writerows(labelled)
    (directory / "assertion_res_ff.csv").write_text("version https://git-lfs.github.com/spec/v1\n")


def test_a_pipeline_reads_as_the_shared_layout_with_labels_joined_by_response(tmp_path: Path) -> None:
    long = "Les abeilles pollinisent les cultures. " * 3
    _pipeline(
        tmp_path,
        "bees",
        [
            ("bees", long),
            ("ants", "Ants  carry\nleaves."),
            ("owls", "Owls hunt at night over the quiet fields."),
            ("cats", "N/A"),
        ],
        # another order, whitespace changed, one letter's case changed, and no row for "N/A"
        [("owls hunt at night over the quiet fields.", 1), ("Ants carry leaves.", 0), (long.strip(), 1)],
    )
    assert convert(tmp_path, "bees", tmp_path / "out") == 4
    versions = json.loads((tmp_path / "out" / "versions.json").read_text())
    assert versions == ["Write about {topic}.", "Write about {topic} in {language}."]  # the last TEMPLATES
    examples = [e for _, e, problems in iter_examples(tmp_path / "out" / "examples.jsonl") if e and not problems]
    assert [(e.id, e.inputs["topic"], e.output, e.label) for e in examples] == [
        ("0", "bees", long, 1),
        ("1", "ants", "Ants  carry\nleaves.", 0),
        ("2", "owls", "Owls hunt at night over the quiet fields.", 1),
        ("3", "cats", "N/A", None),
    ]
    assert examples[0].inputs == {"topic": "bees", "language": "French"}


def test_only_pipelines_the_shared_data_lacks_are_added_and_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout, shared = tmp_path / "checkout", tmp_path / "shared"
    for name in ("emails", "threads"):
        _pipeline(checkout, name, [("a", "A.")], [("A.", 1)])
    (shared / "spade" / "emails").mkdir(parents=True)
    monkeypatch.delenv(ENV, raising=False)
    assert extra_pipelines(shared, tmp_path / "out") == ()
    monkeypatch.setenv(ENV, str(checkout))
    assert extra_pipelines(shared, tmp_path / "out") == ("threads",)
    assert (tmp_path / "out" / "spade" / "threads" / "examples.jsonl").is_file()
    monkeypatch.setenv(ENV, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="paper_experiments"):
        extra_pipelines(shared, tmp_path / "out")


def test_the_deltas_dev_lacks_are_read_in_its_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "paper_experiments").mkdir()
    with (tmp_path / "taxonomy_labels.csv").open("w", newline="", encoding="utf-8-sig") as handle:
        writer = csv.writer(handle)
        writer.writerow(["timestamp", "repo", "formatted_prompt_template", "diff", "ground_truth_tags"])
        writer.writerow(["t", "a/seen", "Be brief.", "+ Be brief.", "Content/Count"])
        writer.writerow(
            ["t", "b/new", "Hi.\nUse JSON.", "  Hi.\n+ Use JSON.", "Structural/PresentationFormat, Content/Count"]
        )
        writer.writerow(["t", "b/new", "Hi.", "  Hi.", "N/A"])
    dev = tmp_path / "dev.jsonl"
    dev.write_text(json.dumps({"repo": "a/seen", "diff": "+ Be brief.", "labels": ["Content/Count"]}) + "\n")
    monkeypatch.delenv(ENV, raising=False)
    assert unseen_deltas(dev) == []
    monkeypatch.setenv(ENV, str(tmp_path))
    assert unseen_deltas(dev) == [
        {
            "repo": "b/new",
            "diff": "  Hi.\n+ Use JSON.",
            "after": "Hi.\nUse JSON.",
            "labels": ["Structural/PresentationFormat", "Content/Count"],
        },
        {"repo": "b/new", "diff": "  Hi.", "after": "Hi.", "labels": []},
    ]

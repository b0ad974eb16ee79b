"""The outputs grid over stdio: each output with each check's verdict, and grading that edits one line of the
examples file (an example relabelled in place, a sampled output added with the inputs it was sampled on)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.blurb import EXAMPLES, sampling_workspace
from tests.support.openai_stub import OpenAIStub, chat_reply, user_text


def _model(request: dict[str, Any]) -> Any:  # "cheap" for the mug, always: that input always fails no_cheap
    return chat_reply("A cheap mug." if "Mug" in user_text(request) else "A lovely thing for you.")


async def test_the_grid_shows_every_output_with_each_checks_verdict_and_grading_writes_labels(
    editor_factory: Any, workspace_dir: Path
) -> None:
    prompt = sampling_workspace(workspace_dir)
    examples = workspace_dir / "blurb.examples.jsonl"
    with OpenAIStub(_model) as stub:
        (workspace_dir / "spade.toml").write_text(
            f'model = "openai/stub"\napi_base = "{stub.api_base}"\nclassifier = "offline"\n', encoding="utf-8"
        )
        editor = await editor_factory(workspace_dir)
        uri = await editor.open(prompt)
        empty = await editor.command("spade.outputs", uri)
        assert empty["rows"] == [] and [c["name"] for c in empty["checks"]] == ["assert_short", "assert_no_cheap"]
        await editor.command("spade.evaluate", uri)
        await editor.command("spade.sample", uri, {"samples": 2})
        grid = await editor.command("spade.outputs", uri)

    checks = grid["checks"]
    assert checks[0]["code"].startswith("@assertion(") and "def assert_short(" in checks[0]["code"]
    sidecar = (workspace_dir / "blurb_assertions.py").read_text(encoding="utf-8").splitlines()
    assert [sidecar[c["line"]].startswith(f"def {c['name']}(") for c in checks] == [True, True]
    rows = {row["key"]: row for row in grid["rows"]}
    # the labelled examples, with the evaluation's verdicts: b1 says "cheap", b2 runs to 20 words
    assert [rows[f"example:{e['id']}"]["label"] for e in EXAMPLES] == ["good", "good", "bad", "bad"]
    assert rows["example:b1"]["cells"] == [1, 0] and rows["example:b2"]["cells"] == [0, 1]
    assert rows["example:g1"]["cells"] == [1, 1] and rows["example:g1"]["text"] == EXAMPLES[0]["output"]
    # the sampled outputs: four inputs, two samples each, the mug's always cheap
    sampled = [row for row in grid["rows"] if row["key"].startswith("sample:")]
    (run,) = grid["sample_runs"]
    assert len(sampled) == 8 and all(row["source"].endswith(f"sampled (run {run})") for row in sampled)
    mug = [row for row in sampled if row["id"] == "b1"]
    assert len(mug) == 2 and all(row["text"] == "A cheap mug." and row["cells"] == [1, 0] for row in mug)

    # relabel an example in place: one line changes, in the form its label had
    before = examples.read_text(encoding="utf-8").splitlines()
    graded = await editor.command("spade.grade", uri, {"row": "example:g2", "label": "bad"})
    assert graded == {"examples_file": str(examples), "id": "g2", "line": 1, "added": False, "label": "bad"}
    after = examples.read_text(encoding="utf-8").splitlines()
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [1]
    assert json.loads(after[1]) == {**EXAMPLES[1], "label": "bad"}
    regraded = {row["key"]: row for row in (await editor.command("spade.outputs", uri))["rows"]}
    assert regraded["example:g2"]["label"] == "bad"  # the file's label, before any new evaluation

    # a sampled output becomes a new example, with the inputs it was sampled on
    graded = await editor.command("spade.grade", uri, {"row": mug[0]["key"], "label": "bad"})
    assert graded["added"] is True and graded["id"] == f"sampled-{run}-b1-{mug[0]['sample']}"
    lines = examples.read_text(encoding="utf-8").splitlines()
    assert lines[:4] == after and json.loads(lines[4]) == {
        "id": graded["id"],
        "inputs": {"product": "Mug"},
        "output": "A cheap mug.",
        "label": "bad",
    }
    again = await editor.command("spade.grade", uri, {"row": mug[0]["key"], "label": "good"})
    assert again["id"] == graded["id"] + "-2"  # a second grade of the same output never reuses an id

    with pytest.raises(JsonRpcException, match="no example with id 'gone'"):
        await editor.command("spade.grade", uri, {"row": "example:gone", "label": "bad"})
    with pytest.raises(JsonRpcException, match='"label": "good" or "bad"'):
        await editor.command("spade.grade", uri, {"row": "example:g1", "label": "meh"})
    assert len(examples.read_text(encoding="utf-8").splitlines()) == 6  # the refused ones wrote nothing


async def test_both_sides_of_a_comparison_are_rows_each_a_source_to_filter_by_and_either_can_be_graded(
    editor_factory: Any, workspace_dir: Path
) -> None:
    """After a comparison of two models, the grid holds the newest run of each (a model sampled earlier is
    replaced by its newer run, not shown twice), each as its own source, and an output of the older run can
    still be graded."""

    def model(request: dict[str, Any]) -> Any:  # the candidate says "cheap" to everything
        return chat_reply("A cheap thing." if request["model"] == "bad" else "A lovely thing for you.")

    prompt = sampling_workspace(workspace_dir)
    with OpenAIStub(model) as stub:
        (workspace_dir / "spade.toml").write_text(
            f'model = "openai/good"\napi_base = "{stub.api_base}"\nclassifier = "offline"\n', encoding="utf-8"
        )
        editor = await editor_factory(workspace_dir)
        uri = await editor.open(prompt)
        first = await editor.command("spade.sample", uri, {"samples": 1})
        await editor.command("spade.compare", uri, {"models": ["openai/good", "openai/bad"], "samples": 2})
        grid = await editor.command("spade.outputs", uri)

    sampled = [row for row in grid["rows"] if row["key"].startswith("sample:")]
    sources = {row["source"] for row in sampled}
    good_run, bad_run = sorted(grid["sample_runs"])
    assert len(grid["sample_runs"]) == 2 and first["run_id"] < good_run
    assert sources == {f"v1 sampled with openai/good (run {good_run})", f"v1 sampled with openai/bad (run {bad_run})"}
    by_source = {source: [row for row in sampled if row["source"] == source] for source in sources}
    assert all(len(rows) == 8 for rows in by_source.values())  # four inputs, two samples each
    bad_rows = by_source[f"v1 sampled with openai/bad (run {bad_run})"]
    assert all(row["text"] == "A cheap thing." and row["cells"] == [1, 0] for row in bad_rows)
    older = next(row for row in sampled if row["key"].startswith(f"sample:{good_run}:"))
    graded = await editor.command("spade.grade", uri, {"row": older["key"], "label": "good"})
    assert graded["added"] is True and graded["id"].startswith(f"sampled-{good_run}-")
    with pytest.raises(JsonRpcException, match="sampling run 999 is not a finished run of this prompt"):
        await editor.command("spade.grade", uri, {"row": "sample:999:0:0", "label": "good"})


async def test_an_examples_file_linked_out_of_the_workspace_is_never_read_or_graded(
    editor_factory: Any, workspace_dir: Path, tmp_path: Path
) -> None:
    """A repository's symlink does not make the grid read, or a grade write, a file outside the workspace."""
    prompt = sampling_workspace(workspace_dir)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text((workspace_dir / "blurb.examples.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    before = outside.read_text(encoding="utf-8")
    (workspace_dir / "blurb.examples.jsonl").unlink()
    (workspace_dir / "blurb.examples.jsonl").symlink_to(outside)
    (workspace_dir / "spade.toml").write_text('classifier = "offline"\n', encoding="utf-8")
    editor = await editor_factory(workspace_dir)
    uri = await editor.open(prompt)
    for command, arguments in (("spade.outputs", ()), ("spade.grade", ({"row": "example:g1", "label": "bad"},))):
        with pytest.raises(JsonRpcException, match="outside the workspace"):
            await editor.command(command, uri, *arguments)
    assert outside.read_text(encoding="utf-8") == before and not editor.applied

"""``spade select`` through its handler (a local parser; the lead wires it into spade_lsp.cli)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.cli import _common
from spade_lsp.cli._selection import add_select_parser, run_select
from spade_lsp.errors import InputError
from spade_lsp.store import Store
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply


def _run(argv: list[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="spade")
    add_select_parser(parser.add_subparsers(dest="command"), _common)
    out = io.StringIO()
    code = run_select(parser.parse_args(["select", *argv]), out)
    return code, out.getvalue()


def test_matrix_json_follows_the_contract(shared_bench: Path) -> None:
    code, text = _run(["--matrix", str(shared_bench / "spade" / "emails" / "matrix.json"), "--json"])
    assert code == 0
    document = json.loads(text)
    assert list(document)[:6] == ["selected", "coverage", "ffr", "excluded_not_subsumed", "status", "solve_seconds"]
    assert document["status"] == "optimal"
    assert document["excluded_not_subsumed"] == []
    assert document["method"] == "sub" and document["tau"] == 0.25 and document["alpha"] == 0.6
    assert document["cv"]["folds"] == 5


def test_infeasible_exits_1_with_a_reason(tmp_path: Path) -> None:
    matrix = tmp_path / "m.json"
    matrix.write_text(json.dumps({"assertions": [{"name": "a"}], "M": [[0], [0]], "y": [0, 1], "K": []}))
    code, text = _run(["--matrix", str(matrix), "--json", "--method", "cov"])
    assert code == 1
    document = json.loads(text)
    assert document["status"] == "infeasible" and "cannot both be met" in document["reason"]


def test_bad_input_raises_input_error(tmp_path: Path) -> None:
    matrix = tmp_path / "m.json"
    matrix.write_text(json.dumps({"assertions": [{"name": "a"}], "M": [[0, 1]], "y": [0], "K": []}))
    with pytest.raises(InputError, match="shapes disagree"):
        _run(["--matrix", str(matrix)])
    with pytest.raises(InputError, match="either a PROMPT or --matrix"):
        _run([])


def _seed_run(root: Path, *, m: list[list[Any]], y: list[Any], assertions: list[dict[str, Any]]) -> None:
    with Store.open(root) as store, store.write() as db:
        db.execute("INSERT INTO prompts (id, path, created_at) VALUES (1, 'p.prompt', '2024-01-01T00:00:00+00:00')")
        db.execute(
            "INSERT INTO eval_runs (prompt_id, started_at, finished_at, status, module_hash, examples_hash, "
            "parameters, assertions, examples, y, m, errors, seconds) VALUES (1, 'x', 'x', 'done', 'h', 'h', '{}', "
            "?, ?, ?, ?, '[]', 0.1)",
            [json.dumps(assertions), json.dumps([f"e{i}" for i in range(len(y))]), json.dumps(y), json.dumps(m)],
        )


ASSERTIONS = [
    {"name": "assert_w100", "cost": 0, "check": {"family": "count", "unit": "words", "max": 100}},
    {"name": "assert_w150", "cost": 0, "check": {"family": "count", "unit": "words", "max": 150}},
    {"name": "assert_json", "cost": 0, "check": None},
]


def test_prompt_uses_the_stored_run_stores_static_pairs_and_the_selection(workspace_dir: Path) -> None:
    # rows: bad, bad, good, good, unlabelled; the error cell (null) counts as a failure
    m = [[0, 0, 1], [0, 1, None], [1, 1, 1], [1, 1, 1], [0, 0, 0]]
    _seed_run(workspace_dir, m=m, y=[0, 0, 1, 1, None], assertions=ASSERTIONS)
    (workspace_dir / "p.prompt").write_text("Keep it short.", encoding="utf-8")
    code, text = _run([str(workspace_dir / "p.prompt"), "--json", "--workspace", str(workspace_dir), "--folds", "0"])
    assert code == 0
    document = json.loads(text)
    # w100 subsumes w150 statically; json flags bad 1 via its error cell
    assert "assert_w150" not in document["selected"]
    assert document["excluded_not_subsumed"] == []
    assert any("1 cell(s)" in note and "count as failures" in note for note in document["notes"])
    assert any("unlabelled" in note for note in document["notes"])
    with Store.open(workspace_dir) as store:
        pairs = store.db.execute("SELECT subsumer, subsumed, origin FROM subsumptions").fetchall()
        assert ("assert_w100", "assert_w150", "static") in pairs
        row = store.db.execute("SELECT method, tau, parameters, selected, status FROM selections").fetchone()
        assert row[0] == "sub" and row[1] == 0.25 and row[4] == "optimal"
        assert json.loads(row[2])["folds"] == 0
        assert json.loads(row[3]) == document["selected"]


def test_prompt_with_a_model_asks_for_llm_pairs_once(workspace_dir: Path) -> None:
    _seed_run(workspace_dir, m=[[0, 0, 0], [1, 1, 1]], y=[0, 1], assertions=ASSERTIONS)
    (workspace_dir / "p.prompt").write_text("Keep it short.", encoding="utf-8")

    def model(request: dict[str, Any]) -> Reply:
        if request["messages"][0]["content"].startswith("You compare"):
            return chat_reply(json.dumps({"implications": [{"assertion": "assert_json", "subsumes": ["assert_w100"]}]}))
        return chat_reply(
            json.dumps({"pairs": [{"subsumer": "assert_json", "subsumed": "assert_w100", "holds": True}]})
        )

    with OpenAIStub(model) as stub:
        argv = [str(workspace_dir / "p.prompt"), "--json", "--workspace", str(workspace_dir), "--folds", "0"]
        argv += ["--assistant-model", "openai/x", "--assistant-api-base", stub.api_base]
        code, text = _run(argv)
        assert code == 0
        assert json.loads(text)["selected"] == ["assert_json"]
        assert len(stub.requests) == 2
        _run(argv)  # stored llm pairs: no new calls
        assert len(stub.requests) == 2
    with Store.open(workspace_dir) as store:
        origins = store.db.execute("SELECT origin FROM subsumptions WHERE subsumer = 'assert_json'").fetchall()
        assert ("llm",) in origins


def test_prompt_without_a_run_is_a_clear_error(workspace_dir: Path) -> None:
    (workspace_dir / "q.prompt").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="not in the store"):
        _run([str(workspace_dir / "q.prompt"), "--workspace", str(workspace_dir)])

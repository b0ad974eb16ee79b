"""The `spade` command line, including every kind of bad input the Foundation issue lists."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from spade_lsp.cli import main
from tests.support.cli import run


@pytest.fixture
def prompt(workspace_dir: Path) -> Path:
    path = workspace_dir / "email.prompt"
    path.write_text("Write an email about {topic}.\nKeep it under 100 words.\n", encoding="utf-8")
    return path


def _store_snapshot(workspace_dir: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(workspace_dir / ".spade" / "spade.db")
    try:
        return conn.execute("SELECT id, content_hash FROM versions ORDER BY id").fetchall()
    finally:
        conn.close()


def test_history_and_deltas_tables_and_json(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    code, out, _ = run(capsys, "history", str(prompt))
    assert code == 0 and "email.prompt: 1 version(s)" in out and "save" in out
    prompt.write_text(prompt.read_text() + "Do not mention prices.\n")
    code, out, _ = run(capsys, "deltas", str(prompt), "--json")
    data = json.loads(out)
    assert code == 0 and [d["to_number"] for d in data["deltas"]] == [1, 2]
    assert "Content/Exclusion" in data["deltas"][1]["labels"]
    code, out, _ = run(capsys, "deltas", str(prompt), "--from", "1")
    assert code == 0 and "v1 -> v2" in out and "Must avoid" in out and "v1 (first)" not in out


def test_import_versions_file(capsys: pytest.CaptureFixture[str], workspace_dir: Path) -> None:
    versions = workspace_dir / "versions.json"
    versions.write_text(json.dumps(["Be brief.", "Be brief. Answer in JSON.", {"text": "Answer in JSON."}]))
    code, out, _ = run(capsys, "import", str(workspace_dir / "p.prompt"), "--versions", str(versions), "--json")
    offline = {"classifier": None, "relabelled": 0, "kept_offline": 0, "fallbacks": []}  # no assistant model
    assert code == 0 and json.loads(out) == {
        "prompt": "p.prompt",
        "added": 3,
        "unchanged": 0,
        "versions": 3,
        "labels": offline,
        "fallbacks": [],
    }


def test_identical_versions_warn_and_record_one(capsys: pytest.CaptureFixture[str], workspace_dir: Path) -> None:
    versions = workspace_dir / "versions.json"
    versions.write_text(json.dumps(["Same.", "Same.", "Same."]))
    code, out, err = run(capsys, "import", str(workspace_dir / "p.prompt"), "--versions", str(versions))
    assert code == 0 and "1 version(s) recorded, 2 unchanged" in out
    assert "all 3 versions are identical" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2", "invalid JSON"),
        ("{}", "non-empty JSON list"),
        ("[]", "non-empty JSON list"),
        ('["ok", 3]', "version 2 is not a string"),
    ],
)
def test_malformed_versions_file(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path, content: str, message: str
) -> None:
    versions = workspace_dir / "versions.json"
    versions.write_text(content)
    code, out, err = run(capsys, "import", str(workspace_dir / "p.prompt"), "--versions", str(versions))
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_taxonomy_contract_and_malformed_jsonl_names_the_line(
    capsys: pytest.CaptureFixture[str], workspace_dir: Path
) -> None:
    good = workspace_dir / "good.jsonl"
    good.write_text(
        json.dumps({"diff": "  Summarise {text}.\n+ Use at most 3 bullet points."})
        + "\n"
        + json.dumps({"before": "Hi.", "after": "Hi. Never mention the weather."})
        + "\n"
    )
    code, out, _ = run(capsys, "taxonomy", "--jsonl", str(good), "--workspace", str(workspace_dir))
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(lines) == 2
    assert "Content/Count" in lines[0]["labels"] and "Content/Exclusion" in lines[1]["labels"]
    bad = workspace_dir / "bad.jsonl"
    bad.write_text(json.dumps({"diff": "+ a"}) + "\n{oops\n")
    code, out, err = run(capsys, "taxonomy", "--jsonl", str(bad), "--workspace", str(workspace_dir))
    assert code == 2 and out == "" and f"{bad}:2: invalid JSON" in err
    neither = workspace_dir / "neither.jsonl"
    neither.write_text(json.dumps({"text": "x"}) + "\n")
    code, _, err = run(capsys, "taxonomy", "--jsonl", str(neither), "--workspace", str(workspace_dir))
    assert code == 2 and f"{neither}:1:" in err


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        (b"Caf\xe9 au lait\n", "not valid UTF-8 (byte 0xe9 on line 1)"),
        (b"x" * 5_000_000, "larger than the 1 MB limit"),
    ],
)
def test_unusable_prompt_files_leave_the_store_alone(
    capsys: pytest.CaptureFixture[str], prompt: Path, data: bytes, message: str
) -> None:
    assert run(capsys, "history", str(prompt))[0] == 0
    before = _store_snapshot(prompt.parent)
    prompt.write_bytes(data)
    code, out, err = run(capsys, "history", str(prompt))
    assert code == 2 and out == "" and message in err and err.count("\n") == 1
    assert _store_snapshot(prompt.parent) == before


def test_missing_prompt_and_empty_prompt(capsys: pytest.CaptureFixture[str], workspace_dir: Path) -> None:
    code, _, err = run(capsys, "history", str(workspace_dir / "nope.prompt"))
    assert code == 2 and "no such file" in err
    empty = workspace_dir / "empty.prompt"
    empty.write_text("")
    code, _, err = run(capsys, "history", str(empty))
    assert code == 2 and "empty" in err and "no versions recorded" in err


def test_corrupt_and_locked_store(capsys: pytest.CaptureFixture[str], prompt: Path) -> None:
    store = prompt.parent / ".spade" / "spade.db"
    run(capsys, "history", str(prompt))
    holder = sqlite3.connect(store, isolation_level=None, timeout=0.1)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        prompt.write_text("A new text. Answer in JSON.\n")
        from spade_lsp.workspace import Workspace

        with pytest.raises(Exception, match="locked"), Workspace(prompt.parent, busy_timeout_s=0.2) as ws:
            ws.history.record(prompt, prompt.read_text())
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.write_bytes(b"garbage" * 1000)
    (prompt.parent / ".spade" / "spade.db-wal").unlink(missing_ok=True)
    code, _, err = run(capsys, "history", str(prompt))
    assert code == 2 and "not a usable SQLite database" in err
    assert store.read_bytes() == b"garbage" * 1000


def test_file_outside_any_git_repository_works(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    lone = tmp_path / "lone" / "x.prompt"
    lone.parent.mkdir()
    lone.write_text("Answer in French.\n")
    code, out, err = run(capsys, "history", str(lone))
    assert code == 0 and "1 version(s)" in out and err == ""
    assert (lone.parent / ".spade" / "spade.db").exists()


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["deltas"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["history", "x.prompt", "--from", "x"])
    assert exit_info.value.code == 2


def test_console_script_demo_runs_offline(tmp_path: Path) -> None:
    spade = Path(sys.executable).with_name("spade")
    result = subprocess.run(
        [str(spade), "demo", "--dir", str(tmp_path / "demo"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["versions"] == [1, 2, 3, 4, 5]
    labels = set().union(*(d["labels"] for d in data["deltas"]))
    assert {"Content/Count", "Content/Exclusion", "Structural/PresentationFormat"} <= labels
    assert "litellm" not in result.stderr


_EXIT_PROBE = """
import atexit, sys, threading, time
from spade_lsp import cli

def late_writer():  # a thread still working when the command returns: its output must not be lost
    time.sleep(0.3)
    sys.stdout.write("thread finished\\n")

atexit.register(lambda: sys.stdout.write("atexit ran\\n"))
real_main = cli.main
def main():
    threading.Thread(target=late_writer).start()
    code = real_main()
    sys.stdout.write("x" * 200_000 + "\\n")  # buffered, not yet written when the process would end
    return code
cli.main = main
sys.argv = ["spade", *sys.argv[1:]]
cli.run()
"""


def test_the_command_skips_teardown_but_keeps_its_exit_code_output_threads_and_atexit(tmp_path: Path) -> None:
    """``spade`` ends with ``os._exit`` (an interpreter's teardown cost a second): what exit would still do must
    happen before it."""
    missing = tmp_path / "nothing.prompt"
    result = subprocess.run(
        [sys.executable, "-c", _EXIT_PROBE, "history", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr  # a missing prompt: the usage exit code, kept
    assert "spade: error:" in result.stderr
    lines = result.stdout.splitlines()  # the thread may finish before the command does: either order
    assert sorted(lines[:2]) == ["thread finished", "x" * 200_000] and lines[2:] == ["atexit ran"]


def test_history_json_and_taxonomy_score_json(
    capsys: pytest.CaptureFixture[str], prompt: Path, shared_bench: Path
) -> None:
    code, out, _ = run(capsys, "history", str(prompt), "--json")
    version = json.loads(out)["versions"][0]
    assert code == 0 and version["number"] == 1 and version["origin"] == "save" and len(version["content_hash"]) == 64
    dev = shared_bench / "taxonomy" / "dev.jsonl"
    code, out, _ = run(capsys, "taxonomy", "--jsonl", str(dev), "--score", "--json", "--workspace", str(prompt.parent))
    report = json.loads(out)
    assert code == 0 and report["n_deltas"] == 62 and report["micro_f1"] >= 0.80
    assert {s["category"] for s in report["per_category"]} >= {"Content/Count", "Content/Exclusion"}

"""Benchmark: importing the git history of a prompt with 1,000 commits must take under 2 s.

The throwaway repository is built with one ``git fast-import`` stream (seconds faster than 1,000
``git commit`` calls); halfway through, the prompt is renamed so that ``--follow`` does real work.
Run with ``pytest -q -s tests/benchmarks/test_git_import_bench.py -m benchmark``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from spade_lsp._git import file_history
from tests.support.floors import below

COMMITS = 1_000
RUNS = 5
FLOOR_SECONDS = 2.0

pytestmark = [
    pytest.mark.benchmark,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _prompt_text(i: int) -> bytes:
    """A realistic ~2 KB prompt whose i-th version differs from the previous one by a sentence or two."""
    lines = [f"You are assistant number {i % 7}. Follow every rule below.\n"]
    lines += [f"Rule {k}: keep answer {k} under {50 + k} words and cite source {k}.\n" for k in range(40)]
    lines.append(f"Revision note {i}: answer in JSON and never mention item {i * 31 % 997}.\n")
    return "".join(lines).encode()


def _fast_import_stream(commits: int) -> bytes:
    out: list[bytes] = []
    start = 1_700_000_000
    for i in range(commits):
        path = "a.prompt" if i < commits // 2 else "prompts/renamed.prompt"
        message = f"edit {i}\n\nWhy: requirement {i}.\n".encode()
        content = _prompt_text(i)
        out.append(b"commit refs/heads/main\n")
        out.append(f"mark :{i + 1}\n".encode())
        out.append(f"author Bench <bench@example.com> {start + 60 * i} +0000\n".encode())
        out.append(f"committer Bench <bench@example.com> {start + 60 * i} +0000\n".encode())
        out.append(f"data {len(message)}\n".encode() + message)
        if i > 0:
            out.append(f"from :{i}\n".encode())
        if i == commits // 2:
            out.append(b"D a.prompt\n")
        out.append(f"M 100644 inline {path}\ndata {len(content)}\n".encode() + content + b"\n")
    return b"".join(out)


@pytest.fixture(scope="module")
def big_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench") / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, env=_ENV, check=True)
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=root,
        env=_ENV,
        input=_fast_import_stream(COMMITS),
        check=True,
    )
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, env=_ENV, check=True)
    return root


def test_file_history_of_1000_commits_is_fast(big_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    path = big_repo / "prompts" / "renamed.prompt"
    timings: list[float] = []
    history = []
    for _ in range(RUNS):
        started = time.perf_counter()
        history = file_history(path)
        timings.append(time.perf_counter() - started)

    assert len(history) == COMMITS
    assert history[0].path == "a.prompt" and history[-1].path == "prompts/renamed.prompt"
    assert history[0].content == _prompt_text(0) and history[-1].content == _prompt_text(COMMITS - 1)
    median = statistics.median(timings)
    print(
        f"\nfile_history, {COMMITS} commits: median {median:.3f} s over {RUNS} runs "
        f"(min {min(timings):.3f} s, max {max(timings):.3f} s)"
    )
    below("file_history_1000_commits_s", median, FLOOR_SECONDS, "s", runs=timings)


def test_import_of_1000_commits_into_the_store_is_fast(
    big_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole import: git log and blobs, 1,000 versions recorded, their deltas and categories stored."""
    from spade_lsp.workspace import Workspace

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    path = big_repo / "prompts" / "renamed.prompt"
    timings: list[float] = []
    for run in range(3):
        store_root = tmp_path / f"ws{run}"
        store_root.mkdir()
        with Workspace(store_root, overrides={"classifier": "offline"}) as workspace:
            started = time.perf_counter()
            result = workspace.history.import_git(path, max_bytes=1_000_000)
            timings.append(time.perf_counter() - started)
            assert result.added == COMMITS
            assert len(workspace.history.deltas(path)) == COMMITS
    median = statistics.median(timings)
    print(f"\ngit import into the store, {COMMITS} commits: median {median:.3f} s over {len(timings)} runs")
    below("import_1000_commits_into_store_s", median, FLOOR_SECONDS, "s", runs=timings)

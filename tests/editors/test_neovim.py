"""A real editor as the client: headless Neovim's built-in LSP client against `spade lsp` and its daemon.

A prompt committed three times in a git repository; Neovim opens it, attaches the server over stdio, and must
receive one spade diagnostic per checkable instruction, with the contract's codes and messages, and with the
version (from git) that introduced each. Skipped only when `nvim` is missing; `.ci/run` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from tests.spade_lsp_client.daemons import Daemons, daemons

__all__ = ["daemons"]

NVIM = shutil.which("nvim")
SCRIPT = Path(__file__).with_name("nvim_diagnostics.lua")

VERSIONS = [
    "Write an email to {name} about {topic}.\n",
    "Write an email to {name} about {topic}.\nKeep it under 100 words.\n",
    "Write an email to {name} about {topic}.\nKeep it under 100 words.\nDo not mention pricing or discounts.\n"
    "Format the answer in markdown with a **Subject:** line first.\n",
]


def _repository(root: Path) -> Path:
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Prompt Author")
        config.set_value("user", "email", "author@example.com")
    prompt = root / "email.prompt"
    for number, text in enumerate(VERSIONS, 1):
        prompt.write_text(text, encoding="utf-8")
        repo.index.add(["email.prompt"])
        repo.index.commit(f"email prompt, version {number}")
    return prompt


def _run_neovim(root: Path, prompt: Path, *, wanted: int, ready: str) -> dict[str, Any]:
    assert NVIM is not None
    out = root.parent / "nvim-result.json"
    env = {
        **os.environ,
        "SPADE_NVIM_FILE": str(prompt),
        "SPADE_NVIM_ROOT": str(root),
        "SPADE_NVIM_CMD": json.dumps([sys.executable, "-m", "spade_lsp_server"]),
        "SPADE_NVIM_OUT": str(out),
        "SPADE_NVIM_MIN": str(wanted),
        "SPADE_NVIM_READY": ready,
        "SPADE_NVIM_TIMEOUT_MS": "30000",
        "XDG_STATE_HOME": str(root.parent / "nvim-state"),  # Neovim's LSP log goes here, not into $HOME
        "XDG_DATA_HOME": str(root.parent / "nvim-data"),
    }
    subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {SCRIPT}"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=90,
        check=False,
    )
    assert out.exists(), "Neovim wrote no result"
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (.ci/run installs Debian's neovim)")
def test_neovim_receives_categorised_diagnostics_with_git_versions(tmp_path: Path, daemons: Daemons) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    prompt = _repository(root)
    daemons.track(root)  # the server starts the daemon; teardown kills it

    result = _run_neovim(root, prompt, wanted=4, ready="introduced in v3")

    assert result.get("error") is None, result.get("error")
    assert result["ready"], result
    by_line = {d["lnum"]: d for d in result["diagnostics"]}
    # line 0 asks for the inputs in the answer: the offline check mentions {name} and {topic}, as synthesize writes
    assert set(by_line) == {0, 1, 2, 3}, result["diagnostics"]
    assert by_line[0]["code"] == "Content/DataPlaceholders" and by_line[0]["message"].startswith("Input data")
    assert all(d["source"] == "spade" for d in by_line.values())

    count, exclusion, format_ = by_line[1], by_line[2], by_line[3]
    assert count["code"] == "Content/Count"
    assert count["message"].startswith("Length or count")
    assert "introduced in v2" in count["message"]
    assert exclusion["code"] == "Content/Exclusion"  # the sentence's first category (a contract)
    assert exclusion["message"].startswith("Must avoid")
    assert "introduced in v3" in exclusion["message"]
    assert format_["code"] == "Structural/PresentationFormat"
    assert format_["message"].startswith("Format rule")
    # no sidecar module yet: every instruction is uncovered; those of the newest version are Information (severity
    # 3), the older ones Hints (4), so an old prompt is not underlined on every line
    assert {line: d["severity"] for line, d in by_line.items()} == {
        line: 3 if "introduced in v3" in d["message"] else 4 for line, d in by_line.items()
    }
    assert {d["severity"] for d in by_line.values()} == {3, 4}
    # each carries its hint: the check "Add assertion" writes, or why only a model could check it
    assert all(
        "not checked yet; Add assertion writes assert_" in d["message"] or "needs a model" in d["message"]
        for d in by_line.values()
    ), [d["message"] for d in by_line.values()]
    assert count["col"] == 0 and count["end_col"] == len("Keep it under 100 words.")

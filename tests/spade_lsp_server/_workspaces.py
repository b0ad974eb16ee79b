"""Workspaces for the language-server tests, built with the engine itself (History, the offline synthesizer,
the sandbox), so the server reads stores exactly as the daemon writes them."""

from __future__ import annotations

import json
from pathlib import Path

import git

from spade_lsp._assertion_jobs import evaluate, make_synthesizer, synthesize
from spade_lsp.config import resolve_file
from spade_lsp.overview import prompt_key
from spade_lsp.workspace import Workspace
from tests.support.blurb import V1, V2, V3, examples_jsonl

COMMITS = ["First draft", "Add a word limit", "Warmer tone; never say cheap"]


def write_examples(prompt: Path) -> Path:
    path = prompt.with_name(prompt.name.split(".")[0] + ".examples.jsonl")
    path.write_text(examples_jsonl(), encoding="utf-8")
    return path


def synthesize_offline(root: Path, prompt: Path) -> Path:
    with Workspace(root) as workspace:
        synthesize(
            workspace,
            prompt,
            make_synthesizer(workspace, "offline", settings=workspace.settings),
            settings=workspace.settings,
        )
    return prompt.with_name(prompt.name.split(".")[0] + "_assertions.py")


def evaluate_now(root: Path, prompt: Path) -> int:
    with Workspace(root) as workspace:
        return evaluate(workspace, prompt, settings=resolve_file(root, prompt)).run_id


def store_selection(root: Path, prompt: Path, run_id: int, selected: list[str], pairs: list[tuple[str, str]]) -> None:
    """A selection row and user-declared subsumption pairs, as ``spade select`` stores them."""
    with Workspace(root) as workspace, workspace.store.write() as db:
        prompt_id = db.execute("SELECT id FROM prompts WHERE path = ?", [prompt_key(root, prompt)]).fetchone()[0]
        for subsumer, subsumed in pairs:
            db.execute(
                "INSERT INTO subsumptions (prompt_id, subsumer, subsumed, origin, created_at) "
                "VALUES (?, ?, ?, 'user', 't')",
                [prompt_id, subsumer, subsumed],
            )
        db.execute(
            "INSERT INTO selections (prompt_id, eval_run_id, source, method, tau, alpha, parameters, selected, "
            "coverage, ffr, status, excluded_not_subsumed, solve_seconds, created_at) "
            "VALUES (?, ?, 'eval_run', 'sub', 0.25, 0.6, '{}', ?, 1.0, 0.0, 'optimal', '[]', 0.01, 't')",
            [prompt_id, run_id, json.dumps(selected)],
        )


def git_repo(root: Path, prompt_name: str = "blurb.prompt") -> tuple[Path, list[str]]:
    """A real git repository whose prompt has three committed versions (V1, V2, V3); returns the prompt and
    the commit shas, oldest first."""
    root.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(root)
    prompt = root / prompt_name
    shas: list[str] = []
    for number, (text, message) in enumerate(zip([V1, V2, V3], COMMITS, strict=True), 1):
        prompt.write_text(text, encoding="utf-8")
        repo.index.add([prompt_name])
        when = f"{1_704_103_200 + number * 86_400} +0000"
        shas.append(repo.index.commit(message, author_date=when, commit_date=when).hexsha)
    return prompt, shas

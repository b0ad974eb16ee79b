"""Hover text of a sidecar assertion checking an instruction an earlier version removed (no editor needed)."""

from __future__ import annotations

from pathlib import Path

from spade_lsp._assertion_jobs import make_synthesizer, synthesize
from spade_lsp.config import resolve_file
from spade_lsp.overview import build_overview
from spade_lsp.store import Store
from spade_lsp.workspace import Workspace
from spade_lsp_server import _render
from tests.support.blurb import V1, V2, V3, examples_jsonl, record

LIMIT = "Keep it not exceeding 12 words.\n"


def _hover(root: Path, prompt: Path, text: str) -> str:
    store = Store.open_readonly(root)
    assert store is not None
    overview = build_overview(store, root, prompt, text, max_prompt_bytes=1_000_000)
    view = next(a for a in overview.sidecar.assertions if a.name == "assert_at_most_12_words")
    return _render.assertion_hover(view, overview)


def test_a_check_of_a_removed_instruction_says_so_until_the_sentence_is_back(workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    v4 = V3.replace(LIMIT, "")
    record(workspace_dir, prompt, V1, V2, V3, v4)
    (workspace_dir / "blurb.examples.jsonl").write_text(examples_jsonl())
    with Workspace(workspace_dir) as workspace:
        settings = resolve_file(workspace_dir, prompt)
        synthesize(workspace, prompt, make_synthesizer(workspace, "offline", settings=settings), settings=settings)
    removed = _hover(workspace_dir, prompt, v4)
    assert "removed or reworded in v4 (a removed limit may be a relaxed one)" in removed and "stale" not in removed
    back = _hover(workspace_dir, prompt, v4 + LIMIT)  # the limit is written again, not saved yet
    assert "removed or reworded" not in back and "stale" not in back


def test_a_versions_label_gives_the_date_git_log_shows() -> None:
    """The author date with the author's offset (its calendar day may differ from the UTC one), never the
    committer date a rebase moved; a save shows when it was recorded."""
    from spade_lsp._types import VersionInfo

    committed = VersionInfo(
        7, 3, "h", "2024-01-01T00:30:00.000000+00:00", "git", "1a2b3c4d5e6f", "Add a word limit", "Ada <a@x>",
        "2023-12-31T23:50:00-05:00",
    )  # fmt: skip
    assert _render.version_label(committed) == "v3 (2023-12-31, commit `1a2b3c4d5e` “Add a word limit”)"
    saved = VersionInfo(8, 4, "h", "2024-01-02T08:00:00.000000+00:00", "save")
    assert _render.version_label(saved) == "v4 (2024-01-02, save)"

"""Recording follows the file's observed modifications, not the order in which racing readers write.

The fault injector found it: a job's sync recorded text B, then the restarted daemon's start-up rescan, which
had read the file while it still held A, recorded A as a new version (versions B, A, B: a false revert).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from spade_lsp._prompts import read_prompt_file
from spade_lsp.workspace import Workspace, sync_prompt

A = "Write a product blurb for {product}.\n"
B = A + "Keep it under 12 words.\n"
C = B + 'Never use the word "cheap".\n'


def _texts(workspace: Workspace, prompt: Path) -> list[str]:
    return [workspace.history.content(v.content_hash) for v in workspace.history.versions(prompt)]


def test_a_reader_that_lost_the_race_to_a_newer_text_records_nothing(workspace_dir: Path) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(A, encoding="utf-8")
    with Workspace(workspace_dir) as job, Workspace(workspace_dir) as rescan:
        sync_prompt(job, prompt, git=False)
        stale = read_prompt_file(prompt, max_bytes=1 << 20)  # the rescan reads A ...
        prompt.write_text(B, encoding="utf-8")  # ... the file becomes B ...
        sync_prompt(job, prompt, git=False)  # ... and a job's sync records B first
        assert rescan.history.record(prompt, stale, from_file=True) is None  # the rescan writes last: nothing
        assert _texts(job, prompt) == [A, B]
        sync_prompt(rescan, prompt, git=False)  # the watcher's event for B: already the newest
        assert _texts(job, prompt) == [A, B]


def test_a_rescan_never_records_text_older_than_the_newest_version(workspace_dir: Path) -> None:
    """The newest version came from an editor's save (its text, not yet on disk); the file on disk was
    last changed before that save, so it is older and the start-up rescan leaves the history alone."""
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(A, encoding="utf-8")
    old = time.time() - 60
    os.utime(prompt, (old, old))
    with Workspace(workspace_dir) as workspace:
        sync_prompt(workspace, prompt, git=False)
        time.sleep(0.1)  # the file's change time lies well before the editor's save
        sync_prompt(workspace, prompt, git=False, text=B)  # the editor's save of B
        sync_prompt(workspace, prompt, git=False)  # the rescan reads A from disk: older than B
        assert _texts(workspace, prompt) == [A, B]
        prompt.write_text(C, encoding="utf-8")  # a real change after the save is recorded
        sync_prompt(workspace, prompt, git=False)
        prompt.write_text(A, encoding="utf-8")  # and so is a real revert
        sync_prompt(workspace, prompt, git=False)
        assert _texts(workspace, prompt) == [A, B, C, A]


def test_racing_readers_record_a_subsequence_of_the_files_texts(workspace_dir: Path) -> None:
    """Four threads (each with its own store connection, as the daemon's recorder and job threads have) sync
    the file while a writer changes it 60 times: the history is the written texts in order, with gaps but
    never a text out of order or twice."""
    prompt = workspace_dir / "blurb.prompt"
    written = [f"Write blurb number {n} for {{product}}.\n" for n in range(60)]
    prompt.write_text(written[0], encoding="utf-8")
    Workspace(workspace_dir).close()  # the store and its migrations exist before the readers start
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            with Workspace(workspace_dir, busy_timeout_s=30) as workspace:
                while not stop.is_set():
                    sync_prompt(workspace, prompt, git=False)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for text in written[1:]:
        temporary = prompt.with_suffix(".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, prompt)  # an atomic save
        time.sleep(0.005)
    time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    with Workspace(workspace_dir) as workspace:
        sync_prompt(workspace, prompt, git=False)  # the last save, had no reader seen it (a slow machine)
        recorded = _texts(workspace, prompt)
    positions = [written.index(text) for text in recorded]
    assert positions == sorted(set(positions)), positions  # in the order written, each once
    assert recorded[-1] == written[-1]


def test_a_commit_in_the_same_second_as_an_earlier_save_is_ordered_after_it(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race made deterministic: B is saved at 10.3 s (into the store, by an editor), then the file is committed
    holding C at 10.7 s, which git records as 10 s. The commit comes after the save; the history must say so, and
    the next look at the file (which holds C) records nothing: no revert to C after B."""
    from datetime import UTC, datetime

    import git

    from spade_lsp import _history

    second = datetime(2026, 3, 1, 12, 0, 10, tzinfo=UTC)
    repo = git.Repo.init(workspace_dir)
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(A, encoding="utf-8")
    repo.index.add([prompt.name])
    early = f"{int(second.timestamp()) - 10} +0000"
    repo.index.commit("A", author_date=early, commit_date=early)
    with Workspace(workspace_dir) as workspace:
        sync_prompt(workspace, prompt)  # v1: the commit of A
        monkeypatch.setattr(_history, "_now", lambda: second.replace(microsecond=300_000))
        sync_prompt(workspace, prompt, git=False, text=B)  # the editor's save of B at 10.3 s
        prompt.write_text(C, encoding="utf-8")
        repo.index.add([prompt.name])
        stamp = f"{int(second.timestamp())} +0000"  # committed at 10.7 s; git keeps whole seconds
        repo.index.commit("C", author_date=stamp, commit_date=stamp)
        monkeypatch.setattr(_history, "_now", lambda: second.replace(microsecond=900_000))
        sync_prompt(workspace, prompt)  # the watcher's look: the git history, then the file (C)
        assert _texts(workspace, prompt) == [A, B, C]
        origins = [v.origin for v in workspace.history.versions(prompt)]
        assert origins == ["git", "save", "git"]
        sync_prompt(workspace, prompt)  # and again: nothing new
        assert _texts(workspace, prompt) == [A, B, C]


def test_a_save_after_a_commit_in_the_same_second_stays_after_it(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other way round: C committed at 10.2 s (recorded as 10 s), then B saved at 10.5 s, before the history
    was imported. The file holds B: the save is the newest version, and nothing is recorded again."""
    from datetime import UTC, datetime

    import git

    from spade_lsp import _history

    second = datetime(2026, 3, 1, 12, 0, 10, tzinfo=UTC)
    repo = git.Repo.init(workspace_dir)
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(C, encoding="utf-8")
    repo.index.add([prompt.name])
    stamp = f"{int(second.timestamp())} +0000"  # committed at 10.2 s; git keeps whole seconds
    repo.index.commit("C", author_date=stamp, commit_date=stamp)
    with Workspace(workspace_dir) as workspace:
        monkeypatch.setattr(_history, "_now", lambda: second.replace(microsecond=500_000))
        prompt.write_text(B, encoding="utf-8")
        sync_prompt(workspace, prompt, text=B)  # the history (C at 10 s), then the save of B at 10.5 s
        assert _texts(workspace, prompt) == [C, B]
        sync_prompt(workspace, prompt)
        assert _texts(workspace, prompt) == [C, B]

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from spade_lsp._history import History, Revision
from spade_lsp._types import ChangeKind, SentenceChange
from spade_lsp.errors import InputError, StoreError
from spade_lsp.store import HistoryRepository, Store, prompt_key
from spade_lsp.taxonomy import COUNT, DATA_PLACEHOLDERS, EXCLUSION, PROMPT_REPHRASING
from spade_lsp.workspace import Workspace, sync_prompt


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def ws(workspace_dir: Path) -> Workspace:
    with Workspace(workspace_dir, overrides={"classifier": "offline"}) as workspace:
        yield workspace


def test_record_deduplicates_unchanged_content(ws: Workspace) -> None:
    prompt = ws.root / "a.prompt"
    assert ws.history.record(prompt, "Summarise {text}.") is not None
    assert ws.history.record(prompt, "Summarise {text}.") is None
    second = ws.history.record(prompt, "Summarise {text}. Use at most 50 words.")
    assert second is not None and second.number == 2
    # going back to an earlier text is a change, so it is a new version
    assert ws.history.record(prompt, "Summarise {text}.") is not None
    assert [v.number for v in ws.history.versions(prompt)] == [1, 2, 3]
    assert ws.store.db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 2


def test_a_save_that_changes_only_whitespace_records_no_version(ws: Workspace) -> None:
    """Trailing spaces, a second blank line, spaces between sentences, a line break inside a paragraph and blank
    lines at the ends say nothing new; a blank line that splits a paragraph, or whitespace inside a sentence or
    a code block, does (the splitter keeps it), and so does front matter's indentation."""
    prompt = ws.root / "reply.prompt"
    base = "Be brief. Use the name {name}.\nNever promise refunds.\n\nEnd with a question.\n"
    assert ws.history.record(prompt, base) is not None
    for same in (
        base.replace("brief.", "brief.  "),  # spaces after a sentence
        base.replace("refunds.\n", "refunds.   \n"),  # trailing spaces
        base.replace("\n\n", "\n\n\n"),  # a second blank line
        base.replace("{name}.\n", "{name}. "),  # a line break inside a paragraph
        "\n\n" + base + "\n\n",  # blank lines at the ends
    ):
        assert ws.history.record(prompt, same) is None, repr(same)
    assert [v.number for v in ws.history.versions(prompt)] == [1]
    # the newest version is still the first text: going back to it records nothing either
    assert ws.history.record(prompt, base) is None
    split = base.replace("Be brief. ", "Be brief.\n\n")  # a paragraph break between two sentences
    assert ws.history.record(prompt, split) is not None
    inside = split.replace("Be brief.", "Be  brief.")  # whitespace inside a sentence is kept by the splitter
    assert ws.history.record(prompt, inside) is not None
    fenced = ws.root / "json.prompt"
    code = 'Answer in JSON like this:\n\n```\n{"a": 1}\n```\n'
    assert ws.history.record(fenced, code) is not None
    assert ws.history.record(fenced, code.replace('{"a": 1}', '{"a":  1}')) is not None  # inside a code block
    fronted = ws.root / "front.prompt"
    yaml = "---\nmodel:\n  name: gpt\n---\nBe brief.\n"
    assert ws.history.record(fronted, yaml) is not None
    assert ws.history.record(fronted, yaml.replace("  name", "    name")) is not None  # YAML indentation counts
    indented = yaml.replace("  name", "    name")
    assert ws.history.record(fronted, indented.replace("gpt\n", "gpt   \n")) is None  # trailing spaces do not


def test_deltas_label_added_sentences_with_ranges_in_the_newer_version(ws: Workspace) -> None:
    prompt = ws.root / "a.prompt"
    ws.history.record(prompt, "Summarise the article.\n")
    ws.history.record(prompt, "Summarise the article.\nUse at most 50 words. Do not mention prices.\n")
    first, second = ws.history.deltas(prompt)
    assert first.from_number is None and first.to_number == 1
    assert second.from_number == 1 and second.to_number == 2
    assert {c.kind for c in second.changes} == {"added"}
    by_text = {c.new_text: c for c in second.changes}
    count = by_text["Use at most 50 words."]
    assert COUNT in count.labels
    assert count.range is not None and (count.range.start.line, count.range.start.character) == (1, 0)
    assert EXCLUSION in by_text["Do not mention prices."].labels
    assert set(second.labels) >= {COUNT, EXCLUSION}


def test_deltas_window_and_bad_bounds(ws: Workspace) -> None:
    prompt = ws.root / "a.prompt"
    for text in ["One.", "One. Two.", "One. Two. Three."]:
        ws.history.record(prompt, text)
    window = ws.history.deltas(prompt, from_number=2, to_number=3)
    assert [(d.from_number, d.to_number) for d in window] == [(2, 3)]
    with pytest.raises(InputError, match=r"versions 1\.\.3"):
        ws.history.deltas(prompt, from_number=7)


def test_sentences_know_the_version_that_introduced_them(ws: Workspace) -> None:
    prompt = ws.root / "a.prompt"
    ws.history.record(prompt, "Write a poem about {topic}.")
    ws.history.record(prompt, "Write a poem about {topic}.\nKeep it under 40 words.")
    ws.history.record(prompt, "Write a haiku about {topic}.\nKeep it under 40 words.")
    sentences = {s.text: s for s in ws.history.sentences(prompt)}
    assert sentences["Keep it under 40 words."].introduced_in == 2
    assert sentences["Write a haiku about {topic}."].introduced_in == 3
    assert DATA_PLACEHOLDERS in sentences["Write a haiku about {topic}."].categories


def test_front_matter_is_not_a_sentence_and_ranges_stay_exact(ws: Workspace) -> None:
    prompt = ws.root / "a.prompt"
    text = "---\nmodel: openai/x\n---\nNever use emoji 😀. Answer in JSON.\n"
    ws.history.record(prompt, text)
    sentences = ws.history.sentences(prompt)
    assert [s.text for s in sentences] == ["Never use emoji 😀.", "Answer in JSON."]
    json_sentence = sentences[1]
    assert text[json_sentence.start : json_sentence.end] == "Answer in JSON."
    # the emoji is two UTF-16 code units, as LSP counts
    assert (json_sentence.range.start.line, json_sentence.range.start.character) == (3, 20)


def test_older_history_inserted_later_gets_its_own_deltas(ws: Workspace) -> None:
    prompt = ws.root / "a.prompt"
    ws.history.record(prompt, "C. Use three bullet points.")
    earlier = datetime.now(UTC) - timedelta(days=2)
    ws.history.record_revisions(
        prompt,
        [
            Revision(text="A.", created_at=earlier),
            Revision(text="A. B.", created_at=earlier + timedelta(hours=1)),
        ],
    )
    versions = ws.history.versions(prompt)
    assert [ws.history.content(v.content_hash) for v in versions] == [
        "A.",
        "A. B.",
        "C. Use three bullet points.",
    ]
    deltas = ws.history.deltas(prompt)
    assert [(d.from_number, d.to_number) for d in deltas] == [(None, 1), (1, 2), (2, 3)]
    assert COUNT in deltas[-1].labels


def test_git_history_import_follows_renames_and_skips_seen_commits(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "old.prompt").write_text("Summarise {doc}.\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first prompt")
    (repo / "old.prompt").write_text("Summarise {doc}.\nAnswer in JSON.\n")
    _git(repo, "commit", "-q", "-am", "ask for JSON")
    (repo / "prompts").mkdir()
    _git(repo, "mv", "old.prompt", "prompts/new.prompt")
    _git(repo, "commit", "-q", "-m", "move prompt")
    prompt = repo / "prompts" / "new.prompt"
    prompt.write_text("Summarise {doc}.\nAnswer in JSON.\nNever mention names.\n")  # uncommitted
    with Workspace(repo, overrides={"classifier": "offline"}) as ws:
        assert sync_prompt(ws, prompt) == []
        versions = ws.history.versions(prompt)
        assert [v.origin for v in versions] == ["git", "git", "save"]
        assert [v.commit_message for v in versions[:2]] == ["first prompt", "ask for JSON"]
        assert sync_prompt(ws, prompt) == []
        assert len(ws.history.versions(prompt)) == 3  # nothing imported twice


def test_saved_text_later_committed_stays_one_version(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    prompt = repo / "a.prompt"
    prompt.write_text("Be brief.\n")
    with Workspace(repo, overrides={"classifier": "offline"}) as ws:
        sync_prompt(ws, prompt)  # untracked: recorded as a save
        _git(repo, "add", ".")
        _git(repo, "commit", "-q", "-m", "add prompt", "--date", "2001-01-01T00:00:00")
        sync_prompt(ws, prompt)
        versions = ws.history.versions(prompt)
        assert len(versions) == 1
        assert versions[0].commit_message == "add prompt" and versions[0].written_at.startswith("2001-01-01T00:00:00")


def test_a_commits_author_date_is_what_the_history_shows_and_its_committer_date_orders_it(tmp_path: Path) -> None:
    """Rebased commits: their author dates (what ``git log`` shows) are out of order; the committer dates order
    the versions, and every view shows the author date with the author's offset."""
    from spade_lsp._render import render_history

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    prompt = repo / "a.prompt"
    dates = [
        ("2021-05-02T10:00:00+02:00", "2024-01-01T00:00:00Z"),
        ("2021-05-01T09:30:00+02:00", "2024-01-02T00:00:00Z"),
    ]
    for number, (written, committed) in enumerate(dates, 1):
        prompt.write_text("Be brief.\n" * number)
        _git(repo, "add", ".")
        env = {"GIT_AUTHOR_DATE": written, "GIT_COMMITTER_DATE": committed}
        subprocess.run(["git", "commit", "-q", "-m", f"v{number}"], cwd=repo, check=True, env={**os.environ, **env})
    with Workspace(repo, overrides={"classifier": "offline"}) as ws:
        sync_prompt(ws, prompt)
        versions = ws.history.versions(prompt)
    assert [v.commit_message for v in versions] == ["v1", "v2"]  # in commit order, not author order
    assert [v.written_at for v in versions] == ["2021-05-02T10:00:00+02:00", "2021-05-01T09:30:00+02:00"]
    assert versions[0].created_at.startswith("2024-01-01T00:00:00")
    table = render_history("a.prompt", versions)
    assert "2021-05-02 10:00 +02:00" in table and "2021-05-01 09:30 +02:00" in table and "2024-01" not in table


def test_empty_prompt_is_a_warning_and_records_nothing(ws: Workspace) -> None:
    prompt = ws.root / "a.prompt"
    prompt.write_text("  \n")
    warnings = sync_prompt(ws, prompt)
    assert any("empty" in w for w in warnings)
    assert ws.history.versions(prompt) == []


def test_shared_bench_pipelines_give_labelled_deltas(shared_bench: Path, ws: Workspace) -> None:
    """Every pipeline's history shows labelled deltas. Removals and pure moves may carry no category (the
    SPADE dev labels leave them unlabelled), so the overall share of labelled deltas is bounded, not total."""
    labelled = total = 0
    for pipeline in sorted((shared_bench / "spade").iterdir()):
        versions = json.loads((pipeline / "versions.json").read_text())
        prompt = ws.root / f"{pipeline.name}.prompt"
        ws.history.record_revisions(prompt, [Revision(text=t) for t in versions])
        deltas = ws.history.deltas(prompt)
        assert len(deltas) == len(ws.history.versions(prompt)) >= 3
        later = deltas[1:]
        assert all(d.changes for d in later), pipeline.name
        assert any(d.labels for d in later), pipeline.name
        labelled += sum(bool(d.labels) for d in later)
        total += len(later)
    assert labelled >= 0.8 * total, f"{labelled}/{total} deltas labelled"


class _TwoReadings:
    """A classifier that reads a sentence differently on its own and in its delta, to see which one is kept."""

    name = "two-readings"

    def classify_sentence(self, text: str) -> frozenset[str]:
        return frozenset({EXCLUSION})

    def classify_changes(self, changes: Sequence[SentenceChange]) -> list[frozenset[str]]:
        return [
            frozenset({PROMPT_REPHRASING})
            if c.kind is ChangeKind.MODIFIED and "please" in (c.new.text if c.new else "")
            else frozenset({COUNT})
            for c in changes
        ]


def test_a_sentence_keeps_the_labels_of_the_change_that_introduced_it(workspace_dir: Path) -> None:
    store = Store.open(workspace_dir)
    history = History(store, workspace_dir, _TwoReadings())
    prompt = workspace_dir / "a.prompt"
    history.record(prompt, "Summarise the article.\nKeep it short.\n")
    assert [s.categories for s in history.sentences(prompt)] == [(COUNT,), (COUNT,)]
    # a rewording labelled only as a rephrasing says nothing of the sentence: it is read on its own
    history.record(prompt, "Summarise the article, please.\nKeep it short.\n")
    assert [s.categories for s in history.sentences(prompt)] == [(EXCLUSION,), (COUNT,)]
    # a move neither relabels a sentence nor re-introduces it
    history.record(prompt, "Keep it short.\nSummarise the article, please.\n")
    moved = {s.text: s for s in history.sentences(prompt)}
    assert moved["Keep it short."].categories == (COUNT,) and moved["Keep it short."].introduced_in == 1
    store.close()


def test_the_repository_commits_writes_grouped_in_a_transaction_together_or_not_at_all(ws: Workspace) -> None:
    repository = HistoryRepository(ws.store)
    with pytest.raises(RuntimeError), repository.transaction():
        prompt_id = repository.create_prompt("a.prompt", "2024-01-01T00:00:00+00:00")
        repository.insert_version(
            prompt_id,
            text="Keep it short.",
            content_hash="h1",
            created_at="2024-01-01T00:00:00+00:00",
            recorded_at="2024-01-01T00:00:00+00:00",
            origin="save",
        )
        assert repository.prompt_id("a.prompt") == prompt_id  # the transaction reads its own writes
        raise RuntimeError("a failure half-way")
    assert repository.prompt_id("a.prompt") is None and repository.content("h1") is None
    assert not ws.store.db.conn.in_transaction
    prompt_id = repository.create_prompt("a.prompt", "2024-01-02T00:00:00+00:00")  # alone: its own transaction
    assert repository.create_prompt("a.prompt", "later") == prompt_id and repository.prompt_paths() == ["a.prompt"]


def test_a_read_only_repository_reads_the_history_and_refuses_to_write(ws: Workspace) -> None:
    prompt = ws.root / "a.prompt"
    ws.history.record(prompt, "Summarise {text}. Use at most 50 words.")
    reader = Store.open_readonly(ws.root)
    assert reader is not None
    with reader:
        repository = HistoryRepository(reader)
        prompt_id = repository.prompt_id(prompt_key(ws.root, prompt))
        assert prompt_id is not None
        [version] = repository.versions(prompt_id)
        assert repository.content(version.content_hash) == "Summarise {text}. Use at most 50 words."
        assert [row.text for row in repository.sentences(prompt_id)] == ["Summarise {text}.", "Use at most 50 words."]
        with pytest.raises(StoreError, match="read-only"):
            repository.create_prompt("b.prompt", "now")

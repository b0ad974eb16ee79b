"""The language server's read model (spade_lsp.overview) over real stores: versions recorded with History and
git, a sidecar written by the offline synthesizer, runs of the real sandbox, and stored selections."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from spade_lsp import overview
from spade_lsp._assertion_jobs import evaluate, make_synthesizer, synthesize
from spade_lsp._sentences import split_sentences
from spade_lsp._types import Sentence
from spade_lsp.cli import main as cli_main
from spade_lsp.config import resolve_file
from spade_lsp.overview import (
    build_overview,
    classify_offline,
    parse_sidecar,
    prompt_key,
    sentence_history,
    utf16_len,
)
from spade_lsp.store import (
    HistoryRepository,
    SelectionRecord,
    Store,
    insert_eval_run,
    save_selection_record,
    save_subsumption_rows,
)
from spade_lsp.taxonomy import COUNT, EXCLUSION, INCLUSION, QUALITATIVE_ASSESSMENT
from spade_lsp.workspace import Workspace, sync_prompt
from tests.support.blurb import V1, V2, V3, examples_jsonl, record


def _store(root: Path) -> Store:
    store = Store.open_readonly(root)
    assert store is not None
    return store


@pytest.fixture
def blurb(workspace_dir: Path) -> Path:
    prompt = workspace_dir / "blurb.prompt"
    record(workspace_dir, prompt, V1, V2, V3)
    (workspace_dir / "blurb.examples.jsonl").write_text(examples_jsonl())
    return prompt


def test_without_a_store_instructions_come_from_the_text(workspace_dir: Path) -> None:
    text = "Cite from {doc} 😀. Keep it under 50 words.\n\nNever mention prices.\n"
    overview = build_overview(None, workspace_dir, None, text, max_prompt_bytes=1_000_000)
    texts = [i.text for i in overview.instructions]
    assert texts == ["Cite from {doc} 😀.", "Keep it under 50 words.", "Never mention prices."]
    count = overview.instructions[1]
    # the emoji is two UTF-16 code units: "Keep" is at str index 19 but at column 20
    assert (count.start, count.end) == (19, 19 + len("Keep it under 50 words."))
    assert (count.range.start.line, count.range.start.character) == (0, 20)
    assert (count.range.end.line, count.range.end.character) == (0, 20 + len("Keep it under 50 words."))
    assert count.categories == (COUNT,) and count.checkable and count.introduced_in is None and not count.recorded
    assert overview.instructions[2].categories == (EXCLUSION,)
    # "Cite from {doc}" is an instruction too: the offline synthesizer checks that the answer mentions the doc
    assert overview.instructions[0].checks == ("assert_mentions_doc",)
    assert overview.versions == () and overview.summary.instructions == 3 and overview.summary.uncovered == 3
    assert overview.placeholders == ("doc",) and overview.sidecar.exists is False
    assert classify_offline("Keep it under 50 words.") == (COUNT,)


def test_the_lines_of_an_example_answer_ask_nothing(workspace_dir: Path) -> None:
    """A prompt's "Example output:" shows an answer: its lines get no hint and no check, as the synthesizer
    writes none for them; the instructions after the example are instructions again."""
    text = (
        "Split the text into exercises. Keep the summary brief.\n\nExample output:\n# Morning Routine\n\n"
        "## Summary\nThe routine includes a mixture of stretches and transitions.\n- Reach round and pause briefly."
        '\n\nINSTRUCTIONS:\nNever use the word "cheap".\n'
    )
    overview = build_overview(None, workspace_dir, None, text, max_prompt_bytes=1_000_000)
    by_text = {i.text: i for i in overview.instructions}
    assert by_text["Keep the summary brief."].checks == ("assert_concise",)
    for shown in ("The routine includes a mixture of stretches and transitions.", "- Reach round and pause briefly."):
        assert by_text[shown].checks == () and not by_text[shown].checkable, shown
        assert by_text[shown].reason == "not an instruction: a code block or a quoted example"
    assert by_text['Never use the word "cheap".'].checks == ("assert_excludes_cheap",)


def test_versions_introduced_in_and_history_follow_rewordings(blurb: Path) -> None:
    root = blurb.parent
    store = _store(root)
    overview = build_overview(store, root, blurb, V3, read_sidecar=False, max_prompt_bytes=1_000_000)
    assert [v.number for v in overview.versions] == [1, 2, 3]
    assert [v.origin for v in overview.versions] == ["save", "save", "save"]
    by_text = {i.text: i for i in overview.instructions}
    assert by_text["Keep it not exceeding 12 words."].introduced_in == 2
    assert by_text["Use a warm and friendly tone."].introduced_in == 3
    assert by_text["Write a product blurb for {product}."].introduced_in == 1
    assert all(i.recorded for i in overview.instructions)
    assert QUALITATIVE_ASSESSMENT in by_text["Use a warm and friendly tone."].categories

    events = sentence_history(store, root, blurb, "Use a warm and friendly tone.")
    assert [(e.version.number, e.kind, e.text, e.previous_text) for e in events] == [
        (1, "added", "Use a friendly tone.", None),
        (3, "modified", "Use a warm and friendly tone.", "Use a friendly tone."),
    ]
    assert [
        (e.version.number, e.kind) for e in sentence_history(store, root, blurb, 'Never use the word "cheap".')
    ] == [(3, "added")]
    assert sentence_history(store, root, blurb, "never written") == ()
    assert sentence_history(None, root, blurb, "Use a warm and friendly tone.") == ()


def test_unsaved_edits_are_classified_offline_and_marked_unrecorded(blurb: Path) -> None:
    root = blurb.parent
    text = V3 + "Always include the price.\n"
    overview = build_overview(_store(root), root, blurb, text, read_sidecar=False, max_prompt_bytes=1_000_000)
    new = overview.instructions[-1]
    assert new.text == "Always include the price." and new.categories == (INCLUSION,)
    assert new.introduced_in is None and not new.recorded
    assert overview.instructions[0].recorded


def test_the_recorded_text_reuses_the_stored_units_exactly(blurb: Path) -> None:
    root = blurb.parent
    from_store = build_overview(_store(root), root, blurb, V3, read_sidecar=False, max_prompt_bytes=1_000_000)
    split = split_sentences(V3)
    assert [(i.text, i.range, i.start, i.end, i.kind) for i in from_store.instructions] == [
        (s.text, s.range, s.start, s.end, s.kind.value) for s in split
    ]


def test_git_commits_name_the_versions(tmp_path: Path) -> None:
    repo_root = tmp_path / "repo"
    repo_root.mkdir()
    repo = git.Repo.init(repo_root)
    prompt = repo_root / "email.prompt"
    for number, (text, message) in enumerate(
        [(V1, "First draft"), (V2, "Add a word limit\n\nbody"), (V3, "Warmer tone, no cheap")], 1
    ):
        prompt.write_text(text, encoding="utf-8")
        repo.index.add([prompt.name])
        when = f"{1_704_103_200 + number * 86_400} +0000"  # 2024-01-0N, in git's internal format
        repo.index.commit(message, author_date=when, commit_date=when)
    with Workspace(repo_root) as workspace:
        sync_prompt(workspace, prompt)
    store = _store(repo_root)
    overview = build_overview(store, repo_root, prompt, V3, read_sidecar=False, max_prompt_bytes=1_000_000)
    assert [(v.number, v.origin, v.subject) for v in overview.versions] == [
        (1, "git", "First draft"),
        (2, "git", "Add a word limit"),
        (3, "git", "Warmer tone, no cheap"),
    ]
    shas = [c.hexsha for c in repo.iter_commits()][::-1]
    assert [v.commit_sha for v in overview.versions] == shas
    events = sentence_history(store, repo_root, prompt, "Keep it not exceeding 12 words.")
    assert [(e.version.number, e.version.commit_sha, e.kind) for e in events] == [(2, shas[1], "added")]


def test_sidecar_is_read_statically_and_matches_instructions(blurb: Path) -> None:
    root = blurb.parent
    with Workspace(root) as workspace:
        synthesize(
            workspace,
            blurb,
            make_synthesizer(workspace, "offline", settings=resolve_file(root, blurb)),
            settings=resolve_file(root, blurb),
        )
    module = root / "blurb_assertions.py"
    source = module.read_text(encoding="utf-8")
    extra = (
        '\n\nraise RuntimeError("imported")\n\n\n'  # never executed: the module is only parsed
        "def assert_hand_written(example: dict, prompt: str, response: str) -> bool:\n    return True\n\n\n"
        "@assertion(category='Content/Count', sentence='Keep it short.', version=1)\n"
        "async def assert_gone(example: dict, prompt: str, response: str) -> bool:\n    return True\n"
    )
    module.write_text(source + extra, encoding="utf-8")
    overview = build_overview(_store(root), root, blurb, V3, max_prompt_bytes=1_000_000)
    views = {a.name: a for a in overview.sidecar.assertions}
    lines = module.read_text(encoding="utf-8").splitlines()

    words = views["assert_at_most_12_words"]
    assert words.decorated and words.generated and words.category == COUNT and words.version == 2
    assert words.sentence == "Keep it not exceeding 12 words." and not words.stale
    assert lines[words.name_range.start.line].startswith("def assert_at_most_12_words(")
    assert lines[words.range.start.line] == "@assertion(" and lines[words.chunk_start_line].startswith(
        "# spade: generated"
    )
    assert lines[words.name_range.start.line][words.name_range.start.character :].startswith("assert_at_most_12_words")
    assert words.instruction == 2

    hand = views["assert_hand_written"]
    assert not hand.decorated and not hand.generated and hand.sentence is None and not hand.stale
    gone = views["assert_gone"]
    assert gone.stale and gone.is_async and gone.instruction is None

    by_text = {i.text: i for i in overview.instructions}
    assert by_text["Keep it not exceeding 12 words."].covered_by == ("assert_at_most_12_words",)
    assert by_text['Never use the word "cheap".'].covered_by == ("assert_excludes_cheap",)
    assert overview.summary.uncovered == 0 and overview.summary.assertions == len(views)
    # the sidecar buffer wins over the file: an unsaved edit that drops a function uncovers its instruction
    buffer = "\n".join(line for line in lines if "assert_excludes_cheap" not in line)
    edited = build_overview(_store(root), root, blurb, V3, sidecar_text=buffer, max_prompt_bytes=1_000_000)
    assert "assert_excludes_cheap" not in {a.name for a in edited.sidecar.assertions}
    assert [i.text for i in edited.uncovered] == ['Never use the word "cheap".']


def test_a_syntax_error_is_located_and_the_other_functions_survive() -> None:
    source = (
        "from spade_lsp.assertions import assertion\n\n\n"
        "@assertion(\n    category='Content/Count',\n    sentence='Keep it short.',\n)\n"
        "def assert_short(example: dict, prompt: str, response: str) -> bool:\n    return len(response) < 10\n\n\n"
        "def assert_broken(example: dict, prompt: str, response: str) -> bool:\n    return (\n\n\n"
        "def assert_after(example: dict, prompt: str, response: str) -> bool:\n    return True\n"
    )
    view = parse_sidecar(Path("x_assertions.py"), source)
    assert view.syntax_error is not None
    assert view.syntax_error.line == 12 and "syntax error" in view.syntax_error.message
    names = {a.name: a for a in view.assertions}
    assert set(names) == {"assert_short", "assert_after"}
    assert names["assert_short"].sentence == "Keep it short." and names["assert_short"].range.start.line == 3
    assert names["assert_after"].name_range.start.line == 15


def test_latest_evaluation_gives_pass_rate_coverage_and_ffr(blurb: Path) -> None:
    root = blurb.parent
    with Workspace(root) as workspace:
        synthesize(
            workspace,
            blurb,
            make_synthesizer(workspace, "offline", settings=resolve_file(root, blurb)),
            settings=resolve_file(root, blurb),
        )
        evaluate(workspace, blurb, settings=resolve_file(root, blurb))
        run = evaluate(workspace, blurb, settings=resolve_file(root, blurb))  # the newest done run is the one shown
    overview = build_overview(_store(root), root, blurb, V3, max_prompt_bytes=1_000_000)
    assert overview.eval_run is not None and overview.eval_run.id == run.run_id
    assert (overview.eval_run.examples, overview.eval_run.good, overview.eval_run.bad) == (4, 2, 2)
    assert overview.eval_run.module_changed is False
    views = {a.name: a for a in overview.sidecar.assertions}
    words = views["assert_at_most_12_words"].stats  # passes g1 g2 b1, fails b2
    assert words is not None and words.run_id == run.run_id
    assert (words.passed, words.failed, words.examples) == (3, 1, 4)
    assert (words.pass_rate, words.coverage, words.ffr) == (0.75, 0.5, 0.0)
    cheap = views["assert_excludes_cheap"].stats  # fails b1 only
    assert cheap is not None and (cheap.coverage, cheap.ffr) == (0.5, 0.0)
    asks = [a for a in overview.sidecar.assertions if a.asks_llm]
    assert asks and all(a.stats is not None and a.stats.needs_model == 4 for a in asks)
    assert all(a.stats is not None and a.stats.pass_rate is None and a.stats.ffr is None for a in asks)
    changed = build_overview(
        _store(root),
        root,
        blurb,
        V3,
        sidecar_text=(root / "blurb_assertions.py").read_text() + "\n",
        max_prompt_bytes=1_000_000,
    )
    assert changed.eval_run is not None and changed.eval_run.module_changed is True


def _stored_run(
    root: Path, prompt: Path, names: list[str], y: list[int], m: list[list[int | None]], kind: str = "exception"
) -> int:
    """An evaluation run written the way ``_assertion_jobs.evaluate`` writes it (``kind``: its cell errors')."""
    errors: list[dict[str, Any]] = [
        {"example": f"e{i}", "assertion": names[j], "kind": kind, "message": "ZeroDivisionError: x"}
        for i, row in enumerate(m)
        for j, cell in enumerate(row)
        if cell is None
    ]
    with Workspace(root) as workspace:
        return insert_eval_run(
            workspace.store,
            prompt_key(root, prompt),
            started_at="t",
            finished_at="t",
            module_hash="h",
            examples_hash="h",
            parameters={},
            assertions=[{"name": n, "cost": 0.0} for n in names],
            examples=[f"e{i}" for i in range(len(y))],
            y=list(y),
            m=m,
            errors=errors,
            seconds=0.1,
        )


def _stored_selection(
    root: Path, prompt: Path, run_id: int, selected: list[str], pairs: list[tuple[str, str, str]], status: str
) -> None:
    with Workspace(root) as workspace:
        prompt_id = HistoryRepository(workspace.store).prompt_id(prompt_key(root, prompt))
        assert prompt_id is not None
        save_subsumption_rows(workspace.store, prompt_id, pairs)
        record = SelectionRecord(
            source="eval_run",
            method="sub",
            tau=0.25,
            alpha=0.6,
            parameters={},
            selected=selected,
            coverage=1.0,
            ffr=0.0,
            status=status,
            excluded_not_subsumed=[],
            solve_seconds=0.01,
            prompt_id=prompt_id,
            eval_run_id=run_id,
        )
        save_selection_record(workspace.store, record)


def test_a_check_that_needed_a_model_is_dropped_as_not_evaluated_not_as_failing(blurb: Path) -> None:
    root = blurb.parent
    names = ["assert_a", "assert_asks"]
    run_id = _stored_run(root, blurb, names, [1, 0], [[1, None], [0, None]], kind="needs_model")
    _stored_selection(root, blurb, run_id, ["assert_a"], [], "optimal")
    sidecar = "\n".join(f"def {n}(example, prompt, response):\n    return True\n" for n in names)
    overview = build_overview(_store(root), root, blurb, V3, sidecar_text=sidecar, max_prompt_bytes=1_000_000)
    views = {a.name: a for a in overview.sidecar.assertions}
    assert views["assert_asks"].drop_reason == (
        "not evaluated: it asks a model, and none was configured (the assistant model)"
    )


def test_selection_reasons_for_dropped_assertions(blurb: Path) -> None:
    root = blurb.parent
    names = ["assert_a", "assert_b", "assert_c", "assert_d", "assert_e"]
    # rows: two good then three bad; 1 = pass. b fails a good example (FFR 0.5 > 0.25);
    # c fails what a fails (a subsumes c, statically: kept); d fails the last bad example, which a passes (the
    # static pair a > d is contradicted by the examples, so d is "not needed"); e is subsumed through c -> a
    y = [1, 1, 0, 0, 0]
    m = [[1, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 0, 1, 0], [0, 1, 0, 1, None], [1, 1, 1, 0, 1]]
    run_id = _stored_run(root, blurb, names, y, m)
    pairs = [("assert_a", "assert_c", "static"), ("assert_a", "assert_d", "static"), ("assert_c", "assert_e", "user")]
    _stored_selection(root, blurb, run_id, ["assert_a"], pairs, "optimal")
    sidecar = "\n".join(f"def {n}(example, prompt, response):\n    return True\n" for n in [*names, "assert_new"])
    overview = build_overview(_store(root), root, blurb, V3, sidecar_text=sidecar, max_prompt_bytes=1_000_000)
    assert overview.selection is not None and overview.selection.selected == ("assert_a",)
    views = {a.name: a for a in overview.sidecar.assertions}
    assert views["assert_a"].selected is True and views["assert_a"].drop_reason is None
    assert views["assert_b"].drop_reason == (
        "fails 50% of the good examples, more than the 25% allowed (FFR 0.50 > tau 0.25)"
    )
    assert views["assert_c"].drop_reason == "subsumed by assert_a" and views["assert_c"].subsumed_by == ("assert_a",)
    assert views["assert_d"].drop_reason == "not needed for coverage"
    assert views["assert_e"].drop_reason == "subsumed by assert_a"
    assert views["assert_new"].selected is None  # written after the run the selection used
    assert views["assert_e"].stats is not None and views["assert_e"].stats.errors == 1
    assert views["assert_e"].stats.error_messages == ("exception: ZeroDivisionError: x",)
    assert overview.summary.selected == 1


def test_an_infeasible_selection_drops_nothing(blurb: Path) -> None:
    root = blurb.parent
    run_id = _stored_run(root, blurb, ["assert_a"], [1, 0], [[1], [1]])
    _stored_selection(root, blurb, run_id, [], [], "infeasible")
    overview = build_overview(
        _store(root),
        root,
        blurb,
        V3,
        sidecar_text="def assert_a(e, p, r):\n    return True\n",
        max_prompt_bytes=1_000_000,
    )
    view = overview.sidecar.assertions[0]
    assert view.selected is False and view.drop_reason is not None and "infeasible" in view.drop_reason
    assert overview.selection is not None and overview.selection.reasons == {}


def test_a_real_selection_agrees_with_spade_select(blurb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = blurb.parent
    with Workspace(root) as workspace:
        synthesize(
            workspace,
            blurb,
            make_synthesizer(workspace, "offline", settings=resolve_file(root, blurb)),
            settings=resolve_file(root, blurb),
        )
        evaluate(workspace, blurb, settings=resolve_file(root, blurb))
    assert cli_main(["select", str(blurb), "--workspace", str(root), "--json", "--alpha", "0.5"]) in (0, 1)
    printed = json.loads(capsys.readouterr().out)
    overview = build_overview(_store(root), root, blurb, V3, max_prompt_bytes=1_000_000)
    chosen = {a.name for a in overview.sidecar.assertions if a.selected}
    assert chosen == set(printed["selected"]) and chosen
    dropped = [a for a in overview.sidecar.assertions if a.selected is False]
    assert dropped and all(a.drop_reason for a in dropped)


def test_texts_spade_does_not_analyse(workspace_dir: Path) -> None:
    big = build_overview(None, workspace_dir, None, "Keep it short. " * 100, max_prompt_bytes=1000)
    assert big.problem is not None and "larger than the 0.001 MB limit" in big.problem and big.instructions == ()
    binary = build_overview(None, workspace_dir, None, "abc\x00def", max_prompt_bytes=1_000_000)
    assert binary.problem is not None and "binary" in binary.problem
    missing = build_overview(None, workspace_dir, workspace_dir / "gone.prompt", max_prompt_bytes=1_000_000)
    assert missing.problem is not None and "cannot read gone.prompt" in missing.problem
    odd = build_overview(
        None, workspace_dir, None, "Keep it \ud800 short.\n", max_prompt_bytes=1_000_000
    )  # a lone surrogate from an editor
    assert [i.text for i in odd.instructions] == ["Keep it \ud800 short."] and utf16_len("\ud800") == 1


def test_front_matter_keeps_offsets_and_bad_front_matter_is_a_note(workspace_dir: Path) -> None:
    text = "---\nmodel: gpt\n---\nKeep it under 20 words.\n"
    overview = build_overview(None, workspace_dir, None, text, max_prompt_bytes=1_000_000)
    assert [(i.text, i.range.start.line) for i in overview.instructions] == [("Keep it under 20 words.", 3)]
    bad = build_overview(
        None, workspace_dir, None, "---\n: : [\n---\nKeep it under 20 words.\n", max_prompt_bytes=1_000_000
    )
    assert bad.notes and "invalid front matter" in bad.notes[0]
    assert [i.range.start.line for i in bad.instructions] == [3]


def test_the_read_model_never_imports_numpy_or_the_solvers() -> None:
    code = (
        "import sys\nimport spade_lsp.overview as o\n"
        "o.build_overview(None, __import__('pathlib').Path('.'), None, 'Keep it under 5 words.', "
        "max_prompt_bytes=1_000_000)\n"
        "bad = [m for m in ('numpy', 'litellm', 'highspy', 'pulp', 'spade_lsp.selection', 'git') if m in sys.modules]\n"
        "print(bad)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_content_hash_matches_the_store(blurb: Path) -> None:
    """The recorded-text shortcut compares sha256 of the UTF-8 text with the version's content hash."""
    history = HistoryRepository(_store(blurb.parent))
    prompt_id = history.prompt_id(prompt_key(blurb.parent, blurb))
    assert prompt_id is not None
    newest = history.newest_version(prompt_id)
    assert newest is not None and newest.content_hash == hashlib.sha256(V3.encode("utf-8")).hexdigest()


_PIECES = [
    "Keep it under 50 words. ", "Never mention {price}. ", "- a bullet item\n", "  - nested item\n", "# Heading\n",
    "1. First do this.\n", "\n", "\n\n", "   \n", "Be friendly! Use emoji 😀. ", "Answer in JSON.",
    "Context: {{ctx}}\n", "e.g. this one. ", "Dr. Smith said hi. ", "\t", "x", ".",
]  # fmt: skip


def test_edits_split_from_the_stored_units_match_a_full_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut that re-splits only the paragraphs an edit touched gives exactly the units of a full split
    (random edits of random prompts: sentences, bullets, headings, blank and indented lines, placeholders)."""
    monkeypatch.setattr(overview, "_MAX_REGION", 1.0)  # take the shortcut whenever it is sound
    split = overview._split
    resplit: list[int] = []  # the length of each piece the shortcut hands the splitter

    def counting_split(body: str) -> list[Sentence]:
        resplit.append(len(body))
        return list(split(body))

    monkeypatch.setattr(overview, "_split", counting_split)
    rng = random.Random(20240601)
    saved = 0  # edits for which the shortcut split less than the whole text
    for _ in range(600):
        head = "".join(rng.choice(_PIECES) for _ in range(rng.randint(5, 60)))
        stored = overview._Stored({}, tuple(split_sentences(head)), "hash", head)
        text = head
        for _ in range(rng.randint(1, 3)):
            i = rng.randint(0, len(text))
            j = min(len(text), i + rng.randint(0, 12))
            inserted = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 2)))
            text = text[:i] + (inserted if rng.random() < 0.7 else "") + text[j:]
        resplit.clear()
        units = overview._split_from(stored, text)
        assert units is not None
        assert list(units) == split_sentences(text)
        saved += sum(resplit) < len(text)
    assert saved > 300  # the shortcut's point: most edits re-split only the paragraphs they touch
    fenced = overview._Stored(
        {}, tuple(split_sentences("a.\n\n```\nx\n\ny\n```\n")), "hash", "a.\n\n```\nx\n\ny\n```\n"
    )
    assert overview._split_from(fenced, "b.\n\n```\nx\n\ny\n```\n") is None  # fences may span blank lines


def test_an_edit_of_the_recorded_text_keeps_the_stored_history(blurb: Path) -> None:
    root = blurb.parent
    edited = V3.replace("Keep it not exceeding 12 words.", "Keep it not exceeding 12 words.\n\nBe brief.")
    overview_ = build_overview(_store(root), root, blurb, edited, read_sidecar=False, max_prompt_bytes=1_000_000)
    assert [(i.text, i.range, i.start, i.end) for i in overview_.instructions] == [
        (s.text, s.range, s.start, s.end) for s in split_sentences(edited)
    ]
    by_text = {i.text: i for i in overview_.instructions}
    assert by_text["Keep it not exceeding 12 words."].introduced_in == 2 and not by_text["Be brief."].recorded


def test_a_check_from_a_removed_instruction_says_which_version_removed_it_and_is_not_stale(blurb: Path) -> None:
    root = blurb.parent
    v4 = V3.replace("Keep it not exceeding 12 words.\n", "")  # the limit is lifted (or relaxed) in v4
    record(root, blurb, v4)
    with Workspace(root) as workspace:
        settings = resolve_file(root, blurb)
        result = synthesize(
            workspace, blurb, make_synthesizer(workspace, "offline", settings=settings), settings=settings
        )
    assert any(c.removed_in == 4 for c in result.candidates)
    overview = build_overview(_store(root), root, blurb, v4, max_prompt_bytes=1_000_000)
    views = {a.name: a for a in overview.sidecar.assertions}
    words = views["assert_at_most_12_words"]
    assert words.removed_in == 4 and words.sentence == "Keep it not exceeding 12 words." and words.version == 2
    assert not words.stale and words.instruction is None
    assert "removed_in=4" in (root / "blurb_assertions.py").read_text(encoding="utf-8")
    current = [a for a in views.values() if a.removed_in is None and a.sentence is not None]
    assert current and not any(a.stale for a in current)


def test_every_unit_has_a_hint_or_a_reason(workspace_dir: Path) -> None:
    """Issue 22: each instruction carries its offline check or why only a model can check it; every other unit
    says why it is not an instruction; the summary counts the instructions, as many as get a diagnostic."""
    text = (
        "You are a support agent for Acme. Reply to the customer's message below.\n"
        "Use the customer's first name {first_name}.\nNever blame the customer.\n"
        "Always sign off as The Acme Team.\nEnd with a question.\n\nMessage: {message}\n"
    )
    overview = build_overview(None, workspace_dir, None, text, max_prompt_bytes=1_000_000)
    plan = {i.text: (i.checkable, i.checks, i.needs_model, i.reason) for i in overview.instructions}
    assert plan["You are a support agent for Acme."][0] is False
    assert "role" in (plan["You are a support agent for Acme."][3] or "")
    assert plan["Reply to the customer's message below."][:3] == (False, (), False)
    assert "describes the task" in (plan["Reply to the customer's message below."][3] or "")
    assert plan["Use the customer's first name {first_name}."][1] == ("assert_mentions_first_name",)
    assert plan["Never blame the customer."][:3] == (True, (), True)
    assert "without a model" in (plan["Never blame the customer."][3] or "")
    assert plan["Always sign off as The Acme Team."][1] == ("assert_signs_off_as_the_acme_team",)
    assert plan["End with a question."][1] == ("assert_ends_with_a_question",)
    assert plan["Message: {message}"][0] is False and "input data" in (plan["Message: {message}"][3] or "")
    assert all(checkable or reason for checkable, _, _, reason in plan.values())
    assert overview.summary.instructions == 4 == sum(1 for i in overview.instructions if i.checkable)
    # a check the classifier had no label for takes the check's category (the diagnostic's code)
    sign_off = next(i for i in overview.instructions if i.text.startswith("Always sign off"))
    assert sign_off.categories[0] == "Structural/PresentationFormat"
    assert [i.text for i in overview.writable] == [
        "Use the customer's first name {first_name}.",
        "Always sign off as The Acme Team.",
        "End with a question.",
    ]


def test_a_sentence_only_a_model_can_check_carries_the_label_of_its_question() -> None:
    """A rule in another language gets a model's question; the classifier gave it no label, so the plan gives
    the question's, and the editor always has one to show."""
    plan = overview.plan_unit("Menciona todos los ingredientes principales de la lista.", (), "sentence")
    assert plan.needs_model and plan.category is not None
    assert not overview.plan_unit("You answer questions about invoices.", (), "sentence").instruction

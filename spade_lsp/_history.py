"""Prompt history: versions recorded in the store, the delta between each pair of consecutive versions,
and the current version's sentences with the version that introduced each one.

Versions are ordered by ``created_at`` (UTC; the commit time for git versions), then by id. A version is
recorded only when the content differs from the one before it. Deltas are a cache keyed by the pair of
versions and the classifier's name, so inserting older history (a git import) only adds the missing pairs.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from spade_lsp import _git
from spade_lsp._deltas import diff_texts
from spade_lsp._prompts import PromptKind, PromptText, decode_prompt, parse_prompt, prompt_kind, read_prompt_file
from spade_lsp._sentences import split_sentences
from spade_lsp._types import ChangeKind, Position, Range, Sentence, SentenceChange, VersionInfo
from spade_lsp.errors import ConfigError, InputError
from spade_lsp.store import ChangeRow, HistoryRepository, SentenceRow, Store, prompt_key
from spade_lsp.taxonomy import PROMPT_REPHRASING, TaxonomyClassifier, delta_labels, ordered


@dataclass(frozen=True, slots=True)
class ChangeInfo:
    kind: str
    old_text: str | None
    new_text: str | None
    similarity: float
    range: Range | None  # in the newer version; None for removals
    labels: tuple[str, ...]
    message: str | None = None  # which message of a chat prompt it is in ("system", "user 2"); None: not a chat


@dataclass(frozen=True, slots=True)
class DeltaInfo:
    from_number: int | None  # None: the first version, compared with nothing
    to_number: int
    labels: tuple[str, ...]
    changes: tuple[ChangeInfo, ...]
    classifier: str


@dataclass(frozen=True, slots=True)
class SentenceInfo:
    text: str
    kind: str
    range: Range
    start: int
    end: int
    categories: tuple[str, ...]
    introduced_in: int | None  # version number


@dataclass(frozen=True, slots=True)
class Revision:
    """A version to record: its text and where it came from."""

    text: str
    origin: str = "import"
    created_at: datetime | None = None
    commit_sha: str | None = None
    commit_message: str | None = None
    author: str | None = None
    authored_at: datetime | None = None


@dataclass(slots=True)
class ImportResult:
    added: int = 0
    unchanged: int = 0
    warnings: list[str] | None = None


#: File times come from a coarse clock (a tick behind the precise one the store's times use).
_CLOCK_SLACK = timedelta(milliseconds=50)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _gap_shape(gap: str, *, edge: bool) -> str:
    """What the text between two units (or before the first, after the last: ``edge``) means for the prompt.
    Whitespace alone is a separator: a paragraph break when it holds a blank line, else a space (the same line
    or a line break inside a paragraph); at the edges of the file it means nothing. Anything else (front matter,
    a role line) counts line by line, each line's trailing whitespace and repeated blank lines aside."""
    if not gap.strip():
        if edge:
            return ""
        return "\n\n" if gap.count("\n") >= 2 else " "
    lines: list[str] = []
    for line in gap.split("\n"):
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    return "\n".join(lines).strip("\n")


def _shape(text: str, kind: PromptKind) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """A prompt as its units (kind and exact text, in order) and the separators between them; None when the
    text does not parse (a half-typed message list)."""
    try:
        body = parse_prompt(text, kind=kind).body
    except ConfigError:
        return None
    units = split_sentences(body)
    gaps: list[str] = []
    previous = 0
    for index, unit in enumerate(units):
        gaps.append(_gap_shape(text[previous : unit.start], edge=index == 0))
        previous = unit.end
    gaps.append(_gap_shape(text[previous:], edge=True))
    return tuple(f"{unit.kind.value}:{unit.text}" for unit in units), tuple(gaps)


def same_but_whitespace(old: str, new: str, kind: PromptKind = "text") -> bool:
    """Whether ``new`` says what ``old`` says, differing only in whitespace that changes nothing for the model.

    The units (sentences, list items, headings, code blocks) must be the same, in the same order, with the same
    text: whitespace inside a sentence or a code block counts, since the splitter keeps it. Between units, only
    the kind of separator counts: a space or a line break inside a paragraph, or a paragraph break (a blank
    line); so a second blank line where one already was, trailing spaces, or spaces between two sentences on
    a line change nothing, while a blank line that splits a paragraph in two is a change. Whitespace before the
    first unit and after the last changes nothing; front matter and role lines count as they are, line by line
    (trailing whitespace and repeated blank lines aside)."""
    if old == new:
        return True
    if "".join(old.split()) != "".join(new.split()):
        return False  # a character other than whitespace changed: no need to split either text
    before, after = _shape(old, kind), _shape(new, kind)
    return before is not None and before == after


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


class History:
    """The history of the prompts of one workspace, over its store."""

    def __init__(self, store: Store, workspace_root: Path, classifier: TaxonomyClassifier) -> None:
        self.store = store
        self.repository = HistoryRepository(store)
        self.root = workspace_root.resolve()
        self.classifier = classifier
        self._categories_cache: dict[str, str] = {}

    # -- identity -------------------------------------------------------------------------------------

    def prompt_key(self, path: Path) -> str:
        """The prompt's id in the store (:func:`spade_lsp.store.prompt_key`)."""
        return prompt_key(self.root, path)

    def prompts(self) -> list[str]:
        return self.repository.prompt_paths()

    # -- recording --------------------------------------------------------------------------------------

    def record(self, path: Path, text: str, *, origin: str = "save", from_file: bool = False) -> VersionInfo | None:
        """Record ``text`` as the newest version of ``path`` unless it equals the newest one.

        ``from_file``: ``text`` was read from ``path`` (a watcher event, the start-up rescan, a job's sync), so
        it is only an observation of the file, and several readers may race. Under the store's write lock it
        is recorded only when the file still holds it (a reader that lost the race to a newer text records
        nothing; the newer text is, or will be, recorded by its own reader) and when the file changed after
        the newest version was recorded, or that version came from git. So the history follows the file's
        observed modifications in order, never the order in which readers happened to write: a rescan never
        records text older than the newest version."""
        key = self.prompt_key(path)
        with self.repository.transaction():
            if from_file and not self._observation_is_current(path, key, text):
                return None
            if self._only_whitespace_changed(key, text, prompt_kind(path)):
                return None  # the newest version already says this: no version without a change that matters
            # its time is taken under the write lock (now, or just after the newest version): a version recorded
            # later is never ordered before one recorded earlier
            result = self.record_revisions(path, [Revision(text=text, origin=origin)])
        if not result.added:
            return None
        return self.versions(path)[-1]

    def _only_whitespace_changed(self, key: str, text: str, kind: PromptKind) -> bool:
        """Inside the write transaction: ``text`` differs from the newest version only in whitespace that
        does not change the prompt (see :func:`same_but_whitespace`)."""
        prompt_id = self.repository.prompt_id(key)
        if prompt_id is None:
            return False
        newest = self.repository.newest_version(prompt_id)
        if newest is None or newest.content_hash == content_hash(text):
            return False  # equal: record_revisions skips it anyway
        return same_but_whitespace(self.content(newest.content_hash), text, kind)

    def _observation_is_current(self, path: Path, key: str, text: str) -> bool:
        """Inside the write transaction: whether ``text``, read from ``path`` earlier, is still the file's text
        and is not older than the newest version recorded."""
        try:
            now_on_disk = read_prompt_file(path, max_bytes=len(text.encode("utf-8")) + 3)  # + a BOM
            status = path.stat()
        except (InputError, OSError):
            return False  # changed (grown, removed, unreadable) since it was read: not the file's text any more
        if now_on_disk != text:
            return False
        prompt_id = self.repository.prompt_id(key)
        if prompt_id is None:
            return True
        newest = self.repository.newest_version(prompt_id)
        if newest is None or newest.content_hash == content_hash(text) or newest.origin == "git":
            return True  # nothing newer to be older than; equal (nothing to record); a commit time is no save time
        # ctime too: it cannot be set back (a copy that keeps an old mtime is still a change made now)
        changed = datetime.fromtimestamp(max(status.st_mtime_ns, status.st_ctime_ns) / 1e9, UTC)
        return changed >= datetime.fromisoformat(newest.created_at) - _CLOCK_SLACK

    def record_revisions(self, path: Path, revisions: Iterable[Revision]) -> ImportResult:
        """Record several versions in one transaction, skipping any equal to its neighbour in time."""
        key = self.prompt_key(path)
        result = ImportResult(warnings=[])
        with self.repository.transaction():
            prompt_id = self.repository.create_prompt(key, _iso(_now()))
            base = self._next_free_time(prompt_id)
            for index, revision in enumerate(revisions):
                created = revision.created_at or base + timedelta(microseconds=index)
                if self._insert_version(prompt_id, revision, created):
                    result.added += 1
                else:
                    result.unchanged += 1
            if result.added or (result.unchanged and not self.repository.has_sentences(prompt_id)):
                self._refresh(prompt_id)  # new versions; or sentences a migration dropped, rebuilt at the next save
        return result

    def _next_free_time(self, prompt_id: int) -> datetime:
        """Now, or just after the newest version if its time lies ahead (clock skew, future commits)."""
        newest = self.repository.latest_created_at(prompt_id)
        now = _now()
        if newest is not None:
            latest = datetime.fromisoformat(newest) + timedelta(microseconds=1)
            return max(now, latest)
        return now

    def _insert_version(self, prompt_id: int, revision: Revision, created: datetime) -> bool:
        """Inside the write transaction: store ``revision`` unless the version just before or after its time
        holds the same text (or it is a commit already recorded)."""
        digest = content_hash(revision.text)
        created_iso = _iso(created)
        repository = self.repository
        if revision.commit_sha is not None and repository.has_commit(prompt_id, revision.commit_sha):
            return False
        before = repository.version_at_or_before(prompt_id, created_iso)
        after = repository.version_after(prompt_id, created_iso)
        for same in (before, after):
            if same is not None and same.content_hash == digest:
                if revision.commit_sha and same.commit_sha is None:
                    # The same text was saved before it was committed (the save timed before the commit's
                    # second, or inside it and so after the commit's whole-second time): one version, with the
                    # commit.
                    repository.set_commit(
                        same.id, revision.commit_sha, revision.commit_message, revision.author, _authored(revision)
                    )
                return False
        repository.insert_version(
            prompt_id,
            text=revision.text,
            content_hash=digest,
            created_at=created_iso,
            recorded_at=_iso(_now()),
            origin=revision.origin,
            commit_sha=revision.commit_sha,
            commit_message=revision.commit_message,
            author=revision.author,
            authored_at=_authored(revision),
        )
        return True

    def import_git(self, path: Path, *, max_bytes: int) -> ImportResult:
        """Record the committed history of ``path`` (following renames); commits already seen are skipped."""
        revisions: list[Revision] = []
        warnings: list[str] = []
        history = _git.file_history(path, max_bytes=max_bytes)
        warnings.extend(history.skipped)
        for rev in history:
            try:
                text = decode_prompt(rev.content, source=f"{path}@{rev.commit[:10]}", max_bytes=max_bytes)
            except InputError as error:
                warnings.append(f"skipped commit {rev.commit[:10]}: {error}")
                continue
            revisions.append(
                Revision(
                    text=text,
                    origin="git",
                    created_at=rev.committed_at,
                    commit_sha=rev.commit,
                    commit_message=rev.message,
                    author=rev.author,
                    authored_at=rev.authored_at,
                )
            )
        if revisions:
            revisions[-1] = self._after_saves_of_its_second(path, revisions[-1])
        result = self.record_revisions(path, revisions)
        result.warnings = warnings
        return result

    def _after_saves_of_its_second(self, path: Path, newest: Revision) -> Revision:
        """The newest commit, ordered after the saves recorded within its second when the file holds its text.

        A commit time has whole seconds; a save is timed to the microsecond. A save recorded at 10.3 s and then
        committed as other text at 10.7 s (stored as 10.0 s) would sort before the save, so the history would
        end with the save's text while the file holds the commit's, and the next look at the file would record
        a revert that never happened. The file's current text says which came last: when it is the commit's,
        the commit goes just after the saves of its second (still inside it); when it is the save's, the
        commit's own time already orders it first."""
        if newest.created_at is None:
            return newest
        prompt_id = self.repository.prompt_id(self.prompt_key(path))
        if prompt_id is None:
            return newest
        try:
            on_disk = read_prompt_file(path, max_bytes=len(newest.text.encode("utf-8")) + 3)
        except InputError:
            return newest
        if on_disk != newest.text:
            return newest
        second_end = newest.created_at.replace(microsecond=0) + timedelta(seconds=1)
        latest_save = self.repository.latest_save_between(prompt_id, _iso(newest.created_at), _iso(second_end))
        if latest_save is None or latest_save[1] == content_hash(newest.text):
            return newest  # none, or the same text saved before it was committed (one version, with the commit)
        later = datetime.fromisoformat(latest_save[0]) + timedelta(microseconds=1)
        return dataclasses.replace(newest, created_at=max(newest.created_at, later))

    # -- reading --------------------------------------------------------------------------------------

    def _version_rows(self, prompt_id: int) -> list[VersionInfo]:
        return self.repository.versions(prompt_id)

    def versions(self, path: Path) -> list[VersionInfo]:
        prompt_id = self.repository.prompt_id(self.prompt_key(path))
        if prompt_id is None:
            return []
        return self._version_rows(prompt_id)

    def content(self, content_hash_: str) -> str:
        return self.repository.content(content_hash_) or ""

    def _body(self, digest: str, kind: PromptKind) -> str:
        """A version's wording (front matter and message markup blanked), so units' offsets hold in the full
        text. A message list saved half-typed (invalid JSON) is analysed as plain text until it is valid."""
        text = self.content(digest)
        try:
            return parse_prompt(text, kind=kind).body
        except ConfigError:
            if kind != "messages":
                raise
            return text

    def _messages(self, version_id: int, kind: PromptKind) -> PromptText | None:
        """A version parsed, when it is a chat prompt (None otherwise, or when it does not parse)."""
        content = self.repository.version_content(version_id)
        try:
            parsed = parse_prompt(content, kind=kind) if content is not None else None
        except ConfigError:
            return None
        return parsed if parsed is not None and parsed.is_chat else None

    def _kind(self, prompt_id: int) -> PromptKind:
        """How the prompt's file is read (:func:`~spade_lsp._prompts.prompt_kind`, by its name)."""
        path = self.repository.prompt_path(prompt_id)
        return prompt_kind(path) if path is not None else "text"

    def deltas(self, path: Path, *, from_number: int | None = None, to_number: int | None = None) -> list[DeltaInfo]:
        """Deltas ending at versions ``from_number+1 .. to_number`` (the first version's delta compares it
        with nothing). Missing ones are computed with the current classifier and stored."""
        prompt_id = self.repository.prompt_id(self.prompt_key(path))
        if prompt_id is None:
            return []
        rows = self._version_rows(prompt_id)
        first = 1 if from_number is None else from_number + 1
        last = len(rows) if to_number is None else to_number
        if from_number is not None and not 1 <= from_number <= len(rows):
            raise InputError(f"--from {from_number}: {self.prompt_key(path)} has versions 1..{len(rows)}")
        if to_number is not None and not 1 <= to_number <= len(rows):
            raise InputError(f"--to {to_number}: {self.prompt_key(path)} has versions 1..{len(rows)}")
        self._ensure_deltas(prompt_id, rows)
        out: list[DeltaInfo] = []
        number_of = {row.id: row.number for row in rows}
        for number in range(first, last + 1):
            row = rows[number - 1]
            previous = rows[number - 2].id if number > 1 else None
            out.append(self._load_delta(prompt_id, previous, row.id, number_of))
        return out

    def _ensure_deltas(self, prompt_id: int, rows: Sequence[VersionInfo]) -> None:
        existing = self.repository.delta_pairs(prompt_id, self.classifier.name)
        missing = [
            (rows[i - 1] if i else None, rows[i])
            for i in range(len(rows))
            if ((rows[i - 1].id if i else None), rows[i].id) not in existing
        ]
        if not missing:
            return
        kind = self._kind(prompt_id)
        with self.repository.transaction():
            for previous, current in missing:
                old = self._body(previous.content_hash, kind) if previous else ""
                changes = diff_texts(old, self._body(current.content_hash, kind))
                self._store_delta(prompt_id, previous.id if previous else None, current.id, changes)

    def _store_delta(self, prompt_id: int, from_id: int | None, to_id: int, changes: Sequence[SentenceChange]) -> None:
        per_change = self.classifier.classify_changes(changes) if changes else []
        self.repository.insert_delta(
            prompt_id,
            from_id,
            to_id,
            classifier=self.classifier.name,
            labels=json.dumps(ordered(delta_labels(per_change))),
            computed_at=_iso(_now()),
            changes=[_change_row(change, labels) for change, labels in zip(changes, per_change, strict=True)],
        )

    def _load_delta(self, prompt_id: int, from_id: int | None, to_id: int, number_of: dict[int, int]) -> DeltaInfo:
        delta = self.repository.delta(from_id, to_id, self.classifier.name)
        kind = self._kind(prompt_id)
        newer = self._messages(to_id, kind)
        older = self._messages(from_id, kind) if from_id is not None else None
        changes = tuple(
            ChangeInfo(
                kind=row.kind,
                old_text=row.old_text,
                new_text=row.new_text,
                similarity=row.similarity,
                range=_range_from_row(row),
                labels=tuple(json.loads(row.labels)),
                message=_message_label(newer, older, row),
            )
            for row in self.repository.changes(delta.id)
        )
        return DeltaInfo(
            from_number=number_of[from_id] if from_id else None,
            to_number=number_of[to_id],
            labels=tuple(json.loads(delta.labels)),
            changes=changes,
            classifier=delta.classifier,
        )

    def _refresh(self, prompt_id: int) -> None:
        """After new versions: compute missing deltas, then rebuild the newest version's sentences."""
        rows = self._version_rows(prompt_id)
        self._ensure_deltas(prompt_id, rows)
        # text -> the latest version that added or reworded it, and the labels of that change: the classifier read
        # the sentence in its delta (an assistant model's labels once it relabelled it), which is better evidence
        # than the sentence read on its own (later rows overwrite earlier ones)
        introduced: dict[str, int] = {}
        from_change: dict[str, tuple[str, str]] = {}  # text -> (kind, labels) of that change
        # (a move neither introduces nor labels it: the repository leaves moves out)
        for text, version_id, kind, labels in self.repository.introducing_changes(prompt_id, self.classifier.name):
            introduced[text] = version_id
            from_change[text] = (kind, labels)
        head = rows[-1]
        units = split_sentences(self._body(head.content_hash, self._kind(prompt_id)))
        self.repository.replace_sentences(
            prompt_id,
            head.id,
            (
                (
                    unit.kind.value,
                    unit.text,
                    unit.start,
                    unit.end,
                    *_range_columns(unit.range),
                    self._unit_categories(unit.text, from_change.get(unit.text)),
                    introduced.get(unit.text),
                )
                for unit in units
            ),
        )

    def _unit_categories(self, text: str, change: tuple[str, str] | None) -> str:
        """A sentence's categories as stored: those of the change that introduced it, else read on its own."""
        return (_sentence_labels(*change) if change is not None else None) or self._categories_json(text)

    def _categories_json(self, text: str) -> str:
        """A sentence's categories as stored; memoised because most sentences recur in every version."""
        cached = self._categories_cache.get(text)
        if cached is None:
            cached = json.dumps(ordered(self.classifier.classify_sentence(text)))
            if len(self._categories_cache) > 50_000:
                self._categories_cache.clear()
            self._categories_cache[text] = cached
        return cached

    def unlabelled_deltas(self, path: Path, labelled_by: str) -> list[tuple[int, list[SentenceChange]]]:
        """The prompt's deltas whose labels did not come from ``labelled_by`` yet, oldest first: each delta's
        id and its changes (texts and kinds; offsets are not needed to label them)."""
        prompt_id = self.repository.prompt_id(self.prompt_key(path))
        if prompt_id is None:
            return []
        self._ensure_deltas(prompt_id, self._version_rows(prompt_id))
        out: list[tuple[int, list[SentenceChange]]] = []
        for delta_id in self.repository.unlabelled_delta_ids(prompt_id, self.classifier.name, labelled_by):
            changes = [
                SentenceChange(ChangeKind(row.kind), _bare(row.old_text), _bare(row.new_text), row.similarity)
                for row in self.repository.changes(delta_id)
            ]
            out.append((delta_id, changes))
        return out

    def relabel(self, path: Path, labels: Mapping[int, Sequence[frozenset[str]]], labelled_by: str) -> None:
        """Store another classifier's labels for deltas of :meth:`unlabelled_deltas` (per change, in order) in
        one transaction, then rebuild the newest version's sentence categories from them."""
        prompt_id = self.repository.prompt_id(self.prompt_key(path))
        if prompt_id is None or not labels:
            return
        with self.repository.transaction():
            for delta_id, per_change in labels.items():
                ids = self.repository.change_ids(delta_id)
                if len(ids) != len(per_change):
                    raise ValueError(f"delta {delta_id} has {len(ids)} changes, not {len(per_change)}")
                self.repository.relabel_delta(
                    delta_id,
                    [
                        (change_id, json.dumps(ordered(change)))
                        for change, change_id in zip(per_change, ids, strict=True)
                    ],
                    json.dumps(ordered(delta_labels(per_change))),
                    labelled_by,
                )
            self._refresh(prompt_id)

    def sentences(self, path: Path) -> list[SentenceInfo]:
        """The newest version's sentences, with categories and the version number that introduced each."""
        prompt_id = self.repository.prompt_id(self.prompt_key(path))
        if prompt_id is None:
            return []
        number_of = {row.id: row.number for row in self._version_rows(prompt_id)}
        return [
            SentenceInfo(
                text=row.text,
                kind=row.kind,
                range=_range_from_row(row) or Range(Position(0, 0), Position(0, 0)),
                start=row.start_offset,
                end=row.end_offset,
                categories=tuple(json.loads(row.categories)),
                introduced_in=number_of.get(row.introduced_version_id) if row.introduced_version_id else None,
            )
            for row in self.repository.sentences(prompt_id)
        ]


def _range_columns(value: Range) -> tuple[int, int, int, int]:
    return (value.start.line, value.start.character, value.end.line, value.end.character)


def _change_row(change: SentenceChange, labels: frozenset[str] | set[str]) -> ChangeRow:
    """A change as stored: its range in the newer version (none for a removal) and its labels."""
    new_range = change.new.range if change.new else None
    return ChangeRow(
        kind=change.kind.value,
        old_text=change.old.text if change.old else None,
        new_text=change.new.text if change.new else None,
        similarity=change.similarity,
        start_line=new_range.start.line if new_range else None,
        start_char=new_range.start.character if new_range else None,
        end_line=new_range.end.line if new_range else None,
        end_char=new_range.end.character if new_range else None,
        labels=json.dumps(ordered(labels)),
    )


def _message_label(newer: PromptText | None, older: PromptText | None, row: ChangeRow) -> str | None:
    """The chat message a change is in: found by its range in the newer version, or for a removal by its text in
    the older one."""
    if row.start_line is not None and row.start_char is not None and newer is not None:
        offset = _offset(newer.text, row.start_line, row.start_char)
        index = newer.message_index(offset)
        return newer.message_label(index) if index is not None else None
    if row.old_text and older is not None:
        at = older.body.find(row.old_text)
        index = older.message_index(at) if at >= 0 else None
        return older.message_label(index) if index is not None else None
    return None


def _offset(text: str, line: int, character: int) -> int:
    """The offset of an LSP position (its column counted in UTF-16 code units)."""
    start = 0
    for _ in range(line):
        found = text.find("\n", start)
        if found < 0:
            return len(text)
        start = found + 1
    column = 0
    offset = start
    while offset < len(text) and column < character and text[offset] != "\n":
        column += 2 if ord(text[offset]) > 0xFFFF else 1
        offset += 1
    return offset


def _range_from_row(row: ChangeRow | SentenceRow) -> Range | None:
    if row.start_line is None or row.start_char is None or row.end_line is None or row.end_char is None:
        return None
    return Range(Position(row.start_line, row.start_char), Position(row.end_line, row.end_char))


def _bare(text: str | None) -> Sentence | None:
    """A stored change's sentence, without offsets (a classifier reads only its text)."""
    if text is None:
        return None
    return Sentence(text=text, start=0, end=len(text), range=Range(Position(0, 0), Position(0, 0)))


@functools.lru_cache(maxsize=1024)  # few distinct label sets, and every refresh reads one per sentence
def _sentence_labels(kind: str, labels_json: str) -> str | None:
    """A sentence's categories from the change that introduced it. A rewording's own label (Prompt clarification)
    describes the edit, not the sentence: it is dropped, and a rewording with no other label leaves the sentence
    to the classifier's reading of it on its own (None)."""
    labels = json.loads(labels_json)
    if kind == ChangeKind.MODIFIED.value:
        labels = [label for label in labels if label != PROMPT_REPHRASING]
        if not labels:
            return None
    return json.dumps(labels)


def _authored(revision: Revision) -> str | None:
    """The author date with the author's own UTC offset, so its calendar day is the one ``git log`` shows."""
    return revision.authored_at.isoformat() if revision.authored_at is not None else None

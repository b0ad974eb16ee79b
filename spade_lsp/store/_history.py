"""The history tables: prompts, versions, content blobs, deltas with their changes, and the newest version's
sentences. :class:`HistoryRepository` holds every statement on them; the logic (what to record, how deltas
are computed) stays in :class:`spade_lsp._history.History`.

Each write method is a transaction of its own, and joins the caller's when it runs inside
:meth:`HistoryRepository.transaction` (see :meth:`Store.write`): several writes, and the reads that decide
them, are then atomic together. Reads run on the same connection, so inside a transaction they see its writes.

Light on purpose (no sqlite-utils at import): the language server reads versions and sentences through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from spade_lsp._types import VersionInfo
from spade_lsp.errors import StoreError

if TYPE_CHECKING:
    from spade_lsp.store._database import Store


class NewestVersion(NamedTuple):
    """The newest version of a prompt (by ``created_at``, then id): what recording compares with."""

    id: int
    content_hash: str
    created_at: str
    origin: str


class NeighbourVersion(NamedTuple):
    """A version next to a time: its id, content hash and commit (None: a save or an import)."""

    id: int
    content_hash: str
    commit_sha: str | None


class ChangeRow(NamedTuple):
    """One change of a delta, in order. The range columns are in the newer version (None for a removal);
    ``labels`` is the JSON list of category ids as stored."""

    kind: str
    old_text: str | None
    new_text: str | None
    similarity: float
    start_line: int | None
    start_char: int | None
    end_line: int | None
    end_char: int | None
    labels: str


class DeltaRow(NamedTuple):
    """A stored delta: its id, labels (JSON) and the classifier whose labels it holds now."""

    id: int
    labels: str
    classifier: str


class SentenceRow(NamedTuple):
    """One unit of the newest version, as stored (``categories``: JSON list of category ids)."""

    kind: str
    text: str
    start_offset: int
    end_offset: int
    start_line: int
    start_char: int
    end_line: int
    end_char: int
    categories: str
    introduced_version_id: int | None


#: A unit to store, in :class:`SentenceRow`'s order (a plain tuple: a prompt has thousands, stored at every save).
SentenceValues = tuple[str, str, int, int, int, int, int, int, str, int | None]


class IntroducingChange(NamedTuple):
    """A change that added or reworded a sentence: its text, the version it ends at, its kind and labels."""

    new_text: str
    to_version_id: int
    kind: str
    labels: str


class SentenceChangeRow(NamedTuple):
    """A change with a newer text, for following a sentence's wordings back (any classifier)."""

    kind: str
    old_text: str | None
    new_text: str
    to_version_id: int


_VERSION_COLUMNS = "id, content_hash, created_at, origin, commit_sha, commit_message, author, authored_at"
_SENTENCE_COLUMNS = (
    "s.kind, s.text, s.start_offset, s.end_offset, s.start_line, s.start_char, s.end_line, s.end_char, "
    "s.categories, s.introduced_version_id"
)
_CHANGE_COLUMNS = "kind, old_text, new_text, similarity, start_line, start_char, end_line, end_char, labels"


class HistoryRepository:
    """Every read and write of the history tables of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.store.db.execute(sql, list(params))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (``BEGIN IMMEDIATE``): the repository's writes inside it, and the reads that
        decided them, commit together or not at all. Nested calls join the outer transaction."""
        with self.store.write():
            yield

    # -- prompts ------------------------------------------------------------------------------------------

    def prompt_id(self, key: str) -> int | None:
        """The prompt's row id (:func:`spade_lsp.store.prompt_id`), None before anything was recorded."""
        # imported here: it imports the store's module at import time, which a reader loads without numpy first
        from spade_lsp.store._prompt_index import prompt_id

        return prompt_id(self.store, key)

    def create_prompt(self, key: str, created_at: str) -> int:
        """The prompt's id, its row inserted first when there is none."""
        with self.store.write():
            found = self.prompt_id(key)
            if found is not None:
                return found
            cursor = self._execute("INSERT INTO prompts (path, created_at) VALUES (?, ?)", [key, created_at])
            return int(cursor.lastrowid or 0)

    def prompt_paths(self) -> list[str]:
        """The keys of every prompt recorded, sorted."""
        return [str(row[0]) for row in self._execute("SELECT path FROM prompts ORDER BY path").fetchall()]

    def prompt_path(self, prompt_id: int) -> str | None:
        row = self._execute("SELECT path FROM prompts WHERE id = ?", [prompt_id]).fetchone()
        return str(row[0]) if row else None

    # -- versions -----------------------------------------------------------------------------------------

    def versions(self, prompt_id: int) -> list[VersionInfo]:
        """The prompt's versions, oldest first (``created_at``, then id), numbered from 1."""
        rows = self._execute(
            f"SELECT {_VERSION_COLUMNS} FROM versions WHERE prompt_id = ? ORDER BY created_at, id", [prompt_id]
        ).fetchall()
        return [VersionInfo(row[0], number, *row[1:]) for number, row in enumerate(rows, 1)]

    def newest_version(self, prompt_id: int) -> NewestVersion | None:
        row = self._execute(
            "SELECT id, content_hash, created_at, origin FROM versions WHERE prompt_id = ? "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            [prompt_id],
        ).fetchone()
        return NewestVersion(int(row[0]), str(row[1]), str(row[2]), str(row[3])) if row else None

    def latest_created_at(self, prompt_id: int) -> str | None:
        """The largest ``created_at`` of the prompt's versions (None without versions)."""
        row = self._execute("SELECT MAX(created_at) FROM versions WHERE prompt_id = ?", [prompt_id]).fetchone()
        return str(row[0]) if row and row[0] else None

    def has_commit(self, prompt_id: int, commit_sha: str) -> bool:
        return (
            self._execute(
                "SELECT 1 FROM versions WHERE prompt_id = ? AND commit_sha = ?", [prompt_id, commit_sha]
            ).fetchone()
            is not None
        )

    def version_at_or_before(self, prompt_id: int, created_at: str) -> NeighbourVersion | None:
        """The newest version created at or before ``created_at``."""
        row = self._execute(
            "SELECT id, content_hash, commit_sha FROM versions WHERE prompt_id = ? AND created_at <= ? "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            [prompt_id, created_at],
        ).fetchone()
        return NeighbourVersion(int(row[0]), str(row[1]), row[2]) if row else None

    def latest_save_between(self, prompt_id: int, start: str, end: str) -> tuple[str, str] | None:
        """The creation time and content hash of the newest saved (not committed) version created in
        ``[start, end)``."""
        row = self._execute(
            "SELECT created_at, content_hash FROM versions WHERE prompt_id = ? AND commit_sha IS NULL "
            "AND created_at >= ? AND created_at < ? ORDER BY created_at DESC, id DESC LIMIT 1",
            [prompt_id, start, end],
        ).fetchone()
        return (str(row[0]), str(row[1])) if row else None

    def version_after(self, prompt_id: int, created_at: str) -> NeighbourVersion | None:
        """The oldest version created after ``created_at``."""
        row = self._execute(
            "SELECT id, content_hash, commit_sha FROM versions WHERE prompt_id = ? AND created_at > ? "
            "ORDER BY created_at, id LIMIT 1",
            [prompt_id, created_at],
        ).fetchone()
        return NeighbourVersion(int(row[0]), str(row[1]), row[2]) if row else None

    def set_commit(
        self, version_id: int, commit_sha: str, message: str | None, author: str | None, authored_at: str | None
    ) -> None:
        """Name the commit a saved version was later committed in."""
        with self.store.write():
            self._execute(
                "UPDATE versions SET commit_sha = ?, commit_message = ?, author = ?, authored_at = ? WHERE id = ?",
                [commit_sha, message, author, authored_at, version_id],
            )

    def insert_version(
        self,
        prompt_id: int,
        *,
        text: str,
        content_hash: str,
        created_at: str,
        recorded_at: str,
        origin: str,
        commit_sha: str | None = None,
        commit_message: str | None = None,
        author: str | None = None,
        authored_at: str | None = None,
    ) -> int:
        """Store the text (once per content hash) and a version of the prompt holding it; its id."""
        with self.store.write():
            self._execute("INSERT OR IGNORE INTO blobs (hash, content) VALUES (?, ?)", [content_hash, text])
            cursor = self._execute(
                "INSERT INTO versions (prompt_id, content_hash, created_at, recorded_at, origin, commit_sha, "
                "commit_message, author, authored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    *(prompt_id, content_hash, created_at, recorded_at, origin),
                    *(commit_sha, commit_message, author, authored_at),
                ],
            )
            return int(cursor.lastrowid or 0)

    def content(self, content_hash: str) -> str | None:
        """The text with this hash (None when no version holds it)."""
        row = self._execute("SELECT content FROM blobs WHERE hash = ?", [content_hash]).fetchone()
        return str(row[0]) if row else None

    def version_content(self, version_id: int) -> str | None:
        row = self._execute(
            "SELECT b.content FROM versions v JOIN blobs b ON b.hash = v.content_hash WHERE v.id = ?", [version_id]
        ).fetchone()
        return str(row[0]) if row else None

    # -- deltas and their changes ---------------------------------------------------------------------------

    def delta_pairs(self, prompt_id: int, classifier: str) -> set[tuple[int | None, int]]:
        """(from version id, to version id) of the prompt's deltas computed by ``classifier``."""
        return {
            (row[0], row[1])
            for row in self._execute(
                "SELECT from_version_id, to_version_id FROM deltas WHERE prompt_id = ? AND classifier = ?",
                [prompt_id, classifier],
            ).fetchall()
        }

    def insert_delta(
        self,
        prompt_id: int,
        from_version_id: int | None,
        to_version_id: int,
        *,
        classifier: str,
        labels: str,
        computed_at: str,
        changes: Sequence[ChangeRow],
    ) -> int:
        """Store a delta (replacing one for the same pair and classifier) with its changes, in order."""
        with self.store.write():
            cursor = self._execute(
                "INSERT OR REPLACE INTO deltas (prompt_id, from_version_id, to_version_id, classifier, labels, "
                "computed_at) VALUES (?, ?, ?, ?, ?, ?)",
                [prompt_id, from_version_id, to_version_id, classifier, labels, computed_at],
            )
            delta_id = int(cursor.lastrowid or 0)
            self.store.db.conn.executemany(
                "INSERT INTO changes (delta_id, ord, kind, old_text, new_text, similarity, start_line, start_char, "
                "end_line, end_char, labels) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ((delta_id, index, *change) for index, change in enumerate(changes)),
            )
            return delta_id

    def delta(self, from_version_id: int | None, to_version_id: int, classifier: str) -> DeltaRow:
        """The delta between two versions computed by ``classifier`` (it must exist)."""
        row = self._execute(
            "SELECT id, labels, IFNULL(labelled_by, classifier) FROM deltas "
            "WHERE to_version_id = ? AND IFNULL(from_version_id, 0) = ? AND classifier = ?",
            [to_version_id, from_version_id or 0, classifier],
        ).fetchone()
        if row is None:
            raise StoreError(f"no delta {from_version_id} -> {to_version_id} by {classifier} in {self.store.path}")
        return DeltaRow(int(row[0]), str(row[1]), str(row[2]))

    def changes(self, delta_id: int) -> list[ChangeRow]:
        """A delta's changes, in order."""
        cursor = self._execute(f"SELECT {_CHANGE_COLUMNS} FROM changes WHERE delta_id = ? ORDER BY ord", [delta_id])
        return list(map(ChangeRow._make, cursor.fetchall()))

    def introducing_changes(self, prompt_id: int, classifier: str) -> list[IntroducingChange]:
        """Changes by ``classifier`` that added or reworded a sentence (a move, a modification with similarity
        1, neither introduces nor labels it), oldest version first."""
        cursor = self._execute(
            "SELECT c.new_text, d.to_version_id, c.kind, c.labels FROM changes c "
            "JOIN deltas d ON d.id = c.delta_id JOIN versions v ON v.id = d.to_version_id "
            "WHERE d.prompt_id = ? AND d.classifier = ? AND c.new_text IS NOT NULL "
            "AND NOT (c.kind = 'modified' AND c.similarity >= 1.0) "
            "ORDER BY v.created_at, v.id",
            [prompt_id, classifier],
        )
        return list(map(IntroducingChange._make, cursor.fetchall()))

    def sentence_changes(self, prompt_id: int) -> list[SentenceChangeRow]:
        """Every change of the prompt's deltas that has a newer text (any classifier)."""
        return [
            SentenceChangeRow(str(kind), old_text, str(new_text), int(version_id))
            for kind, old_text, new_text, version_id in self._execute(
                "SELECT c.kind, c.old_text, c.new_text, d.to_version_id FROM changes c "
                "JOIN deltas d ON d.id = c.delta_id WHERE d.prompt_id = ? AND c.new_text IS NOT NULL",
                [prompt_id],
            ).fetchall()
        ]

    def unlabelled_delta_ids(self, prompt_id: int, classifier: str, labelled_by: str) -> list[int]:
        """The prompt's deltas by ``classifier`` whose labels did not come from ``labelled_by``, oldest first."""
        return [
            int(row[0])
            for row in self._execute(
                "SELECT d.id FROM deltas d JOIN versions v ON v.id = d.to_version_id WHERE d.prompt_id = ? AND "
                "d.classifier = ? AND IFNULL(d.labelled_by, '') != ? ORDER BY v.created_at, v.id",
                [prompt_id, classifier, labelled_by],
            ).fetchall()
        ]

    def change_ids(self, delta_id: int) -> list[int]:
        return [
            int(row[0])
            for row in self._execute("SELECT id FROM changes WHERE delta_id = ? ORDER BY ord", [delta_id]).fetchall()
        ]

    def relabel_delta(
        self, delta_id: int, change_labels: Sequence[tuple[int, str]], labels: str, labelled_by: str
    ) -> None:
        """Store another classifier's labels: (change id, labels JSON) per change, and the delta's own."""
        with self.store.write():
            self.store.db.conn.executemany(
                "UPDATE changes SET labels = ? WHERE id = ?", [(text, change_id) for change_id, text in change_labels]
            )
            self._execute("UPDATE deltas SET labels = ?, labelled_by = ? WHERE id = ?", [labels, labelled_by, delta_id])

    # -- the newest version's sentences -----------------------------------------------------------------

    def has_sentences(self, prompt_id: int) -> bool:
        return (
            self._execute(
                "SELECT 1 FROM sentences s JOIN versions v ON v.id = s.version_id WHERE v.prompt_id = ? LIMIT 1",
                [prompt_id],
            ).fetchone()
            is not None
        )

    def sentences(self, prompt_id: int) -> list[SentenceRow]:
        """The stored units of the prompt (its newest version's), in order."""
        cursor = self._execute(
            f"SELECT {_SENTENCE_COLUMNS} FROM sentences s JOIN versions v ON v.id = s.version_id "
            "WHERE v.prompt_id = ? ORDER BY s.ord",
            [prompt_id],
        )
        return list(map(SentenceRow._make, cursor.fetchall()))

    def replace_sentences(self, prompt_id: int, version_id: int, sentences: Iterable[SentenceValues]) -> None:
        """Drop the prompt's stored units and store ``sentences`` (in order; :class:`SentenceRow` values, or plain
        tuples in its order) as those of ``version_id``."""
        with self.store.write():
            self._execute(
                "DELETE FROM sentences WHERE version_id IN (SELECT id FROM versions WHERE prompt_id = ?)",
                [prompt_id],
            )
            self.store.db.conn.executemany(
                "INSERT INTO sentences (version_id, ord, kind, text, start_offset, end_offset, start_line, "
                "start_char, end_line, end_char, categories, introduced_version_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ((version_id, index, *row) for index, row in enumerate(sentences)),
            )

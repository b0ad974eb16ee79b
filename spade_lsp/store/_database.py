"""The SQLite store at ``.spade/spade.db``: the only place results live.

sqlite-utils over one connection in WAL mode with a busy timeout. Every write goes through
:meth:`Store.write`, a ``BEGIN IMMEDIATE`` transaction, so a reader never sees half a version and a killed
writer loses nothing it acknowledged. Schema changes are sqlite-utils migrations, applied on open.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from sqlite_utils import Database, Migrations

from spade_lsp._files import confine, disk_full_error, make_private_dir
from spade_lsp.errors import DiskFullError, InputError, StoreError, StoreLockedError
from spade_lsp.store._paths import STORE_DIR, STORE_FILE

try:
    import resource
except ImportError:  # not on every platform
    resource = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_S: Final = 5.0

_MIGRATIONS = Migrations("spade_lsp")


@_MIGRATIONS(name="0001_history")
def _history_schema(db: Database) -> None:
    """Prompts, their versions, content blobs, deltas with their changes, and the head's sentences."""
    db.executescript(
        """
        CREATE TABLE prompts (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,          -- workspace-relative, POSIX separators
            created_at TEXT NOT NULL
        );
        CREATE TABLE blobs (
            hash TEXT PRIMARY KEY,              -- sha256 of the UTF-8 content
            content TEXT NOT NULL
        );
        CREATE TABLE versions (
            id INTEGER PRIMARY KEY,
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            content_hash TEXT NOT NULL REFERENCES blobs(hash),
            created_at TEXT NOT NULL,           -- ISO 8601 with offset; commit time for git versions
            recorded_at TEXT NOT NULL,
            origin TEXT NOT NULL CHECK (origin IN ('save', 'git', 'import')),
            commit_sha TEXT,
            commit_message TEXT,
            author TEXT
        );
        CREATE INDEX versions_by_prompt ON versions(prompt_id, created_at, id);
        CREATE UNIQUE INDEX versions_by_commit ON versions(prompt_id, commit_sha)
            WHERE commit_sha IS NOT NULL;
        CREATE TABLE deltas (
            id INTEGER PRIMARY KEY,
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            from_version_id INTEGER REFERENCES versions(id) ON DELETE CASCADE,
            to_version_id INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
            classifier TEXT NOT NULL,
            labels TEXT NOT NULL,               -- JSON list of category ids
            computed_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX deltas_by_pair ON deltas(to_version_id, IFNULL(from_version_id, 0), classifier);
        CREATE TABLE changes (
            id INTEGER PRIMARY KEY,
            delta_id INTEGER NOT NULL REFERENCES deltas(id) ON DELETE CASCADE,
            ord INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('added', 'removed', 'modified')),
            old_text TEXT,
            new_text TEXT,
            similarity REAL NOT NULL,
            start_line INTEGER, start_char INTEGER, end_line INTEGER, end_char INTEGER,  -- in the newer version
            labels TEXT NOT NULL
        );
        CREATE INDEX changes_by_delta ON changes(delta_id, ord);
        CREATE TABLE sentences (
            id INTEGER PRIMARY KEY,
            version_id INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
            ord INTEGER NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            start_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL,
            start_line INTEGER NOT NULL, start_char INTEGER NOT NULL,
            end_line INTEGER NOT NULL, end_char INTEGER NOT NULL,
            categories TEXT NOT NULL,           -- JSON list of category ids
            introduced_version_id INTEGER REFERENCES versions(id) ON DELETE SET NULL
        );
        CREATE INDEX sentences_by_version ON sentences(version_id, ord);
        CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,               -- sha256 of model, messages, parameters, sample index
            model TEXT NOT NULL,
            response TEXT NOT NULL,             -- JSON
            created_at TEXT NOT NULL
        );
        """
    )


@_MIGRATIONS(name="0002_assertions")
def _assertions_schema(db: Database) -> None:
    """Evaluation runs: which assertions ran on which examples, the pass matrix, labels and cell errors."""
    db.executescript(
        """
        CREATE TABLE eval_runs (
            id INTEGER PRIMARY KEY,
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
            module_hash TEXT NOT NULL,          -- sha256 of the sidecar module's bytes
            examples_hash TEXT NOT NULL,        -- sha256 of the examples file's bytes
            parameters TEXT NOT NULL,           -- JSON: timeout, memory cap, workers, model
            assertions TEXT NOT NULL,           -- JSON list: name, cost, category, synthesizer, asks_llm, check
            examples TEXT NOT NULL,             -- JSON list of example ids, in row order
            y TEXT NOT NULL,                    -- JSON list: 1 good, 0 bad, null unlabelled
            m TEXT,                             -- JSON matrix: m[i][j] 1 pass, 0 fail, null error
            errors TEXT,                        -- JSON list: example, assertion, kind, message
            seconds REAL
        );
        CREATE INDEX eval_runs_by_prompt ON eval_runs(prompt_id, id);
        """
    )


@_MIGRATIONS(name="0003_selection")
def _selection_schema(db: Database) -> None:
    """Assertion selections with their parameters, and the subsumption pairs selection relies on."""
    db.executescript(
        """
        CREATE TABLE selections (
            id INTEGER PRIMARY KEY,
            prompt_id INTEGER REFERENCES prompts(id) ON DELETE CASCADE,    -- null for a --matrix file
            eval_run_id INTEGER REFERENCES eval_runs(id) ON DELETE SET NULL,
            source TEXT NOT NULL,               -- 'eval_run' or the matrix file's path
            method TEXT NOT NULL CHECK (method IN ('base', 'cov', 'sub', 'cost', 'none')),
            tau REAL NOT NULL,
            alpha REAL NOT NULL,
            parameters TEXT NOT NULL,           -- JSON: folds, time limit, solver, relation options
            selected TEXT NOT NULL,             -- JSON list of assertion names
            coverage REAL,                      -- null when undefined (no bad examples) or infeasible
            ffr REAL,
            status TEXT NOT NULL CHECK (status IN ('optimal', 'feasible', 'infeasible')),
            excluded_not_subsumed TEXT NOT NULL,  -- JSON list of assertion names
            solve_seconds REAL NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX selections_by_prompt ON selections(prompt_id, id);
        CREATE TABLE subsumptions (
            id INTEGER PRIMARY KEY,
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            subsumer TEXT NOT NULL,             -- assertion names: subsumer catches every failure subsumed catches
            subsumed TEXT NOT NULL,
            origin TEXT NOT NULL CHECK (origin IN ('static', 'llm', 'user')),
            created_at TEXT NOT NULL,
            UNIQUE (prompt_id, subsumer, subsumed, origin)
        );
        """
    )


@_MIGRATIONS(name="0004_jobs")
def _jobs_schema(db: Database) -> None:
    """The daemon's durable job queue: a job is claimed with a lease and finished in the same transaction that
    stores its result, so killing the daemon never loses an acknowledged job (see spade_lsp.store._jobs)."""
    db.executescript(
        """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,                 -- synthesize, evaluate, select, sample, judge
            path TEXT NOT NULL,                 -- the prompt's key: workspace-relative, POSIX separators
            params TEXT NOT NULL,               -- JSON object
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
            attempts INTEGER NOT NULL DEFAULT 0,  -- claims so far; recovery fails a job after too many
            lease_owner TEXT,                   -- the daemon (and runner) holding a running job
            lease_until TEXT,                   -- ISO 8601 UTC; renewed while the job runs
            progress TEXT,                      -- JSON: message, percentage
            result TEXT,                        -- JSON, written with status 'done'
            error TEXT,                         -- one line, with status 'failed'
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            client TEXT,                        -- who submitted it (editor, cli)
            created_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT
        );
        CREATE INDEX jobs_by_status ON jobs(status, id);
        CREATE INDEX jobs_by_path ON jobs(path, id);
        """
    )


@_MIGRATIONS(name="0005_reliability")
def _reliability_schema(db: Database) -> None:
    """Sampling runs: the reliability tensor R[input][sample][validator] and the outputs behind it, written
    round by round, so a run killed half-way keeps every acknowledged output and result."""
    db.executescript(
        """
        CREATE TABLE sample_runs (
            id INTEGER PRIMARY KEY,
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            version INTEGER,                    -- the prompt version sampled
            model TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'cancelled')),
            parameters TEXT NOT NULL,           -- JSON: inputs, samples, seed, temperature, interval, ...
            inputs TEXT NOT NULL,               -- JSON list of example ids, the tensor's first axis
            validators TEXT NOT NULL,           -- JSON list of {name, message, minimum}, its third axis
            document TEXT,                      -- JSON: the report (docs/reliability.md), when finished
            error TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT
        );
        CREATE INDEX sample_runs_by_prompt ON sample_runs(prompt_id, id);
        CREATE TABLE sample_outputs (
            run_id INTEGER NOT NULL REFERENCES sample_runs(id) ON DELETE CASCADE,
            input INTEGER NOT NULL,             -- index into sample_runs.inputs
            sample INTEGER NOT NULL,            -- the sample index (also the LLM cache's)
            output TEXT,                        -- null when the call failed
            error TEXT,
            cached INTEGER NOT NULL DEFAULT 0,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL,
            PRIMARY KEY (run_id, input, sample)
        );
        CREATE TABLE sample_results (
            run_id INTEGER NOT NULL REFERENCES sample_runs(id) ON DELETE CASCADE,
            input INTEGER NOT NULL,
            sample INTEGER NOT NULL,
            validator INTEGER NOT NULL,         -- index into sample_runs.validators
            passed INTEGER,                     -- 1, 0, or null when the assertion errored
            error TEXT,
            PRIMARY KEY (run_id, input, sample, validator)
        );
        """
    )


@_MIGRATIONS(name="0006_judges")
def _judges_schema(db: Database) -> None:
    """Judge runs (pipelines, grading notes, prompt-response tests, judge noise) and every judgement behind
    them, so a note's judgement history and a run's disagreements can be read back."""
    db.executescript(
        """
        CREATE TABLE judge_runs (
            id INTEGER PRIMARY KEY,
            prompt_id INTEGER REFERENCES prompts(id) ON DELETE CASCADE,  -- null for a prompt-response test
            kind TEXT NOT NULL CHECK (kind IN ('pipeline', 'grading', 'test', 'noise')),
            name TEXT NOT NULL,                 -- the pipeline's or test's name, "grading-notes", ...
            version INTEGER,                    -- the prompt version judged, when there is one
            model TEXT,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'cancelled')),
            parameters TEXT NOT NULL,           -- JSON
            document TEXT,                      -- JSON: the report, when finished
            error TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT
        );
        CREATE INDEX judge_runs_by_prompt ON judge_runs(prompt_id, kind, id);
        CREATE TABLE judgements (
            run_id INTEGER NOT NULL REFERENCES judge_runs(id) ON DELETE CASCADE,
            item TEXT NOT NULL,                 -- the example's (or test item's) id
            judge TEXT NOT NULL,                -- which judge: "with_notes", "layer/unit", "pooled", ...
            sample INTEGER NOT NULL DEFAULT 0,  -- the judge's sample index (judge noise resamples)
            value TEXT,                         -- JSON of the scale's value; null without a usable answer
            explanation TEXT,
            problem TEXT,                       -- refusal, malformed, out_of_scale, error
            detail TEXT,
            attempts INTEGER NOT NULL DEFAULT 1,
            note TEXT,                          -- the grading note the answer was judged against
            PRIMARY KEY (run_id, item, judge, sample)
        );
        CREATE INDEX judgements_by_item ON judgements(item, run_id);
        """
    )


@_MIGRATIONS(name="0007_comparisons")
def _comparisons_schema(db: Database) -> None:
    """Paired comparisons of sampled variants (prompt versions, models, temperatures): the variants' sampling
    runs and the comparison's document, which the editor's lens and the report read back."""
    db.executescript(
        """
        CREATE TABLE comparisons (
            id INTEGER PRIMARY KEY,
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('versions', 'models', 'temperatures')),
            baseline_run_id INTEGER NOT NULL REFERENCES sample_runs(id) ON DELETE CASCADE,
            candidate_version INTEGER,          -- the newest variant's prompt version (the lens looks it up)
            document TEXT NOT NULL,             -- JSON: variants, per-check differences, verdicts
            created_at TEXT NOT NULL
        );
        CREATE INDEX comparisons_by_prompt ON comparisons(prompt_id, id);
        """
    )


@_MIGRATIONS(name="0008_llm_capabilities")
def _llm_capabilities_schema(db: Database) -> None:
    """The structured-output mode each endpoint and model takes, as the LLM layer learnt it (spade_lsp.llm), so
    a new process sends structured requests the way that works straight away."""
    db.executescript(
        """
        CREATE TABLE llm_capabilities (
            api_base TEXT NOT NULL,             -- '' for the provider's own endpoint
            model TEXT NOT NULL,
            structured_mode TEXT NOT NULL CHECK (structured_mode IN ('json_schema', 'json_object', 'prompt')),
            reason TEXT NOT NULL,               -- why: the answer or the rejection that settled it
            updated_at TEXT NOT NULL,
            PRIMARY KEY (api_base, model)
        );
        """
    )


@_MIGRATIONS(name="0009_relabel")
def _relabel_schema(db: Database) -> None:
    """Deltas are labelled offline when recorded; an assistant model relabels them later in place, and
    ``labelled_by`` names the classifier whose labels the row now holds (NULL: the one in ``classifier``)."""
    db.execute("ALTER TABLE deltas ADD COLUMN labelled_by TEXT")


@_MIGRATIONS(name="0010_review")
def _review_schema(db: Database) -> None:
    """Provenance of LLM-written sidecar functions and the user's explicit acceptances, each tied to the exact
    text of one function (sha256, see spade_lsp._review): a function an LLM wrote stays unreviewed until the
    text it has now was accepted; an edit is not acceptance."""
    db.executescript(
        """
        CREATE TABLE generated_code (
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            name TEXT NOT NULL,                 -- the assert_* function in the prompt's sidecar module
            sha TEXT NOT NULL,                  -- sha256 of its text as last written, decorator to end of body
            synthesizer TEXT NOT NULL,          -- 'llm'
            model TEXT,                         -- the assistant model that wrote it
            written_at TEXT NOT NULL,
            PRIMARY KEY (prompt_id, name)
        );
        CREATE TABLE code_reviews (
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            sha TEXT NOT NULL,                  -- the exact text the user accepted
            accepted_at TEXT NOT NULL,
            accepted_by TEXT NOT NULL,          -- 'editor' or 'cli'
            PRIMARY KEY (prompt_id, name, sha)
        );
        """
    )


@_MIGRATIONS(name="0011_chat_prompts")
def _chat_prompts(db: Database) -> None:
    """Prompty files are read as chat prompts now: their role lines, front matter and Jinja2 statements are
    markup, no longer sentences. Their deltas and sentences are dropped, to be computed again from the versions
    (deltas when next asked for, sentences at the next record)."""
    db.execute(
        "DELETE FROM changes WHERE delta_id IN (SELECT d.id FROM deltas d JOIN prompts p ON p.id = d.prompt_id "
        "WHERE p.path LIKE '%.prompty')"
    )
    db.execute("DELETE FROM deltas WHERE prompt_id IN (SELECT id FROM prompts WHERE path LIKE '%.prompty')")
    db.execute(
        "DELETE FROM sentences WHERE version_id IN (SELECT v.id FROM versions v JOIN prompts p ON p.id = v.prompt_id "
        "WHERE p.path LIKE '%.prompty')"
    )


@_MIGRATIONS(name="0012_llm_batches")
def _llm_batches_schema(db: Database) -> None:
    """Provider batches (spade_lsp._batch): one row per batch and the cache keys it answers, written (in the
    transaction that checked no open row holds those keys) before anything is uploaded, so a process that dies
    at any point, or a second process asking for some of the same requests, polls the batch already submitted
    instead of submitting it again."""
    db.executescript(
        """
        CREATE TABLE llm_batches (
            id INTEGER PRIMARY KEY,
            digest TEXT NOT NULL,               -- sha256 of endpoint, model and the sorted cache keys it answers
            model TEXT NOT NULL,
            endpoint TEXT NOT NULL,             -- the client's endpoint ('' for the provider's own)
            requested INTEGER NOT NULL,
            input_file_id TEXT,                 -- NULL until the upload is recorded
            batch_id TEXT,                      -- NULL until the provider accepted it
            status TEXT NOT NULL,               -- 'uploading', 'submitting', 'create_failed', the provider's
                                                -- status, or 'lost' (the provider no longer has it or refused it)
            completed INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            error TEXT,                         -- why it was lost or what of it could not be read
            created_at TEXT NOT NULL,           -- the row, written before the upload
            submitted_at TEXT,                  -- when the provider accepted the batch (or it was found there)
            updated_at TEXT NOT NULL,
            collected_at TEXT                   -- closed: its answers are in llm_cache (same transaction)
        );
        CREATE UNIQUE INDEX llm_batches_open ON llm_batches(digest) WHERE collected_at IS NULL;
        CREATE TABLE llm_batch_keys (
            batch_row INTEGER NOT NULL REFERENCES llm_batches(id) ON DELETE CASCADE,
            key TEXT NOT NULL,                  -- an llm_cache key: the custom_id of its line
            PRIMARY KEY (batch_row, key)
        );
        CREATE INDEX llm_batch_keys_key ON llm_batch_keys(key);
        """
    )


@_MIGRATIONS(name="0013_candidate_verdicts")
def _candidate_verdicts_schema(db: Database) -> None:
    """Synthesized checks as they did on the prompt's labelled examples before they were offered
    (spade_lsp._precheck): one row per check's code, the newest verdict, so the editor's hints can say a check
    is held back, and why, without running anything."""
    db.executescript(
        """
        CREATE TABLE candidate_verdicts (
            prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
            code_sha TEXT NOT NULL,             -- sha256 (16 hex) of the check's expression or source
            name TEXT NOT NULL,
            sentence TEXT NOT NULL,
            verdict TEXT NOT NULL,              -- JSON: Verdict.to_json()
            held_back TEXT,                     -- why it is not offered, or NULL
            checked_at TEXT NOT NULL,
            PRIMARY KEY (prompt_id, code_sha)
        );
        """
    )


@_MIGRATIONS(name="0014_run_owners")
def _run_owners_schema(db: Database) -> None:
    """Which process runs a sampling or judge run (``host:pid:start``, :mod:`spade_lsp.store._owners`), so that
    any entry point, not only a daemon starting, can tell a run whose process is gone from one still running and
    settle it; NULL for runs recorded before (the daemon's start-up settles those)."""
    db.execute("ALTER TABLE sample_runs ADD COLUMN owner TEXT")
    db.execute("ALTER TABLE judge_runs ADD COLUMN owner TEXT")


@_MIGRATIONS(name="0015_author_dates")
def _author_dates(db: Database) -> None:
    """A committed version's author date, which ``git log`` shows (the committer date orders the history, and a
    rebase or an amend makes the two differ); NULL for saves and for commits recorded before."""
    db.execute("ALTER TABLE versions ADD COLUMN authored_at TEXT")


def _is_store_lock_error(error: sqlite3.OperationalError) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text


_FILE_MODE: Final = 0o600
_LOW_SPACE_BYTES: Final = 1 << 20  # an I/O error with less free space than this is a full disk
_SQLITE_IOERR_WRITE: Final = 778  # SQLITE_IOERR | (3 << 8)


def _private(path: Path, mode: int) -> None:
    """Give ``path`` exactly ``mode`` (what the umask left out or an older spade-lsp created: 0755, 0644)."""
    try:
        if os.stat(path).st_mode & 0o777 != mode:
            os.chmod(path, mode)
    except FileNotFoundError:
        pass
    except OSError as error:  # someone else's store: it stays readable as it was; not ours to change
        log.debug("cannot make %s private: %s", path, error)


def _create_private(path: Path) -> None:
    """Create the database file 0600 before SQLite does (SQLite gives -wal and -shm the database's mode), and
    make an existing one (and its -wal and -shm) 0600."""
    # Never open an existing database file: closing any descriptor of it drops every POSIX lock this process
    # holds on it, those of its other SQLite connections included (the daemon opens one per thread), and another
    # process may then checkpoint and delete the WAL under them ("disk I/O error", lost writes). O_EXCL: only a
    # file made here is opened here; an existing one is chmod-ed by path.
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, _FILE_MODE)
    except FileExistsError:
        if not path.is_symlink():  # a symlink: SQLite reports it when it opens it
            _private(path, _FILE_MODE)
    except OSError:
        return  # a symlink or an unreadable file: SQLite reports it when it opens it
    else:
        try:
            os.fchmod(descriptor, _FILE_MODE)
        except OSError as error:
            log.debug("cannot make %s private: %s", path, error)
        finally:
            os.close(descriptor)
    for suffix in ("-wal", "-shm", "-journal"):
        _private(path.with_name(path.name + suffix), _FILE_MODE)


def _disk_full(path: Path, error: sqlite3.Error) -> DiskFullError | None:
    """The one-line error for a write SQLite could not make because the disk is full (SQLITE_FULL, or an I/O
    error while the file system has no room left, or the process's file size limit), else None."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is None:
        return None
    primary = code & 0xFF
    if primary == sqlite3.SQLITE_FULL:
        return DiskFullError(f"the disk is full: nothing was written ({path}: {error})")
    if primary != sqlite3.SQLITE_IOERR:
        return None
    try:
        space = os.statvfs(path.parent)
        free = space.f_bavail * space.f_frsize
    except OSError:
        free = None
    if free is not None and free < _LOW_SPACE_BYTES:
        return DiskFullError(f"the disk is full: nothing was written ({path}: {error}; {free} bytes free)")
    limited = resource is not None and resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY
    if limited and code == _SQLITE_IOERR_WRITE:  # a write refused with EFBIG, not any I/O error
        return DiskFullError(
            f"the disk is full for this process (file size limit reached, see `ulimit -f`): nothing was written "
            f"({path}: {error})"
        )
    return None


class Store:
    """An open store. Use :meth:`open` (creates ``.spade/``) or :meth:`open_readonly` (for readers such as the
    language server, which never write: the daemon is the store's one writer)."""

    def __init__(self, path: Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        try:
            if readonly:
                conn = sqlite3.connect(
                    f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=busy_timeout_s, check_same_thread=False
                )
            else:
                _create_private(path)
                conn = sqlite3.connect(str(path), timeout=busy_timeout_s, check_same_thread=False)
            self.db = Database(conn, execute_plugins=False)
            self.db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            if readonly:
                self._check_schema()
            else:
                self.db.execute("PRAGMA foreign_keys = ON")
                if self.db.journal_mode != "wal":
                    self.db.enable_wal()
                self.db.execute("PRAGMA synchronous = NORMAL")
                self._migrate()
        except sqlite3.OperationalError as error:
            if _is_store_lock_error(error):
                raise StoreLockedError(
                    f"{path} is locked by another process (waited {busy_timeout_s:g} s); "
                    "is a `spade daemon` or another command writing to it?"
                ) from error
            full = _disk_full(path, error)
            if full is not None:
                raise full from error
            raise StoreError(f"cannot open the store {path}: {error}") from error
        except sqlite3.DatabaseError as error:
            raise StoreError(
                f"{path} is not a usable SQLite database ({error}); it was left untouched: "
                f"move it aside (e.g. `mv {path} {path}.bad`) and spade re-creates it"
            ) from error

    @classmethod
    def open(cls, workspace_root: Path, **kwargs: Any) -> Store:
        """Open (creating if needed) the store of a workspace."""
        directory = workspace_root / STORE_DIR
        try:
            confine(workspace_root, directory, "the store's directory")
        except InputError as error:
            raise StoreError(str(error)) from error
        try:
            make_private_dir(directory)  # whatever the umask, and for a directory made by an older version
            gitignore = directory / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# spade-lsp's local state; never committed\n*\n", encoding="utf-8")
        except OSError as error:
            full = disk_full_error(directory, error)
            if full is not None:
                raise full from error
            raise StoreError(f"cannot create {directory}: {error.strerror}") from error
        return cls(directory / STORE_FILE, **kwargs)

    @classmethod
    def open_readonly(cls, workspace_root: Path, **kwargs: Any) -> Store | None:
        """The workspace's store opened read-only, or None while it does not exist yet (nothing is created)."""
        path = workspace_root / STORE_DIR / STORE_FILE
        if not path.is_file():
            return None
        try:
            confine(workspace_root, path, "the store")
        except InputError as error:
            raise StoreError(str(error)) from error
        return cls(path, readonly=True, **kwargs)

    def _check_schema(self) -> None:
        """A reader cannot migrate: it accepts the schema only when every migration it knows is applied."""
        known = {m.name for m in _MIGRATIONS._migrations}
        applied = {m.name for m in _MIGRATIONS.applied(self.db)}
        if applied - known:
            raise StoreError(f"{self.path} was written by a newer spade-lsp; upgrade spade-lsp")
        if known - applied:
            missing = sorted(known - applied)[0]
            raise StoreError(f"{self.path} is not migrated yet (missing {missing}); start the daemon")

    def _migrate(self) -> None:
        known = {m.name for m in _MIGRATIONS._migrations}
        applied = {m.name for m in _MIGRATIONS.applied(self.db)}
        unknown = applied - known
        if unknown:
            raise StoreError(
                f"{self.path} was written by a newer spade-lsp (schema {sorted(unknown)[-1]}); upgrade spade-lsp"
            )
        if applied != known:
            _MIGRATIONS.apply(self.db)

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction (``BEGIN IMMEDIATE``: takes the write lock up front, so it never deadlocks
        upgrading a read). Nested calls join the outer transaction."""
        if self.readonly:
            raise StoreError(f"{self.path} is open read-only; only the daemon writes to the store")
        conn = self.db.conn
        if conn.in_transaction:
            yield self.db
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if _is_store_lock_error(error):
                raise StoreLockedError(
                    f"{self.path} is locked by another writer; is a `spade daemon` busy? try again"
                ) from error
            raise StoreError(f"cannot write to {self.path}: {error}") from error
        try:
            yield self.db
            conn.execute("COMMIT")
        except BaseException as error:
            self._rollback()
            full = _disk_full(self.path, error) if isinstance(error, sqlite3.Error) else None
            if full is not None:
                raise full from error
            raise

    def _rollback(self) -> None:
        """Undo the open transaction, if SQLite has not already (it rolls back by itself on a full disk)."""
        conn = self.db.conn
        if not conn.in_transaction:
            return
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as error:  # the original error is the one to report
            log.warning("rollback of %s failed: %s", self.path, error)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

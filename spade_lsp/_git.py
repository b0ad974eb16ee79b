"""Read a prompt file's committed history from git, independent of any database.

A prompt's earlier versions usually live in git already, so the history recorder can import them instead of
starting from the first save. Everything here is read-only: one ``git log`` walks the history (following
renames) and one persistent ``git cat-file --batch`` process reads the blobs, so a file with a thousand
commits costs two subprocesses rather than a thousand. Nothing writes to the repository: ``git status`` runs
with optional locks off, so even the index refresh is skipped.

GitPython is imported lazily: importing it fails when no ``git`` executable exists, and a file outside any
repository should not need git at all.
"""

from __future__ import annotations

import enum
import os
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_lsp.errors import GitHistoryError

if TYPE_CHECKING:
    from git import Repo

__all__ = ["MAX_BLOB_BYTES", "GitHistory", "GitRevision", "WorkingTreeState", "file_history", "working_tree_state"]

MAX_BLOB_BYTES = 16_000_000
"""The default limit of one revision's blob, when the caller names none (the history passes its
``max_prompt_bytes``): no git blob larger than this is ever read into memory."""


@dataclass(frozen=True, slots=True)
class GitRevision:
    """One committed version of a file: the commit that produced it and the file's bytes there."""

    commit: str
    """The commit's full hex sha."""
    committed_at: datetime
    """Committer date, timezone-aware, with the committer's own UTC offset: the history's order (a rebase
    keeps author dates and reorders them)."""
    authored_at: datetime
    """Author date, as ``git log`` shows it: when the change was written."""
    message: str
    """The full commit message, stripped; undecodable bytes are replaced, never fatal."""
    author: str
    """``Name <email>`` as recorded in the commit (no mailmap applied)."""
    path: str
    """The file's path in that commit, relative to the repository root, ``/``-separated (the old name before
    a rename)."""
    content: bytes
    """The file's bytes at that commit."""


class GitHistory(list[GitRevision]):
    """The revisions :func:`file_history` read, oldest first, and (``skipped``) one line for each revision
    whose blob was over the size limit: it was never read, so a huge file in the history costs nothing."""

    def __init__(self, revisions: list[GitRevision] | None = None, skipped: list[str] | None = None) -> None:
        super().__init__(revisions or [])
        self.skipped: list[str] = list(skipped or [])


class WorkingTreeState(enum.StrEnum):
    """How the file on disk relates to its committed history."""

    NOT_IN_REPO = "not_in_repo"
    """No git repository contains the file (or the repository is bare)."""
    UNTRACKED = "untracked"
    """In a repository but not tracked (also when ignored, or when the path does not exist)."""
    MODIFIED = "modified"
    """Tracked, with uncommitted changes: edited, staged, newly added, or deleted from the working tree."""
    CLEAN = "clean"
    """Tracked and identical to the last commit."""


# Environment for every git call: pathspecs are literal (a prompt named `*.prompt` is a file, not a glob),
# optional locks are off (no index refresh write), and git never prompts.
# A partial clone must not fetch missing blobs from its remote behind the user's back (git >= 2.44).
_GIT_ENV = {
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_LAZY_FETCH": "1",
}
_NULL_SHA = "0" * 40


def file_history(path: Path, *, max_count: int | None = None, max_bytes: int = MAX_BLOB_BYTES) -> GitHistory:
    """Return the committed versions of *path*, oldest first.

    Follows renames, and keeps only commits that changed the file's bytes: merges that bring in an
    already-seen version, mode-only changes, pure renames and deletions produce no revision. With
    *max_count*, only the newest *max_count* revisions are returned (and only their blobs are read).

    A revision whose blob is larger than *max_bytes* is not read: it is left out, and ``skipped`` on the
    result says which and why (git reports the size first, so only what fits is ever read).

    A file outside any repository, an untracked file and a repository with no commits all give ``[]``;
    a shallow clone gives the history down to its boundary. Raises :class:`GitHistoryError` when git is
    missing or fails.
    """
    if max_count is not None and max_count <= 0:
        return GitHistory()
    located = _open_repo(path)
    if located is None:
        return GitHistory()
    repo, relpath = located
    with repo:
        try:
            if not repo.head.is_valid():  # An unborn branch: no commits yet.
                return GitHistory()
            entries = _log_entries(repo, relpath)
            revisions = _dedupe(entries)
            if max_count is not None:
                revisions = revisions[-max_count:]
            history = GitHistory()
            for entry in revisions:
                revision = _with_content(repo, entry, max_bytes)
                if isinstance(revision, str):
                    history.skipped.append(revision)
                else:
                    history.append(revision)
            return history
        except Exception as exc:
            mapped = _as_history_error(exc, path)
            if mapped is exc:
                raise
            raise mapped from exc


def working_tree_state(path: Path) -> WorkingTreeState:
    """Say whether *path* is outside git, untracked, modified, or clean against the last commit.

    Lets callers tell the user why the history may not match the file on disk (uncommitted edits) or why
    there is none (untracked). Raises :class:`GitHistoryError` when git is missing or fails.
    """
    located = _open_repo(path)
    if located is None:
        return WorkingTreeState.NOT_IN_REPO
    repo, relpath = located
    with repo:
        try:
            out: bytes = repo.git.status(
                "--porcelain=v1",
                "-z",
                "--ignored=matching",
                "--untracked-files=all",
                "--ignore-submodules=all",
                "--",
                relpath,
                stdout_as_string=False,
            )
        except Exception as exc:
            mapped = _as_history_error(exc, path)
            if mapped is exc:
                raise
            raise mapped from exc
    # Each record is "XY path\0" (renames add "\0origin"); one pathspec means at most one record of ours.
    code = out[:2]
    if code in (b"??", b"!!"):
        return WorkingTreeState.UNTRACKED
    if code.strip():
        return WorkingTreeState.MODIFIED
    # No record: tracked and unchanged, or a path git has never heard of.
    return WorkingTreeState.CLEAN if os.path.lexists(path) else WorkingTreeState.UNTRACKED


# --- locating the repository -------------------------------------------------------------------------------


def _open_repo(path: Path) -> tuple[Repo, str] | None:
    """Open the repository containing *path* and return it with the path relative to its root.

    Returns ``None`` when no repository contains the path. A quick scan for a ``.git`` entry comes first so
    that files outside any repository never import GitPython (whose import fails when git is missing).
    """
    path = Path(os.path.abspath(path))
    # Resolve directories but not the file itself: a symlinked prompt is tracked under its own name. The
    # path may not exist (a deleted prompt), so start from its nearest existing ancestor.
    start = path.parent
    while not start.exists() and start != start.parent:
        start = start.parent
    target = start.resolve() / path.relative_to(start)
    start = start.resolve()
    if "GIT_DIR" not in os.environ and not any((d / ".git").exists() for d in (start, *start.parents)):
        return None

    git = _import_git()
    try:
        repo = git.Repo(start, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    if repo.working_tree_dir is None:  # A bare repository has no files to track.
        repo.close()
        return None
    root = Path(repo.working_tree_dir).resolve()
    try:
        relpath = target.relative_to(root).as_posix()
    except ValueError:  # Inside the git directory, or a worktree layout we do not understand.
        repo.close()
        return None
    if relpath == "." or relpath.split("/", 1)[0] == ".git":
        repo.close()
        return None
    repo.git.update_environment(**_GIT_ENV)  # Applies to the persistent cat-file process too.
    return repo, relpath


def _import_git() -> Any:
    """Import GitPython, turning its 'no git executable' ImportError into a one-line GitHistoryError."""
    try:
        import git
    except ImportError as exc:
        raise GitHistoryError(
            "git is not installed or not on PATH (set GIT_PYTHON_GIT_EXECUTABLE); cannot read git history"
        ) from exc
    return git


def _as_history_error(exc: Exception, path: Path) -> Exception:
    """Map GitPython failures to a one-line GitHistoryError; leave programming errors alone."""
    import git

    if isinstance(exc, GitHistoryError):
        return exc
    if isinstance(exc, git.GitCommandNotFound):
        return GitHistoryError(f"git is not installed or not on PATH; cannot read the history of {path}")
    if isinstance(exc, git.GitCommandError):
        stderr = exc.stderr if isinstance(exc.stderr, str) else str(exc.stderr)
        lines = [ln.strip() for ln in stderr.strip().strip("'").splitlines() if ln.strip()]
        detail = lines[0] if lines else f"exit status {exc.status}"
        detail = detail.removeprefix("stderr: ").strip("'\" ")
        return GitHistoryError(f"git failed reading the history of {path}: {detail}")
    if isinstance(exc, git.GitError | OSError | ValueError):
        first = str(exc).strip().splitlines()
        return GitHistoryError(f"cannot read the git history of {path}: {first[0] if first else exc!r}")
    return exc


# --- reading the log ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _LogEntry:
    """A commit that touched the file, before its blob is read."""

    commit: str
    committed_at: datetime
    authored_at: datetime
    message: str
    author: str
    path: str
    blob: str


def _log_entries(repo: Repo, relpath: str) -> list[_LogEntry]:
    """Run one ``git log --follow --raw`` and parse it into entries, oldest first.

    ``--raw`` (rather than ``--name-status``) also gives each commit's blob sha, so no per-commit lookup is
    needed. Records are framed by a random token so no commit message can forge a boundary.
    """
    token = secrets.token_hex(8)
    start, sep, end = (f"\x1e{kind}{token}\x1f" for kind in "SFE")
    fmt = f"{start}%H{sep}%cI{sep}%aI{sep}%an <%ae>{sep}%B{end}"
    out: bytes = repo.git.log(
        "--follow",
        "--raw",
        "-z",
        "--no-abbrev",
        "--root",  # The first commit's addition counts, whatever log.showRoot says.
        "--topo-order",
        _merge_diff_option(repo),
        "--no-color",
        "--no-show-signature",
        "--no-notes",
        "--no-ext-diff",
        "--no-textconv",
        f"--format={fmt}",
        "HEAD",
        "--",
        relpath,
        stdout_as_string=False,
        strip_newline_in_stdout=False,
    )
    entries: list[_LogEntry] = []
    for record in out.split(start.encode())[1:]:
        header, _, raw = record.partition(end.encode())
        fields = header.split(sep.encode())
        if len(fields) != 5:
            continue
        sha, committed, authored, author, message = fields
        change = _last_change(raw)
        if change is None:
            continue
        file_path, blob = change
        entries.append(
            _LogEntry(
                commit=sha.decode("ascii").strip(),
                committed_at=datetime.fromisoformat(committed.decode("ascii").strip()),
                authored_at=datetime.fromisoformat(authored.decode("ascii").strip()),
                message=message.decode("utf-8", errors="replace").strip(),
                author=author.decode("utf-8", errors="replace").strip(),
                path=file_path,
                blob=blob,
            )
        )
    entries.reverse()
    return entries


_MERGE_DIFF_OPTION: dict[str, str] = {}


def _merge_diff_option(repo: Repo) -> str:
    """Choose how merges show their diff; cached per git executable, since asking costs a subprocess.

    ``--diff-merges=first-parent`` (git >= 2.31) shows a merge only when it changed the file relative to the
    mainline. Older git gets ``-m``, which shows one diff per parent; the duplicates share a blob and are
    deduplicated, though a merge that kept the mainline's version may then repeat it as a revision.
    """
    executable = str(repo.git.GIT_PYTHON_GIT_EXECUTABLE)
    option = _MERGE_DIFF_OPTION.get(executable)
    if option is None:
        version: tuple[int, ...] = repo.git.version_info
        option = "--diff-merges=first-parent" if version >= (2, 31) else "-m"
        _MERGE_DIFF_OPTION[executable] = option
    return option


def _last_change(raw: bytes) -> tuple[str, str] | None:
    """Parse ``--raw -z`` output for one commit; return (path, blob sha) of the file's new version.

    Returns ``None`` when the commit leaves no regular file behind (a deletion, a symlink, a submodule).
    """
    tokens = raw.split(b"\0")
    result: tuple[str, str] | None = None
    i = 0
    while i < len(tokens):
        token = tokens[i].strip(b"\n")
        i += 1
        if not token.startswith(b":"):
            continue
        parts = token[1:].split()
        if len(parts) < 5:
            continue
        new_mode, new_blob, status = parts[1], parts[3].decode("ascii"), parts[4]
        npaths = 2 if status[:1] in (b"R", b"C") else 1
        paths = tokens[i : i + npaths]
        i += npaths
        if not paths:
            continue
        if status[:1] == b"D" or new_blob == _NULL_SHA or not new_mode.startswith(b"100"):
            result = None
            continue
        result = (os.fsdecode(paths[-1]), new_blob)
    return result


def _dedupe(entries: list[_LogEntry]) -> list[_LogEntry]:
    """Drop entries whose blob equals the previous kept one: content that did not change is no new version."""
    kept: list[_LogEntry] = []
    for entry in entries:
        if kept and kept[-1].blob == entry.blob:
            continue
        kept.append(entry)
    return kept


def _with_content(repo: Repo, entry: _LogEntry, max_bytes: int) -> GitRevision | str:
    """Read the entry's blob through GitPython's persistent ``cat-file --batch`` process, after asking its
    size (``cat-file --batch-check``); a blob over ``max_bytes`` is not read: the reason is returned."""
    from spade_lsp._files import format_size

    try:
        _, _, size = repo.git.get_object_header(entry.blob)
        if int(size) > max_bytes:
            return (
                f"skipped commit {entry.commit[:10]}: {entry.path} is {format_size(int(size))} there, larger than "
                f"the {format_size(max_bytes, limit=True)} limit for a prompt (max_prompt_bytes)"
            )
        _, _, _, data = repo.git.get_object_data(entry.blob)
    except ValueError as exc:  # cat-file answered "<sha> missing".
        raise GitHistoryError(
            f"blob {entry.blob} of {entry.path} at commit {entry.commit[:12]} is missing from the repository"
            " (corrupt or partial clone)"
        ) from exc
    return GitRevision(
        commit=entry.commit,
        committed_at=entry.committed_at,
        authored_at=entry.authored_at,
        message=entry.message,
        author=entry.author,
        path=entry.path,
        content=bytes(data),
    )

"""Tests for spade_lsp._git against real throwaway repositories (never the project's own)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from spade_lsp import _git
from spade_lsp._git import GitRevision, WorkingTreeState, file_history, working_tree_state
from spade_lsp.errors import GitHistoryError

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

# Isolates every git call, ours and the library's, from the machine's global and system config.
_ISOLATED_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Ada Author",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Cy Committer",
    "GIT_COMMITTER_EMAIL": "cy@example.com",
    "GIT_TERMINAL_PROMPT": "0",
}


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in _ISOLATED_ENV.items():
        monkeypatch.setenv(key, value)
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(key, raising=False)


class Repo:
    """A throwaway repository driven through the git CLI, with a deterministic clock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._clock = datetime(2024, 3, 1, 12, 0, 0, tzinfo=timezone(timedelta(hours=2)))
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> str:
        full_env = {**os.environ, **_ISOLATED_ENV, **(env or {})}
        done = subprocess.run(
            ["git", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", *args],
            cwd=self.root,
            env=full_env,
            input=stdin,
            check=True,
            capture_output=True,
        )
        return done.stdout.decode("utf-8", errors="replace")

    def write(self, relpath: str, content: str | bytes) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        path.write_bytes(content)
        return path

    def tick(self) -> datetime:
        self._clock += timedelta(minutes=7)
        return self._clock

    def commit(self, message: str | bytes, *, when: datetime | None = None, extra: tuple[str, ...] = ()) -> str:
        """Commit everything staged plus tracked edits; return the new sha."""
        when = when or self.tick()
        stamp = when.isoformat()
        msg_file = self.root.parent / f"{self.root.name}-msg.txt"
        msg_file.write_bytes(message.encode() if isinstance(message, str) else message)
        self.git(
            *extra,
            "commit",
            "-q",
            "-a",
            "--allow-empty-message",
            "--cleanup=verbatim",
            "-F",
            str(msg_file),
            env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
        )
        return self.git("rev-parse", "HEAD").strip()

    def add_commit(self, relpath: str, content: str | bytes, message: str) -> str:
        self.write(relpath, content)
        self.git("add", "--", relpath)
        return self.commit(message)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


def contents(history: list[GitRevision]) -> list[bytes]:
    return [rev.content for rev in history]


# --- the basics ------------------------------------------------------------------------------------------


def test_history_oldest_first_with_contents(repo: Repo) -> None:
    shas = [repo.add_commit("a.prompt", f"version {i}\n", f"v{i}") for i in range(3)]
    history = file_history(repo.root / "a.prompt")
    assert [rev.commit for rev in history] == shas
    assert contents(history) == [b"version 0\n", b"version 1\n", b"version 2\n"]
    assert all(rev.path == "a.prompt" for rev in history)
    assert working_tree_state(repo.root / "a.prompt") is WorkingTreeState.CLEAN


def test_messages_times_and_authors_round_trip(repo: Repo) -> None:
    when_a = datetime(2023, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=-5, minutes=-30)))
    when_b = datetime(2023, 6, 7, 8, 9, 10, tzinfo=UTC)
    message_a = "Tighten the format rule\n\nAnswer in JSON.\nNever mention the user's race. ü ✓"
    repo.write("p.prompt", "one\n")
    repo.git("add", "p.prompt")
    sha_a = repo.commit(f"  {message_a}\n\n", when=when_a)
    repo.write("p.prompt", "two\n")
    sha_b = repo.commit("second", when=when_b)

    first, second = file_history(repo.root / "p.prompt")
    assert (first.commit, second.commit) == (sha_a, sha_b)
    assert first.message == message_a
    assert second.message == "second"
    assert first.committed_at == when_a
    assert first.committed_at.utcoffset() == when_a.utcoffset()  # The committer's own offset is kept.
    assert second.committed_at == when_b
    assert first.author == "Ada Author <ada@example.com>"
    assert len(first.commit) == 40 and int(first.commit, 16) >= 0
    assert first.authored_at == when_a and first.authored_at.utcoffset() == when_a.utcoffset()


def test_the_author_date_is_kept_apart_from_the_committer_date(repo: Repo) -> None:
    """A rebase or an amend moves the committer date; ``git log`` shows the author date, which is kept."""
    written = datetime(2021, 3, 4, 9, 0, tzinfo=timezone(timedelta(hours=2)))
    committed = datetime(2024, 8, 1, 12, 0, tzinfo=UTC)
    repo.write("p.prompt", "one\n")
    repo.git("add", "p.prompt")
    repo.git(
        "commit", "-q", "-m", "one",
        env={"GIT_AUTHOR_DATE": written.isoformat(), "GIT_COMMITTER_DATE": committed.isoformat()},
    )  # fmt: skip
    (revision,) = file_history(repo.root / "p.prompt")
    assert (revision.authored_at, revision.committed_at) == (written, committed)


def test_max_count_keeps_newest(repo: Repo) -> None:
    for i in range(5):
        repo.add_commit("a.prompt", f"{i}\n", f"c{i}")
    assert contents(file_history(repo.root / "a.prompt", max_count=2)) == [b"3\n", b"4\n"]
    assert file_history(repo.root / "a.prompt", max_count=0) == []
    assert len(file_history(repo.root / "a.prompt", max_count=50)) == 5


def test_relative_path_and_subdirectory(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.add_commit("deep/er/x.prompt", "x\n", "add")
    repo.add_commit("deep/er/x.prompt", "y\n", "edit")
    monkeypatch.chdir(repo.root / "deep")
    history = file_history(Path("er/x.prompt"))
    assert [rev.path for rev in history] == ["deep/er/x.prompt"] * 2
    assert contents(history) == [b"x\n", b"y\n"]


def test_other_files_do_not_appear(repo: Repo) -> None:
    repo.add_commit("a.prompt", "a1\n", "a1")
    repo.add_commit("b.prompt", "b1\n", "b1")
    repo.add_commit("a.prompt", "a2\n", "a2")
    assert [rev.message for rev in file_history(repo.root / "a.prompt")] == ["a1", "a2"]


def test_glob_characters_are_literal(repo: Repo) -> None:
    repo.add_commit("a.prompt", "plain\n", "plain")
    repo.add_commit("[a].prompt", "bracketed\n", "bracketed")
    repo.add_commit("*.prompt", "star\n", "star")
    assert contents(file_history(repo.root / "[a].prompt")) == [b"bracketed\n"]
    assert contents(file_history(repo.root / "*.prompt")) == [b"star\n"]


# --- renames -----------------------------------------------------------------------------------------------


def test_follows_renames_and_reports_each_path(repo: Repo) -> None:
    body = "".join(f"Instruction number {i}: keep it short.\n" for i in range(12))
    repo.add_commit("a.prompt", body, "create")
    repo.add_commit("a.prompt", body + "Answer in JSON.\n", "json")
    (repo.root / "prompts").mkdir()
    repo.git("mv", "a.prompt", "prompts/b.prompt")
    repo.commit("pure move")  # Same bytes: no new revision.
    repo.git("mv", "prompts/b.prompt", "prompts/c.prompt")
    repo.write("prompts/c.prompt", body + "Answer in JSON.\nBe concise.\n")
    repo.commit("move and edit")
    repo.add_commit("prompts/c.prompt", body + "Answer in YAML.\nBe concise.\n", "yaml")

    history = file_history(repo.root / "prompts" / "c.prompt")
    assert [rev.message for rev in history] == ["create", "json", "move and edit", "yaml"]
    assert [rev.path for rev in history] == ["a.prompt", "a.prompt", "prompts/c.prompt", "prompts/c.prompt"]
    assert history[1].content == (body + "Answer in JSON.\n").encode()


# --- deduplication ---------------------------------------------------------------------------------------


def test_mode_only_change_is_skipped(repo: Repo) -> None:
    repo.add_commit("a.prompt", "x\n", "create")
    (repo.root / "a.prompt").chmod(0o755)
    repo.git("update-index", "--chmod=+x", "a.prompt")
    repo.commit("chmod")
    repo.add_commit("a.prompt", "y\n", "edit")
    assert [rev.message for rev in file_history(repo.root / "a.prompt")] == ["create", "edit"]


@pytest.fixture(params=["--diff-merges=first-parent", "-m"])
def merge_option(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run merge tests with both the modern option and the fallback used for git older than 2.31."""
    option: str = request.param
    monkeypatch.setattr(_git, "_merge_diff_option", lambda repo: option)
    return option


@pytest.mark.usefixtures("merge_option")
def test_merge_commits_do_not_duplicate_versions(repo: Repo) -> None:
    repo.add_commit("a.prompt", "v1\n", "v1")
    repo.git("checkout", "-q", "-b", "side")
    repo.add_commit("a.prompt", "v2 from side\n", "side edit")
    repo.git("checkout", "-q", "main")
    repo.add_commit("other.txt", "unrelated\n", "unrelated")
    repo.git("merge", "-q", "--no-ff", "--no-edit", "side", env={"GIT_COMMITTER_DATE": repo.tick().isoformat()})
    history = file_history(repo.root / "a.prompt")
    assert [rev.message for rev in history] == ["v1", "side edit"]
    assert working_tree_state(repo.root / "a.prompt") is WorkingTreeState.CLEAN


@pytest.mark.usefixtures("merge_option")
def test_merge_that_resolves_a_conflict_is_a_version(repo: Repo) -> None:
    repo.add_commit("a.prompt", "base\n", "base")
    repo.git("checkout", "-q", "-b", "side")
    repo.add_commit("a.prompt", "side\n", "side")
    repo.git("checkout", "-q", "main")
    repo.add_commit("a.prompt", "main\n", "main")
    with pytest.raises(subprocess.CalledProcessError):
        repo.git("merge", "-q", "side")
    repo.write("a.prompt", "resolved\n")
    repo.git("add", "a.prompt")
    repo.commit("merge side, resolved")
    history = file_history(repo.root / "a.prompt")
    assert contents(history)[0] == b"base\n"
    assert contents(history)[-1] == b"resolved\n"
    assert set(contents(history)) == {b"base\n", b"side\n", b"main\n", b"resolved\n"}


# --- working tree states -----------------------------------------------------------------------------------


def test_uncommitted_changes_history_is_committed_only(repo: Repo) -> None:
    repo.add_commit("a.prompt", "committed\n", "c")
    path = repo.write("a.prompt", "edited but not committed\n")
    assert contents(file_history(path)) == [b"committed\n"]
    assert working_tree_state(path) is WorkingTreeState.MODIFIED
    repo.git("add", "a.prompt")  # Staged but not committed is still modified.
    assert contents(file_history(path)) == [b"committed\n"]
    assert working_tree_state(path) is WorkingTreeState.MODIFIED


def test_deleted_from_working_tree_is_modified(repo: Repo) -> None:
    path = repo.write("a.prompt", "x\n")
    repo.git("add", "a.prompt")
    repo.commit("c")
    path.unlink()
    assert working_tree_state(path) is WorkingTreeState.MODIFIED
    assert contents(file_history(path)) == [b"x\n"]


def test_untracked_and_ignored_files(repo: Repo) -> None:
    repo.add_commit(".gitignore", "*.ignored\n", "ignore")
    untracked = repo.write("new/dir/fresh.prompt", "hello\n")
    ignored = repo.write("x.ignored", "hello\n")
    for path in (untracked, ignored):
        assert file_history(path) == []
        assert working_tree_state(path) is WorkingTreeState.UNTRACKED
    missing = repo.root / "never-existed.prompt"
    assert file_history(missing) == []
    assert working_tree_state(missing) is WorkingTreeState.UNTRACKED


def test_outside_any_repository(tmp_path: Path) -> None:
    if any((d / ".git").exists() for d in (tmp_path, *tmp_path.parents)):
        pytest.skip("the temporary directory is itself inside a git repository")
    path = tmp_path / "loose.prompt"
    path.write_text("no git here\n")
    assert file_history(path) == []
    assert working_tree_state(path) is WorkingTreeState.NOT_IN_REPO
    assert working_tree_state(tmp_path / "missing" / "dir" / "x.prompt") is WorkingTreeState.NOT_IN_REPO


def test_repository_without_commits(repo: Repo) -> None:
    path = repo.write("a.prompt", "first draft\n")
    assert file_history(path) == []
    assert working_tree_state(path) is WorkingTreeState.UNTRACKED
    repo.git("add", "a.prompt")
    assert file_history(path) == []
    assert working_tree_state(path) is WorkingTreeState.MODIFIED


def test_path_inside_git_dir_is_not_a_prompt(repo: Repo) -> None:
    repo.add_commit("a.prompt", "x\n", "c")
    assert file_history(repo.root / ".git" / "HEAD") == []
    assert working_tree_state(repo.root / ".git" / "HEAD") is WorkingTreeState.NOT_IN_REPO


def test_bare_repository_is_not_a_working_tree(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    assert working_tree_state(tmp_path / "bare.git" / "x.prompt") is WorkingTreeState.NOT_IN_REPO


# --- awkward histories --------------------------------------------------------------------------------------


def test_deleted_then_restored(repo: Repo) -> None:
    repo.add_commit("a.prompt", "one\n", "one")
    repo.add_commit("a.prompt", "two\n", "two")
    repo.git("rm", "-q", "a.prompt")
    repo.commit("delete")
    repo.add_commit("other.txt", "meanwhile\n", "meanwhile")
    repo.add_commit("a.prompt", "three\n", "restore with an edit")
    history = file_history(repo.root / "a.prompt")
    assert [rev.message for rev in history] == ["one", "two", "restore with an edit"]
    assert contents(history) == [b"one\n", b"two\n", b"three\n"]


def test_restored_with_same_content_is_not_a_new_version(repo: Repo) -> None:
    repo.add_commit("a.prompt", "one\n", "one")
    repo.git("rm", "-q", "a.prompt")
    repo.commit("delete")
    repo.add_commit("a.prompt", "one\n", "restore")
    assert [rev.message for rev in file_history(repo.root / "a.prompt")] == ["one"]


def test_shallow_clone_stops_at_boundary(repo: Repo, tmp_path: Path) -> None:
    for i in range(6):
        repo.add_commit("a.prompt", f"v{i}\n", f"v{i}")
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "3", f"file://{repo.root}", str(clone)],
        check=True,
        env={**os.environ, **_ISOLATED_ENV},
    )
    assert (clone / ".git" / "shallow").exists()
    history = file_history(clone / "a.prompt")
    assert contents(history) == [b"v3\n", b"v4\n", b"v5\n"]
    assert working_tree_state(clone / "a.prompt") is WorkingTreeState.CLEAN


def test_non_utf8_commit_messages_do_not_crash(repo: Repo) -> None:
    repo.add_commit("a.prompt", "x\n", "first")
    # `git commit` repairs invalid UTF-8, so write a raw commit object, as other tools may.
    parent = repo.git("rev-parse", "HEAD").strip()
    repo.write("a.prompt", "y\n")
    repo.git("add", "a.prompt")
    tree = repo.git("write-tree").strip()
    raw = (
        f"tree {tree}\nparent {parent}\n"
        "author N\xe4me <n@example.com> 1700000000 +0100\n"
        "committer N <n@example.com> 1700000000 +0100\n\n"
        "caf\xe9 \xff\xfe broken\n"
    ).encode("latin-1")
    sha = repo.git("hash-object", "-t", "commit", "-w", "--literally", "--stdin", stdin=raw).strip()
    repo.git("update-ref", "HEAD", sha)
    # A commit that declares its encoding is re-encoded to UTF-8 by git itself.
    repo.write("a.prompt", "z\n")
    repo.commit("naïve café".encode("latin-1"), extra=("-c", "i18n.commitEncoding=ISO-8859-1"))

    first, broken, declared = file_history(repo.root / "a.prompt")
    assert first.message == "first"
    assert broken.commit == sha
    assert broken.message == "caf\ufffd \ufffd\ufffd broken"
    assert broken.author == "N\ufffdme <n@example.com>"
    assert broken.content == b"y\n"
    assert declared.message == "naïve café"


def test_non_utf8_file_name(repo: Repo) -> None:
    if sys.platform == "darwin":
        pytest.skip("APFS rejects non-UTF-8 file names")
    name = os.fsdecode(b"caf\xe9.prompt")
    repo.add_commit(name, "latin-1 name\n", "odd name")
    history = file_history(repo.root / name)
    assert contents(history) == [b"latin-1 name\n"]
    assert history[0].path == name


def test_binary_and_large_contents_round_trip(repo: Repo) -> None:
    blob = bytes(range(256)) * 4000 + b"\n\0tail"
    repo.add_commit("a.prompt", blob, "binary")
    repo.add_commit("a.prompt", b"", "emptied")
    assert contents(file_history(repo.root / "a.prompt")) == [blob, b""]


# --- read-only and failure modes ----------------------------------------------------------------------------


def _snapshot(git_dir: Path) -> dict[str, tuple[str, int]]:
    """Hash and mtime of every file in the git directory."""
    result: dict[str, tuple[str, int]] = {}
    for path in sorted(git_dir.rglob("*")):
        if path.is_file():
            result[str(path.relative_to(git_dir))] = (
                hashlib.sha256(path.read_bytes()).hexdigest(),
                path.stat().st_mtime_ns,
            )
    return result


def test_never_writes_to_the_repository(repo: Repo) -> None:
    repo.add_commit("a.prompt", "one\n", "one")
    repo.add_commit("a.prompt", "two\n", "two")
    path = repo.root / "a.prompt"
    # Touch the file so its stat data no longer matches the index: `git status` would like to refresh it.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    before = _snapshot(repo.root / ".git")
    assert len(file_history(path)) == 2
    assert working_tree_state(path) is WorkingTreeState.CLEAN
    repo.write("a.prompt", "three\n")
    assert working_tree_state(path) is WorkingTreeState.MODIFIED
    assert _snapshot(repo.root / ".git") == before


def test_git_missing_raises_history_error_in_process(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    import git

    repo.add_commit("a.prompt", "x\n", "c")
    monkeypatch.setattr(git.Git, "GIT_PYTHON_GIT_EXECUTABLE", "/nonexistent/bin/git")
    for call in (file_history, working_tree_state):
        with pytest.raises(GitHistoryError) as info:
            call(repo.root / "a.prompt")
        assert "git is not installed" in str(info.value)
        assert "\n" not in str(info.value)


def test_git_missing_raises_history_error_at_import(repo: Repo, tmp_path: Path) -> None:
    """With no git on PATH, GitPython's own import fails; that must surface as GitHistoryError too."""
    repo.add_commit("a.prompt", "x\n", "c")
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from spade_lsp._git import file_history, working_tree_state
        from spade_lsp.errors import GitHistoryError
        for call in (file_history, working_tree_state):
            try:
                call(Path({str(repo.root / "a.prompt")!r}))
            except GitHistoryError as exc:
                assert "\\n" not in str(exc), str(exc)
                print("OK", exc)
            else:
                raise SystemExit("no error raised")
        # Outside a repository no git is needed at all.
        assert file_history(Path({str(tmp_path / "loose.prompt")!r})) == []
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_PYTHON")}
    env["PATH"] = str(empty_bin)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("OK git is not installed") == 2


def test_git_failure_is_a_history_error(repo: Repo) -> None:
    repo.add_commit("a.prompt", "x\n", "c")
    blob = repo.git("rev-parse", "HEAD:a.prompt").strip()
    (repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # A corrupt (or partial) clone.
    with pytest.raises(GitHistoryError) as info:
        file_history(repo.root / "a.prompt")
    assert "\n" not in str(info.value)


def test_history_of_a_file_whose_directory_was_deleted(repo: Repo) -> None:
    repo.add_commit("gone/deeper/a.prompt", "kept in history\n", "add")
    repo.git("rm", "-q", "-r", "gone")
    repo.commit("remove the directory")
    path = repo.root / "gone" / "deeper" / "a.prompt"
    assert not path.parent.exists()
    history = file_history(path)
    assert contents(history) == [b"kept in history\n"]
    assert history[0].path == "gone/deeper/a.prompt"


def test_symlinked_directory_is_resolved(repo: Repo, tmp_path: Path) -> None:
    repo.add_commit("prompts/a.prompt", "through a link\n", "add")
    link = tmp_path / "link-to-prompts"
    link.symlink_to(repo.root / "prompts", target_is_directory=True)
    history = file_history(link / "a.prompt")
    assert [rev.path for rev in history] == ["prompts/a.prompt"]
    assert working_tree_state(link / "a.prompt") is WorkingTreeState.CLEAN

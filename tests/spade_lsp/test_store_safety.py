"""The store on a full disk, and its permissions.

A full disk is provoked three ways: SQLite's ``max_page_count`` (SQLITE_FULL, in-process), the process's file
size limit (``RLIMIT_FSIZE``: the write fails with EFBIG, which SQLite reports as "disk I/O error"), and, where
a mount namespace can be made, a real 1 MB tmpfs. Each time the message says the disk is full and that
nothing was written, and the data written before is intact."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spade_lsp import atomic_write_text
from spade_lsp.errors import DiskFullError
from spade_lsp.store import Store
from spade_lsp.workspace import Workspace

PROMPT = "Keep it under 10 words.\n"


def _versions(root: Path) -> list[str]:
    with Workspace(root) as workspace:
        return [workspace.history.content(v.content_hash) for v in workspace.history.versions(root / "p.prompt")]


def test_sqlite_full_says_the_disk_is_full_and_keeps_the_earlier_data(workspace_dir: Path) -> None:
    prompt = workspace_dir / "p.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    with Workspace(workspace_dir) as workspace:
        workspace.history.record(prompt, PROMPT)
        pages = workspace.store.db.execute("PRAGMA page_count").fetchone()[0]
        workspace.store.db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(DiskFullError) as full:
            workspace.history.record(prompt, PROMPT + "Never say cheap. " * 20_000)
        message = str(full.value)
        assert message.startswith("the disk is full: nothing was written (") and str(workspace.store.path) in message
        assert "\n" not in message and isinstance(full.value, OSError)
        assert not workspace.store.db.conn.in_transaction
    assert _versions(workspace_dir) == [PROMPT]


def test_the_cli_reports_a_full_disk_in_one_line(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from spade_lsp.cli import main

    prompt = workspace_dir / "p.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    assert main(["history", str(prompt)]) == 0
    capsys.readouterr()
    prompt.write_text(PROMPT + "Never say cheap. " * 20_000, encoding="utf-8")
    opened = Store.__init__

    def small(self: Store, *args: object, **kwargs: object) -> None:
        opened(self, *args, **kwargs)  # type: ignore[arg-type]
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        self.db.execute(f"PRAGMA max_page_count = {pages}")

    monkeypatch.setattr(Store, "__init__", small)
    assert main(["history", str(prompt)]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("spade: error: the disk is full: nothing was written (") and err.count("\n") == 1
    monkeypatch.undo()
    assert _versions(workspace_dir) == [PROMPT]


_LIMITED_WRITE = textwrap.dedent(
    """
    import resource, signal, sys
    from pathlib import Path
    from spade_lsp.errors import DiskFullError
    from spade_lsp.workspace import Workspace
    from spade_lsp._files import atomic_write_text

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing us
    root = Path(sys.argv[1])
    prompt = root / "p.prompt"
    with Workspace(root) as workspace:
        workspace.history.record(prompt, "Keep it under 10 words.\\n")
        limit = sum(f.stat().st_size for f in (root / ".spade").iterdir()) + 16_384
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        for attempt in ("store", "file"):
            try:
                if attempt == "store":
                    workspace.history.record(prompt, "Never say cheap. " * 200_000)
                else:
                    atomic_write_text(root / "p.examples.jsonl", "x" * 2_000_000)
            except DiskFullError as error:
                print(attempt, error)
    """
)


def test_a_file_size_limit_is_reported_as_a_full_disk(workspace_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED_WRITE, str(workspace_dir)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout + done.stderr
    assert lines[0].startswith("store the disk is full for this process (file size limit reached")
    assert "nothing was written" in lines[0] and "disk I/O error" in lines[0]
    assert lines[1].startswith("file the disk is full for this process (file size limit reached")
    assert not (workspace_dir / "p.examples.jsonl").exists()
    assert not [p for p in workspace_dir.iterdir() if p.name.startswith(".p.examples.jsonl.")]  # no temporary left
    assert _versions(workspace_dir) == [PROMPT]


_FULL_TMPFS = textwrap.dedent(
    """
    set -e
    mount -t tmpfs -o size=1m tmpfs "$1"
    cd "$1"
    "$2" -c '
    import os
    from pathlib import Path
    from spade_lsp.errors import DiskFullError
    from spade_lsp.workspace import Workspace
    from spade_lsp._files import atomic_write_text
    root = Path.cwd()
    with Workspace(root) as workspace:
        workspace.history.record(root / "p.prompt", "Keep it under 10 words.\\n")
        try:
            workspace.history.record(root / "p.prompt", os.urandom(1_500_000).hex())
        except DiskFullError as error:
            print("store", error)
        try:
            atomic_write_text(root / "big.txt", "x" * 3_000_000)
        except DiskFullError as error:
            print("file", error)
        versions = workspace.history.versions(root / "p.prompt")
        print("versions", len(versions), repr(workspace.history.content(versions[0].content_hash)))
    print("left", sorted(p.name for p in root.iterdir()))
    '
    """
)


def test_a_really_full_disk(tmp_path: Path) -> None:
    """A 1 MB tmpfs in a private mount namespace (root, or unprivileged user namespaces); skipped elsewhere."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        pytest.skip("needs unshare (Linux)")
    mountpoint = tmp_path / "small"
    mountpoint.mkdir()
    flags = ["-m"] if os.geteuid() == 0 else ["-r", "-m"]
    done = subprocess.run(
        [unshare, *flags, "sh", "-c", _FULL_TMPFS, "sh", str(mountpoint), sys.executable],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    if done.returncode != 0 and ("mount" in done.stderr or "unshare" in done.stderr):
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("store the disk is full: nothing was written (") and "spade.db" in lines[0]
    assert lines[1].startswith("file the disk is full: nothing was written (") and "No space left" in lines[1]
    assert lines[2] == "versions 1 'Keep it under 10 words.\\n'"
    assert lines[3] == "left ['.spade']"


# -- permissions ----------------------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_store_is_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        root = tmp_path / "ws"
        root.mkdir()
        with Store.open(root) as store, store.write() as db:
            db.execute("INSERT INTO prompts (path, created_at) VALUES ('a', 'now')")
            directory = root / ".spade"
            assert _mode(directory) == 0o700
            assert _mode(directory / "spade.db") == 0o600
            for suffix in ("-wal", "-shm"):
                assert _mode(directory / f"spade.db{suffix}") == 0o600
    finally:
        os.umask(old)


def test_an_existing_store_is_made_private_on_open(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    Store.open(root).close()
    directory = root / ".spade"
    database = directory / "spade.db"
    os.chmod(directory, 0o755)
    os.chmod(database, 0o644)
    with Store.open(root) as store:
        (directory / "spade.db-wal").touch()
        assert _mode(directory) == 0o700 and _mode(database) == 0o600
        store.db.execute("SELECT 1").fetchone()
    wal = directory / "spade.db-wal"
    wal.touch()
    os.chmod(wal, 0o644)
    Store.open(root).close()
    assert not wal.exists() or _mode(wal) == 0o600
    readonly = Store.open_readonly(root)  # a reader never changes modes, and never needs to
    assert readonly is not None
    readonly.close()


def test_atomic_writes_leave_the_target_alone_on_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "p.examples.jsonl"
    target.write_text("kept\n", encoding="utf-8")
    real_replace = os.replace

    def no_space(source: str, destination: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    with pytest.raises(DiskFullError, match=r"^the disk is full: nothing was written \(.*p\.examples\.jsonl"):
        atomic_write_text(target, "new\n")
    monkeypatch.setattr(os, "replace", real_replace)
    assert target.read_text(encoding="utf-8") == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.examples.jsonl"]


def test_a_store_damaged_past_its_header_is_one_line_and_exit_2_from_any_command(workspace_dir: Path) -> None:
    """Interior pages overwritten (the header and schema intact): whichever command meets the damage says so in
    one line with the fix, exits 2 and prints no traceback; a command that never reads a damaged page works."""
    import random

    prompt = workspace_dir / "a.prompt"
    for version in range(30):  # enough rows to spread the tables over many pages
        rules = "".join(f"Rule {k}: keep it short and sweet, number {version}.\n" for k in range(40))
        prompt.write_text(f"Write a blurb, version {version}.\n{rules}", encoding="utf-8")
        with Workspace(workspace_dir) as workspace:
            from spade_lsp.workspace import sync_prompt

            sync_prompt(workspace, prompt, git=False)
    database = workspace_dir / ".spade" / "spade.db"
    data = bytearray(database.read_bytes())
    pages = len(data) // 4096
    chance = random.Random(3)
    for page in range(pages // 2, pages, 3):  # the second half of the file, every third page
        for offset in range(page * 4096 + 8, page * 4096 + 200):
            data[offset] = chance.randrange(256)
    database.write_bytes(bytes(data))
    damaged = 0
    for command in (["history"], ["deltas"], ["deltas", "--from", "10"], ["deltas", "--from", "20"]):
        done = subprocess.run(
            [sys.executable, "-m", "spade_lsp.cli", command[0], str(prompt), *command[1:]],
            cwd=workspace_dir,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode != 0:
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
            assert f"{database} is damaged (" in done.stderr and "mv " in done.stderr, done.stderr
            damaged += 1
    assert damaged  # the damage was met (else this test would prove nothing)

"""Every file the CLI reads has a size limit read with a bounded read, and what is not a regular file (a device,
a fifo, a socket, a directory) is refused from its stat before it can block or flood memory: one line on
stderr, exit 2, nothing written. Each kind of file is tried as a symlink to /dev/zero, a fifo with no writer
(a plain ``open`` would block forever) and a file over its limit (sparse: it costs no disk).

The commands run in a child process with a cap on its address space and a timeout, so a regression fails the
test instead of exhausting the machine; the child reports its peak RSS."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from spade_lsp._files import (
    MAX_DATA_BYTES,
    MAX_EXAMPLES_BYTES,
    MAX_SETTINGS_BYTES,
    MAX_SIDECAR_BYTES,
    read_limited,
    read_limited_text,
    read_sidecar_text,
)
from spade_lsp.errors import InputError, PromptFileError

pytestmark = pytest.mark.skipif(not Path("/dev/zero").exists() or not hasattr(os, "mkfifo"), reason="needs POSIX")

PROMPT = "Keep the answer under 50 words. Never mention the price.\n"
PEAK_RSS_LIMIT_MB = 300
_GUARD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from spade_lsp.cli import main
code = main(sys.argv[1:])
# VmHWM, not ru_maxrss: that one keeps the parent's peak across fork and exec
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")]
sys.stderr.write("PEAK_RSS_KB=%s\\n" % peak[0])
raise SystemExit(code)
"""


def spade(*argv: str, cwd: Path | None = None) -> tuple[int, str, str, float, float]:
    """``spade ARGV`` in a guarded child: exit code, stdout, stderr (without the RSS line), seconds, peak MB."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _GUARD, *argv], capture_output=True, text=True, timeout=60, cwd=cwd, check=False
    )
    seconds = time.monotonic() - started
    lines = done.stderr.splitlines(keepends=True)
    peak = [int(line.split("=")[1]) for line in lines if line.startswith("PEAK_RSS_KB=")]
    err = "".join(line for line in lines if not line.startswith("PEAK_RSS_KB="))
    return done.returncode, done.stdout, err, seconds, (peak[0] / 1024 if peak else float("inf"))


def zero(path: Path) -> str:
    path.symlink_to("/dev/zero")
    return "is a character device (a symlink to /dev/zero), not a regular file"


def fifo(path: Path) -> str:
    os.mkfifo(path)
    return "is a fifo (named pipe), not a regular file"


def sparse(size: int) -> Callable[[Path], str]:
    def make(path: Path) -> str:
        with path.open("wb") as handle:
            handle.truncate(size)
        return "is larger than the"

    return make


def zero_in_workspace(path: Path) -> str:
    """A file spade finds in the workspace (a prompt, its sidecar, spade.toml) linked to /dev/zero: refused as
    pointing out of the workspace, before it is opened."""
    path.symlink_to("/dev/zero")
    return "that resolves to /dev/zero, outside the workspace"


KINDS = {"zero": zero, "fifo": fifo}
#: The same for files spade finds by their place in the workspace, not given on the command line.
KINDS_IN_WORKSPACE = {"zero": zero_in_workspace, "fifo": fifo}


def assert_refused(result: tuple[int, str, str, float, float], path: Path, phrase: str) -> None:
    code, out, err, seconds, peak_mb = result
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"spade: error: {path}: ") and phrase in err, err
    assert "Traceback" not in err
    assert seconds < 30 and peak_mb < PEAK_RSS_LIMIT_MB


@pytest.fixture
def prompt(workspace_dir: Path) -> Path:
    path = workspace_dir / "p.prompt"
    path.write_text(PROMPT, encoding="utf-8")
    return path


# -- the helper ---------------------------------------------------------------------------------------------


def test_read_limited_reads_regular_files_within_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 100)
    assert read_limited(path, limit=100, what="a test file") == b"x" * 100
    link = tmp_path / "link.txt"
    link.symlink_to(path)  # a symlink to a regular file is fine
    assert read_limited_text(link, limit=100, what="a test file") == "x" * 100
    with pytest.raises(
        InputError, match=r"a\.txt: 101 bytes is larger than the 100 bytes limit for a test file \(hint\)"
    ):
        path.write_bytes(b"x" * 101)
        read_limited(path, limit=100, what="a test file", hint="hint")
    with pytest.raises(PromptFileError, match="no such file"):
        read_limited(tmp_path / "missing", limit=10, what="a prompt", error=PromptFileError)
    with pytest.raises(InputError, match="is a directory, not a regular file"):
        read_limited(tmp_path, limit=10, what="a test file")
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(InputError, match=r"not valid UTF-8 \(byte 0xe9 on line 1\)"):
        read_limited_text(path, limit=100, what="a test file")
    assert read_sidecar_text(tmp_path / "none_assertions.py") is None


def test_read_limited_refuses_devices_fifos_and_sockets_at_once(tmp_path: Path) -> None:
    for name, make in KINDS.items():
        path = tmp_path / name
        phrase = make(path)
        started = time.monotonic()
        with pytest.raises(InputError) as refused:
            read_limited(path, limit=10, what="a test file")
        assert phrase in str(refused.value) and "\n" not in str(refused.value)
        assert time.monotonic() - started < 5  # refused from its stat: a read would block or never end
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "sock"))
        with pytest.raises(InputError, match="is a socket, not a regular file"):
            read_limited(tmp_path / "sock", limit=10, what="a test file")
    finally:
        server.close()


def test_a_file_growing_past_the_limit_while_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stat said small, but more came: at most limit + 1 bytes are read, and the file is refused."""
    path = tmp_path / "grows.txt"
    path.write_bytes(b"x" * 10)
    real_fstat = os.fstat

    def small_fstat(descriptor: int) -> os.stat_result:
        result = real_fstat(descriptor)
        return os.stat_result((*result[:6], 1, *result[7:]))  # st_size = 1

    path.write_bytes(b"x" * 5000)
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: os.stat_result((*real_stat(p)[:6], 1, *real_stat(p)[7:])))
    monkeypatch.setattr(os, "fstat", small_fstat)
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(InputError, match="more than 100 bytes is larger than the 100 bytes limit"):
        read_limited(path, limit=100, what="a test file")
    assert sum(reads) <= 101


# -- the CLI, per kind of file ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["zero", "fifo", "large"])
def test_prompt_files(workspace_dir: Path, kind: str) -> None:
    path = workspace_dir / "bad.prompt"
    phrase = sparse(5_000_000)(path) if kind == "large" else KINDS_IN_WORKSPACE[kind](path)
    if kind == "large":
        phrase = "5.0 MB is larger than the 1 MB limit for a prompt (raise max_prompt_bytes"
    assert_refused(spade("history", str(path)), path, phrase)
    database = workspace_dir / ".spade" / "spade.db"
    if database.exists():  # nothing was recorded
        with sqlite3.connect(database) as connection:
            assert connection.execute("SELECT COUNT(*) FROM versions").fetchone() == (0,)


@pytest.mark.parametrize("kind", ["zero", "fifo", "large"])
def test_examples_files(workspace_dir: Path, prompt: Path, kind: str) -> None:
    source = workspace_dir / "in.jsonl"
    phrase = KINDS[kind](source) if kind != "large" else sparse(MAX_EXAMPLES_BYTES + 1)(source)
    if kind == "large":
        phrase = "200.0 MB is larger than the 200 MB limit for an examples file"
    assert_refused(spade("import", str(prompt), "--examples", str(source)), source, phrase)
    # the examples file beside the prompt is read before a merge: refused the same way, and left alone
    source.unlink()
    source.write_text(json.dumps({"id": "1", "inputs": {}, "output": "hi", "label": "good"}) + "\n")
    beside = workspace_dir / "p.examples.jsonl"
    phrase = KINDS_IN_WORKSPACE[kind](beside) if kind != "large" else sparse(MAX_EXAMPLES_BYTES + 1)(beside)
    if kind == "large":
        phrase = "is larger than the 200 MB limit for an examples file"
    assert_refused(spade("import", str(prompt), "--examples", str(source)), beside, phrase)
    assert beside.is_symlink() or not beside.is_file() or beside.stat().st_size == MAX_EXAMPLES_BYTES + 1


def test_csv_examples_are_limited_too(workspace_dir: Path, prompt: Path) -> None:
    source = workspace_dir / "in.csv"
    source.symlink_to("/dev/zero")
    assert_refused(spade("import", str(prompt), "--examples", str(source)), source, "is a character device")


@pytest.mark.parametrize("kind", ["zero", "fifo", "large"])
def test_settings_files(workspace_dir: Path, prompt: Path, kind: str) -> None:
    settings = workspace_dir / "spade.toml"
    settings.unlink()
    phrase = KINDS_IN_WORKSPACE[kind](settings) if kind != "large" else sparse(MAX_SETTINGS_BYTES + 1)(settings)
    if kind == "large":
        phrase = "1.0 MB is larger than the 1 MB limit for a settings file"
    assert_refused(spade("history", str(prompt)), settings, phrase)


@pytest.mark.parametrize("kind", ["zero", "fifo", "large"])
@pytest.mark.parametrize("command", ["versions", "taxonomy", "matrix"])
def test_json_inputs(workspace_dir: Path, prompt: Path, kind: str, command: str) -> None:
    source = workspace_dir / "in.json"
    phrase = KINDS[kind](source) if kind != "large" else sparse(MAX_DATA_BYTES + 1)(source)
    if kind == "large":
        phrase = "200.0 MB is larger than the 200 MB limit for a JSON"
    argv = {
        "versions": ["import", str(prompt), "--versions", str(source)],
        "taxonomy": ["taxonomy", "--jsonl", str(source), "--workspace", str(workspace_dir)],
        "matrix": ["select", "--matrix", str(source), "--json"],
    }[command]
    assert_refused(spade(*argv, cwd=workspace_dir), source, phrase)


def test_the_sidecar_writer_refuses_an_unreadable_module(tmp_path: Path) -> None:
    from spade_lsp.synthesis._sidecar import update_sidecar

    for name, make in {**KINDS, "large": sparse(MAX_SIDECAR_BYTES + 1)}.items():
        module = tmp_path / f"{name}_assertions.py"
        make(module)
        started = time.monotonic()
        with pytest.raises(InputError) as refused:
            update_sidecar(module, [], prompt_name="p.prompt")
        assert str(refused.value).startswith(f"{module}: ") and "\n" not in str(refused.value)
        assert time.monotonic() - started < 5  # refused from its stat: a read would block or never end
        assert module.is_symlink() or not module.is_file() or module.stat().st_size == MAX_SIDECAR_BYTES + 1


@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_synthesize_refuses_an_unreadable_sidecar(workspace_dir: Path, prompt: Path, kind: str) -> None:
    module = workspace_dir / "p_assertions.py"
    phrase = KINDS_IN_WORKSPACE[kind](module)
    try:
        result = spade("synthesize", str(prompt), "--synthesizer", "offline")
    except subprocess.TimeoutExpired:  # the fifo blocked the reader
        pytest.fail("spade synthesize blocked on a fifo")
    assert_refused(result, module, phrase)


def test_a_small_prompt_limit_is_written_in_bytes() -> None:
    from spade_lsp._prompts import decode_prompt

    with pytest.raises(PromptFileError, match="p: 100 bytes is larger than the 40 bytes limit for a prompt"):
        decode_prompt(b"x" * 100, source="p", max_bytes=40)

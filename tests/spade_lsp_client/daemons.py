"""Helpers for tests that run the real daemon: start it as a subprocess, wait on conditions, clean up.

Every daemon a test starts (directly, or spawned by the client) is killed at teardown by the ``daemons``
fixture, which finds spawned ones through the pid written into ``.spade/daemon.lock``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.blurb import examples_jsonl

T = TypeVar("T")

PROMPT = 'Write a product blurb for {product}.\nKeep it not exceeding 12 words.\nNever use the word "cheap".\n'
#: A hand-written sidecar whose one assertion takes ``delay`` seconds per example: a slow job, deterministically.
SLOW_SIDECAR = """import asyncio


async def assert_slow(example: dict, prompt: str, response: str) -> bool:
    await asyncio.sleep({delay})
    return True
"""

#: A safety net: a daemon a broken teardown missed still exits on its own.
SETTINGS = "daemon_idle_timeout_s = 30\n"


def wait_until(condition: Callable[[], T], *, timeout_s: float = 10.0, interval_s: float = 0.02, what: str = "") -> T:
    """Poll ``condition`` until it returns something truthy; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what or condition}")
        time.sleep(interval_s)


async def async_wait_until(
    condition: Callable[[], T], *, timeout_s: float = 10.0, interval_s: float = 0.02, what: str = ""
) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what or condition}")
        await asyncio.sleep(interval_s)


def make_workspace(root: Path, *, examples: bool = True) -> Path:
    """A workspace with ``blurb.prompt`` (and its examples); returns the prompt's path."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "spade.toml").write_text(SETTINGS, encoding="utf-8")
    prompt = root / "blurb.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    if examples:
        lines = examples_jsonl()
        (root / "blurb.examples.jsonl").write_text(lines, encoding="utf-8")
    return prompt


def make_slow_prompt(root: Path, *, name: str = "slow", examples: int = 8, delay_s: float = 0.25) -> Path:
    """A prompt whose sidecar takes ``examples * delay_s`` seconds to evaluate with one worker."""
    prompt = root / f"{name}.prompt"
    prompt.write_text("Answer politely.\n", encoding="utf-8")
    (root / f"{name}_assertions.py").write_text(SLOW_SIDECAR.format(delay=delay_s), encoding="utf-8")
    rows = [{"id": f"e{i}", "inputs": {}, "output": "ok", "label": "good"} for i in range(examples)]
    (root / f"{name}.examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return prompt


def daemon_pid(root: Path) -> int | None:
    """The pid in the lock file, if that process is alive and is a daemon."""
    try:
        pid = int((root / ".spade" / "daemon.lock").read_text().strip() or 0)
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"spade_lsp_server.daemon" in command and b"<defunct>" not in command else None


def process_gone(pid: int) -> bool:
    """Exited (a zombie our test process has not reaped counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return status.rsplit(")", 1)[1].split()[0] in ("Z", "X")


class Daemons:
    """Starts daemons and kills every one at teardown."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        self.roots: list[Path] = []

    def start(self, root: Path, *, idle_timeout_s: float = 30.0, wait: bool = True) -> subprocess.Popen[bytes]:
        self.track(root)
        command = [sys.executable, "-m", "spade_lsp_server.daemon", "--root", str(root)]
        command += ["--idle-timeout", str(idle_timeout_s)]
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=root
        )
        self.processes.append(process)
        if wait:
            wait_until(lambda: listening(root) or process.poll() is not None, what="the daemon to listen")
            assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
        return process

    def track(self, root: Path) -> None:
        """Kill whatever daemon runs for ``root`` at teardown (one the client spawned)."""
        self.roots.append(root)

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait(5)

    def cleanup(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)
            if process.stdout is not None:
                # printed into the test's captured output, which pytest shows when the test failed; read without
                # blocking, as a process the daemon started may still hold the pipe
                os.set_blocking(process.stdout.fileno(), False)
                with contextlib.suppress(OSError):
                    output = (process.stdout.read() or b"").decode(errors="replace")
                    print(f"daemon {process.pid} exited {process.returncode}:", output[-4000:])
                process.stdout.close()
        for root in dict.fromkeys(self.roots):
            with contextlib.suppress(OSError):
                print(f"{root}/.spade/daemon.log:", (root / ".spade" / "daemon.log").read_text()[-8000:])
        for root in self.roots:
            pid = daemon_pid(root)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                wait_until(lambda pid=pid: process_gone(pid), timeout_s=5, what=f"daemon {pid} to die")


@pytest.fixture
def daemons() -> Iterator[Daemons]:
    manager = Daemons()
    try:
        yield manager
    finally:
        manager.cleanup()


def listening(root: Path) -> bool:
    from spade_lsp_client import daemon_running

    return daemon_running(root)


class RawConnection:
    """A plain blocking socket speaking newline-delimited JSON: for malformed input no client would send."""

    def __init__(self, root: Path) -> None:
        from spade_lsp_client.protocol import socket_address, socket_path

        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        with socket_address(socket_path(root)) as address:
            self.sock.connect(address)
        self.file = self.sock.makefile("rb")

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def receive(self) -> dict[str, Any]:
        """The next message that is not a notification."""
        while True:
            line = self.file.readline()
            assert line, "the daemon closed the connection"
            message: dict[str, Any] = json.loads(line)
            if "id" in message:
                return message

    def close(self) -> None:
        self.file.close()
        self.sock.close()

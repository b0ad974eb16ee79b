"""The server's stdio writer sends every byte of every message: an unbuffered stdout (``PYTHONUNBUFFERED``, which
editors often set) may take part of a large message when a signal interrupts the write, and the rest must follow
before the next message starts."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from spade_lsp_server._framing import FrameWriter


class _TakesLittle(io.RawIOBase):
    """A raw stream that takes at most 1,000 bytes per write, as a pipe interrupted by a signal does."""

    def __init__(self) -> None:
        self.received = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        taken = bytes(data[:1000])
        self.received += taken
        return len(taken)


def test_a_partial_write_is_finished_before_the_next_message() -> None:
    stream = _TakesLittle()
    writer = FrameWriter(stream)  # type: ignore[arg-type]
    first, second = b"A" * 5_500, b"B" * 2_345
    writer.write(first)
    writer.write(second)
    assert bytes(stream.received) == first + second


_CHILD = """
import sys
from spade_lsp_server._framing import FrameWriter
writer = FrameWriter(sys.stdout.buffer)
for k in range(40):
    writer.write(bytes([65 + k % 26]) * 500_000)
"""


def test_messages_arrive_whole_through_a_pipe_while_the_writer_is_stopped_and_continued(tmp_path: Path) -> None:
    """With ``PYTHONUNBUFFERED=1`` a stopped and continued process's large writes to a pipe come back short;
    pygls' own writer lost the rest (with it, this test fails)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None
    done = threading.Event()

    def stop_and_continue() -> None:
        while not done.is_set() and child.poll() is None:
            time.sleep(0.001)
            os.kill(child.pid, signal.SIGSTOP)
            time.sleep(0.001)
            os.kill(child.pid, signal.SIGCONT)

    pester = threading.Thread(target=stop_and_continue)
    pester.start()
    received = bytearray()
    try:
        while chunk := child.stdout.read(65536):
            received += chunk
            time.sleep(0.0005)  # a reader slower than the writer: the pipe fills and writes block
    finally:
        done.set()
        pester.join()
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)  # never leave it stopped
        child.wait(timeout=30)
    assert child.returncode == 0
    assert bytes(received) == b"".join(bytes([65 + k % 26]) * 500_000 for k in range(40))

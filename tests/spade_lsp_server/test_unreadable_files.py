"""Files the language server must not read without limit: a sidecar, a prompt or settings that are a device (a
symlink to /dev/zero), a fifo or too large. Each is refused with one line, shown where the user looks, and the
server's memory stays bounded (its peak RSS is read from /proc) and it keeps answering."""

from __future__ import annotations

import asyncio
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from spade_lsp import MAX_SIDECAR_BYTES
from spade_lsp_client import run_job
from tests.spade_lsp_client.daemons import Daemons, daemons, make_workspace

__all__ = ["daemons"]  # the fixture

OFFLINE = {"daemon_autostart": False}
PROMPT = "Keep the answer under 50 words. Never mention the price.\n"
PEAK_RSS_LIMIT_KB = 400_000  # the server alone takes ~100 MB; reading /dev/zero takes everything there is

# a regression must fail the test, not exhaust the machine: the server runs with a cap on its address space
GUARDED_SERVER = [
    sys.executable,
    "-c",
    "import resource, runpy; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)); "
    "runpy.run_module('spade_lsp_server', run_name='__main__')",
]

pytestmark = pytest.mark.skipif(not Path("/dev/zero").exists() or not hasattr(os, "mkfifo"), reason="needs POSIX")


def _peak_rss_kb(editor: Any) -> int:
    """The server process's peak resident set (VmHWM), in kB."""
    pid = editor.client._server.pid
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


def _sidecar_kinds(root: Path) -> dict[str, tuple[Path, str]]:
    """Three prompts whose sidecar modules cannot be read, and the phrase each refusal must hold."""
    cases: dict[str, tuple[Path, str]] = {}
    for name, make, phrase in (
        ("zero", lambda p: p.symlink_to("/dev/zero"), "is a character device (a symlink to /dev/zero)"),
        ("fifo", lambda p: os.mkfifo(p), "is a fifo (named pipe)"),
        (
            "huge",
            lambda p: p.write_bytes(b"# padding\n" * (MAX_SIDECAR_BYTES // 10 + 1)),
            "is larger than the 2 MB limit for a sidecar module",
        ),
    ):
        prompt = root / f"{name}.prompt"
        prompt.write_text(PROMPT, encoding="utf-8")
        make(root / f"{name}_assertions.py")
        cases[name] = (prompt, phrase)
    return cases


async def test_an_unreadable_sidecar_is_one_note_and_costs_no_memory(editor_factory: Any, workspace_dir: Path) -> None:
    cases = _sidecar_kinds(workspace_dir)
    editor = await editor_factory(workspace_dir, settings=OFFLINE, command=GUARDED_SERVER)
    started = time.monotonic()
    for name, (prompt, phrase) in cases.items():
        uri = await editor.open(prompt)
        diagnostics = await editor.diagnostics_where(
            uri, lambda d: any(x.code == "spade/prompt-note" for x in d), f"the note on the {name} sidecar"
        )
        notes = [d.message for d in diagnostics if d.code == "spade/prompt-note"]
        assert len(notes) == 1 and "\n" not in notes[0], notes
        assert notes[0].startswith(f"spade: {workspace_dir / f'{name}_assertions.py'}: ") and phrase in notes[0]
        # the prompt itself is still analysed
        assert {"Content/Count", "Content/Exclusion"} <= {str(d.code) for d in diagnostics}
    assert time.monotonic() - started < 30
    assert _peak_rss_kb(editor) < PEAK_RSS_LIMIT_KB
    hover = await editor.hover(editor.uri(cases["zero"][0]), 0, 3)  # still answering
    assert hover is not None


async def test_a_prompt_on_disk_that_is_a_device_is_one_problem(editor_factory: Any, workspace_dir: Path) -> None:
    """The sidecar is open and its prompt is not: the server reads the prompt from disk, within a limit."""
    prompt = workspace_dir / "zero.prompt"
    prompt.symlink_to("/dev/zero")
    module = workspace_dir / "zero_assertions.py"
    module.write_text("def assert_short(example: dict, prompt: str, response: str) -> bool:\n    return True\n")
    editor = await editor_factory(workspace_dir, settings=OFFLINE, command=GUARDED_SERVER)
    started = time.monotonic()
    uri = await editor.open(module, language="python")
    assert await editor.code_lenses(uri) == []  # a round trip through the prompt's overview: nothing to show
    assert await editor.hover(uri, 0, 5) is None
    assert time.monotonic() - started < 10
    assert _peak_rss_kb(editor) < PEAK_RSS_LIMIT_KB


async def test_settings_that_are_a_device_are_one_message(editor_factory: Any, workspace_dir: Path) -> None:
    (workspace_dir / "spade.toml").unlink()
    (workspace_dir / "spade.toml").symlink_to("/dev/zero")
    prompt = workspace_dir / "a.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    editor = await editor_factory(workspace_dir, settings=OFFLINE, command=GUARDED_SERVER)
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) >= 2, "diagnostics with default settings")
    assert "Content/Count" in {str(d.code) for d in diagnostics}
    await editor.wait_for(
        lambda: any("spade.toml" in m.message for m in editor.client.messages), "the settings message"
    )
    shown = [m.message for m in editor.client.messages if "spade.toml" in m.message]
    assert shown[0] == (
        f"spade: {workspace_dir / 'spade.toml'}: a settings file that resolves to /dev/zero, outside the workspace "
        f"{workspace_dir.resolve()}; spade reads and writes only inside the workspace; using the default settings"
    )
    assert _peak_rss_kb(editor) < PEAK_RSS_LIMIT_KB


async def test_a_fifo_examples_file_or_prompt_never_blocks_the_server(editor_factory: Any, workspace_dir: Path) -> None:
    """A fifo with no writer: opening it for reading would block forever; the server refuses it at once."""
    prompt = workspace_dir / "pipe.prompt"
    os.mkfifo(prompt)
    other = workspace_dir / "ok.prompt"
    other.write_text(PROMPT, encoding="utf-8")
    os.mkfifo(workspace_dir / "ok_assertions.py")
    editor = await editor_factory(workspace_dir, settings=OFFLINE, command=GUARDED_SERVER)
    module = workspace_dir / "pipe_assertions.py"
    module.write_text("def assert_x(example: dict, prompt: str, response: str) -> bool:\n    return True\n")
    uri = await editor.open(module, language="python")
    assert await editor.code_lenses(uri) is not None
    ok = await editor.open(other)
    diagnostics = await editor.diagnostics_where(
        ok, lambda d: any(x.code == "spade/prompt-note" for x in d), "the fifo note"
    )
    assert any("is a fifo (named pipe)" in d.message for d in diagnostics)
    assert isinstance(await editor.hover(ok, 0, 3), types.Hover | None)


# -- the daemon ---------------------------------------------------------------------------------------------


def _daemon_peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


async def test_the_daemon_refuses_devices_fifos_and_huge_files_in_one_line(tmp_path: Path, daemons: Daemons) -> None:
    from spade_lsp.errors import DaemonError
    from spade_lsp_client import DaemonClient

    root = tmp_path / "ws"
    make_workspace(root)
    (root / "zero.prompt").symlink_to("/dev/zero")
    os.mkfifo(root / "pipe.prompt")
    with (root / "huge.prompt").open("wb") as handle:
        handle.truncate(50_000_000)  # sparse: no disk, and never read
    (root / "blurb_assertions.py").write_text(
        "def assert_short(example: dict, prompt: str, response: str) -> bool:\n    return True\n", encoding="utf-8"
    )
    (root / "blurb.examples.jsonl").unlink()
    (root / "blurb.examples.jsonl").symlink_to("/dev/zero")
    process = daemons.start(root)
    resource.prlimit(process.pid, resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a regression fails, not the machine
    started = time.monotonic()
    async with await DaemonClient.connect(root, client_name="test", start=False) as client:
        for name, phrases in (
            # the daemon resolves a path before anything: a link to /dev/zero is outside the workspace
            ("zero.prompt", ("outside the workspace",)),
            ("pipe.prompt", ("is a fifo (named pipe), not a regular file",)),
            ("huge.prompt", ("50.0 MB is larger than the 1 MB limit for a prompt",)),
        ):
            with pytest.raises(DaemonError) as refused:
                await client.request("prompt/record", {"path": str(root / name)})
            message = refused.value.args[0]
            assert any(phrase in message for phrase in phrases) and "\n" not in message, message
        assert (await client.request("prompt/record", {"path": "blurb.prompt"}))["version"] == 1  # still working
    job = await asyncio.to_thread(run_job, root, "evaluate", root / "blurb.prompt", {})
    assert job["status"] == "failed"
    # the examples file beside the prompt links out of the workspace: refused before it is opened
    assert job["error"].startswith(f"{root / 'blurb.examples.jsonl'}: an examples file that resolves to /dev/zero")
    assert "\n" not in job["error"]
    assert time.monotonic() - started < 30
    assert _daemon_peak_rss_kb(process.pid) < PEAK_RSS_LIMIT_KB

"""How editors start the server (``spade lsp --stdio``, ``python -m spade_lsp_server``), and what it loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.spade_lsp_server._workspaces import synthesize_offline
from tests.support.blurb import V3, record

CLI = "import sys; from spade_lsp.cli import main; sys.exit(main(sys.argv[1:]))"


async def test_spade_lsp_with_the_flags_editors_pass(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "a.prompt"
    prompt.write_text("Keep it under 5 words.\n", encoding="utf-8")
    log = workspace_dir / "logs" / "lsp.log"
    editor = await editor_factory(
        workspace_dir,
        settings={"daemon_autostart": False},
        command=[sys.executable, "-c", CLI, "lsp", "--stdio", "--log-file", str(log)],
    )
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "diagnostics")
    assert diagnostics[0].code == "Content/Count"
    await editor.wait_for(lambda: log.exists() and "published 1 diagnostics" in log.read_text(), "the log file")


async def test_module_entry_ignores_unknown_client_flags(editor_factory: Any, workspace_dir: Path) -> None:
    prompt = workspace_dir / "a.prompt"
    prompt.write_text("Never use emoji.\n", encoding="utf-8")
    editor = await editor_factory(
        workspace_dir,
        settings={"daemon_autostart": False},
        command=[sys.executable, "-m", "spade_lsp_server", "--stdio", "--clientProcessId=4242"],
    )
    uri = await editor.open(prompt)
    diagnostics = await editor.diagnostics_where(uri, lambda d: len(d) == 1, "diagnostics")
    assert diagnostics[0].code == "Content/Exclusion"


def test_the_server_never_loads_the_heavy_engine_parts(workspace_dir: Path) -> None:
    """numpy, the solvers, litellm, GitPython and the selection package stay out of the server process, even
    after it has read a store with history, a sidecar and a hover's sentence history."""
    prompt = workspace_dir / "blurb.prompt"
    record(workspace_dir, prompt, V3)
    synthesize_offline(workspace_dir, prompt)
    code = """
import sys, pathlib
from spade_lsp_server.server import create_server
from spade_lsp_server._state import WorkspaceState
from spade_lsp_server._convert import Columns
from spade_lsp_server.features.diagnostics import prompt_diagnostics, sidecar_diagnostics
from spade_lsp.overview import sentence_history
create_server()
root = pathlib.Path(sys.argv[1])
prompt = root / "blurb.prompt"
state = WorkspaceState(root, on_notification=lambda m, p: None, tell=lambda m, i: None)
overview = state.overview("file:///x", prompt, None, lambda path: None)
assert overview.versions and overview.sidecar.assertions, overview
columns = Columns(None, "utf-16")
assert prompt_diagnostics(overview, columns) and not sidecar_diagnostics(overview, columns)
assert sentence_history(state.store(), root, prompt, overview.instructions[2].text)
heavy = ("numpy", "pandas", "litellm", "highspy", "pulp", "spade_lsp.selection", "git", "spade_lsp.sandbox")
print(sorted(name for name in heavy if name in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code, str(workspace_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_log_level_sets_what_reaches_stderr() -> None:
    """The extension's ``spade.logLevel`` becomes ``--log-level``: INFO lines of the server reach stderr (its
    output channel) only when asked for; pygls' per-message INFO logging stays off either way."""
    code = """
import logging, sys
from spade_lsp_server._main import _configure_logging
_configure_logging(None, sys.argv[1])
logging.getLogger("spade_lsp_server.features").info("an info line")
logging.getLogger("pygls.protocol").info("a message body")
logging.getLogger("spade_lsp_server").warning("a warning")
"""
    outputs = {
        level: subprocess.run([sys.executable, "-c", code, level], capture_output=True, text=True, check=True).stderr
        for level in ("info", "warning", "error")
    }
    assert "an info line" in outputs["info"] and "a warning" in outputs["info"]
    assert "an info line" not in outputs["warning"] and "a warning" in outputs["warning"]
    assert outputs["error"] == ""
    assert all("a message body" not in text for text in outputs.values())
    refused = subprocess.run(
        [sys.executable, "-m", "spade_lsp_server", "--log-level", "chatty"], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "invalid choice: 'chatty'" in refused.stderr

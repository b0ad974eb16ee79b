"""A pytest-lsp client driving the real language server (``python -m spade_lsp_server``) over stdio.

The client declares what a full editor declares (work-done progress, showDocument, applyEdit with file
creation, code-lens refresh, configuration), answers ``workspace/configuration`` from its settings and
applies ``workspace/applyEdit`` to the files on disk, so tests can check the sidecar module's bytes.
Waits poll a condition against a deadline; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Union

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import make_test_lsp_client

SERVER = [sys.executable, "-m", "spade_lsp_server"]
DEADLINE_S = 20.0


def capabilities(*, encodings: list[str] | None = None, experimental: Any = None) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        experimental=experimental,
        general=types.GeneralClientCapabilities(position_encodings=encodings) if encodings else None,
        window=types.WindowClientCapabilities(
            work_done_progress=True, show_document=types.ShowDocumentClientCapabilities(support=True)
        ),
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True,
            configuration=True,
            workspace_edit=types.WorkspaceEditClientCapabilities(
                document_changes=True,
                resource_operations=[types.ResourceOperationKind.Create],
            ),
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
        ),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(data_support=True),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(value_set=["", "quickfix", "source"])
                )
            ),
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
            document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
        ),
    )


def _position_offset(text: str, position: types.Position) -> int:
    """Offset of an LSP position (UTF-16 columns) in ``text``."""
    lines = text.splitlines(keepends=True)
    offset = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    index = 0
    while index < len(line) and units < position.character:
        units += 2 if ord(line[index]) > 0xFFFF else 1
        index += 1
    return offset + index


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(
        ((_position_offset(text, e.range.start), _position_offset(text, e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


class Editor:
    """The test's side: the client, the workspace, and what the server asked the editor to do."""

    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.versions: dict[str, int] = {}
        self.refreshes = 0

    def uri(self, path: Path) -> str:
        return path.resolve().as_uri()

    async def open(self, path: Path | str, text: str | None = None, language: str = "prompt") -> str:
        """Open a file (its text from disk unless given), or a URI with ``text``."""
        uri = self.uri(path) if isinstance(path, Path) else path
        if text is None:
            assert isinstance(path, Path)
            content = path.read_text(encoding="utf-8")
        else:
            content = text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=content)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> None:
        self.versions[uri] = self.versions.get(uri, 1) + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def save(self, uri: str, text: str | None = None) -> None:
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=text)
        )

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(uri, []))

    async def wait_for(self, condition: Callable[[], Any], what: str, timeout: float = DEADLINE_S) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
            await asyncio.sleep(0.02)

    async def diagnostics_where(
        self, uri: str, predicate: Callable[[list[types.Diagnostic]], bool], what: str, timeout: float = DEADLINE_S
    ) -> list[types.Diagnostic]:
        """Wait until the document's diagnostics satisfy ``predicate``, woken by each publishDiagnostics (so a
        timing taken around this wait is not rounded up to a polling interval)."""
        deadline = time.monotonic() + timeout
        while not (uri in self.client.diagnostics and predicate(self.diagnostics(uri))):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), min(remaining, 0.5)
                )
        return self.diagnostics(uri)

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )

    async def code_lenses(self, uri: str) -> list[types.CodeLens]:
        return list(
            await self.client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            or []
        )

    async def hover(self, uri: str, line: int, character: int) -> types.Hover | None:
        return await self.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            )
        )

    async def symbols(self, uri: str) -> list[Any]:
        """The document's outline (``DocumentSymbol`` trees, as the client declares hierarchical support)."""
        return list(
            await self.client.text_document_document_symbol_async(
                types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            or []
        )

    async def code_actions(
        self,
        uri: str,
        range_: types.Range,
        diagnostics: list[types.Diagnostic] | None = None,
        only: list[str] | None = None,
    ) -> list[types.CodeAction]:
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=range_,
                context=types.CodeActionContext(diagnostics=diagnostics or [], only=only),
            )
        )
        return [a for a in result or [] if isinstance(a, types.CodeAction)]


def _apply_edit(editor: Editor, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
    """Apply a workspace edit to the files on disk (what an editor does after the user saves)."""
    editor.applied.append(params)
    edit = params.edit
    for change in edit.document_changes or []:
        if isinstance(change, types.CreateFile):
            path = Path(change.uri.removeprefix("file://"))
            if not path.exists():
                path.write_text("", encoding="utf-8")
        elif isinstance(change, types.TextDocumentEdit):
            path = Path(change.text_document.uri.removeprefix("file://"))
            if not path.exists():
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{path} does not exist")
            edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
            path.write_text(apply_text_edits(path.read_text(encoding="utf-8"), edits), encoding="utf-8")
    for uri, edits in (edit.changes or {}).items():
        path = Path(uri.removeprefix("file://"))
        path.write_text(apply_text_edits(path.read_text(encoding="utf-8"), list(edits)), encoding="utf-8")
    return types.ApplyWorkspaceEditResult(applied=True)


def _fix_code_action_union(client: LanguageClient) -> None:
    """lsprotocol 2025.0.0 structures every ``Command | CodeAction`` that has a "command" key as a Command, so
    a CodeAction that carries a command (as the spec allows and VS Code reads) arrives mangled. Decide by the
    key's type instead: a Command's "command" is a string, a CodeAction's is an object."""
    converter = client.protocol._converter

    def hook(value: Any, _: Any) -> types.Command | types.CodeAction:
        if isinstance(value.get("command"), str):
            return converter.structure(value, types.Command)
        return converter.structure(value, types.CodeAction)

    converter.register_structure_hook(types.Command | types.CodeAction, hook)
    converter.register_structure_hook(Union[types.Command, types.CodeAction], hook)  # noqa: UP007


def kill_daemon(root: Path) -> None:
    """Stop a daemon a test started in its workspace (by the pid it wrote), and wait until it is gone."""
    info = root / ".spade" / "daemon.json"
    try:
        pid = int(json.loads(info.read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)


@pytest_asyncio.fixture
async def editor_factory(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Start servers on demand: ``await editor_factory(root, settings={...})``; all are stopped at teardown,
    and any daemon their workspaces started is killed."""
    started: list[Editor] = []

    async def start(
        root: Path,
        *,
        settings: dict[str, Any] | None = None,
        encodings: list[str] | None = None,
        server_args: list[str] | None = None,
        command: list[str] | None = None,
        experimental: Any = None,
    ) -> Editor:
        client = make_test_lsp_client()
        _fix_code_action_union(client)
        editor = Editor(client, root)

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            return _apply_edit(editor, params)

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def refresh(params: None) -> None:
            editor.refreshes += 1

        config = ClientServerConfig(
            server_command=command or [*SERVER, *(server_args or [])], client_factory=lambda: client
        )
        await config.start()
        if settings is not None:
            client.set_configuration(settings, section="spade")
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities(encodings=encodings, experimental=experimental),
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            )
        )
        started.append(editor)
        return editor

    yield start
    for editor in started:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(editor.client.shutdown_session(), 10)
        with contextlib.suppress(Exception):
            await editor.client.stop()
        kill_daemon(editor.root)


@pytest.fixture
def no_daemon() -> dict[str, Any]:
    """Settings for tests of the store-reading features: never start a daemon."""
    return {"daemon_autostart": False}

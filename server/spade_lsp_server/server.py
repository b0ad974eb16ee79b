"""The language server object and its factory.

:func:`create_server` builds a fresh :class:`SpadeLanguageServer` (there is no module-level server) and lets
each feature module under ``features/`` register its handlers. The server object holds what every feature
shares: the per-root :class:`~spade_lsp_server._state.WorkspaceState`, which documents are spade's, and
publishing diagnostics. The server only reads: records, jobs and every write to the store go to the daemon.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Coroutine, Generator
from pathlib import Path
from typing import Any, BinaryIO, Final, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.workspace import TextDocument

from spade_lsp import Fallback
from spade_lsp.overview import PromptOverview
from spade_lsp_server import _documents
from spade_lsp_server._convert import Columns, code_units
from spade_lsp_server._documents import DocumentRef
from spade_lsp_server._state import WorkspaceState

log = logging.getLogger(__name__)

SERVER_NAME: Final = "spade-lsp"
CHANGE_DEBOUNCE_S: Final = 0.12
REFRESH_DEBOUNCE_S: Final = 0.05
CONFIG_WAIT_S: Final = 2.0
#: A request for the version, length (in code points) and SHA-256 (of the UTF-8) of an open document's text.
DOCUMENT_STATE: Final = "spade/documentState"

T = TypeVar("T")
_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("spade-lsp")
    except Exception:
        return "0"


class SpadeProtocol(LanguageServerProtocol):
    """pygls' protocol plus ways to send notifications that are already LSP JSON.

    Diagnostics of a 2,000-sentence prompt take tens of ms through the attrs/cattrs round trip, a few ms as
    plain JSON, and well under one when most items' JSON is cached; the didSave -> diagnostics budget is 50 ms.
    """

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self._writes: set[asyncio.Future[Any]] = set()

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        self._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    def notify_encoded(self, method: str, params_json: str) -> None:
        """Send a notification whose params are JSON text (ASCII, as ``json.dumps`` writes it), framed as
        pygls frames every message."""
        if self.writer is None:
            log.error("cannot send %s: no transport", method)
            return
        body = f'{{"jsonrpc": "2.0", "method": {json.dumps(method)}, "params": {params_json}}}'
        if self._include_headers:
            data = (
                f"Content-Length: {len(body.encode(self.CHARSET))}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n{body}"
            )
        else:
            data = body
        result = self.writer.write(data.encode(self.CHARSET))
        if inspect.isawaitable(result):  # an async writer (not stdio): keep the write alive until it is done
            task = asyncio.ensure_future(result)
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Generator[Any, Any, None]:
        """Apply the changes as LSP defines positions, then run the feature's handler.

        pygls' own incremental edit mis-reads positions the client may legitimately send: a character past the
        end of a line moved to the next line (or, on the last line, one character short of its end), a line past
        the end was clamped with its line break counted as text, a reversed range dropped or duplicated text, and
        its lines split at form feeds and Unicode separators that LSP does not count. Here a position past the
        end of its line means the line's end, a line past the last means the end of the document, a range whose
        start comes after its end is read the other way round, and lines end at CR, LF or CRLF only. Each change
        becomes the whole new text, applied through pygls' full-text path.
        """
        uri = params.text_document.uri
        document = self.workspace.text_documents.get(unquote(uri))
        if not isinstance(document, TextDocument):
            log.info("didChange for %s, which is not open: ignored", uri)
            return
        encoding = str(self.workspace.position_encoding or types.PositionEncodingKind.Utf16)
        text = document.source
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                text = apply_change(text, change.range, change.text, encoding)
            else:
                text = change.text
        document.apply_change(types.TextDocumentContentChangeWholeDocument(text=text))
        document.version = params.text_document.version
        handler = self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)
        if handler is not None:
            yield handler, (params,), None


def text_offset(text: str, position: types.Position, encoding: str) -> int:
    """The index in ``text`` of an LSP position: a line past the last is the end of the text, a character past
    the end of its line is the line's end (before its line break), and one inside a character's code units is
    that character's start."""
    start = 0
    if position.line > 0:
        for count, match in enumerate(_LINE_BREAK.finditer(text), 1):
            if count == position.line:
                start = match.end()
                break
        else:
            return len(text)
    found = _LINE_BREAK.search(text, start)
    end = found.start() if found is not None else len(text)
    wanted = position.character
    if encoding == types.PositionEncodingKind.Utf32 or text.isascii():
        return start + min(wanted, end - start)
    units = 0
    for index in range(start, end):
        units += code_units(text[index], encoding)
        if units > wanted:
            return index
    return end


def apply_change(text: str, range_: types.Range, new_text: str, encoding: str) -> str:
    """``text`` with ``range_`` (LSP positions, clamped as :func:`text_offset` says, a reversed range read the
    other way round) replaced by ``new_text``."""
    start = text_offset(text, range_.start, encoding)
    end = text_offset(text, range_.end, encoding)
    if end < start:
        start, end = end, start
    return f"{text[:start]}{new_text}{text[end:]}"


class SpadeLanguageServer(LanguageServer):
    """What the features share. Handlers run on the event loop; nothing here blocks on the daemon."""

    protocol: SpadeProtocol

    def __init__(self) -> None:
        super().__init__(
            SERVER_NAME,
            _version(),
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=SpadeProtocol,
        )
        self.workspaces: dict[Path, WorkspaceState] = {}
        self.folders: list[Path] = []
        self.initialization_values: Any = None
        self.shutting_down = False
        self._roots: dict[Path, Path] = {}  # directory -> root
        self._refs: dict[str, DocumentRef | None] = {}
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._refresh_pending: set[Path] = set()
        self._published: dict[str, Any] = {}
        # prompts whose git history the daemon is still reading (after didOpen): their views say nothing about
        # history until it is read, rather than "no history yet"
        self.history_pending: set[str] = set()
        self._lens_titles: dict[str, str] = {}  # the summary lens each prompt showed last
        self._tasks: set[asyncio.Task[Any]] = set()
        self._prepared: set[str] = set()
        self.config_supported = False

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdio through :mod:`spade_lsp_server._framing`'s reader, which answers a message lost to
        broken framing or malformed JSON-RPC and resynchronises at the next well-framed one (pygls' own loop
        dropped it, and the message after it, in silence)."""
        from spade_lsp_server import _framing

        self._stop_event = threading.Event()
        self.protocol.set_writer(_framing.FrameWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(_framing.serve(self._stop_event, stdin or sys.stdin.buffer, self.protocol))
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]

    # -- capabilities and messages ------------------------------------------------------------------------

    def client_supports(self, dotted: str) -> bool:
        """A client capability by its snake_case path, e.g. ``window.show_document.support``."""
        value: Any = self.client_capabilities
        for part in dotted.split("."):
            value = getattr(value, part, None)
            if value is None:
                return False
        return bool(value)

    def columns(self, text: str | None) -> Columns:
        return Columns(text, self.workspace.position_encoding)

    def tell(self, message: str, important: bool = False, *, done: bool = False) -> None:
        """Show ``message`` (important: a warning; ``done``: what an action did, as information) or only log it
        in the client's output, in the editor's words (palette commands and settings, never CLI flags)."""
        if self.shutting_down:
            return
        from spade_lsp_server._words import for_editor

        message = for_editor(message)
        try:
            if important or done:
                kind = types.MessageType.Warning if important else types.MessageType.Info
                self.window_show_message(types.ShowMessageParams(type=kind, message=message))
            self.window_log_message(
                types.LogMessageParams(
                    type=types.MessageType.Warning if important else types.MessageType.Info, message=message
                )
            )
        except Exception:  # the client may be gone; a message is never worth a crash
            log.debug("could not send a message", exc_info=True)

    def spawn(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run in the background, keeping a reference, and log what fails (never raise into the loop)."""
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                log.warning("background task failed", exc_info=finished.exception())

        task.add_done_callback(done)
        return task

    # -- workspaces and documents ------------------------------------------------------------------------

    def root_for(self, path: Path) -> Path:
        directory = path.parent
        root = self._roots.get(directory)
        if root is None:
            root = _documents.find_root(path, self.folders)
            self._roots[directory] = root
        return root

    def default_root(self) -> Path:
        return self.folders[0] if self.folders else Path.cwd()

    def workspace_state(self, root: Path) -> WorkspaceState:
        state = self.workspaces.get(root)
        if state is None:
            state = WorkspaceState(
                root,
                on_notification=lambda method, params: self._daemon_notification(root, method, params),
                tell=self.tell,
                on_connect=lambda: self.schedule_refresh(root),
            )
            self.workspaces[root] = state
            for note in state.notes:
                self.tell(note, True)
            if self.initialization_values is not None:
                for note in state.set_client_values(self.initialization_values):
                    self.tell(note, True)
            if self.config_supported:
                self.spawn(self.fetch_configuration(state))
            else:
                state.config_ready.set()
        return state

    async def fetch_configuration(self, state: WorkspaceState) -> None:
        """Pull the editor's "spade" settings for one root (``workspace/configuration``)."""
        try:
            result = await asyncio.wait_for(
                self.workspace_configuration_async(
                    types.ConfigurationParams(
                        items=[types.ConfigurationItem(section="spade", scope_uri=_documents.uri_of(state.root))]
                    )
                ),
                CONFIG_WAIT_S * 5,
            )
            values = result[0] if result else None
            if values is not None:
                for note in state.set_client_values(values):
                    self.tell(note, True)
        except Exception as error:  # a client that cannot answer leaves the workspace settings in force
            log.info("workspace/configuration failed: %s", error)
        finally:
            state.config_ready.set()

    def open_document(self, uri: str) -> TextDocument | None:
        document = self.workspace.text_documents.get(unquote(uri))
        return document if isinstance(document, TextDocument) else None

    def open_text_of(self, path: Path) -> str | None:
        """The editor's buffer of ``path`` when it is open."""
        for document in self.workspace.text_documents.values():
            if isinstance(document, TextDocument) and document.path and Path(document.path) == path:
                return document.source
        return None

    def open_uri_of(self, path: Path) -> str | None:
        for document in self.workspace.text_documents.values():
            if isinstance(document, TextDocument) and document.path and Path(document.path) == path:
                return document.uri
        return None

    def classify(self, uri: str, *, refresh: bool = False) -> DocumentRef | None:
        """Is the document a prompt, a sidecar module, an examples file, or not spade's? Cached until it is
        reopened."""
        if not refresh and uri in self._refs:
            return self._refs[uri]
        ref = self._classify(uri)
        self._refs[uri] = ref
        return ref

    def _classify(self, uri: str) -> DocumentRef | None:
        document = self.open_document(uri)
        language = (document.language_id or "").lower() if document is not None else ""
        path = _documents.path_of(uri)
        if path is None:  # untitled: and other schemes: text only, no history
            name = _documents.uri_name(uri)
            root = self.default_root()
            state = self.workspace_state(root)
            is_untitled = uri.startswith("untitled:")
            if language == "python" or name.endswith(".py"):
                return None
            if (is_untitled and (language in _documents.PROMPT_LANGUAGE_IDS or not language)) or _documents.matches(
                name, state.settings.prompt_globs
            ):
                return DocumentRef(uri, "prompt", None, root, None)
            return None
        root = self.root_for(path)
        state = self.workspace_state(root)
        relative = _documents.relative_to(path, root)
        if _documents.matches(relative, state.settings.prompt_globs):
            return DocumentRef(uri, "prompt", path, root, path)
        if path.name.endswith(_documents.SIDECAR_SUFFIX):
            prompt = _documents.prompt_for_sidecar(path, state.settings.prompt_globs, root)
            if prompt is not None:
                return DocumentRef(uri, "sidecar", path, root, prompt)
        if path.name.endswith(_documents.EXAMPLES_SUFFIX):
            prompt = _documents.prompt_for_examples(path, state.settings.prompt_globs, root)
            if prompt is not None:
                return DocumentRef(uri, "examples", path, root, prompt)
        return None

    def forget_classifications(self) -> None:
        """Settings or folders changed: which documents are prompts must be worked out again."""
        self._refs.clear()
        self._roots.clear()

    def forget(self, uri: str) -> None:
        self._refs.pop(uri, None)
        self._published.pop(uri, None)
        self._prepared.discard(uri)
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        for state in self.workspaces.values():
            state.forget(uri)

    def overview_of(self, ref: DocumentRef) -> PromptOverview:
        """The overview of a prompt, or of the prompt a sidecar belongs to."""
        state = self.workspace_state(ref.root)
        if ref.kind == "prompt":
            document = self.open_document(ref.uri)
            text = document.source if document is not None else None
            return state.overview(ref.uri, ref.path, text, self.open_text_of)
        assert ref.prompt is not None
        prompt_uri = self.open_uri_of(ref.prompt) or _documents.uri_of(ref.prompt)
        return state.overview(prompt_uri, ref.prompt, self.open_text_of(ref.prompt), self.open_text_of)

    def has_assistant(self, ref: DocumentRef) -> bool:
        """Whether an assistant model is configured for this prompt (it can write checks that need judgement)."""
        state = self.workspace_state(ref.root)
        text = self.open_text_of(ref.path) if ref.path is not None else None
        try:
            settings, _ = state.settings_for(text, ref.path)
        except Exception:
            return False
        return bool(settings.assistant_model)

    def view_of(self, uri: str) -> tuple[DocumentRef, TextDocument, PromptOverview] | None:
        """What a request on an open prompt or sidecar needs: what it is, its text, and its prompt's overview;
        None for a document that is not open or not spade's, and for an examples file (no overview shows in
        it: its hovers read the store directly)."""
        ref = self.classify(uri)
        document = self.open_document(uri)
        if ref is None or document is None or ref.kind == "examples":
            return None
        return ref, document, self.overview_of(ref)

    # -- diagnostics --------------------------------------------------------------------------------------

    def publish(self, uri: str) -> None:
        """Compute and send the document's diagnostics now (identical ones are not re-sent)."""
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        if self.shutting_down:
            return
        from spade_lsp_server.features import diagnostics

        ref = self.classify(uri)
        document = self.open_document(uri)
        if ref is None or document is None:
            if uri in self._published:  # no longer spade's (the settings changed): withdraw what it showed
                self.clear(uri)
            return
        started = time.perf_counter()
        try:
            items = diagnostics.diagnostics_json(self, ref, document)
        except Exception:
            log.exception("diagnostics failed for %s", uri)
            items = [diagnostics.internal_error_json()]
        if ref.kind == "prompt" and uri not in self._prepared and self.overview_of(ref).problem is None:
            self._prepared.add(uri)
            self._prepare(document.source)
        if ref.kind == "examples" and not items and uri not in self._published:
            return  # a readable examples file: nothing to say, so nothing is sent
        fingerprint = (document.version, items)
        if self._published.get(uri) == fingerprint:
            return
        self._published[uri] = fingerprint
        if ref.kind == "prompt":
            self._lenses_follow(uri, ref)
        version = f', "version": {int(document.version)}' if document.version is not None else ""
        self.protocol.notify_encoded(
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
            f'{{"uri": {json.dumps(uri)}, "diagnostics": {diagnostics.encode(items)}{version}}}',
        )
        log.info("published %d diagnostics for %s in %.1f ms", len(items), uri, (time.perf_counter() - started) * 1e3)

    def _lenses_follow(self, uri: str, ref: DocumentRef) -> None:
        """The summary lens counts what the diagnostics show: when its title changes with them, the client is
        asked to re-read the lenses at once, so the two never disagree for long."""
        from spade_lsp_server import _render

        try:
            title = _render.summary_title(self.overview_of(ref), pending=uri in self.history_pending)
        except Exception:
            return
        if self._lens_titles.get(uri) == title:
            return
        first = uri not in self._lens_titles
        self._lens_titles[uri] = title
        if not first and self.client_supports("workspace.code_lens.refresh_support"):
            self.spawn(self._refresh_lenses())

    def _prepare(self, text: str) -> None:
        """Warm the sentence splitter for this text (see :func:`spade_lsp.overview.prepare`) on the event loop,
        a few paragraphs per turn, so the first edit of a large prompt does not pay for splitting all of it and
        messages arriving meanwhile wait for one piece at most (a thread would fight the loop for the GIL)."""
        self.spawn(self._prepare_pieces(text))

    async def _prepare_pieces(self, text: str) -> None:
        from spade_lsp.overview import prepare

        for _ in prepare(text):
            await asyncio.sleep(0)
            if self.shutting_down:
                return

    def shows_diagnostics(self, uri: str) -> bool:
        """Were diagnostics published for the document (and not withdrawn since)?"""
        return uri in self._published

    def clear(self, uri: str) -> None:
        self._published.pop(uri, None)
        self.protocol.notify_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, {"uri": uri, "diagnostics": []})

    def schedule_publish(self, uri: str, delay: float = CHANGE_DEBOUNCE_S) -> None:
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self._pending[uri] = asyncio.get_running_loop().call_later(delay, self.publish, uri)

    def related_uris(self, ref: DocumentRef) -> list[str]:
        """Open documents whose view depends on this one: a prompt's sidecar, a sidecar's prompt. An examples
        file's diagnostics depend on its own text only, and the prompt's views not on it."""
        if ref.kind == "examples":
            return []
        out: list[str] = []
        for document in list(self.workspace.text_documents.values()):
            if not isinstance(document, TextDocument) or document.uri == ref.uri:
                continue
            other = self.classify(document.uri)
            if (
                other is not None
                and other.kind != "examples"
                and other.prompt is not None
                and other.prompt == ref.prompt
            ):
                out.append(document.uri)
        return out

    def refresh_root(self, root: Path) -> None:
        """The store or the files of a root changed (a job finished, a version was recorded): re-publish its
        open documents, and ask the client to refresh code lenses."""
        self._refresh_pending.discard(root)
        if self.shutting_down:
            return
        for document in list(self.workspace.text_documents.values()):
            if not isinstance(document, TextDocument):
                continue
            ref = self.classify(document.uri)
            if ref is None and document.uri in self._published:
                self.clear(document.uri)  # no longer spade's (the settings changed)
            elif ref is not None and ref.root == root:
                self.publish(document.uri)
        if self.client_supports("workspace.code_lens.refresh_support"):
            self.spawn(self._refresh_lenses())

    async def _refresh_lenses(self) -> None:
        try:
            await asyncio.wait_for(self.workspace_code_lens_refresh_async(None), 10)
        except Exception as error:
            log.info("workspace/codeLens/refresh failed: %s", error)

    def schedule_refresh(self, root: Path, delay: float = REFRESH_DEBOUNCE_S) -> None:
        if root in self._refresh_pending:
            return
        self._refresh_pending.add(root)
        asyncio.get_running_loop().call_later(delay, self.refresh_root, root)

    def _daemon_notification(self, root: Path, method: str, params: dict[str, Any]) -> None:
        """Daemon notifications arrive on the event loop; results and new versions refresh the views."""
        if method in ("job/finished", "prompt/changed"):
            self.schedule_refresh(root)
        if method == "job/finished" and params.get("kind") == "relabel" and params.get("client") == "daemon":
            result = params.get("result")
            for item in (result.get("fallbacks") if isinstance(result, dict) else None) or []:
                if isinstance(item, dict):  # the hints keep their offline labels; the log says why
                    self.tell(f"spade: {params.get('path')}: {Fallback(**item).message()}")

    async def close_all(self) -> None:
        self.shutting_down = True
        for handle in self._pending.values():
            handle.cancel()
        self._pending.clear()
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        await asyncio.gather(*(state.close() for state in self.workspaces.values()), return_exceptions=True)


def create_server() -> SpadeLanguageServer:
    """A new language server with every feature registered."""
    from spade_lsp_server.features import (
        code_actions,
        code_lens,
        commands,
        diagnostics,
        hover,
        lifecycle,
        outputs,
        symbols,
    )

    server = SpadeLanguageServer()
    for feature in (lifecycle, diagnostics, hover, code_lens, code_actions, commands, outputs, symbols):
        feature.register(server)

    @server.feature(DOCUMENT_STATE)
    def document_state(params: Any) -> dict[str, Any] | None:
        """What the server holds of an open document (its version, length and SHA-256), so a client or a test
        can check that its buffer and the server's are the same text; None when it is not open."""
        uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
        document = server.open_document(uri) if isinstance(uri, str) else None
        if document is None:
            return None
        text = document.source
        return {
            "version": document.version,
            "length": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        }

    return server

"""Start-up, settings and shutdown: ``initialize`` (workspace folders, initialization options),
``workspace/configuration`` (section "spade") and ``workspace/didChangeConfiguration``, watched settings files,
and closing the daemon links on ``shutdown``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lsprotocol import types

from spade_lsp_server import _documents
from spade_lsp_server.server import SpadeLanguageServer

_SETTINGS_FILES = ("spade.toml", "pyproject.toml")
_WATCHED = ("**/*_assertions.py", "**/*.examples.jsonl", "**/spade.toml", "**/pyproject.toml")
log = logging.getLogger(__name__)


def _folder_path(uri: str | None) -> Path | None:
    return _documents.path_of(uri) if uri else None


async def _watch_files(server: SpadeLanguageServer) -> None:
    """Ask the client to report changes to the files the views read besides open buffers: sidecar modules and
    examples edited elsewhere, and the settings files."""
    watchers = [types.FileSystemWatcher(glob_pattern=glob) for glob in _WATCHED]
    try:
        await server.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id="spade-watched-files",
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
                    )
                ]
            )
        )
    except Exception as error:  # without it, views refresh on saves and daemon notifications only
        log.info("could not register file watchers: %s", error)


def register(server: SpadeLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        folders = [_folder_path(folder.uri) for folder in params.workspace_folders or []]
        root = _folder_path(params.root_uri) or (Path(params.root_path) if params.root_path else None)
        server.folders = [f for f in folders if f is not None] or ([root] if root is not None else [])
        options = params.initialization_options
        if isinstance(options, dict):
            server.initialization_values = options.get("spade", options.get("settings", options))
        server.config_supported = server.client_supports("workspace.configuration")

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        if server.client_supports("workspace.did_change_watched_files.dynamic_registration"):
            server.spawn(_watch_files(server))

    @server.feature(types.SHUTDOWN)
    async def shutdown(*_: Any) -> None:
        await server.close_all()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        pushed = params.settings.get("spade") if isinstance(params.settings, dict) else None
        for state in list(server.workspaces.values()):
            if pushed is not None:
                for note in state.set_client_values(pushed):
                    server.tell(note, True)
            elif server.config_supported:
                await server.fetch_configuration(state)
        server.forget_classifications()
        for root in list(server.workspaces):
            server.refresh_root(root)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        removed = {_folder_path(folder.uri) for folder in params.event.removed}
        added = [_folder_path(folder.uri) for folder in params.event.added]
        server.folders = [f for f in server.folders if f not in removed] + [f for f in added if f is not None]
        server.forget_classifications()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        roots: set[Path] = set()
        for change in params.changes:
            path = _documents.path_of(change.uri)
            if path is None:
                continue
            for root, state in server.workspaces.items():
                if path.parent == root and path.name in _SETTINGS_FILES:
                    state.reload_files()
                    server.forget_classifications()
                if path == root or root in path.parents:
                    roots.add(root)
        for root in roots:
            server.schedule_refresh(root)

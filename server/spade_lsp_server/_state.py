"""Per-workspace-root state: settings, the read-only store, the daemon link and the overview cache.

The language server keeps one :class:`WorkspaceState` per root (a root is found from each file as the CLI
finds it). Overviews are cached per document on everything they depend on (the text, the sidecar's text,
the store's ``data_version`` and the effective settings), so unchanged documents cost a dictionary lookup.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from spade_lsp import (
    MAX_PROMPT_READ_BYTES,
    MAX_SIDECAR_BYTES,
    PromptKind,
    prompt_kind,
    prompt_settings_block,
    read_limited,
    read_limited_text,
    sidecar_path,
)
from spade_lsp.config import NOT_FROM_CONTENT, Settings, load_settings, resolve
from spade_lsp.errors import FrontMatterError, InputError, SpadeError
from spade_lsp.overview import PromptOverview, build_overview
from spade_lsp.store import data_version, open_readonly
from spade_lsp_server._daemon import DaemonLink, Notify, Tell

if TYPE_CHECKING:
    from spade_lsp.store import Store

log = logging.getLogger(__name__)

_SETTING_KEYS = frozenset(Settings.model_fields) - NOT_FROM_CONTENT
#: Which environment variable holds a key is never taken from the editor's settings: a repository's
#: ``.vscode/settings.json`` (or another editor's project config) can hold them, and VS Code's restricted mode
#: guards only the settings the extension declares (the models and endpoints, not these).
_KEY_VARIABLES: Final = frozenset({"api_key_env", "assistant_api_key_env"})


def _snake(key: str) -> str:
    """``promptGlobs`` / ``prompt-globs`` -> ``prompt_globs`` (editors tend to camelCase their settings)."""
    out = "".join(f"_{c.lower()}" if c.isupper() else c for c in key).replace("-", "_")
    return out.lstrip("_")


def client_overrides(values: Any) -> tuple[dict[str, Any], list[str]]:
    """The known keys of the editor's "spade" section (an extension may keep other keys there, such as the
    interpreter to run: those are only logged), and problems to show. ``null`` and ``""`` mean unset (a
    settings editor's empty text box), so ``spade.toml`` or the default decides."""
    if not isinstance(values, Mapping):
        return {}, [] if values is None else [f"spade: editor settings must be an object, not {values!r}"]
    out: dict[str, Any] = {}
    ignored: list[str] = []
    problems: list[str] = []
    for key, value in values.items():
        name = _snake(str(key))
        if name in _KEY_VARIABLES:
            if value is not None and value != "":
                problems.append(
                    f"spade: the editor setting spade.{key} is ignored: which variable holds an API key is set in "
                    f"your own config (~/.config/spade/config.toml, `{name}`) or in the spade.toml of a workspace "
                    "you trust, never in editor settings, which a repository can ship"
                )
            continue
        if name in _SETTING_KEYS:
            if value is not None and value != "":
                out[name] = list(value) if name == "prompt_globs" and isinstance(value, list | tuple) else value
        else:
            ignored.append(str(key))
    if ignored:
        log.info("editor settings that are not spade settings, ignored: %s", ", ".join(sorted(ignored)))
    return out, problems


@dataclass(slots=True)
class _CacheEntry:
    key: tuple[Any, ...]
    overview: PromptOverview


class WorkspaceState:
    """One workspace root."""

    def __init__(
        self, root: Path, *, on_notification: Notify, tell: Tell, on_connect: Callable[[], None] | None = None
    ) -> None:
        self.root = root
        self.daemon = DaemonLink(root, on_notification=on_notification, tell=tell, on_connect=on_connect)
        self.config_ready = asyncio.Event()
        self.notes: list[str] = []
        self.file_settings = self._load_file_settings()
        self.client_values: dict[str, Any] = {}
        self.settings = self.file_settings
        self._store: Store | None = None
        self._store_error: str | None = None
        self._cache: dict[str, _CacheEntry] = {}
        self._disk: dict[Path, tuple[tuple[int, int, int] | None, str | None, str | None]] = {}
        self._front_matter: dict[tuple[PromptKind, str], tuple[Settings, tuple[str, ...]]] = {}

    # -- settings ---------------------------------------------------------------------------------------

    def _load_file_settings(self) -> Settings:
        try:
            return load_settings(self.root)
        except SpadeError as error:
            self.notes.append(f"spade: {error}; using the default settings")
            return Settings()

    def set_client_values(self, values: Any) -> list[str]:
        """Apply the editor's settings (they override workspace files and front matter). Returns problems."""
        overrides, notes = client_overrides(values)
        try:
            merged = self.file_settings.merged(overrides, source="editor settings (spade)")
        except SpadeError as error:
            notes.append(f"spade: {error}; editor settings ignored")
            overrides, merged = {}, self.file_settings
        self.client_values = overrides
        self.settings = merged
        self._front_matter.clear()
        self._cache.clear()
        return notes

    def reload_files(self) -> None:
        self.file_settings = self._load_file_settings()
        self.set_client_values(self.client_values)

    def settings_for(self, text: str | None, prompt: Path | None) -> tuple[Settings, tuple[str, ...]]:
        """Settings for one prompt: workspace files, then its own settings, then the editor's settings. A prompt's
        own settings are its front matter (a Prompty file's ``model`` configuration translated, as the engine
        does), or for a message list (``.prompt.json``, ``.prompt.yaml``) the keys beside ``messages``; which
        applies depends on the file's name (``prompt``; None: an unsaved buffer, read as a plain prompt)."""
        kind = prompt_kind(prompt) if prompt is not None else "text"
        source = prompt_settings_block(text, kind)
        if source is None:
            return self.settings, ()
        cached = self._front_matter.get((kind, source))
        if cached is not None:
            return cached
        notes: tuple[str, ...] = ()
        settings = self.settings
        try:
            settings = resolve(
                self.root,
                source,
                self.client_values,
                kind=kind,
                files=self.file_settings,
                overrides_source="editor settings (spade)",
            )
        except FrontMatterError:  # the overview reports front matter that does not parse, once
            pass
        except SpadeError as error:  # shown on the prompt; the workspace's settings apply meanwhile
            notes = (str(error),)
        if len(self._front_matter) > 256:
            self._front_matter.clear()
        self._front_matter[(kind, source)] = (settings, notes)
        return settings, notes

    # -- the store ---------------------------------------------------------------------------------------

    def store(self) -> Store | None:
        """The read-only store, opened on first use and re-tried while it does not exist yet."""
        if self._store is None:
            self._store, why = open_readonly(self.root)
            if why is not None and why != self._store_error:
                log.info("the store of %s is not readable yet: %s", self.root, why)
            self._store_error = why
        return self._store

    def store_version(self) -> int | None:
        store = self.store()
        if store is None:
            return None
        version = data_version(store)
        if version is None:  # the connection broke (file replaced?): reopen next time
            self.drop_store()
        return version

    def drop_store(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            try:
                store.close()
            except Exception:
                log.debug("closing the store failed", exc_info=True)

    # -- overviews ---------------------------------------------------------------------------------------

    def sidecar_text(self, prompt: Path, open_text: Callable[[Path], str | None]) -> str | None:
        """The sidecar module's text: the editor's buffer when open, else the file (cached on its mtime). A file
        that cannot be read (not a regular file, over its size limit) counts as none, and :meth:`sidecar_problem`
        says why."""
        return self._sidecar(prompt, open_text)[0]

    def sidecar_problem(self, prompt: Path) -> str | None:
        """Why the sidecar module on disk was not read (one line), as of the last :meth:`sidecar_text`."""
        cached = self._disk.get(sidecar_path(prompt))
        return cached[2] if cached is not None else None

    def _sidecar(self, prompt: Path, open_text: Callable[[Path], str | None]) -> tuple[str | None, str | None]:
        path = sidecar_path(prompt)
        text = open_text(path)
        if text is not None:
            return text, None
        try:
            stat = os.stat(path)
            stamp: tuple[int, int, int] | None = (stat.st_mtime_ns, stat.st_size, stat.st_mode)
        except OSError:
            stamp = None
        cached = self._disk.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1], cached[2]
        content: str | None = None
        problem: str | None = None
        if stamp is not None:
            try:
                content = read_limited_text(path, limit=MAX_SIDECAR_BYTES, what="a sidecar module", errors="replace")
            except InputError as error:
                problem = str(error)
                log.warning("%s", problem)
        self._disk[path] = (stamp, content, problem)
        return content, problem

    def overview(
        self, uri: str, prompt: Path | None, text: str | None, open_text: Callable[[Path], str | None]
    ) -> PromptOverview:
        """The overview of a prompt, cached on everything it depends on."""
        unreadable: str | None = None
        if text is None and prompt is not None:
            try:  # the limit of its front matter is not known yet: read what any limit could allow, then check
                limit = max(self.settings.max_prompt_bytes, MAX_PROMPT_READ_BYTES)
                data = read_limited(prompt, limit=limit, what="a prompt", hint="raise max_prompt_bytes")
                text = data.decode("utf-8-sig", errors="replace")
            except InputError as error:
                unreadable = str(error).removeprefix(f"{prompt}: ")
        settings, notes = self.settings_for(text, prompt)
        sidecar, sidecar_problem = self._sidecar(prompt, open_text) if prompt is not None else (None, None)
        store = self.store() if prompt is not None else None
        version = self.store_version() if store is not None else None
        store = self._store if version is not None else None
        key = (text, sidecar, version, settings.max_prompt_bytes, notes, prompt, unreadable, sidecar_problem)
        entry = self._cache.get(uri)
        if entry is not None and entry.key == key:
            return entry.overview
        if unreadable is not None:  # never let the overview read the file itself
            empty = build_overview(
                None, self.root, prompt, "", read_sidecar=False, max_prompt_bytes=settings.max_prompt_bytes
            )
            overview = replace(empty, problem=unreadable)
        elif text is None:
            overview = build_overview(
                None, self.root, prompt, None, read_sidecar=False, max_prompt_bytes=settings.max_prompt_bytes
            )
        else:
            overview = build_overview(
                store,
                self.root,
                prompt,
                text,
                sidecar_text=sidecar,
                read_sidecar=False,
                max_prompt_bytes=settings.max_prompt_bytes,
            )
        if unreadable_message_list(overview, prompt):
            overview = without_instructions(overview)
        if notes:
            overview = _with_notes(overview, notes)
        if sidecar_problem is not None:  # shown on the prompt: the module is what spade could not read
            overview = replace(overview, notes=(*overview.notes, sidecar_problem))
        self._cache[uri] = _CacheEntry(key, overview)
        return overview

    def forget(self, uri: str) -> None:
        self._cache.pop(uri, None)

    async def close(self) -> None:
        await self.daemon.close()
        self.drop_store()


def _with_notes(overview: PromptOverview, notes: tuple[str, ...]) -> PromptOverview:
    """The settings' problems (each names where it is: front matter, the settings beside messages) added."""
    return replace(overview, notes=overview.notes + notes)


def unreadable_message_list(overview: PromptOverview, prompt: Path | None) -> bool:
    """A message list (``.prompt.json``, ``.prompt.yaml``) that does not parse, half-typed JSON saved on the way
    say: its text holds no messages, and its sentences would be its syntax (``[{"role": ...``)."""
    return (
        prompt is not None
        and overview.problem is None
        and not overview.messages
        and prompt_kind(prompt) == "messages"
        and bool(overview.notes)
    )


def without_instructions(overview: PromptOverview) -> PromptOverview:
    """The overview of a message list that does not parse: its note, its history and its assertions, but no
    instructions (no diagnostics, lenses or hovers on JSON syntax) until it parses again."""
    summary = replace(overview.summary, instructions=0, covered=0, uncovered=0)
    return replace(overview, instructions=(), summary=summary)

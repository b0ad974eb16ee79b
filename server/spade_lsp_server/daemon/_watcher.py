"""Watching the workspace's prompt files with watchdog, so saves made outside the editor are recorded too
(git checkout, another editor, a script).

One recursive inotify watch on the root (one inotify instance: the per-user limit on instances is small,
the limit on watches is not). Events are filtered here: only files matching the prompt globs, never under
``.git``, ``.spade``, ``node_modules`` or a virtual environment (``.venv``/``venv``, or any directory holding
``pyvenv.cfg``). Editors save by writing a temporary file and renaming it over the prompt: for a moved event
the destination is the prompt. Bursts are debounced by the daemon (:class:`Debouncer`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    FileClosedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.utils.patterns import match_any_paths

log = logging.getLogger("spade_lsp_server.daemon.watcher")

IGNORED_DIRS: Final = frozenset({".git", ".spade", ".venv", "venv", "node_modules", "__pycache__", ".hg", ".svn"})
SETTINGS_FILES: Final = frozenset({"spade.toml", "pyproject.toml"})
#: A prompt is recorded once no event came for it for this long...
DEBOUNCE_S: Final = 0.2
#: ... or this long after its first unrecorded event, whichever comes first (a file written non-stop).
MAX_DELAY_S: Final = 1.0
#: With a longer quiet period (the ``save_quiet_s`` setting), a burst is recorded at most this many quiet periods
#: after it began.
MAX_DELAY_FACTOR: Final = 5.0


def debounce_delays(save_quiet_s: float) -> dict[str, float]:
    """The debouncer's delays for the ``save_quiet_s`` setting: at least :data:`DEBOUNCE_S` (an atomic save is a
    burst of events), and the longest burst it waits for."""
    quiet = max(DEBOUNCE_S, save_quiet_s)
    return {"quiet_s": quiet, "max_delay_s": max(MAX_DELAY_S, quiet * MAX_DELAY_FACTOR)}


def is_ignored(root: Path, relative: PurePosixPath) -> bool:
    """Whether a workspace-relative file path lies in a directory the daemon never looks into."""
    directories = relative.parts[:-1]
    if any(part in IGNORED_DIRS for part in directories):
        return True
    current = root
    for part in directories:  # a virtual environment under any name
        current = current / part
        if (current / "pyvenv.cfg").exists():
            return True
    return False


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: PromptWatcher) -> None:
        super().__init__()
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory:
            return
        if event.event_type == EVENT_TYPE_MOVED:
            path = event.dest_path  # an atomic save: the temporary file renamed over the prompt
        elif event.event_type in (EVENT_TYPE_CREATED, EVENT_TYPE_MODIFIED, EVENT_TYPE_CLOSED):
            path = event.src_path
        else:
            return
        try:
            self._watcher.consider(os.fsdecode(path))
        except Exception:  # never let one bad path stop the observer thread
            log.exception("while handling %s", event)


class PromptWatcher:
    """Calls ``on_prompt(path)`` (from watchdog's thread) when a prompt file may have changed, and
    ``on_settings()`` when spade.toml or pyproject.toml at the root did."""

    def __init__(
        self,
        root: Path,
        globs: Sequence[str],
        *,
        on_prompt: Callable[[Path], None],
        on_settings: Callable[[], None],
    ) -> None:
        self.root = root
        self.globs: tuple[str, ...] = tuple(globs)
        self._on_prompt = on_prompt
        self._on_settings = on_settings
        self._observer: BaseObserver | None = None

    @property
    def running(self) -> bool:
        return self._observer is not None and self._observer.is_alive()

    def start(self) -> bool:
        """Start watching; False (logged) when the system refuses (e.g. out of inotify instances): the
        daemon still records what clients send it."""
        observer = Observer()
        try:
            observer.schedule(
                _Handler(self),
                str(self.root),
                recursive=True,
                event_filter=[FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileClosedEvent],
            )
            observer.start()
        except OSError as error:
            log.error("cannot watch %s (%s); saves made outside the editor are not recorded", self.root, error)
            return False
        self._observer = observer
        log.info("watching %s for %s", self.root, ", ".join(self.globs))
        return True

    def stop(self) -> None:
        if self._observer is None:
            return
        self._observer.stop()
        self._observer.join(timeout=5)
        self._observer = None

    def consider(self, path: str) -> None:
        try:
            relative = PurePosixPath(Path(path).relative_to(self.root).as_posix())
        except ValueError:
            return
        if len(relative.parts) == 1 and relative.name in SETTINGS_FILES:
            self._on_settings()
            return
        if self._matches(relative):
            self._on_prompt(self.root / relative)

    def wants(self, path: Path) -> bool:
        """Whether ``path`` is a prompt this watcher would record."""
        try:
            relative = PurePosixPath(path.relative_to(self.root).as_posix())
        except ValueError:
            return False
        return self._matches(relative)

    def _matches(self, relative: PurePosixPath) -> bool:
        if not match_any_paths([str(relative)], included_patterns=list(self.globs), case_sensitive=True):
            return False
        return not is_ignored(self.root, relative)


class Debouncer:
    """Coalesces a burst of events per path into one call of ``fire(path)`` on the event loop: after
    :data:`DEBOUNCE_S` of quiet, or at most :data:`MAX_DELAY_S` after the burst began."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fire: Callable[[Path], None],
        *,
        quiet_s: float = DEBOUNCE_S,
        max_delay_s: float = MAX_DELAY_S,
    ) -> None:
        self._loop = loop
        self._fire = fire
        self._quiet_s = quiet_s
        self._max_delay_s = max_delay_s
        self._pending: dict[Path, tuple[float, asyncio.TimerHandle]] = {}

    def touch_threadsafe(self, path: Path) -> None:
        """From any thread (watchdog's)."""
        self._loop.call_soon_threadsafe(self.touch, path)

    def set_delays(self, *, quiet_s: float, max_delay_s: float) -> None:
        """New delays (the ``save_quiet_s`` setting changed), for the bursts that start from now on."""
        self._quiet_s, self._max_delay_s = quiet_s, max_delay_s

    def touch(self, path: Path, *, quiet_s: float | None = None) -> None:
        """An event on ``path``; ``quiet_s`` (an editor's own quiet period) replaces the default for this one."""
        now = self._loop.time()
        first = now
        if path in self._pending:
            first, handle = self._pending[path]
            handle.cancel()
        quiet = self._quiet_s if quiet_s is None else quiet_s
        when = min(now + quiet, first + max(self._max_delay_s, quiet * MAX_DELAY_FACTOR))
        self._pending[path] = (first, self._loop.call_at(when, self._due, path))

    def _due(self, path: Path) -> None:
        self._pending.pop(path, None)
        self._fire(path)

    def cancel_all(self) -> None:
        for _, handle in self._pending.values():
            handle.cancel()
        self._pending.clear()

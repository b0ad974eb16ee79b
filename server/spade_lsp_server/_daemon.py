"""The language server's link to the workspace daemon (through ``spade_lsp_client``).

Connects on first need, never at start-up: the server shows what the store holds without a daemon. When no
daemon answers, it is started (unless ``daemon_autostart`` is false); when that fails, or the daemon dies,
the user is told once, and the next need tries again after a backoff (1 s doubling to 30 s), so a daemon
that keeps crashing is not respawned in a tight loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from spade_lsp.errors import DaemonError, DaemonUnavailableError

if TYPE_CHECKING:
    from spade_lsp_client import DaemonClient

log = logging.getLogger(__name__)

CLIENT_NAME: Final = "spade-lsp"
FIRST_BACKOFF_S: Final = 1.0
MAX_BACKOFF_S: Final = 30.0

Notify = Callable[[str, dict[str, Any]], None]
Tell = Callable[[str, bool], None]  # (message, important: show it rather than only log it)


class DaemonLink:
    """One workspace root's daemon connection, (re)made on demand."""

    def __init__(
        self, root: Path, *, on_notification: Notify, tell: Tell, on_connect: Callable[[], None] | None = None
    ) -> None:
        self.root = root
        self._on_notification = on_notification
        self._on_connect = on_connect
        self._tell = tell
        self._client: DaemonClient | None = None
        self._connecting: asyncio.Lock | None = None
        self._retry_at = 0.0
        self._backoff = FIRST_BACKOFF_S
        self._told = False  # the user has been told the daemon is unavailable (reset once it answers)
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._client is not None and self._client.connected

    async def client(self, *, start: bool, quiet: bool = False) -> DaemonClient:
        """A connected client; starts the daemon when ``start``. Raises :class:`DaemonUnavailableError`
        (``quiet``: without telling the user or backing off, for opportunistic connections)."""
        if self._closed:
            raise DaemonUnavailableError("the language server is shutting down")
        if self._client is not None and self._client.connected:
            return self._client
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._client is not None and self._client.connected:
                return self._client
            wait = self._retry_at - time.monotonic()
            if wait > 0:
                raise DaemonUnavailableError(
                    f"the spade daemon for {self.root} is not available; trying again in {wait:.0f} s"
                )
            try:
                from spade_lsp_client import DaemonClient

                client = await DaemonClient.connect(self.root, client_name=CLIENT_NAME, start=start)
            except (DaemonError, OSError, ImportError) as error:
                if not quiet:
                    self._failed(error, start=start)
                raise DaemonUnavailableError(self._reason(error, start)) from error
            self._client = client
            self._backoff = FIRST_BACKOFF_S
            self._retry_at = 0.0
            if self._told:
                self._tell(f"spade: connected to the workspace daemon for {self.root}", False)
            self._told = False
            client.subscribe(self._on_notification)
            client.on_disconnect(lambda: self._disconnected(client))
            if self._on_connect is not None:
                self._on_connect()  # the store may have changed while no daemon was connected: refresh the views
            return client

    async def attach(self, *, after_s: float = 0.0) -> None:
        """Connect to a daemon that already runs (to hear about its jobs and recordings), quietly: no daemon
        is started and nobody is told when none runs. ``after_s`` leaves the first requests after opening a
        document the loop to themselves (loading the client costs a few ms)."""
        if after_s:
            await asyncio.sleep(after_s)
        if self.connected or self._closed or (self._connecting is not None and self._connecting.locked()):
            return
        try:
            from spade_lsp_client import daemon_running

            if not daemon_running(self.root):
                return
            await self.client(start=False, quiet=True)
        except (DaemonError, OSError, ImportError) as error:
            log.info("no daemon to attach to for %s: %s", self.root, error)

    def _reason(self, error: BaseException, start: bool) -> str:
        if isinstance(error, ImportError):
            return f"the daemon client is not installed ({error})"
        if not start:
            return (
                f"no spade daemon runs for {self.root} and daemon_autostart is false; "
                f"start one with `spade daemon --workspace {self.root}` ({error})"
            )
        return f"the spade daemon for {self.root} could not be started or reached: {error}"

    def _failed(self, error: BaseException, *, start: bool) -> None:
        self._retry_at = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
        message = (
            f"spade: {self._reason(error, start)}. History and commands wait for it; it is tried again when needed."
        )
        log.warning("%s", message)
        self._tell(message, not self._told)
        self._told = True

    def _disconnected(self, client: DaemonClient) -> None:
        if self._client is not client or self._closed:
            return
        self._client = None
        message = f"spade: the workspace daemon for {self.root} stopped; it is restarted when next needed"
        log.warning("%s", message)
        self._tell(message, not self._told)
        self._told = True

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, start: bool, timeout_s: float | None = 30.0
    ) -> Any:
        client = await self.client(start=start)
        return await client.request(method, params, timeout_s=timeout_s)

    async def close(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.close()
            except Exception:  # closing a dead connection must not fail the shutdown
                log.debug("closing the daemon client failed", exc_info=True)

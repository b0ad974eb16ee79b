"""The client the language server and the CLI use to talk to the workspace daemon.

One daemon runs per workspace (``spade daemon``); it is the store's only writer and runs the job queue. See
``docs/daemon-protocol.md`` for the methods and notifications. The public surface:

- :class:`DaemonClient`: ``connect`` (spawning a daemon when none answers), ``request``, ``subscribe``,
  ``on_disconnect``, ``submit_job``, ``wait_job``, ``close``;
- :func:`ensure_daemon`, :func:`daemon_running`, :func:`socket_path`;
- :func:`run_job`: submit one job and wait for it, synchronously (the CLI);
- the errors, re-exported from :mod:`spade_lsp.errors`, and the JSON-RPC error codes.
"""

from __future__ import annotations

from spade_lsp.errors import DaemonError, DaemonUnavailableError
from spade_lsp_client._client import DaemonClient, NotQueuedError, daemon_running, ensure_daemon, run_job
from spade_lsp_client.protocol import (
    FINISHED_STATUSES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JOB_NOT_FOUND,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    SPADE_ERROR,
    socket_path,
)

__all__ = [
    "FINISHED_STATUSES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JOB_NOT_FOUND",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "SPADE_ERROR",
    "DaemonClient",
    "DaemonError",
    "DaemonUnavailableError",
    "NotQueuedError",
    "daemon_running",
    "ensure_daemon",
    "run_job",
    "socket_path",
]

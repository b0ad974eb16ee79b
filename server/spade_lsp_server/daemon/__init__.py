"""``spade daemon``: the per-workspace process that records prompt versions, runs the durable job queue and
is the only writer of the store. Clients (the language server, the CLI) reach it through
:mod:`spade_lsp_client` over ``.spade/daemon.sock``; the protocol is in ``docs/daemon-protocol.md``.

This module stays light (argparse and the lock); the server is imported only once the lock is held.
Nothing here imports pygls or lsprotocol.
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import logging.handlers
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from spade_lsp import make_private_dir
from spade_lsp_client import protocol

__all__ = ["main"]

log = logging.getLogger("spade_lsp_server.daemon")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m spade_lsp_server.daemon", description="the spade-lsp daemon of one workspace"
    )
    parser.add_argument("--root", type=Path, required=True, help="the workspace root")
    parser.add_argument(
        "--idle-timeout", type=float, metavar="S", help="exit after S seconds with no client and no job"
    )
    parser.add_argument("--foreground", action="store_true", help="log to stderr as well as .spade/daemon.log")
    return parser


def _take_lock(state: Path) -> int | None:
    """The workspace's daemon lock, held for the process's whole life (the kernel drops it when the process
    dies, even by SIGKILL); None when another daemon holds it."""
    descriptor = os.open(state / protocol.LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()}\n".encode())
    return descriptor


def _setup_logging(state: Path, *, foreground: bool) -> None:
    handler = logging.handlers.RotatingFileHandler(
        state / protocol.LOG_NAME, maxBytes=1_000_000, backupCount=3, encoding="utf-8"
    )
    handlers: list[logging.Handler] = [handler]
    if foreground:
        handlers.append(logging.StreamHandler(sys.stderr))
    formatter = logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    for each in handlers:
        each.setFormatter(formatter)
        root.addHandler(each)
    root.setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the daemon until it is stopped or idle. Exit codes: 0 stopped (or another daemon already runs for
    this workspace), 1 it could not start or crashed, 2 bad arguments."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    root = args.root.expanduser().resolve()
    if not root.is_dir():
        print(f"spade daemon: error: {root} is not a directory", file=sys.stderr)
        return 2
    if args.idle_timeout is not None and not args.idle_timeout > 0:
        print("spade daemon: error: --idle-timeout must be positive", file=sys.stderr)
        return 2
    state = protocol.state_dir(root)
    try:
        make_private_dir(state)
        lock = _take_lock(state)
    except OSError as error:
        print(f"spade daemon: error: cannot use {state}: {error}", file=sys.stderr)
        return 1
    if lock is None:
        print(f"spade daemon: a daemon already runs for {root}", file=sys.stderr)
        return 0
    _setup_logging(state, foreground=args.foreground)
    code = _serve(root, args.idle_timeout)
    if code is None:
        # A job thread is still inside the engine (a sandbox run has no checkpoint): leave without waiting
        # for it. The lock goes with the process, so no new daemon starts while this one can still write;
        # the next one requeues the job.
        logging.shutdown()
        os._exit(0)
    os.close(lock)
    logging.shutdown()
    return code


def _serve(root: Path, idle_timeout_s: float | None) -> int | None:
    """Serve until stopped; the exit code, or None when a job is still running in a thread."""
    import asyncio

    from spade_lsp.errors import SpadeError
    from spade_lsp_server.daemon._server import Daemon

    try:
        daemon = Daemon(root, idle_timeout_s=idle_timeout_s)
        asyncio.run(daemon.run())
    except SpadeError as error:
        log.error("cannot run: %s", error)
        print(f"spade daemon: error: {error}", file=sys.stderr)  # .spade/daemon.out when a client spawned it
        return 1
    except Exception as error:
        log.exception("the daemon crashed")
        print(f"spade daemon: crashed: {type(error).__name__}: {error} (see .spade/daemon.log)", file=sys.stderr)
        return 1
    return None if daemon.runner.running_jobs() else 0

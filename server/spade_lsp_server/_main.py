"""Command line of the language server: ``--stdio`` (accepted, the only transport), ``--log-level`` and
``--log-file``."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Sequence
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spade lsp", description="spade-lsp's language server, on stdio")
    parser.add_argument("--stdio", action="store_true", help="accepted for editors that pass it; stdio is the default")
    parser.add_argument("--log-file", type=Path, metavar="PATH", help="also write the server's log here")
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="what reaches stderr, which editors show as the server's output (default: warning)",
    )
    return parser


LOG_LEVELS = ("debug", "info", "warning", "error")


def _configure_logging(log_file: Path | None, level: str = "warning") -> None:
    """``level`` and above go to stderr (editors show it as the server's output); ``--log-file`` adds an INFO
    log. pygls logs every message body at INFO, so its loggers stay at WARNING whatever the level."""
    stderr_level = getattr(logging, level.upper())
    root = logging.getLogger()
    root.setLevel(min(stderr_level, logging.WARNING))
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(stderr_level)
    stderr.setFormatter(logging.Formatter("spade-lsp %(levelname)s %(name)s: %(message)s"))
    root.addHandler(stderr)
    if log_file is not None:
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as error:
            logging.getLogger(__name__).warning("cannot write the log file %s: %s", log_file, error)
        else:
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            root.addHandler(handler)
            handler.setLevel(logging.INFO)
            logging.getLogger("spade_lsp_server").setLevel(min(stderr_level, logging.INFO))
    for name in ("pygls", "pygls.protocol", "pygls.server", "pygls.feature_manager"):
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_drop_expected_errors)


def _drop_expected_errors(record: logging.LogRecord) -> bool:
    """pygls logs every failed request with its traceback; a command refusing with a message for the user
    (``expected`` on the error) is not a fault of the server and would only clutter the editor's output."""
    error = record.exc_info[1] if record.exc_info else None
    return not getattr(error, "expected", False)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments (unknown ones, such as ``--clientProcessId=N`` that some clients append, are
    ignored), then serve until the client sends ``exit``."""
    args, _unknown = _parser().parse_known_args(list(sys.argv[1:] if argv is None else argv))
    _configure_logging(args.log_file, args.log_level)
    from spade_lsp_server.server import create_server

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the protocol stream
    server = create_server()
    # Everything imported so far lives as long as the process: keep it out of the collector's full passes, which
    # would otherwise walk pygls', lsprotocol's and pydantic's objects and stall a didSave now and then.
    gc.collect()
    gc.freeze()
    server.start_io(stdin, stdout)
    return 0

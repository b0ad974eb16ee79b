"""Which workspaces the user trusts, and the user's own settings: both in the user's config directory.

A cloned repository's files (``spade.toml``, ``pyproject.toml``, a prompt's front matter, ``.vscode/settings.json``)
are its author's, not the user's. Until the user trusts the workspace, they cannot decide where a request and a
credential go, nor loosen the sandbox (:data:`spade_lsp.config.TRUSTED_ONLY`); everything else they may set.
Trusting is an explicit act (``spade trust DIR``, or the editor's *Trust this workspace*), recorded in
``$XDG_CONFIG_HOME/spade/trusted.json`` (default ``~/.config/spade``) with when and from where, listed by
``spade trust --list`` and revoked by ``spade trust --revoke DIR``. A trusted folder covers the folders below it.
The user's own settings live beside it, in ``config.toml``: they are the user's, whatever the workspace.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from spade_lsp._files import atomic_write_text, read_limited_text
from spade_lsp.errors import ConfigError

__all__ = [
    "TRUST_FILE",
    "USER_CONFIG",
    "TrustRecord",
    "config_dir",
    "is_trusted",
    "revoke",
    "trust",
    "trusted_roots",
    "user_config_path",
]

USER_CONFIG: Final = "config.toml"
TRUST_FILE: Final = "trusted.json"
_MAX_TRUST_BYTES: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class TrustRecord:
    path: str
    trusted_at: str
    by: str  # "cli" or "editor"

    def covers(self, root: Path) -> bool:
        return _real(root).is_relative_to(Path(self.path))


def config_dir() -> Path:
    """The user's spade config directory: ``$XDG_CONFIG_HOME/spade``, else ``~/.config/spade``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "spade"


def user_config_path() -> Path:
    return config_dir() / USER_CONFIG


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def trusted_roots() -> list[TrustRecord]:
    """The trusted folders, as recorded (a missing file: none; a damaged one is an error, never "all")."""
    path = config_dir() / TRUST_FILE
    if not path.exists():
        return []
    text = read_limited_text(path, limit=_MAX_TRUST_BYTES, what="the trusted workspaces file", error=ConfigError)
    try:
        data = json.loads(text)
        return [TrustRecord(str(r["path"]), str(r["trusted_at"]), str(r["by"])) for r in data["workspaces"]]
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"{path}: not a list of trusted workspaces ({error}); fix or remove it") from error


def is_trusted(root: Path) -> bool:
    """Whether the user trusts the workspace at ``root`` (or a folder above it)."""
    return any(record.covers(root) for record in trusted_roots())


def trust(root: Path, *, by: str) -> TrustRecord:
    """Record that the user trusts ``root`` (its real path): kept until revoked."""
    record = TrustRecord(str(_real(root)), datetime.now(UTC).isoformat(timespec="seconds"), by)
    records = [r for r in trusted_roots() if r.path != record.path] + [record]
    _write(records)
    return record


def revoke(root: Path) -> bool:
    """Forget the trust recorded for exactly ``root``; whether there was one."""
    real = str(_real(root))
    records = trusted_roots()
    kept = [r for r in records if r.path != real]
    if len(kept) == len(records):
        return False
    _write(kept)
    return True


def _write(records: list[TrustRecord]) -> None:
    path = config_dir() / TRUST_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    document: dict[str, Any] = {
        "workspaces": [{"path": r.path, "trusted_at": r.trusted_at, "by": r.by} for r in records]
    }
    atomic_write_text(path, json.dumps(document, indent=1) + "\n")

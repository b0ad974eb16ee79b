"""Where a workspace's store lives: light, so readers and the pytest plugin import it without sqlite-utils."""

from __future__ import annotations

from typing import Final

STORE_DIR: Final = ".spade"
STORE_FILE: Final = "spade.db"

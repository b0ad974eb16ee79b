"""The one reader of ``model.json``, the offline classifier's package data (json only: no numpy, so the
sentence head on the language server's read path never imports it)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Final

from spade_lsp.taxonomy import CATEGORY_IDS

__all__ = ["MODEL_FILE", "read_shipped"]

MODEL_FILE: Final = "model.json"


def read_shipped() -> dict[str, Any]:
    """``model.json`` as shipped in the package, checked to be trained for the taxonomy's categories."""
    doc: dict[str, Any] = json.loads(
        resources.files("spade_lsp.taxonomy").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    )
    if list(doc["categories"]) != list(CATEGORY_IDS):
        raise ValueError("model.json was trained for other categories")
    return doc

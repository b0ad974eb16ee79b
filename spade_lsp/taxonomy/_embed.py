"""Offline sentence embeddings: wordllama's 256-d token table and tokenizer, read from the installed wheel.

``WordLlama.load()`` looks for its tokenizer under ``wordllama/tokenizer/`` (the wheel ships
``wordllama/tokenizers/``) and then tries Hugging Face. Nothing here goes through it: the tokenizer file and
the safetensors weights are opened from the wheel's own directory, found without importing ``wordllama`` at all,
so no code path can reach the network. A sentence's embedding is what wordllama computes for it (the mean of its
tokens' rows, no special tokens), L2-normalised.

Loading costs about half a second, so it happens lazily, once per process, on the first call that needs a vector
(never when the language server starts); :func:`load_seconds` reports what it took.
"""

from __future__ import annotations

import importlib.util
import math
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = ["DIM", "Embedder", "embed", "embed_many", "embedder", "load_seconds", "wordllama_dir"]

DIM: Final = 256
_TOKENIZER: Final = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
_WEIGHTS: Final = Path("weights") / "l2_supercat_256.safetensors"

Vector = npt.NDArray[np.float32]


def wordllama_dir() -> Path:
    """The installed wordllama package's directory (found without importing it)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("wordllama is not installed (it is a dependency of spade-lsp)")
    return Path(next(iter(spec.submodule_search_locations)))


class Embedder:
    """wordllama's token table and tokenizer, read from local files only."""

    def __init__(self, base: Path | None = None) -> None:
        from safetensors import safe_open
        from tokenizers import Tokenizer

        base = base or wordllama_dir()
        self._tokenizer: Any = Tokenizer.from_file(str(base / _TOKENIZER))
        with safe_open(str(base / _WEIGHTS), framework="np", device="cpu") as weights:
            table = weights.get_tensor("embedding.weight")
        self._table: npt.NDArray[np.float32] = np.asarray(table, dtype=np.float32)
        self._rows = int(self._table.shape[0])
        self._zero: Vector = np.zeros(self._table.shape[1], dtype=np.float32)

    def _pool(self, ids: list[int]) -> Vector:
        if not ids:
            return self._zero
        if max(ids) >= self._rows:
            ids = [min(i, self._rows - 1) for i in ids]
        vector: Vector = np.take(self._table, ids, axis=0).sum(
            axis=0
        )  # the mean, up to a factor the normalisation removes
        norm = math.sqrt(float(vector @ vector))
        return vector / norm if norm > 0 else self._zero

    def _encode(self, texts: list[str]) -> list[Any]:
        try:
            return list(self._tokenizer.encode_batch_fast(texts, add_special_tokens=False))
        except TypeError:  # text the tokenizer refuses (a lone surrogate from an editor): replace what it refuses
            clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
            return list(self._tokenizer.encode_batch_fast(clean, add_special_tokens=False))

    def embed(self, text: str) -> Vector:
        """One text's unit-length embedding (zeros for a text with no tokens)."""
        return self._pool(self._encode([text])[0].ids)

    def embed_many(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-length embeddings of ``texts``, one row each."""
        if not texts:
            return np.zeros((0, self._table.shape[1]), dtype=np.float32)
        encodings = self._encode(list(texts))
        return np.stack([self._pool(e.ids) for e in encodings])


_LOCK = threading.Lock()
_LOAD_SECONDS: list[float] = []


@lru_cache(maxsize=1)
def _load() -> Embedder:
    started = time.perf_counter()
    model = Embedder()
    _LOAD_SECONDS.append(time.perf_counter() - started)
    return model


def embedder() -> Embedder:
    """The process's embedder, loaded on first use (thread-safe, once)."""
    with _LOCK:
        return _load()


def load_seconds() -> float | None:
    """How long loading the embedder took in this process (None before it was loaded)."""
    return _LOAD_SECONDS[-1] if _LOAD_SECONDS else None


def embed(text: str) -> Vector:
    """One text's unit-length embedding."""
    return embedder().embed(text)


def embed_many(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Unit-length embeddings of ``texts``."""
    return embedder().embed_many(texts)

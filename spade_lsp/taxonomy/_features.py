"""Features of one changed sentence, the input of the offline classifier's trained model.

A change is read as a *unit*: its new text, how it came about (added, modified or moved from a removed
sentence, with the modification's similarity) and, for a modification, its old text. Its features are

- the word-boundary rules' categories for the new text read on its own, and for the change in context
  (:mod:`spade_lsp.taxonomy._rules`);
- surface cues of the new text: directive mood, negation, numbers with units, quoted phrases, placeholders
  (and whether they are new to the delta), format nouns, quality adjectives, sequencing words, role and task
  statements, example markers, code, length; for a modification, the cues its new wording adds;
- nearest-neighbour evidence: the cosine similarity of the new text's wordllama embedding to the closest
  sentence of each category in the seed corpus (``seed_corpus.jsonl``, written from the taxonomy's
  definitions), what a modification adds to it, and how close old and new wording are in embedding space.

Nothing is fitted here; :mod:`spade_lsp.taxonomy._train` fits the weights and thresholds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Final

import numpy as np
import numpy.typing as npt

from spade_lsp._types import ChangeKind, SentenceChange
from spade_lsp.taxonomy import CATEGORY_IDS
from spade_lsp.taxonomy._cues import CUE_NAMES as _SURFACE
from spade_lsp.taxonomy._cues import cues as _cues
from spade_lsp.taxonomy._cues import plain as _plain
from spade_lsp.taxonomy._embed import DIM, embedder
from spade_lsp.taxonomy._rules import RuleClassifier, _classify_text, _is_inert, placeholders

__all__ = [
    "FEATURE_NAMES",
    "SEED_FILE",
    "Unit",
    "features",
    "is_neighbour",
    "load_seed",
    "units_of",
]

SEED_FILE: Final = "seed_corpus.jsonl"
_I: Final = re.IGNORECASE

Vector = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Unit:
    """One non-removed change of a delta, as the model reads it."""

    kind: str  # "added", "modified" or "moved"
    old: str | None
    new: str
    similarity: float
    new_data: bool  # it holds a placeholder the delta's old side did not


# --- the seed corpus and its neighbours --------------------------------------------------------------------
_NEIGHBOUR_CLASSES: Final = (*CATEGORY_IDS, "none")


def load_seed() -> list[dict[str, object]]:
    """The seed corpus shipped with the package, one item per line: ``{"text", "labels"}`` (a sentence added to
    a prompt; with ``"known_placeholders": true`` its placeholders were already in the prompt) or
    ``{"old", "new", "labels"}`` (a sentence reworded)."""
    raw = resources.files("spade_lsp.taxonomy").joinpath(SEED_FILE).read_text(encoding="utf-8")
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def is_neighbour(item: dict[str, object]) -> bool:
    """Whether a seed item is one of the neighbour set's sentences (a single sentence, its placeholders new)."""
    return isinstance(item.get("text"), str) and not item.get("known_placeholders")


@lru_cache(maxsize=1)
def _neighbours() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Embeddings of the seed corpus's single sentences (plus a zero row), and for ``np.maximum.reduceat``
    the rows grouped by class and where each class's group starts (a class with no sentence gets the zero row).
    Row ``k`` is the ``k``-th item of the seed corpus for which :func:`is_neighbour` holds."""
    texts: list[str] = []
    classes: list[list[str]] = []
    for item in load_seed():
        if is_neighbour(item):
            labels = [str(x) for x in item["labels"]] if isinstance(item["labels"], list) else []
            texts.append(str(item["text"]))
            classes.append(labels or ["none"])
    matrix = np.vstack([embedder().embed_many([_plain(t) for t in texts]), np.zeros((1, DIM), dtype=np.float32)])
    order: list[int] = []
    starts: list[int] = []
    for cls in _NEIGHBOUR_CLASSES:
        rows = [i for i, c in enumerate(classes) if cls in c] or [len(texts)]
        starts.append(len(order))
        order.extend(rows)
    return matrix, np.asarray(order, dtype=np.intp), np.asarray(starts, dtype=np.intp)


def _neighbour_sims(vector: npt.NDArray[np.float32], leave_out: int | None = None) -> Vector:
    """Per class, the cosine similarity of ``vector`` to the class's closest seed sentence; with ``leave_out``,
    that neighbour row is not in the set (a seed sentence's own row, when its features are training data: left
    in, it would be its own nearest neighbour and its label would leak into them). A class left with no
    sentence scores 0, as a class without any does."""
    matrix, order, starts = _neighbours()
    sims: npt.NDArray[np.float32] = matrix @ vector
    if leave_out is not None:
        sims = sims.copy()
        sims[leave_out] = -np.inf
    best = np.maximum.reduceat(sims[order], starts).astype(np.float64)
    out: Vector = np.where(np.isneginf(best), 0.0, best)
    return out


@dataclass(frozen=True, slots=True)
class _View:
    """One text read on its own: the rules' categories, its surface cues, its embedding and neighbours."""

    rules: Vector
    cues: Vector
    vector: npt.NDArray[np.float32]
    neighbours: Vector


@lru_cache(maxsize=65536)
def _text_view(text: str) -> _View:
    """The view of one text (cached: prompts repeat across versions)."""
    labels = _classify_text(text)
    vector = embedder().embed(_plain(text))
    return _View(
        np.array([c in labels for c in CATEGORY_IDS], dtype=np.float64),
        np.array(_cues(text), dtype=np.float64),
        vector,
        _neighbour_sims(vector),
    )


FEATURE_NAMES: Final[tuple[str, ...]] = (
    *(f"rule:{c}" for c in CATEGORY_IDS),
    *(f"rule_delta:{c}" for c in CATEGORY_IDS),
    *(f"cue:{n}" for n in _SURFACE),
    *(f"cue_added:{n}" for n in _SURFACE),
    *(f"nn:{c}" for c in _NEIGHBOUR_CLASSES),
    *(f"nn_added:{c}" for c in _NEIGHBOUR_CLASSES),
    "kind:added",
    "kind:modified",
    "kind:moved",
    "similarity",
    "embedding_similarity",
    "new_data",
    "old_data",
    "inert",
)


_PLACEHOLDER_CUE: Final = _SURFACE.index("placeholder")
_NO_NEIGHBOURS: Final = np.zeros(len(_NEIGHBOUR_CLASSES))


def features(unit: Unit, rule_labels: frozenset[str], *, leave_out: int | None = None) -> Vector:
    """The feature vector of one unit, given the rules' labels for it in context. ``leave_out``: the neighbour
    row to leave out of the nearest-neighbour evidence (a seed sentence's own row, when training on it)."""
    view = _text_view(unit.new)
    neighbours = view.neighbours if leave_out is None else _neighbour_sims(view.vector, leave_out)
    if unit.old is not None:
        old = _text_view(unit.old)
        cues_added = np.maximum(view.cues - old.cues, 0.0)
        nn_added = np.maximum(neighbours - old.neighbours, 0.0)
        emb_sim = float(view.vector @ old.vector)
        similarity = unit.similarity
    else:
        cues_added, nn_added, emb_sim, similarity = view.cues, _NO_NEIGHBOURS, 0.0, 0.0
    placeholder = view.cues[_PLACEHOLDER_CUE] > 0
    tail = (
        unit.kind == "added",
        unit.kind == "modified",
        unit.kind == "moved",
        similarity,
        emb_sim,
        unit.new_data,
        placeholder and not unit.new_data,
        _is_inert(unit.new),
    )
    return np.concatenate(
        (
            view.rules,
            np.array([c in rule_labels for c in CATEGORY_IDS], dtype=np.float64),
            view.cues,
            cues_added,
            neighbours,
            nn_added,
            np.array(tail, dtype=np.float64),
        )
    )


_RULES: Final = RuleClassifier()


def units_of(changes: Sequence[SentenceChange]) -> list[tuple[int, Unit, frozenset[str]]]:
    """The delta's non-removed changes as units: (index in ``changes``, unit, the rules' labels in context).
    A sentence moved without a change of wording (or re-chunked) is not a unit: it states nothing new."""
    rule_labels = _RULES.classify_changes(changes)
    old_names: set[str] = set()
    removed: list[str] = []
    for change in changes:
        if change.old is not None:
            old_names |= placeholders(change.old.text)
            if change.kind is ChangeKind.REMOVED and not _is_inert(change.old.text):
                removed.append(" ".join(change.old.text.split()))
    blob = "\n".join(removed)
    out: list[tuple[int, Unit, frozenset[str]]] = []
    for index, change in enumerate(changes):
        if change.kind is ChangeKind.REMOVED or change.new is None:
            continue
        new = change.new.text
        new_data = bool(placeholders(new) - old_names)
        if change.old is not None:
            sim = change.similarity if change.similarity is not None else 0.0
            unit = Unit("modified", change.old.text, new, float(sim), new_data)
        else:
            moved = _RULES._moved_from(new, removed, blob)
            if moved is not None:
                from rapidfuzz import fuzz

                if moved == " ".join(new.split()):
                    continue  # moved unchanged or re-chunked: it states nothing new, so it is no unit at all
                unit = Unit("moved", moved, new, fuzz.ratio(" ".join(new.split()), moved) / 100.0, new_data)
            else:
                unit = Unit("added", None, new, 0.0, new_data)
        out.append((index, unit, rule_labels[index]))
    return out


def sentence_unit(text: str) -> Unit:
    """A sentence read on its own, as if it had just been added."""
    return Unit("added", None, text, 0.0, bool(placeholders(text)))

"""The seed corpus as training data: a seed sentence is never its own nearest neighbour, no seed sentence is a
near-copy of a benchmark sentence, and scikit-learn is needed only to train."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spade_lsp.taxonomy import _train
from spade_lsp.taxonomy._features import FEATURE_NAMES, is_neighbour, load_seed

ROOT = Path(__file__).resolve().parents[3]
DEV = ROOT.parent / "shared" / "bench" / "taxonomy" / "dev.jsonl"
#: A seed sentence this close to a dev sentence (rapidfuzz, 0-100) is a near-copy.
NEAR_COPY = 85
#: ``token_set_ratio`` is 100 whenever one side's words are a subset of the other's, so between a sentence and a
#: one- or two-word heading ("# Task", "Instructions") it measures a shared word, not a copy: it is applied only
#: when both sides have at least this many words.
TOKEN_SET_MIN_WORDS = 3


def _norm(text: str) -> str:
    return " ".join(text.split())


def test_a_seed_sentence_is_not_its_own_nearest_neighbour() -> None:
    """Each seed sentence's ``nn:`` feature for its own class leaves its own row out: below 1 unless another
    seed sentence of that class is identical."""
    x, _ = _train.seed_matrix()
    items = load_seed()
    sentences = [(_norm(str(item["text"])), item) for item in items if is_neighbour(item)]
    checked = 0
    for row, item in zip(x, items, strict=True):
        if not is_neighbour(item):
            continue
        text = _norm(str(item["text"]))
        labels = [str(c) for c in item["labels"]] if isinstance(item["labels"], list) else []
        for cls in labels or ["none"]:
            twins = [
                t for t, other in sentences if t == text and other is not item and cls in (other["labels"] or ["none"])
            ]
            value = row[FEATURE_NAMES.index(f"nn:{cls}")]
            if twins:
                assert value == pytest.approx(1.0, abs=1e-5)
            else:
                assert value < 1.0 - 1e-5, (text, cls)
            checked += 1
    assert checked >= 100


def test_leaving_a_row_out_changes_only_the_nearest_neighbour_evidence() -> None:
    """Left in, the sentence is its own nearest neighbour (similarity 1): that is what leaving it out removes."""
    from spade_lsp.taxonomy._features import features, sentence_unit
    from spade_lsp.taxonomy._rules import _classify_text

    item = next(i for i in load_seed() if is_neighbour(i) and i["labels"])
    text, cls = str(item["text"]), str(item["labels"][0])  # type: ignore[index]
    unit = sentence_unit(text)
    kept = features(unit, _classify_text(text))
    left_out = features(unit, _classify_text(text), leave_out=0)
    nn = [i for i, n in enumerate(FEATURE_NAMES) if n.startswith("nn:")]
    assert kept[FEATURE_NAMES.index(f"nn:{cls}")] == pytest.approx(1.0, abs=1e-5)
    assert left_out[FEATURE_NAMES.index(f"nn:{cls}")] < 1.0 - 1e-5
    others = [i for i in range(len(FEATURE_NAMES)) if i not in nn]
    np.testing.assert_array_equal(kept[others], left_out[others])


def _dev_sentences() -> list[str]:
    from spade_lsp._sentences import split_sentences
    from spade_lsp.taxonomy.evaluate import texts_from_line

    out: set[str] = set()
    for line in DEV.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        before, after = texts_from_line(row)
        for text in (before, after, str(row.get("after") or "")):
            out.update(_norm(s.text) for s in split_sentences(text) if s.text.strip())
    return sorted(out)


def test_no_seed_sentence_is_a_near_copy_of_a_dev_sentence(shared_bench: Path) -> None:
    """The seed corpus is independent of the dev set: no seed sentence (a sentence, or either side of a
    rewording) is within ``NEAR_COPY`` of any sentence of a dev diff or ``after`` text, by ``ratio`` or (between
    sentences of at least ``TOKEN_SET_MIN_WORDS`` words) ``token_set_ratio``, case and punctuation ignored."""
    from rapidfuzz import fuzz, utils

    dev = [utils.default_process(s) for s in _dev_sentences()]
    dev = [d for d in dev if d]
    near: list[tuple[str, str, float]] = []
    for item in load_seed():
        for key in ("text", "old", "new"):
            if not isinstance(item.get(key), str):
                continue
            seed = utils.default_process(_norm(str(item[key])))
            for sentence in dev:
                score = fuzz.ratio(seed, sentence)
                if min(len(seed.split()), len(sentence.split())) >= TOKEN_SET_MIN_WORDS:
                    score = max(score, fuzz.token_set_ratio(seed, sentence))
                if score >= NEAR_COPY:
                    near.append((seed, sentence[:100], score))
    assert not near


def test_only_training_imports_scikit_learn() -> None:
    """No module of the package but ``_train`` imports sklearn, and there only inside a function; with sklearn
    unimportable, the runtime and even ``_train`` import fine and the shipped model classifies."""
    package = ROOT / "spade_lsp"
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n.split(".")[0] == "sklearn" for n in names):
                assert path.name == "_train.py" and path.parent.name == "taxonomy", path
                assert node.col_offset > 0, "sklearn is imported at the top of _train.py"
    code = """
import sys
sys.modules["sklearn"] = None
from spade_lsp._deltas import diff_texts
from spade_lsp.taxonomy._offline import OfflineClassifier
import spade_lsp.taxonomy._train
clf = OfflineClassifier()
print(sorted(clf.classify_changes(diff_texts("Answer briefly.", "Answer briefly. Reply in JSON."))[-1]))
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Structural/PresentationFormat" in result.stdout

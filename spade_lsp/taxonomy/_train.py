"""Fit the offline classifier's model, and measure it honestly.

    python -m spade_lsp.taxonomy._train --dev ../shared/bench/taxonomy/dev.jsonl            # figures
    python -m spade_lsp.taxonomy._train --dev ../shared/bench/taxonomy/dev.jsonl --write    # + model.json

Training data:

- the seed corpus (``seed_corpus.jsonl``, package data): sentences and small rewordings labelled per sentence,
  written from the taxonomy's definitions, not from any benchmark row;
- labelled deltas (the dev set): labels are per delta, so they are used as multiple-instance bags. A delta is
  positive for a category when at least one of its changed sentences is; its score is the maximum over them.
  For each category the model is fitted on the seed sentences, every change of the deltas without the
  category (negatives) and, for each delta with it, its *witness*: the change that scores highest. Witnesses
  start from the rules' evidence and are re-chosen by the fitted model for a few rounds (MI-SVM style, with a
  logistic regression).

Thresholds: one per category, the one that maximises that category's F1 on out-of-fold delta scores (leave one
repository out *inside* the training data), so no threshold ever sees the deltas it is applied to.

The sentence head (what :meth:`OfflineClassifier.classify_sentence` uses: a sentence read on its own, in plain
Python on the language server's read path) is fitted the same way on the same data, restricted to added
sentences and to the features a sentence shows by itself (the rules' categories and the surface cues), as a
correction on top of the rules: the cues' weights are regularised far more strongly than the rules' (see
``HEAD_RULE_SCALE``), so a cue overrides the rules only on strong, consistent evidence. Too few deltas consist
only of added sentences to calibrate its thresholds, so they maximise F1 on out-of-fold scores of the seed
corpus's sentences, which are labelled one by one.

The head is measured in the same grouped cross-validation, on its own basis: a delta's head labels are the
union over its added and modified-new sentences, scored against the gold labels without rephrasing (which a
sentence on its own never is). The rules alone and the delta model are printed on the same basis beside it.

Grouped cross-validation: leave one repository out. The held-out repository's deltas are excluded from
everything fitted: weights, witnesses and thresholds (the neighbour set is the seed corpus, which holds no
benchmark row). Everything is deterministic.

Two caveats the figures carry. The rules (features ``rule:*`` and ``rule_delta:*``) were written after reading
every dev row, so a held-out repository is not unseen by them: ``--without-rules`` prints the same evaluation
with their features zeroed, a lower bound of sorts. And the few global settings (``C``, balanced class weights,
the cue set) were chosen among a handful of variants by this grouped-CV figure, not in a nested loop.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from spade_lsp._types import ChangeKind, Position, Range, Sentence, SentenceChange
from spade_lsp.taxonomy import CATEGORY_IDS, PROMPT_REPHRASING
from spade_lsp.taxonomy._features import (
    FEATURE_NAMES,
    SEED_FILE,
    features,
    is_neighbour,
    load_seed,
    sentence_unit,
    units_of,
)
from spade_lsp.taxonomy._model import MODEL_FILE, Model, allowed
from spade_lsp.taxonomy._rules import _classify_text, placeholders
from spade_lsp.taxonomy.evaluate import Report, evaluate, texts_from_line

__all__ = ["Bag", "cross_validate", "fit", "grouped_folds", "load_bags", "main", "seed_matrix"]

#: Inverse L2 strength of each category's logistic regression.
C: Final = 1.0
#: Rounds of witness re-selection.
ROUNDS: Final = 3
#: Weight of a seed sentence relative to a dev change.
SEED_WEIGHT: Final = 1.0
#: Class weighting of each logistic regression (positives are rare: balanced keeps scores near 0.5 at the cut).
CLASS_WEIGHT: Final = "balanced"

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Bag:
    """One labelled delta: its units' features (n_units x n_features), gold labels and group."""

    x: Matrix
    labels: frozenset[str]
    group: str
    #: Whether ``x`` holds every unit of the delta (a view restricted to some units may miss a label's witness).
    complete: bool = True
    #: The delta's added sentences and the new side of its modified ones (what the sentence head is scored on).
    texts: tuple[str, ...] = ()


def _sentence(text: str) -> Sentence:
    return Sentence(text, 0, len(text), Range(Position(0, 0), Position(0, len(text))))


def seed_matrix() -> tuple[Matrix, Matrix]:
    """Seed corpus features and labels (n_items x n_categories, 0/1). A seed sentence's nearest-neighbour
    features leave its own row of the neighbour set out (leave-one-out), as for a sentence never seen."""
    from rapidfuzz import fuzz

    rows: list[Matrix] = []
    ys: list[list[float]] = []
    neighbour_row = 0
    for item in load_seed():
        labels = {str(x) for x in item["labels"]} if isinstance(item["labels"], list) else set()
        if "text" in item and item.get("known_placeholders"):
            # the sentence is added where the old version already held its placeholders: no new data
            text = str(item["text"])
            old_side = " ".join("{" + name + "}" for name in sorted(placeholders(text)))
            removed = SentenceChange(ChangeKind.REMOVED, _sentence(old_side), None)
            (_, unit, rule), *_ = units_of([removed, SentenceChange(ChangeKind.ADDED, None, _sentence(text))])
            rows.append(features(unit, rule))
        elif "text" in item:
            # a sentence of the neighbour set: its own row is left out of its neighbours (else it is its own
            # nearest neighbour, at similarity 1, and its label leaks into its features)
            text = str(item["text"])
            own = neighbour_row if is_neighbour(item) else None
            rows.append(features(sentence_unit(text), _classify_text(text), leave_out=own))
            neighbour_row += own is not None
        else:
            old, new = str(item["old"]), str(item["new"])
            sim = fuzz.ratio(old, new) / 100.0
            change = SentenceChange(ChangeKind.MODIFIED, _sentence(old), _sentence(new), sim)
            ((_, unit, rule),) = units_of([change])
            rows.append(features(unit, rule))
        ys.append([1.0 if c in labels else 0.0 for c in CATEGORY_IDS])
    return np.stack(rows), np.asarray(ys)


def load_bags(path: Path) -> list[Bag]:
    """The labelled deltas of a ``spade taxonomy`` JSONL file with ``labels`` and ``repo`` on every line."""
    from spade_lsp._deltas import diff_texts

    bags: list[Bag] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        before, after = texts_from_line(row)
        changes = diff_texts(before, after)
        units = units_of(changes)
        x = np.stack([features(u, r) for _, u, r in units]) if units else np.zeros((0, len(FEATURE_NAMES)))
        texts = tuple(c.new.text for c in changes if c.kind is not ChangeKind.REMOVED and c.new is not None)
        bags.append(Bag(x, frozenset(str(c) for c in row["labels"]), str(row.get("repo", "")), texts=texts))
    return bags


def grouped_folds(groups: Sequence[str]) -> Iterator[tuple[str, list[int], list[int]]]:
    """Leave one group out: (group, train indices, test indices), groups in sorted order."""
    for group in sorted(set(groups)):
        train = [i for i, g in enumerate(groups) if g != group]
        test = [i for i, g in enumerate(groups) if g == group]
        yield group, train, test


def _fit_lr(x: Matrix, y: Matrix, w: Matrix) -> tuple[Matrix, float]:
    from sklearn.linear_model import LogisticRegression

    if y.min() == y.max():  # one class only: a constant score
        return np.zeros(x.shape[1]), (8.0 if y[0] > 0 else -8.0)
    lr = LogisticRegression(C=C, max_iter=2000, solver="lbfgs", class_weight=CLASS_WEIGHT)
    lr.fit(x, y, sample_weight=w)
    return np.asarray(lr.coef_[0], dtype=np.float64), float(lr.intercept_[0])


def _prob(x: Matrix, coef: Matrix, bias: float) -> Matrix:
    out: Matrix = 1.0 / (1.0 + np.exp(-np.clip(x @ coef + bias, -30.0, 30.0)))
    return out


def _column(names: Sequence[str], name: str) -> Matrix | None:
    return None if name not in names else np.eye(len(names))[list(names).index(name)]


def _fit_weights(
    bags: Sequence[Bag], seed: tuple[Matrix, Matrix], names: Sequence[str] = FEATURE_NAMES
) -> tuple[Matrix, Matrix]:
    """Per-category weights and intercepts from the seed corpus and the bags (multiple-instance)."""
    sx, sy = seed
    weights = np.zeros((len(names), len(CATEGORY_IDS)))
    bias = np.zeros(len(CATEGORY_IDS))
    for j, cat in enumerate(CATEGORY_IDS):
        negatives = [b.x for b in bags if cat not in b.labels and len(b.x)]
        # a witness shows the evidence its category needs (EVIDENCE); a delta none of whose units does cannot
        # be predicted as that category, so it teaches nothing about it
        positives = [b.x[allowed(names, b.x)[:, j]] for b in bags if cat in b.labels and len(b.x) and b.complete]
        positives = [p for p in positives if len(p)]
        neg = np.concatenate(negatives) if negatives else np.zeros((0, len(names)))
        # first witnesses: the rules' evidence in context, then on its own, then the nearest seed sentence
        prior = np.zeros(len(names))
        for name, weight in ((f"rule_delta:{cat}", 2.0), (f"rule:{cat}", 1.0), (f"nn:{cat}", 0.1)):
            column = _column(names, name)
            if column is not None:
                prior += weight * column
        witness = [int(np.argmax(p @ prior)) for p in positives]
        coef, b0 = np.zeros(len(names)), 0.0
        for _ in range(ROUNDS):
            pos = np.stack([p[k] for p, k in zip(positives, witness, strict=True)]) if positives else neg[:0]
            x = np.concatenate([sx, neg, pos])
            y = np.concatenate([sy[:, j], np.zeros(len(neg)), np.ones(len(pos))])
            w = np.concatenate([np.full(len(sx), SEED_WEIGHT), np.ones(len(neg) + len(pos))])
            coef, b0 = _fit_lr(x, y, w)
            new_witness = [int(np.argmax(_prob(p, coef, b0))) for p in positives]
            if new_witness == witness:
                break
            witness = new_witness
        weights[:, j], bias[j] = coef, b0
    return weights, bias


def _delta_scores(bags: Sequence[Bag], weights: Matrix, bias: Matrix, names: Sequence[str] = FEATURE_NAMES) -> Matrix:
    """Each delta's score per category: the maximum over its units (0 for a delta with none), as
    :meth:`Model.probabilities` scores a unit (0 without the evidence the category needs)."""
    out = np.zeros((len(bags), len(CATEGORY_IDS)))
    for i, bag in enumerate(bags):
        if len(bag.x):
            out[i] = Model(tuple(names), weights, bias, np.zeros(len(CATEGORY_IDS))).probabilities(bag.x).max(axis=0)
    return out


def _best_threshold(scores: Matrix, gold: Matrix) -> float:
    """The threshold that maximises F1 of ``scores >= t`` against ``gold``; among ties the middle of the widest
    run of equally good cut points (0.5 when the category never occurs)."""
    if gold.sum() == 0:
        return 0.5
    cuts = np.unique(np.concatenate([scores, [0.0, 1.0]]))
    candidates = (cuts[:-1] + cuts[1:]) / 2.0
    f1s = []
    for t in candidates:
        pred = scores >= t
        tp = float((pred & (gold > 0)).sum())
        fp = float((pred & (gold == 0)).sum())
        fn = float((~pred & (gold > 0)).sum())
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    best = max(f1s)
    good = [i for i, f in enumerate(f1s) if f >= best - 1e-12]
    # the widest contiguous run of best cut points, then its middle
    runs: list[list[int]] = [[good[0]]]
    for i in good[1:]:
        if i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    run = max(runs, key=lambda r: (float(cuts[r[-1] + 1] - cuts[r[0]]), -r[0]))
    return float((cuts[run[0]] + cuts[run[-1] + 1]) / 2.0)


def _gold(bags: Sequence[Bag]) -> Matrix:
    return np.asarray([[1.0 if c in b.labels else 0.0 for c in CATEGORY_IDS] for b in bags])


def fit(
    bags: Sequence[Bag],
    seed: tuple[Matrix, Matrix],
    names: Sequence[str] = FEATURE_NAMES,
    *,
    calibrate: bool = True,
) -> tuple[Model, Matrix]:
    """The model fitted on ``bags`` (and the seed corpus), with thresholds calibrated on out-of-fold scores
    (leave one group out within ``bags``); also returns those out-of-fold delta scores. Without ``calibrate``
    every threshold is 0.5 (the balanced logistic regression's own cut) and nothing is scored out of fold."""
    groups = [b.group for b in bags]
    oof = np.zeros((len(bags), len(CATEGORY_IDS)))
    if not calibrate:
        weights, bias = _fit_weights(bags, seed, names)
        return Model(tuple(names), weights, bias, np.full(len(CATEGORY_IDS), 0.5)), oof
    for _, train, test in grouped_folds(groups):
        w, b = _fit_weights([bags[i] for i in train], seed, names)
        oof[test] = _delta_scores([bags[i] for i in test], w, b, names)
    gold = _gold(bags)
    thresholds = np.array([_best_threshold(oof[:, j], gold[:, j]) for j in range(len(CATEGORY_IDS))])
    weights, bias = _fit_weights(bags, seed, names)
    return Model(tuple(names), weights, bias, thresholds), oof


#: The sentence head's features: what a sentence read on its own shows (no embedding, no context).
SENTENCE_FEATURES: Final = tuple(n for n in FEATURE_NAMES if n.startswith(("rule:", "cue:")))


def sentence_view(bags: Sequence[Bag], seed: tuple[Matrix, Matrix]) -> tuple[list[Bag], tuple[Matrix, Matrix]]:
    """The data as the sentence head sees it: added sentences only (whose placeholders are new), their
    own-text features only. A delta with other changes is incomplete: it gives negatives, never a witness."""
    cols = [FEATURE_NAMES.index(n) for n in SENTENCE_FEATURES]
    added, old_data = FEATURE_NAMES.index("kind:added"), FEATURE_NAMES.index("old_data")

    def keep(x: Matrix) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = (x[:, added] == 1.0) & (x[:, old_data] == 0.0)
        return out

    view = [Bag(b.x[keep(b.x)][:, cols], b.labels - {PROMPT_REPHRASING}, b.group, bool(keep(b.x).all())) for b in bags]
    sx, sy = seed
    rows = keep(sx)
    sy = sy[rows].copy()
    sy[:, CATEGORY_IDS.index(PROMPT_REPHRASING)] = 0.0
    return view, (sx[rows][:, cols], sy)


#: The sentence head is a correction on top of the rules: its rule features are scaled up and its cue features
#: down before fitting (for an L2-penalised regression, scaling a feature by s divides its penalty by s**2), so a
#: cue needs strong, consistent evidence to override the rules; the weights are scaled back afterwards.
HEAD_RULE_SCALE: Final = 10.0
HEAD_CUE_SCALE: Final = 0.1
#: Folds of the seed corpus on which the head's thresholds are calibrated out of fold.
HEAD_SEED_FOLDS: Final = 5


def _fit_head_weights(bags: Sequence[Bag], seed: tuple[Matrix, Matrix]) -> tuple[Matrix, Matrix]:
    sx, sy = seed
    scale = np.where(np.char.startswith(np.asarray(SENTENCE_FEATURES), "rule:"), HEAD_RULE_SCALE, HEAD_CUE_SCALE)
    scaled = [Bag(b.x * scale, b.labels, b.group, b.complete) for b in bags]
    weights, bias = _fit_weights(scaled, (sx * scale, sy), SENTENCE_FEATURES)
    return weights * scale[:, np.newaxis], bias


def fit_head(bags: Sequence[Bag], seed: tuple[Matrix, Matrix]) -> Model:
    """The sentence head fitted on ``bags`` and the seed corpus (added sentences, their own-text features). Its
    thresholds maximise each category's F1 on out-of-fold scores of the seed corpus's sentences (labelled one by
    one, unlike the deltas), each fold scored by a head fitted on the other folds and ``bags``."""
    view, (sx, sy) = sentence_view(bags, seed)
    weights, bias = _fit_head_weights(view, (sx, sy))
    oof = np.zeros_like(sy)
    fold = np.arange(len(sx)) % HEAD_SEED_FOLDS
    for k in range(HEAD_SEED_FOLDS):
        w, b = _fit_head_weights(view, (sx[fold != k], sy[fold != k]))
        oof[fold == k] = 1.0 / (1.0 + np.exp(-np.clip(sx[fold == k] @ w + b, -30.0, 30.0)))
    thresholds = np.array([_best_threshold(oof[:, j], sy[:, j]) for j in range(len(CATEGORY_IDS))])
    return Model(SENTENCE_FEATURES, weights, bias, thresholds)


#: What a sentence read on its own can be labelled with: every category but a rephrasing.
HEAD_CATEGORIES: Final = tuple(c for c in CATEGORY_IDS if c != PROMPT_REPHRASING)


def by_sentence(bags: Sequence[Bag], label: Callable[[str], frozenset[str]]) -> list[frozenset[str]]:
    """Each delta's labels as the union of ``label`` over its added and modified-new sentences."""
    return [frozenset().union(*(label(text) for text in bag.texts)) for bag in bags]


def sentence_basis(bags: Sequence[Bag], predicted: Sequence[frozenset[str]]) -> Report:
    """``predicted`` scored as the sentence head is: against the gold labels without rephrasing."""
    rows = [(p - {PROMPT_REPHRASING}, b.labels - {PROMPT_REPHRASING}) for p, b in zip(predicted, bags, strict=True)]
    return evaluate(rows, HEAD_CATEGORIES)


def head_cross_validate(bags: Sequence[Bag], seed: tuple[Matrix, Matrix]) -> tuple[Report, list[frozenset[str]]]:
    """Leave-one-repository-out: for each held-out repository a sentence head fitted on the others (and the seed
    corpus) labels its deltas' sentences, in plain Python, exactly as the read path does."""
    from spade_lsp.taxonomy._offline import _Head

    predicted: list[frozenset[str]] = [frozenset()] * len(bags)
    for _, train, test in grouped_folds([b.group for b in bags]):
        head = _Head.from_dict(fit_head([bags[i] for i in train], seed).to_dict())
        for i, labels in zip(test, by_sentence([bags[i] for i in test], head.labels), strict=True):
            predicted[i] = labels
    return sentence_basis(bags, predicted), predicted


def rules_by_sentence(bags: Sequence[Bag]) -> Report:
    """The rules alone (:func:`_classify_text` on each sentence), on the sentence head's basis."""
    return sentence_basis(bags, by_sentence(bags, _classify_text))


def _predict(model: Model, bags: Sequence[Bag]) -> list[frozenset[str]]:
    scores = _delta_scores(bags, model.weights, model.bias, model.feature_names)
    return model.labels(scores)


def cross_validate(bags: Sequence[Bag], seed: tuple[Matrix, Matrix]) -> tuple[Report, list[frozenset[str]]]:
    """Leave-one-repository-out predictions for every delta, and their score. For each held-out repository a
    model is fitted (weights, witnesses and thresholds, the latter on an inner leave-one-repository-out) on the
    other repositories only."""
    predicted: list[frozenset[str]] = [frozenset()] * len(bags)
    for _, train, test in grouped_folds([b.group for b in bags]):
        model, _ = fit([bags[i] for i in train], seed)
        for i, labels in zip(test, _predict(model, [bags[i] for i in test]), strict=True):
            predicted[i] = labels
    return evaluate([(p, b.labels) for p, b in zip(predicted, bags, strict=True)]), predicted


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def without_rules(bags: Sequence[Bag], seed: tuple[Matrix, Matrix]) -> tuple[list[Bag], tuple[Matrix, Matrix]]:
    """The same data with the rules' features zeroed (an ablation: the rules were written after reading the dev
    set, so a score that leans on them is optimistic even under grouped cross-validation)."""
    cols = [i for i, name in enumerate(FEATURE_NAMES) if name.startswith(("rule:", "rule_delta:"))]

    def masked(x: Matrix) -> Matrix:
        out = x.copy()
        out[:, cols] = 0.0
        return out

    return [Bag(masked(b.x), b.labels, b.group, texts=b.texts) for b in bags], (masked(seed[0]), seed[1])


def meta_for(dev: Path) -> dict[str, Any]:
    """What the shipped model was trained from (recorded in ``model.json``)."""
    seed_bytes = resources.files("spade_lsp.taxonomy").joinpath(SEED_FILE).read_bytes()
    return {
        "trained_by": "python -m spade_lsp.taxonomy._train --dev DEV --write",
        "seed_corpus_sha256": _sha(seed_bytes),
        "dev_sha256": _sha(dev.read_bytes()),
        "C": C,
        "class_weight": CLASS_WEIGHT,
        "rounds": ROUNDS,
    }


def build(dev: Path) -> tuple[Model, Model]:
    """The shipped models, fitted on the seed corpus and all of ``dev``: the delta model and the sentence head."""
    bags, seed = load_bags(dev), seed_matrix()
    return _build(bags, seed)


def _build(bags: Sequence[Bag], seed: tuple[Matrix, Matrix]) -> tuple[Model, Model]:
    model, _ = fit(bags, seed)
    # too few deltas made only of added sentences (22 of 62 in the dev set) to calibrate the head's thresholds
    return model, fit_head(bags, seed)


def shipped_json(model: Model, sentence: Model, meta: dict[str, Any]) -> str:
    """The text of ``model.json`` (stable formatting, so a rebuild is byte-identical)."""
    doc = {"categories": list(CATEGORY_IDS), "delta": model.to_dict(), "sentence": sentence.to_dict(), "meta": meta}
    return json.dumps(doc, indent=1) + "\n"


def model_path() -> Path:
    """Where the shipped model lives (package data)."""
    return Path(__file__).with_name(MODEL_FILE)


def _print_report(title: str, report: Report) -> None:
    print(f"\n{title}\n{report.table()}")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the grouped-CV and in-sample figures; with ``--write``, write the model fitted on all deltas."""
    parser = argparse.ArgumentParser(prog="python -m spade_lsp.taxonomy._train", description=__doc__.split("\n")[0])
    parser.add_argument("--dev", type=Path, required=True, help="labelled deltas (JSONL with repo and labels)")
    parser.add_argument("--write", action="store_true", help=f"write the model fitted on all deltas to {MODEL_FILE}")
    parser.add_argument("--no-cv", action="store_true", help="skip the grouped cross-validation")
    parser.add_argument("--without-rules", action="store_true", help="ablation: zero the rules' features")
    args = parser.parse_args(argv)
    bags = load_bags(args.dev)
    seed = seed_matrix()
    if args.without_rules:
        if args.write:
            parser.error("--without-rules is an ablation; it never writes the shipped model")
        bags, seed = without_rules(bags, seed)
    variant = " (ablation: without the rules' features)" if args.without_rules else ""
    groups = len({b.group for b in bags})
    if not args.no_cv:
        report, predicted = cross_validate(bags, seed)
        _print_report(
            f"grouped CV{variant}: leave one repository out, {groups} repositories, {len(bags)} deltas", report
        )
        head, _ = head_cross_validate(bags, seed)
        rules = rules_by_sentence(bags)
        delta = sentence_basis(bags, predicted)
        basis = "union over added and modified-new sentences, gold without rephrasing"
        _print_report(f"sentence head, grouped CV{variant} ({basis})", head)
        _print_report(f"rules alone ({basis})", rules)
        _print_report(f"delta model, grouped CV{variant}, without rephrasing", delta)
        print(
            "\nsentence basis, micro/macro F1: "
            + ", ".join(
                f"{name} {r.micro_f1:.3f}/{r.macro_f1:.3f}"
                for name, r in (("head", head), ("rules", rules), ("delta", delta))
            )
        )
    model, sentence = _build(bags, seed)
    in_sample = evaluate([(p, b.labels) for p, b in zip(_predict(model, bags), bags, strict=True)])
    _print_report(f"in-sample{variant}: fitted on all {len(bags)} deltas and the seed corpus", in_sample)
    pairs = zip(CATEGORY_IDS, model.thresholds, strict=True)
    print("thresholds: " + ", ".join(f"{c.split('/')[1]}={t:.3f}" for c, t in pairs))
    if args.write:
        model_path().write_text(shipped_json(model, sentence, meta_for(args.dev)), encoding="utf-8")
        print(f"wrote {model_path()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

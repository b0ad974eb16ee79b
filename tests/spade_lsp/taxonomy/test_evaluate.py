"""Scoring over (delta, category) pairs, checked against hand-computed values; the contract line reader."""

from __future__ import annotations

import pytest

from spade_lsp.errors import InputError
from spade_lsp.taxonomy import COUNT, EXCLUSION, INCLUSION
from spade_lsp.taxonomy.evaluate import evaluate, texts_from_line


def test_hand_computed_scores() -> None:
    rows = [
        ({INCLUSION, COUNT}, {INCLUSION}),  # INCLUSION tp, COUNT fp
        ({EXCLUSION}, {EXCLUSION, COUNT}),  # EXCLUSION tp, COUNT fn
        (set(), {INCLUSION}),  # INCLUSION fn
    ]
    report = evaluate(rows)
    # Totals: tp 2, fp 1, fn 2 -> P 2/3, R 1/2, F1 = 2*(2/3)*(1/2)/(2/3+1/2) = 4/7.
    assert report.micro_precision == pytest.approx(2 / 3)
    assert report.micro_recall == pytest.approx(1 / 2)
    assert report.micro_f1 == pytest.approx(4 / 7)
    by = {s.category: s for s in report.per_category}
    # INCLUSION: tp 1, fn 1 -> P 1, R 1/2, F1 2/3.  EXCLUSION: 1.  COUNT: tp 0 -> 0.
    assert by[INCLUSION].f1 == pytest.approx(2 / 3)
    assert by[INCLUSION].support == 2
    assert by[EXCLUSION].f1 == pytest.approx(1.0)
    assert (by[COUNT].tp, by[COUNT].fp, by[COUNT].fn, by[COUNT].f1) == (0, 1, 1, 0.0)
    # Macro over the three categories that occur: (2/3 + 1 + 0) / 3 = 5/9.
    assert report.macro_f1 == pytest.approx(5 / 9)
    assert report.n_deltas == 3
    assert "micro" in report.table()


def test_perfect_and_empty() -> None:
    assert evaluate([({INCLUSION}, {INCLUSION})]).micro_f1 == 1.0
    empty = evaluate([(set(), set())])
    assert (empty.micro_f1, empty.macro_f1) == (0.0, 0.0)


def test_unknown_labels_are_scored_too() -> None:
    report = evaluate([({"Other/Thing"}, set())])
    assert report.per_category[-1].category == "Other/Thing"
    assert report.micro_precision == 0.0


def test_texts_from_diff() -> None:
    diff = "  Summarize {text}.\n- Be brief.\n+ Be concise.\n+ \n  Thanks"
    assert texts_from_line({"diff": diff}) == (
        "Summarize {text}.\nBe brief.\nThanks",
        "Summarize {text}.\nBe concise.\n\nThanks",
    )


def test_texts_from_before_after() -> None:
    assert texts_from_line({"before": "a", "after": "b"}) == ("a", "b")


@pytest.mark.parametrize("obj", [{}, {"before": "a"}, {"after": "b"}, {"diff": 3}, {"before": 1, "after": "b"}])
def test_bad_lines_raise_input_error(obj: dict[str, object]) -> None:
    with pytest.raises(InputError):
        texts_from_line(obj)


def test_bad_diff_prefix_is_reported_with_its_line() -> None:
    with pytest.raises(InputError, match="line 2"):
        texts_from_line({"diff": "  ok\n* bad"})

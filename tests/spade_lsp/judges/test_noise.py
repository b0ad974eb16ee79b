"""Judge noise: variance components computed by hand from the formulas in docs/judges.md, the edge cases that
leave a component inestimable, the resampling driver with a fake judge and with a real LLM judge (litellm
against the scripted stub), and the fixed outputs taken from the examples or from a stored sampling run."""

from __future__ import annotations

import json
import math
import statistics
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.config import resolve_file
from spade_lsp.errors import InputError
from spade_lsp.judges import JudgeItem, Question, Scale, ask_many
from spade_lsp.judges._noise import group_by_context, measure_noise, noise_items, noise_report
from spade_lsp.llm import LiteLLMClient
from spade_lsp.reliability import SampleOptions, rate, sample_prompt
from spade_lsp.store import Store
from spade_lsp.workspace import Workspace
from tests.support.blurb import EXAMPLES, SAMPLING_SIDECAR, V3, CheapEveryFourth, examples_jsonl
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text
from tests.support.sampling import with_knobs

Z95 = 1.959963984540054


def _close(actual: float | None, expected: float) -> bool:
    return actual is not None and math.isclose(actual, expected, abs_tol=2e-6)


# -- noise_report -------------------------------------------------------------------------------------------


def test_balanced_pass_indicators_split_into_judge_and_generator_variance() -> None:
    scores = [
        [[1, 1, 1], [0, 1, 0]],  # input A: a steady output and a flipping one
        [[1, 0, 1], [0, 0, 0]],  # input B: likewise
    ]
    report = noise_report(scores, confidence=0.95)
    # within-output variances (n - 1 = 2): 0, 1/3, 1/3, 0 -> judge variance 1/6
    judge = (0 + 1 / 3 + 1 / 3 + 0) / 4
    # output means: A 1 and 1/3, B 2/3 and 0; variance of two means = (difference)^2 / 2 = 2/9 for both inputs
    between = ((1 - 1 / 3) ** 2 / 2 + (2 / 3 - 0) ** 2 / 2) / 2
    generator = between - judge * (1 / 3)  # each mean averages 3 resamples: judge variance / 3 of its spread
    assert _close(report["judge_variance"], judge) and _close(judge, 1 / 6)
    assert _close(report["between_output_variance"], between)
    assert _close(report["generator_variance"], generator) and _close(generator, 1 / 6)
    assert _close(report["total_variance"], 1 / 3)
    assert report["judge_share"] == report["generator_share"] == 0.5
    assert (report["judge_df"], report["generator_df"]) == (8, 2)
    assert report["flipped"] == [[0, 1], [1, 0]]
    assert report["flip_rate"] == rate(2, 4, confidence=0.95).to_json()
    assert _close(report["pairwise_agreement"], (1 + 1 / 3 + 1 / 3 + 1) / 4)  # 0,1,0: one agreeing pair of 3
    assert report["binary"] is True
    pass_rate = report["pass_rate"]
    assert pass_rate["rate"] == 0.5  # mean of the output means 1, 1/3, 2/3, 0
    assert _close(pass_rate["judge_se"], math.sqrt(judge / 4))
    assert _close(pass_rate["ci_low"], 0.5 - Z95 * math.sqrt(judge / 4))
    assert _close(pass_rate["ci_high"], 0.5 + Z95 * math.sqrt(judge / 4))
    assert _close(report["mean_score"]["judge_se_of_mean"], math.sqrt(judge / 3 / 4))
    assert (report["inputs"], report["outputs"], report["resamples"], report["scores"], report["missing"]) == (
        2,
        4,
        3,
        12,
        0,
    )
    assert report["notes"] == []


def test_unbalanced_scores_with_missing_answers_single_outputs_and_single_resamples() -> None:
    scores: list[list[list[float | None]]] = [
        [[4, 5, None], [2, None, None], [3, 3, 3]],  # input A: three outputs, one with one valid resample
        [[5, 1, 3]],  # input B: one output, so no generator variance from it
        [[None, None]],  # input C: nothing usable
    ]
    report = noise_report(scores, confidence=0.95)
    judge = (statistics.variance([4, 5]) + statistics.variance([3, 3, 3]) + statistics.variance([5, 1, 3])) / 3
    assert _close(judge, 1.5) and _close(report["judge_variance"], judge)
    means = [4.5, 2.0, 3.0]  # input A's outputs, over their valid resamples
    between = statistics.variance(means)
    generator = between - judge * (1 / 2 + 1 / 1 + 1 / 3) / 3
    assert _close(report["between_output_variance"], between)
    assert _close(report["generator_variance"], generator) and _close(generator, 2 / 3)
    assert _close(report["total_variance"], judge + generator)
    assert _close(report["judge_share"], judge / (judge + generator))
    assert (report["judge_df"], report["generator_df"]) == (1 + 2 + 2, 2)
    assert (report["outputs"], report["outputs_scored"], report["outputs_resampled"]) == (5, 4, 3)
    assert (report["scores"], report["missing"], report["inputs_with_several_outputs"]) == (9, 5, 1)
    assert report["flipped"] == [[0, 0], [1, 0]] and report["flip_rate"]["trials"] == 3
    assert _close(report["pairwise_agreement"], (0 + 1 + 0) / 3)
    assert report["binary"] is False and report["pass_rate"] is None
    mean = report["mean_score"]
    assert _close(mean["value"], (4.5 + 2 + 3 + 3) / 4)
    assert _close(mean["judge_se"], math.sqrt(judge / 4))
    assert _close(mean["judge_se_of_mean"], math.sqrt(judge * (1 / 2 + 1 + 1 / 3 + 1 / 3) / 4 / 4))


def test_a_judge_noisier_than_the_outputs_differ_floors_the_generator_variance_at_zero() -> None:
    report = noise_report([[[1, 0, 1, 0], [0, 1, 0, 1]]], confidence=0.95)  # equal means: all spread is the judge's
    assert report["between_output_variance"] == 0.0 and report["generator_variance"] == 0.0
    assert _close(report["judge_variance"], 1 / 3) and report["judge_share"] == 1.0
    assert any("accounts for all the spread" in note for note in report["notes"])


def test_components_that_cannot_be_estimated_are_none_with_a_note() -> None:
    one_output_each = noise_report([[[1, 1, 0]], [[0, 0, 0]]], confidence=0.95)
    assert _close(one_output_each["judge_variance"], 1 / 6)
    assert one_output_each["generator_variance"] is None and one_output_each["total_variance"] is None
    assert one_output_each["judge_share"] is None
    assert any("no input has two scored outputs" in note for note in one_output_each["notes"])

    one_resample_each = noise_report([[[1], [0], [1]]], confidence=0.95)
    assert one_resample_each["judge_variance"] is None and one_resample_each["generator_variance"] is None
    assert _close(one_resample_each["between_output_variance"], 1 / 3)
    assert one_resample_each["flip_rate"]["trials"] == 0 and one_resample_each["pairwise_agreement"] is None
    assert one_resample_each["pass_rate"] == {"rate": 0.666667, "judge_se": None, "ci_low": None, "ci_high": None}

    empties: list[list[list[list[float | None]]]] = [[], [[[None, None], [None]]], [[]]]
    for empty in empties:
        report = noise_report(empty, confidence=0.95)
        assert report["judge_variance"] is None and report["generator_variance"] is None
        assert report["flip_rate"] == {"successes": 0, "trials": 0, "rate": None, "ci_low": None, "ci_high": None}
        assert report["pass_rate"] is None and report["binary"] is False and report["scores"] == 0
        assert report["mean_score"]["value"] is None

    constant = noise_report([[[1, 1], [1, 1]]], confidence=0.95)
    assert constant["total_variance"] == 0.0 and constant["judge_share"] is None


def test_scores_are_checked() -> None:
    assert noise_report([[[True, False, float("nan")]]], confidence=0.95)["scores"] == 2  # NaN is a missing answer
    with pytest.raises(ValueError, match=r"scores\[0\]\[0\]\[1\]"):
        noise_report([[[1, "yes"]]], confidence=0.95)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="finite"):
        noise_report([[[1, float("inf")]]], confidence=0.95)
    with pytest.raises(ValueError, match="confidence"):
        noise_report([[[1, 0]]], confidence=1.0)


# -- measure_noise --------------------------------------------------------------------------------------------


def _item(identifier: str, output: str, product: str) -> JudgeItem:
    return JudgeItem(identifier, f"Write a blurb for {product}.", output, {"product": product})


GROUPS = [
    [_item("k1", "A lovely kettle.", "Kettle"), _item("k2", "A cheap kettle.", "Kettle")],
    [_item("m1", "Mugs are nice maybe.", "Mug")],
]


def test_measure_noise_resamples_every_output_and_reports_item_ids() -> None:
    calls: list[tuple[list[str], int]] = []
    seen: list[tuple[str, float | None]] = []

    def judge(items: Sequence[JudgeItem], resample: int) -> list[float | None]:
        calls.append(([item.id for item in items], resample))
        # k1 always passes, k2 always fails, m1 passes on even resamples and has no answer on the fourth
        return [1.0, 0.0, None if resample == 3 else float(resample % 2 == 0)]

    report = measure_noise(
        GROUPS, judge, resamples=4, progress=lambda message, done: seen.append((message, done)), confidence=0.95
    )
    assert calls == [(["k1", "k2", "m1"], r) for r in range(4)]
    expected = noise_report([[[1, 1, 1, 1], [0, 0, 0, 0]], [[1, 0, 1, None]]], confidence=0.95)
    assert {key: report[key] for key in expected if key != "resamples"} == {
        key: value for key, value in expected.items() if key != "resamples"
    }
    assert (report["resamples"], report["items"], report["missing"]) == (4, 3, 1)
    assert report["flipped_items"] == ["m1"]
    assert _close(report["judge_variance"], statistics.variance([1, 0, 1]) / 3)
    assert seen[0] == ("judge noise: resample 1 of 4", 0.0) and seen[-1] == ("judge noise: done", 100.0)


def test_measure_noise_refuses_too_few_resamples_no_items_and_short_answers() -> None:
    def judge(items: Sequence[JudgeItem], resample: int) -> list[float | None]:
        return [1.0] * len(items)

    for resamples in (1, 0, True):
        with pytest.raises(InputError, match="at least 2 resamples"):
            measure_noise(GROUPS, judge, resamples=resamples, confidence=0.95)
    with pytest.raises(InputError, match="no outputs"):
        measure_noise([[], []], judge, confidence=0.95)
    with pytest.raises(ValueError, match="2 scores for 3 items"):
        measure_noise(GROUPS, lambda items, resample: [1.0, 1.0], confidence=0.95)


def test_a_real_llm_judge_resampled_through_the_cache(tmp_path: Path) -> None:
    """The judge is asked through litellm; a scripted model flips its verdict on one output every other time
    it is asked, and always answers out of scale on another. Resample r uses sample index r, so each resample
    is a fresh call, and a re-run comes from the store's cache but for the out-of-scale answers, which are
    never cached."""
    asked: dict[str, int] = {}
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Reply:
        text = user_text(request)
        with lock:
            asked[text] = asked.get(text, 0) + 1
            count = asked[text]
        if "cheap kettle" in text:
            return chat_reply('{"explanation": "says cheap", "score": false}')
        if "maybe" in text:  # the judge hesitates: yes on its 1st and 3rd call, no on the 2nd and 4th
            return chat_reply(json.dumps({"explanation": "hedged", "score": count % 2 == 1}))
        if "kettle" in text:
            return chat_reply('{"explanation": "fine", "score": true}')
        return chat_reply('{"explanation": "?", "score": "perhaps"}')

    scale = Scale.boolean()
    groups = [*GROUPS, [_item("s1", "A shoe.", "Shoe")]]

    def judge_with(client: LiteLLMClient, *, distinct: bool) -> Any:
        def judge(items: Sequence[JudgeItem], resample: int) -> list[float | None]:
            questions = [
                Question(
                    ({"role": "user", "content": f"Is this a good blurb? {item.output}"},),
                    scale,
                    sample_index=resample if distinct else 0,
                )
                for item in items
            ]
            answers = ask_many(client, questions, retries=0)
            return [scale.numeric(a.value) if a.valid else None for a in answers]

        return judge

    with OpenAIStub(script) as stub, Store.open(tmp_path) as store:
        client = LiteLLMClient("openai/judge", api_base=stub.api_base, api_key="sk-test", store=store, backoff_s=0.01)
        report = measure_noise(groups, judge_with(client, distinct=True), resamples=4, confidence=0.95)
        sent = len(stub.requests)
        again = measure_noise(groups, judge_with(client, distinct=True), resamples=4, confidence=0.95)
        resent = len(stub.requests) - sent
        same_index = measure_noise(groups, judge_with(client, distinct=False), resamples=4, confidence=0.95)

    assert sent == 4 * 4 and resent == 4 and again == report  # the shoe's 4 unusable answers asked again
    assert report["flipped_items"] == ["m1"] and report["flip_rate"]["rate"] == 0.333333  # of k1, k2, m1 (s1: none)
    assert report["missing"] == 4 and report["outputs_scored"] == 3
    expected = noise_report([[[1, 1, 1, 1], [0, 0, 0, 0]], [[1, 0, 1, 0]], [[None] * 4]], confidence=0.95)
    assert report["judge_variance"] == expected["judge_variance"] and _close(report["judge_variance"], 1 / 9)
    assert report["generator_variance"] == expected["generator_variance"]
    # one sample index for every resample: the cache hands back the first answer, and the judge looks steady
    assert same_index["flip_rate"]["successes"] == 0 and same_index["judge_variance"] == 0.0


# -- the fixed outputs ------------------------------------------------------------------------------------------


def _blurb(root: Path, examples: list[dict[str, Any]] | None = None) -> Path:
    prompt = root / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    rows = EXAMPLES if examples is None else examples
    (root / "blurb.examples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return prompt


def test_examples_with_identical_inputs_form_one_group(workspace_dir: Path) -> None:
    extra = [
        {"id": "g1b", "inputs": {"product": "Kettle"}, "output": "Tea, fast. A lovely kettle.", "label": "good"},
        {"id": "nothing", "inputs": {"product": "Lamp"}},  # no output: nothing to judge
    ]
    prompt = _blurb(workspace_dir, [*EXAMPLES, *extra])
    with Workspace(workspace_dir, overrides={"classifier": "offline"}) as workspace:
        groups = noise_items(workspace, prompt)
    assert [[item.id for item in group] for group in groups] == [["g1", "g1b"], ["g2"], ["b1"], ["b2"]]
    assert groups[0][1].input == V3.strip().replace("{product}", "Kettle")  # the newest version, rendered
    assert groups[0][0].label == 1 and groups[2][0].label == 0


def test_group_by_context_treats_equal_mappings_alike_whatever_their_key_order() -> None:
    a = JudgeItem("a", "p", "x", {"x": 1, "y": [1, {"z": 2}]})
    b = JudgeItem("b", "p", "y", {"y": [1, {"z": 2}], "x": 1})
    c = JudgeItem("c", "p", "z", {"x": 2})
    assert [[item.id for item in group] for group in group_by_context([a, c, b])] == [["a", "b"], ["c"]]


def test_outputs_of_the_newest_sampling_run_grouped_by_input(workspace_dir: Path) -> None:
    prompt = _blurb(workspace_dir)
    (workspace_dir / "blurb.examples.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    (workspace_dir / "blurb_assertions.py").write_text(SAMPLING_SIDECAR, encoding="utf-8")
    with OpenAIStub(CheapEveryFourth()) as stub:
        overrides = {"model": "openai/stub", "api_base": stub.api_base, "classifier": "offline"}
        with Workspace(workspace_dir, overrides=overrides) as workspace:
            with pytest.raises(InputError, match=r"run `spade sample .*blurb\.prompt` first"):
                noise_items(workspace, prompt, source="sampled")
            settings = resolve_file(workspace_dir, prompt, overrides)
            sample_prompt(
                workspace, prompt, SampleOptions(), settings=with_knobs(settings, samples=4, early_stopping=False)
            )
            groups = noise_items(workspace, prompt, source="sampled")
            stored = workspace.store.db.execute(
                "SELECT input, sample, output FROM sample_outputs ORDER BY input, sample"
            ).fetchall()
    assert [[item.id for item in group] for group in groups] == [
        [f"{name}#{sample}" for sample in range(4)] for name in ("g1", "g2", "b1", "b2")
    ]
    flat = [item for group in groups for item in group]
    assert [item.output for item in flat] == [row[2] for row in stored]
    assert all(item.input == V3.strip().replace("{product}", item.context["product"]) for item in flat)
    assert {item.context["product"] for item in groups[0]} == {"Kettle"} and flat[0].label is None

    # a deterministic judge on these outputs: no judge variance, and the cheap fourth output of each input is
    # all generator variance (means 0, 1, 1, 1 per input: variance 1/4)
    report = measure_noise(
        groups, lambda items, r: [float("cheap" not in i.output) for i in items], resamples=2, confidence=0.95
    )
    assert report["judge_variance"] == 0.0 and report["generator_variance"] == 0.25
    assert report["generator_share"] == 1.0 and report["flip_rate"]["rate"] == 0.0


def test_sampled_outputs_of_inputs_gone_from_the_examples_are_left_out(workspace_dir: Path) -> None:
    prompt = _blurb(workspace_dir)
    with Workspace(workspace_dir, overrides={"classifier": "offline"}) as workspace:
        noise_items(workspace, prompt)  # records the prompt's version
        prompt_id = workspace.store.db.execute("SELECT id FROM prompts").fetchone()[0]
        with workspace.store.write() as db:
            for status, inputs in (("done", ["g1", "gone"]), ("failed", ["g2"])):
                run = db.execute(
                    "INSERT INTO sample_runs (prompt_id, version, model, status, parameters, inputs, validators, "
                    "started_at) VALUES (?, 1, 'm', ?, '{}', ?, '[]', 't')",
                    [prompt_id, status, json.dumps(inputs)],
                ).lastrowid
                for index, sample, output in ((0, 0, "first"), (0, 1, None), (1, 0, "orphan"), (0, 2, "third")):
                    db.execute(
                        "INSERT INTO sample_outputs (run_id, input, sample, output) VALUES (?, ?, ?, ?)",
                        [run, index, sample, output],
                    )
        groups = noise_items(workspace, prompt, source="sampled")
        assert [[(item.id, item.output) for item in group] for group in groups] == [
            [("g1#0", "first"), ("g1#2", "third")]
        ]
        with workspace.store.write() as db:
            db.execute("DELETE FROM sample_outputs WHERE output != 'orphan'")
        with pytest.raises(InputError, match=r"holds no outputs to judge \(its inputs gone are no longer"):
            noise_items(workspace, prompt, source="sampled")
        with pytest.raises(InputError, match="unknown source"):
            noise_items(workspace, prompt, source="elsewhere")  # type: ignore[arg-type]

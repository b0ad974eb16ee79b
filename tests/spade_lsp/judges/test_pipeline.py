"""Compound judge pipelines through the real litellm client against the scripted stub: files loaded and checked,
each connection routing the answers it should, pooling by hand, per-unit models and temperatures, independent
repeats, re-asks, undecided units, alignment, and a stored run in a real workspace."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.config import resolve_file
from spade_lsp.errors import ConfigError, InputError
from spade_lsp.judges import JudgeItem, Scale
from spade_lsp.judges._pipeline import (
    Pipeline,
    PipelineResult,
    Pool,
    is_undecided,
    pool_values,
    render_pipeline_report,
    run_pipeline,
)
from spade_lsp.llm import LiteLLMClient
from tests.support.blurb import V3, examples_jsonl
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text

Script = Callable[[dict[str, Any]], Reply]


def _client(stub: OpenAIStub, **kwargs: Any) -> LiteLLMClient:
    return LiteLLMClient("openai/judge", api_base=stub.api_base, api_key="sk-test", backoff_s=0.01, **kwargs)


def _system(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def _answer(score: Any, explanation: str = "because") -> Reply:
    return chat_reply(json.dumps({"explanation": explanation, "score": score}))


def _items(*outputs: str, labels: list[int | None] | None = None) -> list[JudgeItem]:
    marks = labels or [None] * len(outputs)
    return [
        JudgeItem(f"i{k}", f"Write a blurb ({k}).", output, label=label)
        for k, (output, label) in enumerate(zip(outputs, marks, strict=True))
    ]


def _response(request: dict[str, Any]) -> str:
    """The response under judgement, from the unit's user message."""
    return user_text(request).split("# Response\n", 1)[1].split("\n\n", 1)[0]


class Counting:
    """A script that counts requests per key and hands out answers from per-key lists in arrival order."""

    def __init__(self, answers: dict[str, list[Reply]], key: Callable[[dict[str, Any]], str] = _response) -> None:
        self.answers = answers
        self.key = key
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        key = self.key(request)
        with self.lock:
            count = self.seen.get(key, 0)
            self.seen[key] = count + 1
        replies = self.answers[key]
        return replies[min(count, len(replies) - 1)]


# -- the file -----------------------------------------------------------------------------------------------

TOML = """
name = "friendly"
description = "three judges, each checked"
model = "openai/judge"
temperature = 0.2
retries = 1

[[layers]]
name = "judge"
unit = "judge"
repeat = 3
criteria = "Is the blurb friendly?"
scale = {type = "likert", min = 1, max = 7, pass_at = 5}

[[layers]]
name = "check"
unit = "verify"
repeat = 3
connection = "chain"
temperature = 0.7
explanation = false

[pool]
method = "weighted"
weights = [2, 1, 1]
"""

YAML = """
name: friendly
description: three judges, each checked
model: openai/judge
temperature: 0.2
retries: 1
layers:
  - name: judge
    unit: judge
    repeat: 3
    criteria: Is the blurb friendly?
    scale: {type: likert, min: 1, max: 7, pass_at: 5}
  - name: check
    unit: verify
    repeat: 3
    connection: chain
    temperature: 0.7
    explanation: false
pool:
  method: weighted
  weights: [2, 1, 1]
"""


def test_toml_and_yaml_declare_the_same_pipeline(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(TOML, encoding="utf-8")
    (tmp_path / "p.yml").write_text(YAML, encoding="utf-8")
    from_toml, from_yaml = Pipeline.load(tmp_path / "p.toml"), Pipeline.load(tmp_path / "p.yml")
    assert from_toml.to_spec() == from_yaml.to_spec()
    assert from_toml.source == str(tmp_path / "p.toml")
    judge, check = from_toml.layers
    assert judge.scale == Scale.likert(1, 7, pass_at=5) and judge.connection is None and judge.repeat == 3
    assert check.scale == Scale.boolean() and check.connection == "chain" and check.temperature == 0.7
    assert not check.explanation and check.retries is None
    assert from_toml.pool == Pool("weighted", (2.0, 1.0, 1.0)) and from_toml.retries == 1
    assert Pipeline.from_dict(from_toml.to_spec()).to_spec() == from_toml.to_spec()  # the spec round-trips


def test_defaults_fill_in_scales_connections_temperature_retries_and_pool() -> None:
    pipeline = Pipeline.from_dict(
        {
            "name": "defaults",
            "layers": [
                {"name": "a", "unit": "judge", "repeat": 2},
                {"name": "b", "unit": "verify", "repeat": 2},
                {"name": "c", "unit": "judge"},
                {"name": "d", "unit": "pairwise"},
            ],
        }
    )
    a, b, c, d = pipeline.layers
    assert a.scale == Scale.likert(1, 5) and a.scale.passing == frozenset({4, 5})
    assert b.scale == Scale.boolean() and b.connection == "chain"  # equal widths
    assert c.connection == "dense"  # 2 -> 1
    assert d.scale == Scale.discrete(["A", "B"], passing=["A"]) and d.connection == "chain"
    assert (pipeline.temperature, pipeline.retries, pipeline.pool, pipeline.model) == (0.0, 2, Pool("majority"), None)
    assert pipeline.units == 6


def _base() -> dict[str, Any]:
    return {
        "name": "p",
        "layers": [
            {"name": "judge", "unit": "judge", "repeat": 3},
            {"name": "check", "unit": "verify", "repeat": 3},
        ],
    }


def _with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = _base()
    change(data)
    return data


INVALID: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("unknown top key", lambda d: d.update(layer=[]), r"unknown key 'layer' \(did you mean 'layers'\?\)"),
    ("no name", lambda d: d.pop("name"), r"`name` is required"),
    ("no layers", lambda d: d.update(layers=[]), r"`layers` must be a non-empty list"),
    ("layer not a table", lambda d: d["layers"].append("judge"), r"layer 3: a layer is a table"),
    ("unknown layer key", lambda d: d["layers"][1].update(critera="x"), r"layer 2 \('check'\): unknown key 'critera'"),
    ("layer without name", lambda d: d["layers"][0].pop("name"), r"layer 1: `name` is required"),
    ("bad layer name", lambda d: d["layers"][0].update(name="a/b"), r"`name` must be letters"),
    ("duplicate names", lambda d: d["layers"][1].update(name="judge"), r"also named 'judge'; layer names are unique"),
    ("unknown unit", lambda d: d["layers"][0].update(unit="grader"), r"`unit` must be one of judge, verify"),
    ("verify first", lambda d: d["layers"].reverse(), r"a verify unit checks earlier judgements"),
    ("repeat 0", lambda d: d["layers"][0].update(repeat=0), r"`repeat` must be an integer from 1 to 100, not 0"),
    ("repeat bool", lambda d: d["layers"][0].update(repeat=True), r"`repeat` must be an integer"),
    ("repeat too many", lambda d: d["layers"][0].update(repeat=101), r"not 101"),
    ("bad scale", lambda d: d["layers"][0].update(scale={"type": "stars"}), r"layer 1 \('judge'\): scale: scale type"),
    (
        "scale extra key",
        lambda d: d["layers"][0].update(scale={"type": "boolean", "max": 1}),
        r"scale: unknown key\(s\) for a boolean scale: max",
    ),
    (
        "categorical without discrete scale",
        lambda d: d["layers"][0].update(unit="categorical", criteria="x", scale="boolean"),
        r"a categorical unit's scale must be discrete",
    ),
    (
        "categorical without scale",
        lambda d: d["layers"][0].update(unit="categorical", criteria="x"),
        r"a categorical unit needs a discrete `scale`",
    ),
    (
        "categorical without criteria",
        lambda d: d["layers"][0].update(unit="categorical", scale={"type": "discrete", "values": ["x", "y"]}),
        r"a categorical unit needs `criteria` or `prompt`",
    ),
    ("criteria and prompt", lambda d: d["layers"][0].update(criteria="a", prompt="b"), r"not both"),
    ("empty criteria", lambda d: d["layers"][0].update(criteria="  "), r"`criteria` must be a non-empty string"),
    ("explanation not bool", lambda d: d["layers"][0].update(explanation="yes"), r"`explanation` must be true or"),
    ("connection on first", lambda d: d["layers"][0].update(connection="dense"), r"the first layer has no earlier"),
    ("unknown connection", lambda d: d["layers"][1].update(connection="full"), r"`connection` must be one of chain"),
    (
        "chain of unequal widths",
        lambda d: d["layers"][1].update(repeat=2, connection="chain"),
        r"same repeat \(3 there, 2 here\)",
    ),
    (
        "broadcast not a multiple",
        lambda d: d["layers"][1].update(repeat=4, connection="broadcast"),
        r"must be a multiple of 3, not 4",
    ),
    ("temperature too high", lambda d: d.update(temperature=3), r"`temperature` must be a number from 0 to 2"),
    ("layer temperature", lambda d: d["layers"][1].update(temperature="hot"), r"layer 2 \('check'\): `temperature`"),
    ("retries negative", lambda d: d.update(retries=-1), r"`retries` .* must be an integer from 0 to 10"),
    ("layer retries", lambda d: d["layers"][0].update(retries=1.5), r"layer 1 \('judge'\): `retries`"),
    ("empty model", lambda d: d["layers"][0].update(model=""), r"`model` must be a non-empty string"),
    ("unknown pool method", lambda d: d.update(pool={"method": "max"}), r"pool: `method` must be one of majority"),
    ("unknown pool key", lambda d: d.update(pool={"method": "mean", "weight": [1]}), r"pool: unknown key 'weight'"),
    ("weights with majority", lambda d: d.update(pool={"weights": [1, 1, 1]}), r"`weights` only go with"),
    ("weighted without weights", lambda d: d.update(pool="weighted"), r"one number per unit .*'check' has 3"),
    ("weights too few", lambda d: d.update(pool={"method": "weighted", "weights": [1, 1]}), r"'check' has 3"),
    ("negative weight", lambda d: d.update(pool={"method": "weighted", "weights": [1, -1, 1]}), r"cannot be negative"),
    ("zero weights", lambda d: d.update(pool={"method": "weighted", "weights": [0, 0, 0]}), r"at least one weight"),
    (
        "mean over integer categories passing low",
        lambda d: d.update(
            layers=[{"name": "j", "unit": "judge", "scale": {"type": "discrete", "values": [0, 1, 2], "passing": [1]}}],
            pool="mean",
        ),
        r"passing values of layer 'j'.*must be its highest ones",
    ),
]


@pytest.mark.parametrize(("case", "change", "message"), INVALID, ids=[case for case, _, _ in INVALID])
def test_every_invalid_declaration_is_a_clear_config_error(
    case: str, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        Pipeline.from_dict(_with(change), where="p.toml")
    assert str(caught.value).startswith("p.toml"), case


def test_file_errors_name_the_file_the_layer_and_the_key(tmp_path: Path) -> None:
    typo = tmp_path / "typo.toml"
    typo.write_text(TOML.replace("criteria =", "critera ="), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        Pipeline.load(typo)
    assert str(caught.value).startswith(f"{typo}: layer 1 ('judge'): unknown key 'critera'")
    assert "did you mean 'criteria'?" in str(caught.value)
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.toml: not valid TOML"):
        Pipeline.load(broken)
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml: not valid YAML"):
        Pipeline.load(bad_yaml)
    listed = tmp_path / "list.yaml"
    listed.write_text("- name: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"list\.yaml: a pipeline is a table of keys"):
        Pipeline.load(listed)
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"empty\.yaml: the pipeline is empty"):
        Pipeline.load(empty)
    with pytest.raises(ConfigError, match=r"a pipeline file is \.toml, \.yaml or \.yml, not \.json"):
        Pipeline.load(tmp_path / "p.json")
    with pytest.raises(ConfigError, match=r"missing\.toml: no such pipeline file"):
        Pipeline.load(tmp_path / "missing.toml")


# -- connections --------------------------------------------------------------------------------------------


class Routing:
    """First-layer units answer with a unique explanation; later units answer "saw" and the units whose answers
    their message shows (so each unit's answer records what it was shown)."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        text = user_text(request)
        if "# Earlier judgements" not in text:
            with self.lock:
                self.count += 1
                return _answer(4, f"first answer number {self.count}")
        return _answer(4, "saw " + " ".join(_headings(text)))


def _headings(text: str) -> list[str]:
    return re.findall(r"^### (\S+)$", text, re.MULTILINE)


def _shown_to(stub: OpenAIStub, row: Any, keys: list[str]) -> list[str]:
    """The user messages that show exactly the answers of ``keys`` on ``row``'s item, each in full."""
    sections = [f"### {key}\nScore: 4 (pass)\nExplanation: {row.answers[key].explanation}" for key in keys]
    texts = [user_text(r) for r in stub.requests]
    return [t for t in texts if _headings(t) == keys and all(section in t for section in sections)]


CONNECTION_CASES = [
    ("chain", 2, 2, lambda j: [f"first/{j}"]),
    ("dense", 2, 2, lambda j: ["first/0", "first/1"]),
    ("broadcast", 2, 4, lambda j: [f"first/{j // 2}"]),
]


@pytest.mark.parametrize(("connection", "before", "width", "expected"), CONNECTION_CASES)
def test_each_connection_shows_a_unit_the_answers_it_should(
    connection: str, before: int, width: int, expected: Callable[[int], list[str]]
) -> None:
    pipeline = Pipeline.from_dict(
        {
            "name": connection,
            "layers": [
                {"name": "first", "unit": "judge", "repeat": before},
                {"name": "second", "unit": "judge", "repeat": width, "connection": connection},
            ],
        }
    )
    items = _items("A lovely kettle.", "A warm lamp.")
    with OpenAIStub(Routing()) as stub:
        result = pipeline.run(_client(stub), items)
        assert len(stub.requests) == len(items) * (before + width)
        for row in result.items:
            for j in range(width):
                assert row.answers[f"second/{j}"].explanation == "saw " + " ".join(expected(j))
                # the answers shown are this item's, value and explanation in full
                sharing = sum(1 for other in range(width) if expected(other) == expected(j))
                assert len(_shown_to(stub, row, expected(j))) == sharing
    explanations = {row.answers[f"first/{u}"].explanation for row in result.items for u in range(before)}
    assert len(explanations) == len(items) * before  # every first-layer answer was its own


def test_cumulative_shows_every_unit_of_every_earlier_layer() -> None:
    pipeline = Pipeline.from_dict(
        {
            "name": "cumulative",
            "layers": [
                {"name": "first", "unit": "judge"},
                {"name": "second", "unit": "judge", "repeat": 2},
                {"name": "third", "unit": "judge", "connection": "cumulative"},
            ],
        }
    )
    assert pipeline.layers[1].connection == "dense"
    with OpenAIStub(Routing()) as stub:
        result = pipeline.run(_client(stub), _items("A lovely kettle."))
        [row] = result.items
        assert row.answers["second/1"].explanation == "saw first/0"
        assert row.answers["third/0"].explanation == "saw first/0 second/0 second/1"
        [third] = _shown_to(stub, row, ["first/0", "second/0", "second/1"])
    assert '## Layer "first"' in third and '## Layer "second"' in third


# -- pooling ------------------------------------------------------------------------------------------------


def test_pooling_by_hand() -> None:
    likert, boolean = Scale.likert(1, 5), Scale.boolean()
    grading = Scale.discrete(["Yes", "No", "Unsure"])
    majority, mean = Pool("majority"), Pool("mean")
    weighted = Pool("weighted", (3.0, 1.0, 1.0))
    assert pool_values(majority, likert, [4, 4, 2]) == (4, 4.0, True)
    assert pool_values(majority, likert, [4, 2, None]) == (2, 2.0, False)  # a tie goes to the failing value
    assert pool_values(majority, likert, [5, 4]) == (4, 4.0, True)  # both pass: the lower
    assert pool_values(majority, likert, [None, None]) == (None, None, None)
    assert pool_values(majority, grading, ["Yes", "Unsure"]) == ("Unsure", None, None)  # undecided before a pass
    assert pool_values(majority, grading, ["Yes", "No", "Unsure"]) == ("No", 0.0, False)
    assert pool_values(majority, boolean, [True, True, False]) == (True, 1.0, True)
    value, score, passed = pool_values(mean, likert, [5, 4, 2])
    assert (value, passed) == (3.666667, False) and score == pytest.approx(11 / 3)  # below the pass mark of 4
    assert pool_values(mean, likert, [5, 4, None]) == (4.5, 4.5, True)
    assert pool_values(mean, boolean, [True, False]) == (0.5, 0.5, True)  # 0.5 reaches the mark
    assert pool_values(mean, grading, ["Yes", "No", "Unsure"]) == (0.5, 0.5, True)  # pass shares; Unsure left out
    assert pool_values(mean, grading, ["Unsure"]) == (None, None, None)
    assert pool_values(weighted, likert, [5, 2, 2]) == (3.8, 3.8, False)  # (15 + 2 + 2) / 5
    assert pool_values(weighted, likert, [5, None, 2]) == (4.25, 4.25, True)  # (15 + 2) / 4
    assert is_undecided(grading, "Unsure") and not is_undecided(Scale.discrete(["Unsure", "No"]), "Unsure")


def _three_judges(pool: Any) -> Pipeline:
    return Pipeline.from_dict({"name": "three", "layers": [{"name": "j", "unit": "judge", "repeat": 3}], "pool": pool})


SCORES = {"A lovely kettle.": [5, 4, 4], "A cheap mug.": [5, 2, 1], "A warm lamp.": [3, 4, 3]}


@pytest.mark.parametrize(
    ("pool", "values", "passed"),
    [
        ("majority", [4, 1, 3], [True, False, False]),  # a three-way tie (5, 2, 1) goes to the lowest failing value
        ("mean", [4.333333, 2.666667, 3.333333], [True, False, False]),
    ],
)
def test_majority_and_mean_pooling_through_a_run(pool: str, values: list[Any], passed: list[bool]) -> None:
    script = Counting({text: [_answer(s) for s in scores] for text, scores in SCORES.items()})
    with OpenAIStub(script) as stub:
        result = _three_judges(pool).run(_client(stub), _items(*SCORES))
    assert [row.value for row in result.items] == values
    assert result.passed_list() == passed
    assert [sorted(row.answers[f"j/{u}"].value for u in range(3)) for row in result.items] == [
        sorted(s) for s in SCORES.values()
    ]


def test_weighted_pooling_weighs_each_unit() -> None:
    # one call at a time: the units' requests arrive in order (unit 0 for every item, then unit 1, ...)
    script = Counting({text: [_answer(s) for s in scores] for text, scores in SCORES.items()})
    with OpenAIStub(script) as stub:
        result = _three_judges({"method": "weighted", "weights": [3, 1, 0]}).run(
            _client(stub, concurrency=1), _items(*SCORES)
        )
    assert [[row.answers[f"j/{u}"].value for u in range(3)] for row in result.items] == list(SCORES.values())
    # (3 * 5 + 4) / 4, (3 * 5 + 2) / 4, (3 * 3 + 4) / 4; the third unit weighs nothing
    assert [row.value for row in result.items] == [4.75, 4.25, 3.25]
    assert result.passed_list() == [True, True, False] and result.scores() == [4.75, 4.25, 3.25]


# -- models, temperatures, samples --------------------------------------------------------------------------


def test_each_unit_uses_its_model_and_temperature() -> None:
    pipeline = Pipeline.from_dict(
        {
            "name": "models",
            "temperature": 0.3,
            "layers": [
                {"name": "a", "unit": "judge", "model": "openai/other", "criteria": "LAYER-A"},
                {"name": "b", "unit": "judge", "criteria": "LAYER-B", "temperature": 0.9},
            ],
        }
    )
    with OpenAIStub(lambda request: _answer(4)) as stub:
        client = _client(stub)
        pipeline.run(client, _items("A lovely kettle.", "A warm lamp."))
        seen = {("LAYER-A" in _system(r), r["model"], r["temperature"]) for r in stub.requests}
    assert seen == {(True, "other", 0.3), (False, "judge", 0.9)}
    assert client.usage.calls == 4  # the derived client shares the default's usage

    pipeline = Pipeline.from_dict({"name": "top", "model": "openai/top", "layers": [{"name": "a", "unit": "judge"}]})
    with OpenAIStub(lambda request: _answer(4)) as stub:
        pipeline.run(_client(stub), _items("A lovely kettle."))
        assert [r["model"] for r in stub.requests] == ["top"]


def test_repeated_units_are_independent_samples(tmp_path: Path) -> None:
    from spade_lsp.store import Store

    script = Counting({"A lovely kettle.": [_answer(5), _answer(4), _answer(2), _answer(1), _answer(3), _answer(3)]})
    pipeline = _three_judges("majority")
    with OpenAIStub(script) as stub, Store.open(tmp_path) as store:
        client = _client(stub, store=store)
        first = pipeline.run(client, _items("A lovely kettle."))
        assert len(stub.requests) == 3 and len({json.dumps(r["messages"]) for r in stub.requests}) == 1
        assert store.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 3  # three samples, three keys
        again = pipeline.run(client, _items("A lovely kettle."))
        assert len(stub.requests) == 3  # the same samples again: all cached
        resampled = pipeline.run(client, _items("A lovely kettle."), sample_offset=10_000)
        assert len(stub.requests) == 6  # a resample is three fresh calls
    values = sorted(first.items[0].answers[f"j/{u}"].value for u in range(3))
    assert values == [2, 4, 5] and first.items[0].value == 2  # the samples differ, so the tie goes to the fail
    assert [again.items[0].answers[f"j/{u}"].value for u in range(3)] == [
        first.items[0].answers[f"j/{u}"].value for u in range(3)
    ]
    assert sorted(resampled.items[0].answers[f"j/{u}"].value for u in range(3)) == [1, 3, 3]


# -- bad answers --------------------------------------------------------------------------------------------


def test_bad_answers_are_asked_again_within_the_retries_then_recorded() -> None:
    script = Counting(
        {
            "fine": [_answer(5)],
            "flaky": [_answer(9), _answer(4)],
            "garbled": [chat_reply("Score: 4/5"), _answer(2)],
            "refused": [chat_reply("I'm sorry, but I cannot judge this.")],
            "missing": [chat_reply('{"explanation": "no score"}')],
        }
    )
    pipeline = Pipeline.from_dict(
        {"name": "retries", "retries": 5, "layers": [{"name": "j", "unit": "judge", "retries": 1}]}
    )
    with OpenAIStub(script) as stub:
        result = pipeline.run(_client(stub), _items(*script.answers))
    assert script.seen == {"fine": 1, "flaky": 2, "garbled": 2, "refused": 2, "missing": 2}  # the layer's 1 retry
    answers = [row.answers["j/0"] for row in result.items]
    assert [a.value for a in answers] == [5, 4, 2, None, None]
    assert [a.attempts for a in answers] == [1, 2, 2, 2, 2]
    assert [a.problem for a in answers] == [None, None, None, "refusal", "malformed"]
    assert result.passed_list() == [True, True, False, None, None]
    summary = result.summary(confidence=0.95)
    assert summary["problems"]["layers"]["j"] == {
        "refusal": 1,
        "malformed": 1,
        "out_of_scale": 0,
        "error": 0,
        "undecided": 0,
        "reasked": 4,
    }
    assert summary["problems"]["unanswered"] == 2
    assert summary["rows"][3]["problems"] == [
        {"unit": "j/0", "problem": "refusal", "detail": "I'm sorry, but I cannot judge this.", "attempts": 2}
    ]
    assert any("2 of 5 item(s) got no usable answer" in w for w in summary["warnings"])

    no_retries = Pipeline.from_dict({"name": "once", "retries": 0, "layers": [{"name": "j", "unit": "judge"}]})
    with OpenAIStub(Counting({"flaky": [_answer(9), _answer(4)]})) as stub:
        [row] = no_retries.run(_client(stub), _items("flaky")).items
        assert len(stub.requests) == 1 and row.answers["j/0"].problem == "out_of_scale"


def test_units_that_never_decide_are_flagged() -> None:
    grading = {"type": "discrete", "values": ["Yes", "No", "Unsure"]}
    pipeline = Pipeline.from_dict(
        {
            "name": "shy",
            "layers": [
                {"name": "topic", "unit": "categorical", "criteria": "TOPIC", "scale": grading, "repeat": 2},
                {"name": "judge", "unit": "judge", "criteria": "JUDGE"},
            ],
        }
    )

    def script(request: dict[str, Any]) -> Reply:
        if "TOPIC" in _system(request):
            return _answer("unsure")  # a harmless spelling of the scale's "Unsure"
        return chat_reply("As an AI, I must decline.")

    with OpenAIStub(script) as stub:
        result = pipeline.run(_client(stub), _items("A lovely kettle.", "A warm lamp."))
        assert len(stub.requests) == 2 * 2 + 2 * 3  # the judge's refusals were asked twice more
    summary = result.summary(confidence=0.95)
    assert summary["problems"]["units"] == [
        {
            "unit": "topic/0",
            "flag": "always_undecided",
            "detail": 'answered "Unsure" on every item it answered (2 of 2)',
        },
        {
            "unit": "topic/1",
            "flag": "always_undecided",
            "detail": 'answered "Unsure" on every item it answered (2 of 2)',
        },
        {
            "unit": "judge/0",
            "flag": "never_usable",
            "detail": "no usable answer on any of the 2 item(s) (mostly: refusal)",
        },
    ]
    assert summary["problems"]["layers"]["topic"]["undecided"] == 4
    assert any(w.startswith("unit topic/0: answered") for w in summary["warnings"])

    single = Pipeline.from_dict({"name": "shy", "layers": [pipeline.layers[0].to_spec() | {"repeat": 1}]})
    with OpenAIStub(script) as stub:
        result = single.run(_client(stub), _items("A lovely kettle."))
    assert result.items[0].value == "Unsure" and result.passed_list() == [None] and result.scores() == [None]


# -- units that look at other answers -----------------------------------------------------------------------


def test_a_verifier_keeps_or_flips_the_verdict_it_checks() -> None:
    def script(request: dict[str, Any]) -> Reply:
        text = user_text(request)
        if "# Verdict under review" not in text:
            return _answer(2 if "kettle" in text else 5, "judged")
        return _answer("kettle" not in text)  # wrong about the kettle, right about the lamp

    pipeline = Pipeline.from_dict(
        {"name": "verified", "layers": [{"name": "j", "unit": "judge"}, {"name": "v", "unit": "verify"}]}
    )
    with OpenAIStub(script) as stub:
        result = pipeline.run(_client(stub), _items("A lovely kettle.", "A warm lamp."))
        reviews = [
            user_text(r).split("# Verdict under review\n", 1)[1] for r in stub.requests if "Verdict" in user_text(r)
        ]
    assert sorted(reviews) == [
        "fail: the earlier judgements say the response fails.",
        "pass: the earlier judgements say the response passes.",
    ]
    kettle, lamp = result.items
    assert (kettle.verdicts["j/0"], kettle.answers["v/0"].value, kettle.verdicts["v/0"]) == (False, False, True)
    assert (lamp.verdicts["j/0"], lamp.answers["v/0"].value, lamp.verdicts["v/0"]) == (True, True, True)
    assert result.passed_list() == [True, True]  # pooled over the verified verdicts


def test_pairwise_units_see_the_reference_as_response_b() -> None:
    pipeline = Pipeline.from_dict({"name": "pairwise", "layers": [{"name": "p", "unit": "pairwise"}]})
    items = [
        JudgeItem("x", "Write a blurb.", "A lovely kettle.", reference="A kettle."),
        JudgeItem("y", "Write a blurb.", "A lamp.", reference="A warm, friendly lamp."),
        JudgeItem("z", "Write a blurb.", "A mug."),
    ]

    def script(request: dict[str, Any]) -> Reply:
        return _answer("a" if "lovely" in user_text(request) else "B")

    with OpenAIStub(script) as stub:
        result = pipeline.run(_client(stub), items)
        texts = sorted(user_text(r) for r in stub.requests)
    assert len(texts) == 2  # z has nothing to compare with: not asked
    assert "# Response A\nA lamp.\n\n# Response B\nA warm, friendly lamp." in texts[0]
    assert result.passed_list() == [True, False, None]
    assert result.items[2].answers["p/0"].problem == "error" and "reference" in (
        result.items[2].answers["p/0"].detail or ""
    )
    with OpenAIStub(script) as stub, pytest.raises(InputError, match="no example has one"):
        pipeline.run(_client(stub), items[2:])


def test_progress_that_raises_stops_the_run() -> None:
    class Stop(Exception):
        pass

    reports: list[float | None] = []

    def progress(message: str, percentage: float | None) -> None:
        reports.append(percentage)
        if len(reports) == 2:
            raise Stop

    pipeline = Pipeline.from_dict({"name": "p", "layers": [{"name": "j", "unit": "judge"}]})
    with OpenAIStub(lambda request: chat_reply('{"explanation": "e", "score": 4}', delay_s=0.05)) as stub:
        with pytest.raises(Stop):
            pipeline.run(_client(stub, concurrency=2), _items(*[f"o{k}" for k in range(40)]), on_progress=progress)
        assert len(stub.requests) < 10  # the calls not yet sent were abandoned


# -- alignment ----------------------------------------------------------------------------------------------


def test_alignment_matches_a_hand_counted_confusion_table() -> None:
    said = {"o1": "Yes", "o2": "Yes", "o3": "Yes", "o4": "No", "o5": "No", "o6": "Unsure", "o7": "Yes"}
    labels: list[int | None] = [1, 1, 0, 1, 0, 1, None]
    pipeline = Pipeline.from_dict(
        {
            "name": "grading",
            "layers": [
                {
                    "name": "g",
                    "unit": "categorical",
                    "criteria": "Does it meet the grading note?",
                    "scale": {"type": "discrete", "values": ["Yes", "No", "Unsure"]},
                }
            ],
        }
    )
    with OpenAIStub(Counting({k: [_answer(v)] for k, v in said.items()})) as stub:
        result = pipeline.run(_client(stub), _items(*said, labels=labels))
    summary = result.summary(confidence=0.95)
    alignment = summary["alignment"]
    assert alignment["confusion"] == {
        "pass": {"good": 2, "bad": 1},
        "fail": {"good": 1, "bad": 1},
        "undecided": {"good": 1, "bad": 0},
    }
    assert (alignment["labelled"], alignment["decided"]) == (6, 5)
    assert alignment["alignment"]["rate"] == 0.5 and alignment["alignment_decided"]["rate"] == 0.6
    # kappa over the decided: p_o = 3/5, p_e = (3/5)(3/5) + (2/5)(2/5) = 0.52, (0.6 - 0.52) / 0.48 = 1/6
    assert alignment["kappa"]["value"] == pytest.approx(1 / 6, abs=1e-6)
    positive = summary["scores"]["positive_rate"]
    assert (positive["successes"], positive["trials"]) == (4, 7) and summary["scores"]["undecided"] == 1
    assert summary["scores"]["distribution"] == {"Yes": 4, "No": 2, "Unsure": 1}
    mean = summary["scores"]["mean"]  # pass indicators of the 6 decided items: 4 of 6
    assert mean["n"] == 6 and mean["value"] == pytest.approx(4 / 6, abs=1e-6)
    # s = sqrt(12 / 45), t(0.975, 5) = 2.5706: 2/3 -/+ 0.5420, the upper bound clipped to the largest score, 1
    assert mean["ci_low"] == pytest.approx(0.12466, abs=1e-4) and mean["ci_high"] == 1.0
    report = render_pipeline_report(summary | {"pipeline": {"name": "grading"}, "prompt": "p", "version": 1})
    assert "positive rate  57.1%" in report and "kappa          0.167" in report
    assert "judge undecided          1          0" in report


def test_without_labels_there_is_no_alignment() -> None:
    with OpenAIStub(lambda request: _answer(5)) as stub:
        result = _three_judges("mean").run(_client(stub), _items("A lovely kettle."))
    summary = result.summary(confidence=0.95)
    assert summary["alignment"] is None and summary["scores"]["mean"]["value"] == 5.0
    assert summary["scores"]["distribution"] == {"5.0": 1}
    assert "alignment      n/a" in render_pipeline_report(summary)


# -- in a workspace -----------------------------------------------------------------------------------------

WORKSPACE_PIPELINE = """
name = "blurb-check"

[[layers]]
name = "judge"
unit = "judge"
repeat = 3
scale = "boolean"
criteria = "Is the blurb short, friendly and free of the word cheap?"

[[layers]]
name = "verify"
unit = "verify"
"""


def _blurb_judge(request: dict[str, Any]) -> Reply:
    text = user_text(request)
    if "# Verdict under review" in text:
        return _answer(True, "agreed")
    response = _response(request)
    return _answer("cheap" not in response and len(response.split()) <= 12, "checked")


def test_run_pipeline_stores_the_run_and_every_judgement(workspace_dir: Path) -> None:
    from spade_lsp.workspace import Workspace

    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    (workspace_dir / "blurb.examples.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    (workspace_dir / "check.toml").write_text(WORKSPACE_PIPELINE, encoding="utf-8")
    pipeline = Pipeline.load(workspace_dir / "check.toml")
    reports: list[float | None] = []
    with OpenAIStub(_blurb_judge) as stub:
        overrides = {"assistant_model": "openai/judge", "assistant_api_base": stub.api_base}
        with Workspace(workspace_dir, overrides=overrides) as workspace:
            document = run_pipeline(
                workspace,
                prompt,
                pipeline,
                settings=resolve_file(workspace_dir, prompt, overrides),
                progress=lambda message, percentage: reports.append(percentage),
            )
            runs = workspace.store.db.execute("SELECT kind, name, status, model, document FROM judge_runs").fetchall()
            rows = workspace.store.db.execute(
                "SELECT judge, count(*), sum(value IS NULL) FROM judgements WHERE run_id = ? GROUP BY judge",
                [document["run_id"]],
            ).fetchall()
            pooled = workspace.store.db.execute(
                "SELECT item, value FROM judgements WHERE judge = 'pooled' ORDER BY item"
            ).fetchall()
        assert len(stub.requests) == 4 * 4  # 4 examples x (3 judges + 1 verifier)
    assert [(kind, name, status, model) for kind, name, status, model, _ in runs] == [
        ("pipeline", "blurb-check", "done", "openai/judge")
    ]
    assert json.loads(runs[0][4]) == document
    assert sorted(rows) == [
        ("judge/0", 4, 0),
        ("judge/1", 4, 0),
        ("judge/2", 4, 0),
        ("pooled", 4, 0),
        ("verify/0", 4, 0),
    ]
    assert pooled == [("b1", "false"), ("b2", "false"), ("g1", "true"), ("g2", "true")]
    assert document["prompt"] == "blurb.prompt" and document["version"] == 1 and document["items"] == 4
    assert document["pipeline"]["name"] == "blurb-check" and document["pipeline"]["spec"] == pipeline.to_spec()
    assert document["scores"]["positive_rate"]["rate"] == 0.5
    assert document["alignment"]["confusion"]["pass"] == {"good": 2, "bad": 0}
    assert document["alignment"]["kappa"]["value"] == 1.0
    assert [row["id"] for row in document["rows"]] == ["g1", "g2", "b1", "b2"]
    assert document["rows"][2] == {
        "id": "b1",
        "value": False,
        "score": 0.0,
        "passed": False,
        "label": 0,
        "units": {"judge/0": False, "judge/1": False, "judge/2": False, "verify/0": True},
        "problems": [],
    }
    assert document["usage"]["calls"] == 16 and document["seconds"] > 0 and document["stopped"] is False
    assert reports and reports[-1] == 100.0 and reports == sorted(reports)
    report = render_pipeline_report(document)
    assert "pipeline blurb-check on blurb.prompt (version 1): 4 item(s), pooled by majority" in report
    assert "alignment      100.0%" in report and "calls          16 (0 cached, 0 failed)" in report


def test_a_run_that_fails_is_stored_as_failed(workspace_dir: Path) -> None:
    from spade_lsp.workspace import Workspace

    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(V3, encoding="utf-8")
    (workspace_dir / "blurb.examples.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    pipeline = Pipeline.from_dict({"name": "versus", "layers": [{"name": "p", "unit": "pairwise"}]})
    with OpenAIStub(_blurb_judge) as stub:
        overrides = {"assistant_model": "openai/judge", "assistant_api_base": stub.api_base}
        with Workspace(workspace_dir, overrides=overrides) as workspace:
            with pytest.raises(InputError, match="no example has one"):
                run_pipeline(workspace, prompt, pipeline, settings=resolve_file(workspace_dir, prompt, overrides))
            [(status, error, document)] = workspace.store.db.execute(
                "SELECT status, error, document FROM judge_runs"
            ).fetchall()
        assert stub.requests == []
    assert status == "failed" and "reference" in error and document is None


def test_result_rows_line_up_with_items() -> None:
    with OpenAIStub(lambda request: _answer(4)) as stub:
        result: PipelineResult = _three_judges("majority").run(_client(stub), [])
        assert stub.requests == []
    assert (
        result.items == []
        and result.summary(confidence=0.95)["items"] == 0
        and result.summary(confidence=0.95)["alignment"] is None
    )

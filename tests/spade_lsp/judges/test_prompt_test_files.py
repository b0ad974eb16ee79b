"""Prompt-response tests declared in a file (``spade test FILE``): the format and its errors (file, line, key
path), then a whole run against the loopback stub as the model under test and as the judge, with a real sidecar
function run in the kernel-confined sandbox, the numbers checked against what the scripted answers imply."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from spade_lsp.errors import ConfigError
from spade_lsp.judges import load_test_file, looks_like_test_file, run_prompt_test
from spade_lsp.llm import LiteLLMClient
from spade_lsp.sandbox import SandboxLimits
from spade_lsp.store import Store
from tests.support.cli import run
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, user_text

SIDECAR = """\
def assert_no_refund_promise(example: dict, prompt: str, response: str) -> bool:
    return "will refund" not in response.lower()


def assert_mentions_product(example: dict, prompt: str, response: str) -> bool:
    return example["product"] in response.lower()
"""

ITEMS = [
    {
        "id": "r1",
        "context": {"topic": "refunds", "product": "kettle"},
        "prompts": [
            "Can I get my money back for the {product}?",
            {
                "messages": [
                    {"role": "system", "content": "Answer as the Acme support desk."},
                    {"role": "user", "content": "My {product} broke, what now?"},
                ],
                "context": {"channel": "chat"},
            },
        ],
    },
    {
        "id": "r2",
        "context": {"topic": "refunds", "product": "toaster"},
        "prompt": "Can I get my money back for the {product}?",
    },
    {
        "id": "b1",
        "context": {"topic": "billing", "product": "invoice"},
        "prompt": "Why was I charged twice for the {product}?",
    },
]

TEST_FILE = """\
name: refund-policy
description: support replies never promise a refund, stay polite and name the product
items: items.jsonl
annotators:
  no_promise:
    code: support_assertions.py::assert_no_refund_promise
  mentions:
    code: support_assertions.py::assert_mentions_product
  polite:
    judge:
      criteria: Is the reply polite?
      scale: {type: discrete, values: ["Yes", "No", "Unsure"], passing: ["Yes"]}
measurements:
  promise_free: {annotator: no_promise, value: true}
  polite_rate: {annotator: polite, value: "yes"}
  named: {annotator: mentions, reduce: min}
  chat_polite: {annotator: polite, value: "Yes", where: {channel: chat}}
aggregations:
  - {measurement: promise_free, how: mean}
  - {measurement: polite_rate, how: min, by: topic}
  - {measurement: named, how: sum}
"""

#: What the model under test says to each prompt (by its last user message).
REPLIES = {
    "Can I get my money back for the kettle?": "Sorry about that: we will refund the kettle today.",
    "My kettle broke, what now?": "Sorry! Please send the kettle back for a repair.",
    "Can I get my money back for the toaster?": "No refunds. Read the policy.",
    "Why was I charged twice for the invoice?": "Sorry, we will refund the duplicate invoice charge.",
}


def _model(request: dict[str, Any]) -> Reply:
    """The model under test answers from :data:`REPLIES`; as the judge (structured output) it is unsure about
    the invoice reply, whenever asked, and otherwise calls a reply polite exactly when it opens with "Sorry"."""
    if request.get("response_format"):
        found = re.search(r"# Response\n(.*)\Z", user_text(request), re.DOTALL)
        assert found is not None
        reply = found.group(1)
        polite = "Unsure" if "invoice" in reply else ("Yes" if reply.startswith("Sorry") else "No")
        return chat_reply(json.dumps({"explanation": "checked the tone", "score": polite}))
    return chat_reply(REPLIES[user_text(request)])


def _write(folder: Path, text: str = TEST_FILE, items: list[dict[str, Any]] | None = None) -> Path:
    (folder / "support_assertions.py").write_text(SIDECAR, encoding="utf-8")
    rows = ITEMS if items is None else items
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = folder / "refund.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# -- the format ---------------------------------------------------------------------------------------------


def test_a_good_file_loads_items_prompts_annotators_and_measurements(tmp_path: Path) -> None:
    spec = load_test_file(_write(tmp_path))
    assert spec.name == "refund-policy" and [i.id for i in spec.items] == ["r1", "r2", "b1"]
    first, chat = spec.items[0].prompts
    assert first.text == "Can I get my money back for the kettle?" and first.messages is None
    assert chat.messages == (
        {"role": "system", "content": "Answer as the Acme support desk."},
        {"role": "user", "content": "My kettle broke, what now?"},
    )
    assert chat.text == "system:\nAnswer as the Acme support desk.\n\nuser:\nMy kettle broke, what now?"
    assert chat.context == {"channel": "chat"} and spec.items[0].context == {"topic": "refunds", "product": "kettle"}
    assert spec.annotators["no_promise"].module == (tmp_path / "support_assertions.py").resolve()
    assert spec.annotators["no_promise"].function == "assert_no_refund_promise"
    polite = spec.annotators["polite"]
    assert polite.needs_judge and polite.layer is not None and polite.layer.scale.values == ("Yes", "No", "Unsure")
    assert spec.judges == ["polite"]
    assert spec.measurements["polite_rate"].value == "Yes"  # read on the annotator's scale
    assert spec.measurements["promise_free"].value is True and spec.measurements["named"].reduce == "min"
    assert spec.group_by == ("topic",)  # from the aggregation's `by`
    assert [a.label for a in spec.aggregations] == ["promise_free mean", "polite_rate min by topic", "named sum"]


def test_inline_items_and_the_file_suffixes(tmp_path: Path) -> None:
    path = tmp_path / "inline.yml"
    path.write_text(
        "name: inline\nitems:\n  - {id: 1, prompt: hi}\n  - prompts: [yo, {text: 'hey {who}', context: {who: you}}]\n"
        "annotators: {polite: {judge: {criteria: 'polite?', scale: boolean}}}\n"
        "measurements: {polite: polite}\n",
        encoding="utf-8",
    )
    spec = load_test_file(path)
    assert [i.id for i in spec.items] == ["1", "2"]  # an item without an id is its position
    assert [p.text for p in spec.items[1].prompts] == ["yo", "hey you"]
    assert spec.measurements["polite"].annotator == "polite" and spec.group_by == ()
    assert looks_like_test_file("x.yaml") and looks_like_test_file("x.jsonl") and not looks_like_test_file("paired")


BAD_FILES = [
    pytest.param(
        TEST_FILE.replace("annotators:", "annotator:"),
        "refund.yaml:4: annotator: unknown key 'annotator' (did you mean 'annotators'?)",
        id="unknown-key",
    ),
    pytest.param(
        TEST_FILE.replace('{annotator: polite, value: "yes"}', '{annotator: rude, value: "yes"}'),
        "refund.yaml:15: measurements.polite_rate.annotator: unknown annotator 'rude'; the annotators are: "
        "no_promise, mentions, polite",
        id="unknown-annotator",
    ),
    pytest.param(
        TEST_FILE.replace('value: "yes"', 'value: "maybe"'),
        "refund.yaml:15: measurements.polite_rate.value: 'maybe' is not a value annotator 'polite' gives: it "
        'answers one of "Yes", "No", "Unsure"',
        id="value-off-the-scale",
    ),
    pytest.param(
        TEST_FILE.replace("value: true}", "value: 3}"),
        "refund.yaml:14: measurements.promise_free.value: 3 is not a value annotator 'no_promise' gives: it answers "
        "true or false",
        id="code-value-not-boolean",
    ),
    pytest.param(
        TEST_FILE.replace("how: min, by: topic", "how: min, by: topc"),
        "refund.yaml:20: aggregations[1].by: no item's context has the key 'topc' (the items' context keys: "
        "product, topic)",
        id="aggregation-by-unknown-key",
    ),
    pytest.param(
        TEST_FILE.replace("how: mean}", "how: median}"),
        "refund.yaml:19: aggregations[0].how: `how` is one of mean, min, max, sum, count, not 'median'",
        id="aggregation-how",
    ),
    pytest.param(
        TEST_FILE.replace("measurement: named", "measurement: nameless"),
        "refund.yaml:21: aggregations[2].measurement: unknown measurement 'nameless'; the measurements are: "
        "promise_free, polite_rate, named, chat_polite",
        id="aggregation-unknown-measurement",
    ),
    pytest.param(
        TEST_FILE.replace("support_assertions.py::assert_mentions_product", "missing.py::assert_x"),
        "refund.yaml:8: annotators.mentions.code: no such sidecar module: ",
        id="missing-module",
    ),
    pytest.param(
        TEST_FILE.replace("::assert_mentions_product", "::mentions_product"),
        "refund.yaml:8: annotators.mentions.code: the function is an assertion function, named assert_..., not "
        "'mentions_product'",
        id="not-an-assertion-name",
    ),
    pytest.param(
        TEST_FILE.replace("      criteria: Is the reply polite?\n", ""),
        "refund.yaml:10: annotators.polite.judge: say what to judge: `criteria`",
        id="judge-without-criteria",
    ),
    pytest.param(
        TEST_FILE.replace("type: discrete, values", "type: discreet, values"),
        "refund.yaml:12: annotators.polite.judge: scale: scale type 'discreet' is not one of",
        id="bad-scale",
    ),
    pytest.param(
        TEST_FILE.replace("      criteria: Is the reply polite?\n", "      criteria: Polite?\n      unit: verify\n"),
        "refund.yaml:12: annotators.polite.judge.unit: an annotator's `unit` is one of judge, categorical",
        id="verify-unit",
    ),
    pytest.param("name: x\n  bad: [\n", "refund.yaml: not valid YAML:", id="not-yaml"),
    pytest.param("- just a list\n", "refund.yaml:1: a test file is a mapping of keys", id="not-a-mapping"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_a_bad_file_is_one_error_naming_the_file_line_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_test_file(path)
    assert str(caught.value).startswith(str(path.parent) + "/") and message in str(caught.value), str(caught.value)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        pytest.param(
            [ITEMS[0], {"id": "r1", "prompt": "again"}],
            "items.jsonl:2: id: item id 'r1' is also the id of the item at ",
            id="duplicate-id",
        ),
        pytest.param(
            [{"id": "x", "context": {"topic": "t"}, "prompt": "About {product}?"}],
            "items.jsonl:1: prompt.text: no value for {product} in the item's or the prompt's `context`",
            id="missing-placeholder",
        ),
        pytest.param(
            [
                {
                    "id": "x",
                    "prompts": [{"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "?"}]}],
                }
            ],
            "items.jsonl:1: prompts[0].messages[1].role: `role` is one of system, developer, user, assistant, tool, "
            "function, not 'bot'",
            id="bad-role",
        ),
        pytest.param(
            [
                {
                    "id": "x",
                    "prompts": [
                        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
                    ],
                }
            ],
            "items.jsonl:1: prompts[0].messages: the last message is the user's",
            id="chat-ends-with-the-assistant",
        ),
        pytest.param(
            [{"id": "x", "promtps": ["hi"]}], "items.jsonl:1: promtps: unknown key 'promtps' (did you mean", id="typo"
        ),
        pytest.param(
            [{"id": "x"}], "items.jsonl:1: give the item `prompts` (a list) or `prompt` (one)", id="no-prompt"
        ),
    ],
)
def test_a_bad_items_file_names_its_line(tmp_path: Path, items: list[dict[str, Any]], message: str) -> None:
    path = _write(tmp_path, items=items)
    with pytest.raises(ConfigError) as caught:
        load_test_file(path)
    assert message in str(caught.value), str(caught.value)


def test_a_jsonl_line_that_is_not_json_and_a_jsonl_file_given_as_the_test(tmp_path: Path) -> None:
    path = _write(tmp_path)
    (tmp_path / "items.jsonl").write_text('{"id": "a", "prompt": "hi"}\n\n{"id": "b", \n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"items\.jsonl:3: not a JSON line"):
        load_test_file(path)
    with pytest.raises(ConfigError, match="a JSONL file holds test items, not a test"):
        load_test_file(tmp_path / "items.jsonl")


def test_an_unknown_sidecar_function_is_found_in_the_sandbox(tmp_path: Path) -> None:
    path = _write(tmp_path, TEST_FILE.replace("assert_mentions_product", "assert_names_product"))
    spec = load_test_file(path)
    with pytest.raises(ConfigError) as caught:
        spec.check_sidecars(SandboxLimits())
    assert str(caught.value) == (
        f"{path}:8: annotators.mentions.code: support_assertions.py has no assertion function "
        "'assert_names_product' (it has: assert_no_refund_promise, assert_mentions_product)"
    )


# -- running ------------------------------------------------------------------------------------------------


def _client(stub: OpenAIStub, model: str) -> LiteLLMClient:
    return LiteLLMClient(f"openai/{model}", api_base=stub.api_base, api_key="sk-test", backoff_s=0.01)


def _check_numbers(document: dict[str, Any]) -> None:
    """What the scripted replies imply (see :data:`REPLIES` and :func:`_model`)."""
    measured = {item["id"]: item["measurements"] for item in document["items"]}
    assert measured == {
        # r1: the kettle reply promises a refund, the chat one does not; both open with "Sorry", both name it
        "r1": {"promise_free": 0.5, "polite_rate": 1.0, "named": 1.0, "chat_polite": 1.0},
        # r2: no promise, not polite, no toaster named; it has no chat prompt, so no chat_polite
        "r2": {"promise_free": 1.0, "polite_rate": 0.0, "named": 0.0},
        # b1: the judge is unsure (asked twice), which decides nothing: no polite_rate rather than a 0
        "b1": {"promise_free": 0.0, "named": 1.0},
    }
    aggregates = document["aggregates"]
    assert aggregates["promise_free mean"] == 0.5
    assert aggregates["polite_rate min by topic"] == {"billing": None, "refunds": 0.0}
    assert aggregates["named sum"] == 2.0
    overall = aggregates["overall"]
    assert overall["promise_free"] == {"count": 3, "mean": 0.5, "min": 0.0, "max": 1.0, "sum": 1.5}
    assert overall["chat_polite"]["count"] == 1
    assert overall["polite_rate"]["rate"]["successes"] == 1 and overall["polite_rate"]["count"] == 2
    refunds = aggregates["by_context"]["topic"]["refunds"]
    assert refunds["promise_free"]["mean"] == 0.75 and refunds["polite_rate"]["mean"] == 0.5
    annotators = document["annotators"]
    assert annotators["no_promise"]["values"] == {"false": 2, "true": 2}
    assert annotators["mentions"]["values"] == {"false": 1, "true": 3}
    assert annotators["polite"]["values"] == {"No": 1, "Unsure": 1, "Yes": 2}
    assert annotators["polite"]["undecided"] == 1 and annotators["polite"]["attempts"] == 5
    chat = document["items"][0]["interactions"][1]
    assert chat["prompt"] == "system:\nAnswer as the Acme support desk.\n\nuser:\nMy kettle broke, what now?"
    assert chat["messages"][0] == {"role": "system", "content": "Answer as the Acme support desk."}
    assert chat["annotations"]["no_promise"]["value"] is True
    assert document["counts"] == {"items": 3, "interactions": 4, "sut_errors": 0}


def test_a_file_test_runs_its_sidecar_in_the_sandbox_and_its_judge_on_the_stub(tmp_path: Path) -> None:
    spec = load_test_file(_write(tmp_path))
    spec.check_sidecars(SandboxLimits())
    with OpenAIStub(_model) as stub:
        document = run_prompt_test(spec.build(), _client(stub, "sut"), judge=_client(stub, "judge"))
        requests = list(stub.requests)
    _check_numbers(document)
    assert document["file"] == str(spec.path) and document["test"] == "refund-policy"
    sut = [r for r in requests if not r.get("response_format")]
    judged = [r for r in requests if r.get("response_format")]
    assert len(sut) == 4 and len(judged) == 5  # the unsure answer was asked again, with a fresh sample
    chat = next(r for r in sut if r["messages"][0]["role"] == "system")
    assert [m["role"] for m in chat["messages"]] == ["system", "user"]
    assert all(r["model"] == "judge" for r in judged)
    shown = [user_text(r) for r in judged]
    assert any("# Input\nsystem:\nAnswer as the Acme support desk.\n\nuser:\nMy kettle broke" in s for s in shown)


CHAT_SIDECAR = """\
def assert_sees_the_chat(example: dict, prompt: str, response: str) -> bool:
    roles = [m["role"] for m in prompt.messages]
    return (
        roles == ["system", "user"]
        and prompt.messages[0]["content"] == "Answer as the Acme support desk."
        and prompt.messages[1]["content"] == "My kettle broke, what now?"
        and prompt.startswith("system:\\nAnswer as the Acme support desk.\\n\\nuser:\\n")
    )


def assert_sees_one_message(example: dict, prompt: str, response: str) -> bool:
    return prompt == "Can I get my money back for the kettle?" and list(prompt.messages) == [
        {"role": "user", "content": "Can I get my money back for the kettle?"}
    ]
"""


def test_a_code_check_sees_the_chat_as_eval_and_sample_give_it(tmp_path: Path) -> None:
    """``prompt.messages`` holds the item's messages as sent and ``prompt`` is their role sections, as a check
    sees them under ``spade eval``, ``spade sample`` and promptfoo; a one-message item is its text."""
    from spade_lsp.judges._prompt_tests import Interaction, ItemAnnotations

    _write(tmp_path)
    (tmp_path / "chat_assertions.py").write_text(CHAT_SIDECAR, encoding="utf-8")
    path = tmp_path / "chat.yaml"
    path.write_text(
        "name: chat\nitems: items.jsonl\nannotators:\n"
        "  chat: {code: chat_assertions.py::assert_sees_the_chat}\n"
        "  single: {code: chat_assertions.py::assert_sees_one_message}\n"
        "measurements:\n  chat: {annotator: chat}\n",
        encoding="utf-8",
    )
    spec = load_test_file(path)
    spec.check_sidecars(SandboxLimits())
    annotators = spec.build().annotators()
    item = spec.items[0]
    annotated = [ItemAnnotations(item, tuple(Interaction(p, "Sorry.") for p in item.prompts))]
    chat = annotators["chat"].annotate(annotated, None)[0]
    single = annotators["single"].annotate(annotated, None)[0]
    assert [a.value if a else None for a in chat] == [False, True], chat
    assert [a.value if a else None for a in single] == [True, False], single


def test_a_sidecar_error_is_an_annotation_problem_not_a_crash(tmp_path: Path) -> None:
    path = _write(tmp_path)
    (tmp_path / "support_assertions.py").write_text(
        SIDECAR.replace('example["product"]', 'example["missing"]'), encoding="utf-8"
    )
    spec = load_test_file(path)
    with OpenAIStub(_model) as stub:
        document = run_prompt_test(spec.build(), _client(stub, "sut"), judge=_client(stub, "judge"))
    assert document["annotators"]["mentions"]["problems"]["error"] == 4
    assert all("named" not in item["measurements"] for item in document["items"])
    assert document["aggregates"]["named sum"] == 0.0 and document["aggregates"]["overall"]["named"]["count"] == 0
    detail = document["items"][0]["interactions"][0]["annotations"]["mentions"]["detail"]
    assert "not_applicable" in detail and "the example has no input 'missing'" in detail
    assert any("annotator 'mentions': 4 annotations without a usable answer" in w for w in document["warnings"])


def test_spade_test_file_runs_stores_and_prints_the_report(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = workspace_dir / "tests"
    folder.mkdir()
    path = _write(folder)
    monkeypatch.chdir(workspace_dir)
    with OpenAIStub(_model) as stub:
        flags = ["--model", "openai/sut", "--api-base", stub.api_base, "--assistant-model", "same"]
        code, out, _ = run(capsys, "test", "tests/refund.yaml", "--json", *flags)
        assert code == 0, out
        document = json.loads(out)
        code, table, _ = run(capsys, "test", str(path), *flags)
        _, limited, _ = run(capsys, "test", str(path), "--limit", "2", "--json", *flags)
        requests = len(stub.requests)
    _check_numbers(document)
    assert requests == 9  # 4 prompts and 5 judge questions; the later runs came from the cache
    assert json.loads(limited)["counts"] == {"items": 2, "interactions": 3, "sut_errors": 0}
    assert code == 0 and "refund-policy: support replies never promise a refund" in table
    assert "promise_free mean: 0.5" in table and "polite_rate min by topic: billing -, refunds 0" in table
    assert "by topic:" in table and "no_promise: 4 annotations (false 2, true 2)" in table
    with Store.open(workspace_dir) as store:
        runs = store.db.execute("SELECT kind, name, status, parameters FROM judge_runs").fetchall()
        judgements = store.db.execute("SELECT item, judge, value FROM judgements WHERE run_id = 1").fetchall()
    assert [run[:3] for run in runs] == [("test", "refund-policy", "done")] * 3
    assert json.loads(runs[0][3])["file"] == str(path.resolve())
    assert ("r1/0", "no_promise", "false") in judgements and ("r2/0", "polite", '"No"') in judgements
    assert len(judgements) == 12  # 3 annotators x 4 interactions


def test_spade_test_file_refuses_before_any_call(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(workspace_dir)
    monkeypatch.chdir(workspace_dir)
    with OpenAIStub(_model) as stub:
        flags = ["--model", "openai/sut", "--api-base", stub.api_base]
        code, _, err = run(capsys, "test", str(path), *flags)
        assert code == 2 and "annotator 'polite' is an LLM judge and needs a model" in err
        assert "set `assistant_model` under [tool.spade]" in err and "--judge-model" in err
        path.write_text(TEST_FILE.replace("::assert_no_refund_promise", "::assert_gone"), encoding="utf-8")
        code, _, err = run(capsys, "test", str(path), *flags, "--judge-model", "openai/judge")
        assert code == 2 and "has no assertion function 'assert_gone'" in err
        code, _, err = run(capsys, "test", str(workspace_dir / "absent.yaml"), *flags)
        assert code == 2 and "absent.yaml: no such test file" in err
        assert stub.requests == []  # nothing ran
    code, out, _ = run(capsys, "test", "--list")
    assert code == 0 and out.split() == ["counterfactual_pronoun", "paired_safety"]


def test_spade_test_file_is_a_daemon_job_when_the_daemon_runs(workspace_dir: Path) -> None:
    from tests.spade_lsp.judges.test_cli import _spade_beside_a_daemon

    folder = workspace_dir / "tests"
    folder.mkdir()
    path = _write(folder)
    result = _spade_beside_a_daemon(workspace_dir, _model, "test", "tests/refund.yaml", "--json", "--limit", "2")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["counts"]["items"] == 2 and document["aggregates"]["promise_free mean"] == 0.75
    assert "not stored" not in result.stderr
    with Store.open(workspace_dir) as store:  # the daemon ran the job and stored the run
        jobs = store.db.execute("SELECT kind, path, status, params FROM jobs").fetchall()
        runs = store.db.execute("SELECT kind, name, status, parameters FROM judge_runs").fetchall()
    assert [job[:3] for job in jobs] == [("test", "tests/refund.yaml", "done")]
    assert json.loads(jobs[0][3]) == {"file": str(path.resolve()), "limit": 2}
    assert [run[:3] for run in runs] == [("test", "refund-policy", "done")]
    assert document["run_id"] == 1 and json.loads(runs[0][3])["file"] == str(path.resolve())


def test_a_judge_annotator_keeps_its_unit_settings_and_a_likert_score_is_measured_as_a_number(tmp_path: Path) -> None:
    path = tmp_path / "tone.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: tone
            items:
              - {id: a, context: {team: x}, prompts: [Hello there, Hi again]}
              - {id: b, context: {team: y}, prompt: Bye}
            annotators:
              warmth:
                judge: {criteria: "How warm is the reply?", scale: {type: likert, min: 1, max: 5}, explanation: false,
                        temperature: 0.5, model: openai/critic}
            measurements:
              warmth: {annotator: warmth}
              warmest: {annotator: warmth, reduce: max}
            group_by: team
            """
        ),
        encoding="utf-8",
    )

    def script(request: dict[str, Any]) -> Reply:
        if request.get("response_format"):  # the reply to "Hello there" is warm, the others less so
            return chat_reply(json.dumps({"score": 5 if "# Response\nwarm" in user_text(request) else 2}))
        return chat_reply("warm welcome" if user_text(request) == "Hello there" else "ok")

    spec = load_test_file(path)
    with OpenAIStub(script) as stub:
        document = run_prompt_test(spec.build(), _client(stub, "sut"), judge=_client(stub, "judge"))
        judged = [r for r in stub.requests if r.get("response_format")]
    assert len(judged) == 3 and all(r["model"] == "critic" and r["temperature"] == 0.5 for r in judged)
    schema = judged[0]["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["score"]  # explanation: false
    assert {i["id"]: i["measurements"] for i in document["items"]} == {
        "a": {"warmth": 3.5, "warmest": 5.0},
        "b": {"warmth": 2.0, "warmest": 2.0},
    }
    assert document["aggregates"]["by_context"]["team"]["x"]["warmth"]["mean"] == 3.5
    assert "rate" not in document["aggregates"]["overall"]["warmth"]  # not a 0/1 measurement

"""promptfoo interop: `spade export promptfoo` and `spade import --promptfoo`, the export run by the real promptfoo.

The end-to-end test needs promptfoo and the Node 24 it runs on, which ``make promptfoo`` installs into
``.tools/promptfoo`` (``.ci/run`` does). Without them that test skips on a developer machine; under CI (``CI``
set) it fails instead, so CI cannot pass by skipping. The other tests need neither.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from spade_lsp._promptfoo_interop import MARKER, nunjucks_template, promptfoo_provider, read_promptfoo_results
from spade_lsp.config import Settings
from spade_lsp.errors import InputError
from tests.support.cli import run
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply, user_text
from tests.support.promptfoo import PROMPTFOO, promptfoo_environment, require_promptfoo

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).with_name("data")

PROMPT = """system:
You are a support agent for {product}. Answer in at most 12 words.

user:
Customer question: {question}
Never use the word "cheap".
"""

SIDECAR = """from spade_lsp.assertions import assertion


@assertion(category="Content/Count", sentence="Answer in at most 12 words.", min_success=0.8)
def assert_at_most_12_words(example: dict, prompt: str, response: str) -> bool:
    return len(response.split()) <= 12


@assertion(category="Content/Exclusion", sentence='Never use the word "cheap".')
def assert_excludes_cheap(example: dict, prompt: str, response: str) -> bool:
    return "cheap" not in response.lower()


def assert_mentions_product(example: dict, prompt: str, response: str) -> bool:
    return example.get("product", "").lower() in response.lower() and "support agent" in prompt
"""

#: question -> the stub model's answer: some pass both checks, some fail one of them
ANSWERS = {
    "Does it dim?": "Yes, the Lamp dims in three steps.",
    "Is it cheap?": "The Lamp is cheap and good.",
    "How tall is it?": "The Desk is seventy five centimetres tall, which suits most people who sit at it all day.",
    "Does it fold?": "Yes, the Chair folds flat.",
    "What colours?": "The Mug comes in cheap colours: red and blue.",
    "Is it warm?": "The Scarf is warm.",
}
EXAMPLES = [
    {"id": "g1", "inputs": {"product": "Lamp", "question": "Does it dim?"}, "output": ANSWERS["Does it dim?"]},
    {"id": "b1", "inputs": {"product": "Lamp", "question": "Is it cheap?"}, "output": "It is cheap.", "label": "bad"},
    {"id": "b2", "inputs": {"product": "Desk", "question": "How tall is it?"}, "output": ANSWERS["How tall is it?"]},
    {"id": "g2", "inputs": {"product": "Chair", "question": "Does it fold?"}, "output": "It folds.", "label": "good"},
    {"id": "b3", "inputs": {"product": "Mug", "question": "What colours?"}, "output": "Cheap ones.", "label": "bad"},
    {"id": "g3", "inputs": {"product": "Scarf", "question": "Is it warm?"}, "output": "Very warm.", "label": "good"},
]
EXAMPLES[0]["label"] = "good"
EXAMPLES[2]["label"] = "bad"


def _script(request: dict[str, Any]) -> Reply:
    question = user_text(request).split("Customer question: ", 1)[-1].split("\n", 1)[0]
    if question == "Explode?":
        return error_reply(400, "scripted failure")
    return chat_reply(ANSWERS.get(question, "I do not know."))


def _workspace(root: Path, api_base: str = "http://127.0.0.1:9/v1") -> Path:
    (root / "spade.toml").write_text(
        f'model = "openai/stub"\napi_base = "{api_base}"\napi_key_env = "STUB_KEY"\ntemperature = 0\n'
        "max_tokens = 64\nmin_success = 0.9\n",
        encoding="utf-8",
    )
    prompt = root / "support.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    (root / "support_assertions.py").write_text(SIDECAR, encoding="utf-8")
    (root / "support.examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EXAMPLES), encoding="utf-8")
    return prompt


def _select(capsys: pytest.CaptureFixture[str], prompt: Path) -> list[str]:
    code, _, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0, err
    code, out, err = run(capsys, "select", str(prompt), "--method", "cov", "--alpha", "1", "--json")
    assert code == 0, err
    selected: list[str] = json.loads(out)["selected"]
    return selected


def _export(capsys: pytest.CaptureFixture[str], prompt: Path, *extra: str) -> tuple[dict[str, Any], str]:
    code, out, err = run(capsys, "export", "promptfoo", str(prompt), "--json", *extra)
    assert code == 0, err
    return json.loads(out), err


# -- export: the document ----------------------------------------------------------------------------------


def test_export_writes_messages_tests_selected_checks_and_provider(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    prompt = _workspace(tmp_path)
    selected = _select(capsys, prompt)
    assert selected == ["assert_at_most_12_words", "assert_excludes_cheap"]  # the third catches no bad one
    done, err = _export(capsys, prompt)
    config = tmp_path / "promptfooconfig.yaml"
    adapter = tmp_path / "support_promptfoo.py"
    assert done["config"] == str(config) and done["adapter"] == str(adapter) and "warning" not in err
    text = config.read_text(encoding="utf-8")
    assert text.startswith(f"# {MARKER} from support.prompt")
    document = yaml.safe_load(text)
    assert document["env"] == {"PROMPTFOO_PYTHON": sys.executable}
    (entry,) = document["prompts"]
    assert json.loads(entry["raw"]) == [
        {"role": "system", "content": "You are a support agent for {{ product }}. Answer in at most 12 words."},
        {"role": "user", "content": 'Customer question: {{ question }}\nNever use the word "cheap".'},
    ]
    assert document["providers"] == [
        {
            "id": "openai:chat:stub",
            "config": {"apiBaseUrl": "http://127.0.0.1:9/v1", "apiKeyEnvar": "STUB_KEY", "temperature": 0.0,
                       "max_tokens": 64},
        }
    ]  # fmt: skip
    assert document["tests"] == [{"description": e["id"], "vars": e["inputs"]} for e in EXAMPLES]
    assert document["defaultTest"]["assert"] == [
        {"type": "python", "value": "file://support_promptfoo.py:assert_at_most_12_words",
         "metric": "assert_at_most_12_words", "threshold": 0.8},
        {"type": "python", "value": "file://support_promptfoo.py:assert_excludes_cheap",
         "metric": "assert_excludes_cheap", "threshold": 0.9},  # no minimum of its own: settings' min_success
    ]  # fmt: skip
    source = adapter.read_text(encoding="utf-8")
    assert MARKER in source and "from spade_lsp.promptfoo import check" in source
    assert "def assert_at_most_12_words(output, context):" in source and "assert_mentions_product" not in source
    compile(source, str(adapter), "exec")


def test_the_adapter_runs_each_check_in_the_sandbox(tmp_path: Path) -> None:
    from spade_lsp.promptfoo import check

    _workspace(tmp_path)
    module = tmp_path / "support_assertions.py"
    chat = json.dumps(
        [{"role": "system", "content": "You are a support agent for Lamp."}, {"role": "user", "content": "Hi"}]
    )
    context = {"vars": {"product": "Lamp"}, "prompt": chat}
    assert check(module, "assert_excludes_cheap", "Bright and warm.", context) == {
        "pass": True,
        "score": 1.0,
        "reason": "spade: assert_excludes_cheap passed",
    }
    failed = check(module, "assert_excludes_cheap", "So cheap.", context)
    assert failed["pass"] is False and failed["score"] == 0.0
    # the example is promptfoo's vars and the prompt its rendered chat, as spade renders a conversation
    assert check(module, "assert_mentions_product", "The Lamp.", context)["pass"] is True
    assert check(module, "assert_mentions_product", "The Lamp.", {"vars": {"product": "Desk"}})["pass"] is False
    broken = check(module, "assert_nope", "x", context)
    assert broken["pass"] is False and "assert_nope" in broken["reason"]


def test_export_without_a_selection_exports_every_check_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    prompt = _workspace(tmp_path)
    done, err = _export(capsys, prompt, "-o", str(tmp_path / "out" / "pf.yaml"))
    assert "no selection yet: every assertion is exported" in err
    assert [a["name"] for a in done["assertions"]] == [
        "assert_at_most_12_words",
        "assert_excludes_cheap",
        "assert_mentions_product",
    ]
    assert (tmp_path / "out" / "pf.yaml").exists()
    adapter = (tmp_path / "out" / "support_promptfoo.py").read_text(encoding="utf-8")
    assert "Path(__file__).resolve().parent / '../support_assertions.py'" in adapter


def test_export_warns_of_tests_that_lack_an_input_the_prompt_uses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """spade keeps a missing input as written (``{question}``), promptfoo renders it empty: the export says which
    tests would see different prompts; an input only tested in ``{% if %}`` is optional and no such test."""
    prompt = _workspace(tmp_path)
    lacking = [
        {"id": "q1", "inputs": {"product": "Lamp"}, "output": "Yes."},
        {"id": "q2", "inputs": {"question": "Why?"}, "output": "No."},
    ]
    with (tmp_path / "support.examples.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(e) + "\n" for e in lacking))
    done, _err = _export(capsys, prompt)
    assert done["tests"] == len(EXAMPLES) + 2
    (warning,) = [w for w in done["warnings"] if "lack inputs" in w]
    assert warning.startswith("2 test(s) lack inputs the prompt uses ({question}, {product}): 'q1', 'q2'; ")
    assert "promptfoo renders a missing input empty where spade keeps it as written" in warning
    optional = tmp_path / "opt.prompty"
    optional.write_text(
        "---\nname: opt\nsample:\n  question: Why?\n---\nsystem:\nBe brief.{% if tone %} Be {{ tone }}.{% endif %}"
        "\n\nuser:\n{{ question }}\n",
        encoding="utf-8",
    )
    (tmp_path / "opt_assertions.py").write_text(SIDECAR, encoding="utf-8")
    done, _ = _export(capsys, optional, "-o", str(tmp_path / "opt.yaml"))
    assert done["tests"] == 1 and not any("lack inputs" in w for w in done["warnings"])


def test_export_never_overwrites_a_file_spade_did_not_write(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prompt = _workspace(tmp_path)
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: [mine]\n", encoding="utf-8")
    code, out, err = run(capsys, "export", "promptfoo", str(prompt))
    assert code == 2 and out == ""
    refused = f"{config}: exists and was not written by spade; not overwritten (pass --force to replace it)"
    assert err == f"spade: error: {refused}\n"
    assert config.read_text(encoding="utf-8") == "prompts: [mine]\n"
    assert not (tmp_path / "support_promptfoo.py").exists()
    _export(capsys, prompt, "--force")
    assert MARKER in config.read_text(encoding="utf-8")
    _export(capsys, prompt)  # spade's own file is rewritten without --force


def test_export_says_why_the_local_model_cannot_be_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prompt = _workspace(tmp_path)
    code, _, err = run(capsys, "export", "promptfoo", str(prompt), "--model", "local")
    assert code == 2 and err.count("\n") == 1 and 'model = "local"' in err and "--provider" in err
    done, _ = _export(capsys, prompt, "--model", "local", "--provider", "openai:chat:local")
    assert done["provider"] == "openai:chat:local"


PROVIDERS = [
    ({"model": "openai/gpt-4o-mini"}, "openai:chat:gpt-4o-mini", {}),
    ({"model": "gpt-4o-mini", "api_key_env": "MY_KEY"}, "openai:chat:gpt-4o-mini", {"apiKeyEnvar": "MY_KEY"}),
    ({"model": "openai/x", "api_base": "http://h:1/v1"}, "openai:chat:x",
     {"apiBaseUrl": "http://h:1/v1", "apiKey": "no-key"}),
    ({"model": "anthropic/claude-3-5-haiku-latest", "api_key_env": "K"}, "anthropic:messages:claude-3-5-haiku-latest",
     {"apiKey": "{{ env.K }}"}),
    ({"model": "azure/dep", "api_base": "https://r.openai.azure.com/"}, "azure:chat:dep",
     {"apiHost": "r.openai.azure.com"}),
    ({"model": "ollama_chat/llama3", "model_parameters": {"top_p": 0.5}}, "ollama:chat:llama3", {"top_p": 0.5}),
    ({"model": "hosted_vllm/m", "api_base": "http://v/v1", "temperature": 0.2}, "openai:chat:m",
     {"apiBaseUrl": "http://v/v1", "apiKey": "no-key", "temperature": 0.2}),
]  # fmt: skip


@pytest.mark.parametrize(("settings", "provider_id", "config"), PROVIDERS)
def test_provider_mapping(settings: dict[str, Any], provider_id: str, config: dict[str, Any]) -> None:
    assert promptfoo_provider(Settings(**settings)) == {"id": provider_id} | ({"config": config} if config else {})


def test_provider_mapping_refuses_what_it_cannot_name() -> None:
    with pytest.raises(InputError, match="does not know promptfoo's name for the litellm provider 'sagemaker'"):
        promptfoo_provider(Settings(model="sagemaker/x"))
    with pytest.raises(InputError, match="no pipeline model to export"):
        promptfoo_provider(Settings())
    assert promptfoo_provider(Settings(model="sagemaker/x"), override="bedrock:y") == {"id": "bedrock:y"}


def test_placeholders_become_nunjucks_and_other_braces_stay_literal() -> None:
    assert nunjucks_template("Hi {name}, {{ topic }}!", "braces") == "Hi {{ name }}, {{ topic }}!"
    assert nunjucks_template('Answer as {"a": 1} for {x}', "braces") == 'Answer as {"a": 1} for {{ x }}'
    assert nunjucks_template("Keep {{ 1 + 1 }} and {% if %} as {x}", "braces") == (
        "{% raw %}Keep {{ 1 + 1 }} and {% if %} as {% endraw %}{{ x }}"
    )
    jinja = "{% for item in items %}- {{ item }}\n{% endfor %}"
    assert nunjucks_template(jinja, "jinja2") == jinja


def test_a_prompty_sample_is_a_test(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _workspace(tmp_path)
    prompty = tmp_path / "ask.prompty"
    prompty.write_text(
        "---\nname: ask\nsample:\n  question: Why?\n---\nsystem:\nBe brief.\n\nuser:\n{{ question }}\n",
        encoding="utf-8",
    )
    (tmp_path / "ask_assertions.py").write_text(SIDECAR, encoding="utf-8")
    done, _ = _export(capsys, prompty)
    document = yaml.safe_load(Path(done["config"]).read_text(encoding="utf-8"))
    assert document["tests"] == [{"description": "prompty-sample", "vars": {"question": "Why?"}}]
    assert json.loads(document["prompts"][0]["raw"])[1] == {"role": "user", "content": "{{ question }}"}


# -- import --------------------------------------------------------------------------------------------------


def test_import_reads_a_real_results_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``promptfoo_results.json``: written by promptfoo 0.123.1 from this file's workspace (six tests and one
    whose call failed), then rated through promptfoo's viewer (``promptfoo view``; its rating API, with the
    body its thumbs buttons send) and exported with ``promptfoo export eval ID``: b2's output marked good by
    hand, g1's marked bad. Its only other assertions are spade's exported checks, whose grades label nothing."""
    prompt = _workspace(tmp_path)
    destination = tmp_path / "support.examples.jsonl"
    destination.unlink()
    read = read_promptfoo_results(DATA / "promptfoo_results.json")
    warning, note = read.warnings
    assert warning.line == 7 and warning.message.startswith("test 'x1' has no output (API error: 400 Bad Request")
    assert "scripted failure" in warning.message
    assert note.line is None and not note.skipped
    assert str(note) == (
        f"{DATA / 'promptfoo_results.json'}: 4 of 6 example(s) graded only by spade's own checks: rate them in "
        "`promptfoo view` to label them; imported unlabelled"
    )
    by_test = {e.id.rsplit("-", 1)[0]: e for e in read.examples}
    assert sorted(by_test) == ["b1", "b2", "b3", "g1", "g2", "g3"]
    assert {name: e.label for name, e in by_test.items()} == {
        "g1": 0,  # promptfoo passed it; the human rating says bad
        "b1": None,  # promptfoo failed it, but only by spade's own checks: no label
        "b2": 1,  # promptfoo failed it (too long); the human rating says good
        "g2": None,
        "b3": None,
        "g3": None,
    }
    assert by_test["b1"].inputs == {"product": "Lamp", "question": "Is it cheap?"}
    assert by_test["b1"].output == ANSWERS["Is it cheap?"]
    assert by_test["b1"].prompt == (
        "system:\nYou are a support agent for Lamp. Answer in at most 12 words.\n\n"
        'user:\nCustomer question: Is it cheap?\nNever use the word "cheap".'
    )
    code, out, err = run(capsys, "import", str(prompt), "--promptfoo", str(DATA / "promptfoo_results.json"))
    assert (
        code == 0
        and out == f"{destination}: 6 example(s) added, 0 already there, 1 not imported (see the warnings); 6 in all\n"
    )
    assert "promptfoo_results.json:7: test 'x1' has no output (API error: 400 Bad Request" in err
    assert "4 of 6 example(s) graded only by spade's own checks: rate them in `promptfoo view`" in err
    written = [json.loads(line) for line in destination.read_text(encoding="utf-8").splitlines()]
    assert sorted(e.get("label", "-") for e in written) == ["-", "-", "-", "-", "bad", "good"]
    first = destination.read_bytes()
    code, out, _ = run(capsys, "import", str(prompt), "--promptfoo", str(DATA / "promptfoo_results.json"))
    assert code == 0 and "0 example(s) added, 6 already there" in out and destination.read_bytes() == first
    code, _, err = run(capsys, "import", str(prompt), "--promptfoo", str(DATA / "promptfoo_results.json"), "--strict")
    assert code == 2 and "nothing was written (--strict)" in err and destination.read_bytes() == first
    assert "1 problem(s)" in err and "graded only by" not in err  # the note is no problem


def test_a_label_comes_from_a_rating_or_assertions_that_are_not_spades(tmp_path: Path) -> None:
    """promptfoo's grade of a row is its assertions': spade's exported checks (``file://NAME_promptfoo.py:...``)
    label nothing, so ``spade select`` never measures the checks against their own verdicts; the grade of any
    other assertion (promptfoo's own, a user's) does, and a human rating wins over both."""
    document = json.loads((DATA / "promptfoo_results.json").read_text(encoding="utf-8"))
    rows = {row["testCase"]["description"]: row for row in document["results"]["results"]}

    def add(name: str, assertion: dict[str, Any], passed: bool) -> None:
        rows[name]["gradingResult"]["componentResults"].append({"pass": passed, "assertion": assertion})

    add("b1", {"type": "icontains", "value": "lamp"}, True)  # spade's checks fail it, the user's passes it
    add("g2", {"type": "python", "value": "file://checks.py:assert_polite"}, False)  # a user's python check
    add("g3", {"type": "python", "value": "file://sub/other_promptfoo.py:assert_x"}, False)  # spade's again
    add("g1", {"type": "icontains", "value": "lamp"}, True)  # the human rating (bad) wins
    results = tmp_path / "results.json"
    results.write_text(json.dumps(document), encoding="utf-8")
    read = read_promptfoo_results(results)
    labels = {e.id.rsplit("-", 1)[0]: e.label for e in read.examples}
    assert labels == {"g1": 0, "b1": 1, "b2": 1, "g2": 0, "b3": None, "g3": None}
    assert rows["b1"]["success"] is False and rows["g2"]["success"] is True  # not promptfoo's overall grade
    assert read.warnings[-1].message.startswith("2 of 6 example(s) graded only by spade's own checks")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a promptfoo results file (invalid JSON"),
        ('{"evalId": "x"}', "not a promptfoo results file (no `results` object)"),
        ('{"results": {"version": 2, "results": []}}', "promptfoo results version 2; spade reads version 3"),
        ('{"results": {"version": 3}}', "not a promptfoo results file (no `results.results` list)"),
        ('{"results": {"version": 3, "results": []}}', "no results in the file"),
    ],
)
def test_import_refuses_what_is_not_promptfoo_results_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    prompt = _workspace(tmp_path)
    results = tmp_path / "results.json"
    results.write_text(content, encoding="utf-8")
    before = (tmp_path / "support.examples.jsonl").read_bytes()
    code, out, err = run(capsys, "import", str(prompt), "--promptfoo", str(results))
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    assert (tmp_path / "support.examples.jsonl").read_bytes() == before


def test_import_takes_examples_or_promptfoo_not_both(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prompt = _workspace(tmp_path)
    code, _, err = run(capsys, "import", str(prompt), "--promptfoo", "a.json", "--examples", "b.jsonl")
    assert code == 2 and "not both" in err


# -- end to end: the real promptfoo -------------------------------------------------------------------------------


def _promptfoo(config: Path, results: Path, home: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    environment = {**promptfoo_environment(home), "STUB_KEY": "sk-stub"}
    command = [str(PROMPTFOO), "eval", "-c", str(config), "-o", str(results), "--no-cache", "--no-progress-bar"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--no-table"], cwd=config.parent, env=environment, capture_output=True, text=True, timeout=300
    )
    return done, time.perf_counter() - started


def _add_a_users_assertion(config: Path, test: str, assertion: dict[str, Any]) -> None:
    """An assertion of the user's own (not a spade check) added to one test of the exported config."""
    text = config.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    document = yaml.safe_load(text)
    (entry,) = [t for t in document["tests"] if t["description"] == test]
    entry["assert"] = [assertion]
    config.write_text(header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")


def test_promptfoo_runs_the_export_and_its_results_import_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    require_promptfoo()
    from spade_lsp.sandbox import ModuleSource, SandboxCase, run_assertions

    with OpenAIStub(_script) as stub:
        root = tmp_path / "ws"
        root.mkdir()
        prompt = _workspace(root, stub.api_base)
        selected = _select(capsys, prompt)
        done, _ = _export(capsys, prompt)
        config = Path(done["config"])
        _add_a_users_assertion(config, "b1", {"type": "icontains", "value": "lamp"})
        results = tmp_path / "results.json"
        finished, seconds = _promptfoo(config, results, tmp_path)
        with capsys.disabled():
            print(f"\npromptfoo eval: {len(EXAMPLES)} tests x {len(selected)} checks in {seconds:.1f} s")
        assert finished.returncode in (0, 100), finished.stderr[-2000:]  # 100: some tests failed, as scripted
        assert len(stub.requests) == len(EXAMPLES)
        assert all(r["messages"][0]["role"] == "system" and r["temperature"] == 0 for r in stub.requests)
        assert {stub.headers[i].get("Authorization") for i in range(len(EXAMPLES))} == {"Bearer sk-stub"}

    rows = json.loads(results.read_text(encoding="utf-8"))["results"]["results"]
    assert sorted(row["testCase"]["description"] for row in rows) == sorted(e["id"] for e in EXAMPLES)
    # promptfoo's grades are what the sidecar's functions decide on the same outputs (run in the sandbox)
    cases = [SandboxCase(row["vars"], "", row["response"]["output"]) for row in rows]
    sidecar = root / "support_assertions.py"
    expected = run_assertions(ModuleSource(sidecar.read_text(encoding="utf-8"), str(sidecar)), cases, names=selected)
    seen_pass, seen_fail = set(), set()
    for i, row in enumerate(rows):
        assert row["response"]["output"] == ANSWERS[row["vars"]["question"]]
        components = row["gradingResult"]["componentResults"]
        grades = {c["assertion"]["metric"]: c["pass"] for c in components if c["assertion"]["type"] == "python"}
        decided = dict(zip(selected, expected.passed[i], strict=True))
        assert grades == decided, row["testCase"]["description"]
        assert row["success"] is all(decided.values())
        seen_pass |= {name for name, ok in decided.items() if ok}
        seen_fail |= {name for name, ok in decided.items() if not ok}
    assert seen_pass == seen_fail == set(selected)  # each check passes some outputs and fails others
    metrics = json.loads(results.read_text(encoding="utf-8"))["results"]["prompts"][0]["metrics"]
    assert metrics["namedScoresCount"] == dict.fromkeys(selected, len(EXAMPLES))

    destination = root / "support.examples.jsonl"
    before = destination.read_text(encoding="utf-8")
    code, out, err = run(capsys, "import", str(prompt), "--promptfoo", str(results), "--json")
    assert code == 0, err
    assert json.loads(out)["added"] == len(EXAMPLES)
    unrated = len(EXAMPLES) - 1
    assert f"{unrated} of {len(EXAMPLES)} example(s) graded only by spade's own checks: rate them in" in err
    text = destination.read_text(encoding="utf-8")
    assert text.startswith(before)  # appended, never rewritten
    imported = [json.loads(line) for line in text[len(before) :].splitlines()]
    by_question = {e["inputs"]["question"]: e for e in imported}
    for row in rows:
        example = by_question[row["vars"]["question"]]
        assert example["output"] == row["response"]["output"]
        if row["testCase"]["description"] == "b1":
            # labelled by the user's assertion alone: good, though spade's checks failed it in promptfoo's grade
            assert row["success"] is False and example["label"] == "good"
        else:  # graded by spade's own checks only: a label would measure them against themselves
            assert "label" not in example, example
        assert example["id"].startswith(row["testCase"]["description"] + "-")
    code, out, _ = run(capsys, "import", str(prompt), "--promptfoo", str(results), "--json")
    assert code == 0 and json.loads(out)["added"] == 0 and destination.read_text(encoding="utf-8") == text
    # exported again, the imported outputs add no test: one per distinct inputs
    done, _ = _export(capsys, prompt)
    assert done["tests"] == len(EXAMPLES)
    # the imported outputs are examples like any other: spade evaluates them
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0 and len(json.loads(out)["examples"]) == 2 * len(EXAMPLES), err
    if os.environ.get("SPADE_PROMPTFOO_FIXTURE"):  # regenerate the import fixture (then rate it by hand)
        shutil.copy(results, os.environ["SPADE_PROMPTFOO_FIXTURE"])

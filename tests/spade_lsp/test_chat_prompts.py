"""Chat prompts: role sections, Prompty files and message lists read with their offsets, rendered per example,
sampled as written (the real litellm client against the loopback stub), and checks given the conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._history import History
from spade_lsp._prompts import (
    conversation_text,
    parse_prompt,
    prompt_kind,
    prompty_sample,
    render_conversation,
    render_messages,
    template_placeholders,
)
from spade_lsp.config import front_matter_settings, prompty_model_settings, resolve_file
from spade_lsp.errors import ConfigError, PromptFileError
from spade_lsp.overview import build_overview
from spade_lsp.reliability import SampleOptions, sample_prompt
from spade_lsp.workspace import Workspace
from tests.support.openai_stub import OpenAIStub, chat_reply
from tests.support.sampling import with_knobs

# Written from Prompty's public specification (prompty.ai, "Prompty specification"): front matter with name,
# description, authors, model (api, configuration, parameters), sample and inputs; then role sections.
PROMPTY = """---
name: Support reply
description: Answers a customer's question about an order
authors:
  - Acme support
model:
  api: chat
  configuration:
    type: openai
    name: gpt-4o-mini
    api_key: ${env:OPENAI_API_KEY}
  parameters:
    max_tokens: 120
    temperature: 0.2
    top_p: 0.9
sample:
  firstName: Jane
  question: Where is my order?
inputs:
  firstName:
    type: string
  question:
    type: string
---
system:
You are a support agent for Acme. Never promise refunds.
Address {{firstName}} by name.
{% if orders %}
Their orders:
{% for order in orders %}
- {{ order }}
{% endfor %}
{% endif %}

user:
{{question}}
"""

MESSAGES_YAML = """tau: 0.3
messages:
  - role: system
    content: |
      You are terse.
      Answer in at most two sentences.
  - role: user
    content: "Question: {question}"
"""


def _offsets_hold(text: str, body: str) -> None:
    assert len(body) == len(text)
    assert [i for i, c in enumerate(body) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]


def test_prompty_files_are_front_matter_and_role_sections_with_offsets_kept() -> None:
    parsed = parse_prompt(PROMPTY, kind="prompty")
    assert parsed.is_chat and parsed.templating == "jinja2"
    assert [m.role for m in parsed.messages] == ["system", "user"]
    system, user = parsed.messages
    assert system.content.startswith("You are a support agent for Acme.") and user.content == "{{question}}"
    _offsets_hold(PROMPTY, parsed.body)
    # the role lines are markup: blanked in the body, while the wording stays where it is in the file
    assert "system:" not in parsed.body and "user:" not in parsed.body
    start = PROMPTY.index("Never promise refunds.")
    assert parsed.body[start : start + 22] == "Never promise refunds."
    assert parsed.message_index(start) == 0 and parsed.message_index(PROMPTY.index("{{question}}")) == 1
    assert parsed.message_label(0) == "system" and PROMPTY[system.header or 0 :].startswith("system:")
    # Jinja statements are markup too: the sentences around them read as sentences; {{ x }} placeholders stay
    assert "{%" not in parsed.body and "{{firstName}}" in parsed.body and "- {{ order }}" in parsed.body
    assert "{% for order in orders %}" in system.content  # what is rendered keeps them


def test_jinja_renders_loops_and_conditionals_and_keeps_missing_inputs_as_written() -> None:
    parsed = parse_prompt(PROMPTY, kind="prompty")
    messages, missing = render_messages(parsed, {"firstName": "Ann", "orders": ["A-1", "B-2"]})
    assert messages[0]["content"].count("- A-") == 1 and "- B-2" in messages[0]["content"]
    assert "Address Ann by name." in messages[0]["content"]
    assert messages[1] == {"role": "user", "content": "{{ question }}"} and missing == ["question"]
    # an input only tested in {% if %} is optional: leaving it out is not "missing"
    messages, missing = render_messages(parsed, {"firstName": "Ann", "question": "Hi?"})
    assert missing == [] and "Their orders" not in messages[0]["content"]
    assert template_placeholders(parsed) == ["firstName", "orders", "question"]
    text, _, _ = render_conversation(parsed, {"firstName": "Ann", "question": "Hi?"})
    assert text.startswith("system:\nYou are a support agent") and text.endswith("user:\nHi?")


def test_the_jinja_sandbox_refuses_python_internals() -> None:
    parsed = parse_prompt("---\ntemplate: jinja2\n---\n{{ ''.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(PromptFileError, match="Jinja2 template error"):
        render_messages(parsed, {})


def test_a_plain_prompt_is_one_user_message_unless_it_starts_with_a_role_line() -> None:
    plain = parse_prompt("Summarise {doc}.\nUser:\nkeep this line", kind="text")
    assert not plain.is_chat and [(m.role, m.content) for m in plain.messages] == [
        ("user", "Summarise {doc}.\nUser:\nkeep this line")
    ]
    assert render_messages(plain, {"doc": "X"})[0] == [
        {"role": "user", "content": "Summarise X.\nUser:\nkeep this line"}
    ]
    assert conversation_text([{"role": "user", "content": "Summarise X."}]) == "Summarise X."  # as before chats
    chat = parse_prompt("system:\nBe kind.\n\nuser:\n{q}\n", kind="text")
    assert chat.is_chat and [(m.role, m.content) for m in chat.messages] == [("system", "Be kind."), ("user", "{q}")]
    assert chat.templating == "braces" and render_messages(chat, {"q": "hi"})[0][1] == {"role": "user", "content": "hi"}


def test_message_lists_in_yaml_and_json_locate_each_message_in_the_file() -> None:
    parsed = parse_prompt(MESSAGES_YAML, kind="messages")
    assert parsed.front_matter == {"tau": 0.3} and parsed.is_chat
    assert [m.content for m in parsed.messages] == [
        "You are terse.\nAnswer in at most two sentences.\n",
        "Question: {question}",
    ]
    _offsets_hold(MESSAGES_YAML, parsed.body)
    at = MESSAGES_YAML.index("Answer in at most")
    assert parsed.body[at : at + 17] == "Answer in at most" and parsed.message_index(at) == 0
    assert "role" not in parsed.body and "messages" not in parsed.body and '"' not in parsed.body

    document = [
        {"role": "system", "content": 'Be brief.\nSay "hi".'},
        {"role": "user", "content": "{q}"},
        {"role": "user", "content": "Again: {q}"},
    ]
    text = json.dumps(document, indent=2)
    parsed = parse_prompt(text, kind="messages")
    assert [m.content for m in parsed.messages] == [m["content"] for m in document]  # decoded, as sent
    _offsets_hold(text, parsed.body)
    assert "Be brief." in parsed.body and "\\n" not in parsed.body
    assert [parsed.message_label(i) for i in range(3)] == ["system", "user 1", "user 2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "invalid message list"),
        ("[]", "non-empty list of messages"),
        ('{"model": "x"}', "needs a `messages` list"),
        ('[{"role": "boss", "content": "x"}]', "message 1 .line 1.: `role` must be one of"),
        ('[{"role": "user", "content": [{"type": "text"}]}]', "`content` must be text"),
    ],
)
def test_bad_message_lists_get_one_clear_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_prompt(text, source="x.prompt.json", kind="messages")


def test_file_kinds_by_name() -> None:
    assert [prompt_kind(n) for n in ("a.prompty", "a.prompt.json", "a.prompt.yml", "a.prompt.md", "a.prompt")] == [
        "prompty",
        "messages",
        "messages",
        "text",
        "text",
    ]


def test_prompty_model_configuration_becomes_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    front = parse_prompt(PROMPTY, kind="prompty").front_matter
    assert front_matter_settings(front) == {
        "model": "openai/gpt-4o-mini",
        "api_key_env": "OPENAI_API_KEY",  # the variable's name, never the key
        "max_tokens": 120,
        "temperature": 0.2,
        "model_parameters": {"top_p": 0.9},
    }
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://acme.openai.azure.com")
    azure = {
        "configuration": {
            "type": "azure_openai",
            "azure_deployment": "support-4o",
            "azure_endpoint": "${env:AZURE_OPENAI_ENDPOINT}",
            "api_version": "2024-07-01-preview",
        }
    }
    assert prompty_model_settings(azure) == {
        "model": "azure/support-4o",
        "api_base": "https://acme.openai.azure.com",
        "model_parameters": {"api_version": "2024-07-01-preview"},
    }
    unset = {"configuration": {"type": "serverless", "model": "mistral/large", "endpoint": "${env:NOT_SET_ANYWHERE}"}}
    assert prompty_model_settings(unset) == {"model": "mistral/large"}  # an unset variable sets nothing
    # the front matter's own setting keys beat the model configuration
    assert front_matter_settings({**front, "temperature": 0.7})["temperature"] == 0.7


def test_model_parameters_cannot_take_what_spade_sets(workspace_dir: Path) -> None:
    prompt = workspace_dir / "p.prompty"
    prompt.write_text("---\nmodel:\n  parameters:\n    stream: true\n---\nuser:\nhi\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="stream: set by spade itself"):
        resolve_file(workspace_dir, prompt)


def test_prompty_sample_inputs(tmp_path: Path) -> None:
    assert prompty_sample({"sample": {"a": 1}}, tmp_path, source="p") == {"a": 1}
    (tmp_path / "sample.json").write_text('{"q": "from a file"}', encoding="utf-8")
    assert prompty_sample({"sample": "${file:sample.json}"}, tmp_path, source="p") == {"q": "from a file"}
    assert prompty_sample({"inputs": {"q": {"type": "string", "sample": "hi"}, "n": {}}}, tmp_path, source="p") == {
        "q": "hi"
    }
    assert prompty_sample({}, tmp_path, source="p") is None
    with pytest.raises(ConfigError, match="sample must be a mapping"):
        prompty_sample({"sample": 3}, tmp_path, source="p")


def test_history_diffs_each_message_and_the_overview_names_it(workspace_dir: Path) -> None:
    prompt = workspace_dir / "support.prompty"
    prompt.write_text(PROMPTY, encoding="utf-8")
    with Workspace(workspace_dir, overrides={"classifier": "offline"}) as workspace:
        history: History = workspace.history
        history.record(prompt, PROMPTY, origin="save")
        second = PROMPTY.replace("Never promise refunds.", "Never promise refunds. Answer in under 80 words.")
        prompt.write_text(second, encoding="utf-8")
        history.record(prompt, second, origin="save")
        delta = history.deltas(prompt)[-1]
        [change] = delta.changes
        assert change.kind in ("added", "modified") and "under 80 words" in (change.new_text or "")
        assert change.message == "system"
        third = second.replace("{{question}}", "Question: {{question}}").replace(" Never promise refunds.", "")
        history.record(prompt, third, origin="save")
        where = {c.kind: c.message for c in history.deltas(prompt)[-1].changes}
        assert where == {"removed": "system", "modified": "user"}  # a removal is placed in the older version
        prompt.write_text(second, encoding="utf-8")
        history.record(prompt, second, origin="save")
        assert change.range is not None
        line = second.splitlines()[change.range.start.line]
        assert "under 80 words" in line
        overview = build_overview(workspace.store, workspace_dir, prompt, max_prompt_bytes=1_000_000)
    sentence = next(i for i in overview.instructions if "under 80 words" in i.text)
    assert sentence.message == "system"
    assert next(i for i in overview.instructions if i.text == "{{question}}").message == "user"
    assert [(m.role, m.range.start.line) for m in overview.messages] == [
        ("system", second.splitlines().index("system:")),
        ("user", second.splitlines().index("user:")),
    ]
    assert "system:" not in {i.text for i in overview.instructions}
    assert overview.placeholders == ("firstName", "orders", "question")


def _chat_workspace(root: Path, prompt_name: str, prompt_text: str) -> Path:
    prompt = root / prompt_name
    prompt.write_text(prompt_text, encoding="utf-8")
    stem = prompt_name.split(".")[0]
    (root / f"{stem}.examples.jsonl").write_text(
        json.dumps({"id": "a", "inputs": {"firstName": "Ann", "question": "Where is it?"}}) + "\n", encoding="utf-8"
    )
    (root / f"{stem}_assertions.py").write_text(
        "from spade_lsp.assertions import assertion\n\n\n"
        "@assertion(min_success=0.5)\n"
        "def assert_sees_the_system_message(example: dict, prompt: str, response: str) -> bool:\n"
        "    return prompt.messages[0]['role'] == 'system' and prompt.startswith('system:')\n\n\n"
        "@assertion(min_success=0.5)\n"
        "def assert_short(example: dict, prompt: str, response: str) -> bool:\n"
        "    return len(response.split()) <= 5\n",
        encoding="utf-8",
    )
    return prompt


def test_sampling_sends_the_messages_as_written_with_the_prompty_model_and_parameters(workspace_dir: Path) -> None:
    prompt = _chat_workspace(workspace_dir, "support.prompty", PROMPTY)
    with OpenAIStub(lambda request: chat_reply("Hello Ann, it ships today.")) as stub:
        # settings give only the endpoint: the model, max_tokens, temperature and top_p are the Prompty file's
        overrides = {"api_base": stub.api_base, "classifier": "offline"}
        settings = resolve_file(workspace_dir, prompt, overrides)
        with Workspace(workspace_dir, overrides=overrides) as workspace:
            document = sample_prompt(
                workspace, prompt, SampleOptions(), settings=with_knobs(settings, samples=2, early_stopping=False)
            )
        requests: list[dict[str, Any]] = list(stub.requests)
    assert len(requests) == 4  # two examples (the file's and the Prompty sample) x two samples
    first = requests[0]
    assert first["model"] == "gpt-4o-mini" and first["max_tokens"] == 120 and first["top_p"] == 0.9
    assert {r["temperature"] for r in requests} == {0.2}
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    sent = {r["messages"][1]["content"] for r in requests}
    assert sent == {"Where is it?", "Where is my order?"}  # the sample's question too
    assert document["inputs"] == ["a", "prompty-sample"]
    sees = next(v for v in document["validators"] if v["name"] == "assert_sees_the_system_message")
    assert (sees["successes"], sees["trials"]) == (4, 4)


def test_settings_override_the_prompty_model(workspace_dir: Path) -> None:
    prompt = _chat_workspace(workspace_dir, "support.prompty", PROMPTY)
    with OpenAIStub(lambda request: chat_reply("Fine.")) as stub:
        overrides = {"model": "openai/other", "api_base": stub.api_base, "classifier": "offline"}
        with Workspace(workspace_dir, overrides=overrides) as workspace:
            sample_prompt(
                workspace,
                prompt,
                SampleOptions(),
                settings=with_knobs(resolve_file(workspace_dir, prompt, overrides), samples=1),
            )
        assert {r["model"] for r in stub.requests} == {"other"}


def test_a_message_list_is_sampled_as_written(workspace_dir: Path) -> None:
    prompt = _chat_workspace(workspace_dir, "terse.prompt.yaml", MESSAGES_YAML)
    with OpenAIStub(lambda request: chat_reply("Soon.")) as stub:
        overrides = {"model": "openai/stub", "api_base": stub.api_base, "classifier": "offline"}
        with Workspace(workspace_dir, overrides=overrides) as workspace:
            document = sample_prompt(
                workspace,
                prompt,
                SampleOptions(),
                settings=with_knobs(resolve_file(workspace_dir, prompt, overrides), samples=1),
            )
        [request] = stub.requests
    assert request["messages"] == [
        {"role": "system", "content": "You are terse.\nAnswer in at most two sentences.\n"},
        {"role": "user", "content": "Question: Where is it?"},
    ]
    assert all(v["verdict"] != "fail" or v["name"] == "assert_short" for v in document["validators"])


def test_a_prompty_file_without_role_lines_is_one_user_message_with_its_braces_filled() -> None:
    parsed = parse_prompt("---\nname: x\n---\nAnswer {question} briefly, {{ name }}.\n", kind="prompty")
    assert not parsed.is_chat and parsed.templating == "jinja2"
    messages, missing = render_messages(parsed, {"question": "why?"})
    assert messages == [{"role": "user", "content": "Answer why? briefly, {{ name }}."}] and missing == ["name"]
    assert template_placeholders(parsed) == ["name", "question"]
    # a {x} placeholder is filled in a chat Prompty file too, and one whose input is missing is named
    chat = parse_prompt("system:\nBe brief about {topic}.\nuser:\n{{q}}\n", kind="prompty")
    assert render_messages(chat, {"q": "hi"}) == (
        [{"role": "system", "content": "Be brief about {topic}."}, {"role": "user", "content": "hi"}],
        ["topic"],
    )


@pytest.mark.parametrize("expression", ["{{ q + 1 }}", "{{ 1 / 0 }}", "{{ range(10**9) | list }}", "{% if %}"])
def test_jinja_errors_are_one_line_not_a_traceback(expression: str) -> None:
    parsed = parse_prompt(f"user:\n{expression}\n", kind="prompty")
    with pytest.raises(PromptFileError, match=r"^p: the user message: Jinja2 template error") as raised:
        render_messages(parsed, {"q": "hi"}, source="p")
    assert "\n" not in str(raised.value)


def test_front_matter_cannot_read_files_elsewhere_or_put_secrets_where_they_are_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret.json").write_text('{"q": "private"}', encoding="utf-8")
    folder = tmp_path / "prompts"
    folder.mkdir()
    for sample in ("../secret.json", str(tmp_path / "secret.json"), "${file:../secret.json}"):
        with pytest.raises(ConfigError, match="outside the prompt's folder"):
            prompty_sample({"sample": sample}, folder, source="p")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live")
    leaky = {"configuration": {"type": "openai", "name": "x", "base_url": "https://h/${env:OPENAI_API_KEY}"}}
    with pytest.raises(ConfigError, match="names a secret"):
        prompty_model_settings(leaky)
    with pytest.raises(ConfigError, match="extra_headers: credentials never go in settings"):
        Workspace.for_path(tmp_path).settings.merged({"model_parameters": {"extra_headers": {"a": "b"}}}, source="t")


def test_a_one_message_prompt_sends_what_it_sent_before_chat_prompts(workspace_dir: Path) -> None:
    prompt = workspace_dir / "support.prompt"
    prompt.write_text("---\ntau: 0.3\n---\n\nAnswer {question}\nbriefly.\n\n", encoding="utf-8")
    _chat_workspace(workspace_dir, "support.prompt", prompt.read_text(encoding="utf-8"))
    with OpenAIStub(lambda request: chat_reply("Soon.")) as stub:
        overrides = {"model": "openai/stub", "api_base": stub.api_base, "classifier": "offline"}
        with Workspace(workspace_dir, overrides=overrides) as workspace:
            sample_prompt(
                workspace,
                prompt,
                SampleOptions(),
                settings=with_knobs(resolve_file(workspace_dir, prompt, overrides), samples=1),
            )
        [request] = stub.requests
    assert request["messages"] == [{"role": "user", "content": "Answer Where is it?\nbriefly."}]


def test_a_message_list_that_does_not_parse_is_not_recorded(workspace_dir: Path) -> None:
    from spade_lsp.workspace import sync_prompt

    prompt = workspace_dir / "b.prompt.json"
    prompt.write_text('[{"role": "system", "content": "Answer in JSON."}]', encoding="utf-8")
    with Workspace(workspace_dir, overrides={"classifier": "offline"}) as workspace:
        sync_prompt(workspace, prompt, git=False)
        prompt.write_text('[{"role": "system", "content": "Answer in JSON. Never', encoding="utf-8")
        with pytest.raises(ConfigError, match="not recorded until it parses"):
            sync_prompt(workspace, prompt, git=False)
        assert len(workspace.history.versions(prompt)) == 1


def test_prompty_histories_recorded_before_chat_prompts_are_read_again(workspace_dir: Path) -> None:
    from spade_lsp.store._database import _chat_prompts

    prompt = workspace_dir / "support.prompty"
    prompt.write_text(PROMPTY, encoding="utf-8")
    with Workspace(workspace_dir, overrides={"classifier": "offline"}) as workspace:
        workspace.history.record(prompt, PROMPTY, origin="save")
        before = workspace.history.sentences(prompt)
        with workspace.store.write() as db:
            _chat_prompts(db)  # the migration, as on a store written by an older spade-lsp
        assert workspace.history.sentences(prompt) == []
        workspace.history.record(prompt, PROMPTY, origin="save")  # unchanged text: no version, sentences rebuilt
        assert workspace.history.sentences(prompt) == before and len(workspace.history.versions(prompt)) == 1
        first = workspace.history.deltas(prompt)[0].changes[0]
        assert (first.new_text or "").startswith("You are a support")  # not the role line "system:" any more

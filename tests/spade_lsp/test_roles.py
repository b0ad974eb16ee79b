"""The two model roles: ``model`` (the pipeline's, sampled and compared) and ``assistant_model`` (spade-lsp's
own work), resolved from settings, front matter and flags; and the main jobs against servers that are not
OpenAI (one that rejects ``json_schema`` and answers in prose), through the real litellm client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spade_lsp._roles import assistant_endpoint, pipeline_endpoint
from spade_lsp.cli import main
from spade_lsp.config import Settings, resolve_file
from spade_lsp.errors import ModelNotConfiguredError
from spade_lsp.workspace import Workspace
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply, error_reply

LLAMA_CPP_REJECTION = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or "
    "'json_object' [type=literal_error, input_value='json_schema', input_type=str]"
)


def test_without_an_assistant_model_spade_works_offline_and_never_borrows_the_pipelines() -> None:
    settings = Settings(model="openai/pipeline", api_base="http://127.0.0.1:1/v1")
    assert pipeline_endpoint(settings) is not None
    assert assistant_endpoint(settings) is None


def test_same_borrows_the_pipelines_endpoint_and_assistant_settings_override_it() -> None:
    same = assistant_endpoint(
        Settings(model="openai/p", api_base="http://a/v1", api_key_env="K", assistant_model="same")
    )
    assert same is not None and (same.model, same.api_base, same.api_key_env) == ("openai/p", "http://a/v1", "K")
    other = assistant_endpoint(
        Settings(model="openai/p", api_base="http://a/v1", assistant_model="same", assistant_api_base="http://b/v1")
    )
    assert other is not None and (other.model, other.api_base) == ("openai/p", "http://b/v1")
    assert assistant_endpoint(Settings(assistant_model="same")) is None  # no pipeline model to borrow
    own = assistant_endpoint(Settings(model="openai/p", assistant_model="openai/a", assistant_api_base="http://c/v1"))
    assert own is not None and (own.role, own.model, own.api_base) == ("assistant", "openai/a", "http://c/v1")


def test_front_matter_and_overrides_decide_a_prompts_models(workspace_dir: Path) -> None:
    prompt = workspace_dir / "p.prompt"
    prompt.write_text("---\nassistant_model: openai/from-front-matter\ntau: 0.1\n---\nBe brief.\n", encoding="utf-8")
    (workspace_dir / "spade.toml").write_text('model = "openai/from-file"\n', encoding="utf-8")
    with Workspace(workspace_dir) as ws:
        settings = resolve_file(workspace_dir, prompt)
        assert (settings.model, settings.assistant_model, settings.tau) == (
            "openai/from-file",
            "openai/from-front-matter",
            0.1,
        )
        assert ws.has_assistant(settings) and not ws.has_assistant()
    flags = {"assistant_model": "openai/flag"}
    assert resolve_file(workspace_dir, prompt, flags).assistant_model == "openai/flag"  # flags beat front matter


def test_an_assistant_is_required_by_name_where_one_is_needed(workspace_dir: Path) -> None:
    with (
        Workspace(workspace_dir, overrides={"model": "openai/pipeline"}) as ws,
        pytest.raises(ModelNotConfiguredError, match="judging needs a model; no assistant model"),
    ):
        ws.assistant_client(what="judging")


def test_local_resolves_to_the_machines_embedded_server(workspace_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from spade_lsp import local_model

    started: list[Path | None] = []

    def ensure_server(*, log_dir: Path | None = None, **_: Any) -> local_model.LocalEndpoint:
        started.append(log_dir)
        return local_model.LocalEndpoint("http://127.0.0.1:9/v1", "openai/smollm2-135m-instruct", 9, 1)

    monkeypatch.setattr(local_model, "ensure_server", ensure_server)
    monkeypatch.setattr(local_model, "server_status", lambda: {"healthy": True, "api_base": "http://127.0.0.1:9/v1"})
    with Workspace(workspace_dir, overrides={"model": "local", "assistant_model": "local"}) as ws:
        pipeline, assistant = ws.llm_client(), ws.assistant_client()
        assert pipeline.model == assistant.model == "openai/smollm2-135m-instruct"
        assert getattr(pipeline, "api_base", None) == "http://127.0.0.1:9/v1"
        assert getattr(pipeline, "max_tokens", None) == 256 and getattr(assistant, "max_tokens", None) == 768
        assert ws.llm_client() is pipeline  # the server still answers: the client is kept
        assert started == [workspace_dir / ".spade", workspace_dir / ".spade"]


# -- a server that is not OpenAI ----------------------------------------------------------------------------------

PROMPT = "Write a product blurb for {product}.\nKeep it under 12 words.\n"
SIDECAR = """from spade_lsp.assertions import ask_llm


def assert_short(example: dict, prompt: str, response: str) -> bool:
    return len(response.split()) <= 12


def assert_friendly(example: dict, prompt: str, response: str) -> bool:
    return ask_llm("Is the blurb friendly?", response)
"""


def _llama_cpp_like(request: dict[str, Any]) -> Reply:
    """Rejects ``json_schema`` as llama.cpp's server does; a structured request in another mode gets JSON that
    fits the question (wrapped in a fence and a sentence, as small models do); anything else gets prose."""
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return error_reply(500, LLAMA_CPP_REJECTION)
    system = str(request["messages"][0].get("content", ""))
    if response_format or "JSON" in system:
        if "yes or no" in system:
            body: Any = {"answer": "yes"}
        elif "taxonomy" in system:
            body = {"edits": [{"index": 0, "labels": ["Content/Count"]}]}
        else:
            return chat_reply("I am not sure what you mean.")  # criteria: prose, so synthesis falls back
        return chat_reply(f"Sure! Here it is:\n```json\n{json.dumps(body)}\n```")
    return chat_reply("A bright, friendly blurb for you.")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip().startswith("{") else captured.out, captured.err


def test_a_server_without_json_schema_runs_every_main_job(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    (workspace_dir / "versions.json").write_text(json.dumps(["Write a product blurb for {product}.", PROMPT]))
    lines = [{"id": f"e{i}", "inputs": {"product": name}} for i, name in enumerate(["Lamp", "Kettle"])]
    (workspace_dir / "blurb.examples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with OpenAIStub(_llama_cpp_like) as stub:
        (workspace_dir / "spade.toml").write_text(
            f'model = "openai/llama"\napi_base = "{stub.api_base}"\nassistant_model = "same"\nllm_max_retries = 0\n',
            encoding="utf-8",
        )
        code, imported, err = _run(
            capsys, "import", str(prompt), "--versions", str(workspace_dir / "versions.json"), "--json"
        )
        assert code == 0, err
        assert imported["labels"]["relabelled"] == 2 and imported["fallbacks"] == []
        rejected = [r for r in stub.requests if (r.get("response_format") or {}).get("type") == "json_schema"]
        assert len(rejected) == 1  # negotiated once, then remembered in the store

        code, synthesized, err = _run(capsys, "synthesize", str(prompt), "--json")
        assert code == 0, err
        [fallback] = [f for f in synthesized["fallbacks"] if f["step"] == "assertion criteria"]
        assert fallback["instead"] == "synthesized offline instead"
        assert synthesized["candidates"] and {c["synthesizer"] for c in synthesized["candidates"]} == {"offline"}

        (workspace_dir / "blurb_assertions.py").write_text(SIDECAR, encoding="utf-8")
        code, sampled, err = _run(capsys, "sample", str(prompt), "--samples", "2", "--no-early-stop", "--json")
        assert code == 0, err
        assert sampled["calls"] == 4 and sampled["calls_failed"] == 0
        friendly = next(v for v in sampled["validators"] if v["name"] == "assert_friendly")
        assert (friendly["successes"], friendly["trials"]) == (4, 4)  # ask_llm answered yes through json_object

        code, compared, err = _run(capsys, "compare", str(prompt), "--samples", "2", "--json")
        assert code == 0, err
        assert [v["version"] for v in compared["variants"]] == [1, 2]
    with Workspace(workspace_dir) as ws:
        modes = ws.store.db.execute("SELECT model, structured_mode FROM llm_capabilities").fetchall()
    assert modes == [("openai/llama", "json_object")]


def test_a_malformed_ask_llm_answer_is_an_error_cell_and_never_cached(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``{}`` used to be cached as "no" and flipped the check for good; now it is asked again, then recorded as
    an error with its reason, and the next run asks the model afresh."""
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    (workspace_dir / "blurb_assertions.py").write_text(SIDECAR, encoding="utf-8")
    example = {"id": "a", "inputs": {"product": "Lamp"}, "output": "A lamp.", "label": "good"}
    (workspace_dir / "blurb.examples.jsonl").write_text(json.dumps(example) + "\n")
    with OpenAIStub(lambda request: chat_reply("{}")) as stub:
        (workspace_dir / "spade.toml").write_text(
            f'assistant_model = "openai/judge"\nassistant_api_base = "{stub.api_base}"\nstructured_reasks = 1\n',
            encoding="utf-8",
        )
        code, matrix, _ = _run(capsys, "eval", str(prompt), "--json")
        assert code == 1  # a cell errored
        [error] = matrix["errors"]
        assert (error["assertion"], error["kind"]) == ("assert_friendly", "llm_error")
        assert "schema" in error["message"]
        asked = len(stub.requests)
        assert asked == 2  # the question, then one re-ask
        _run(capsys, "eval", str(prompt), "--json")
        assert len(stub.requests) == 2 * asked  # nothing was cached: asked again
    with Workspace(workspace_dir) as ws:
        assert ws.store.db.execute("SELECT COUNT(*) FROM llm_cache").fetchone() == (0,)


def test_an_assistant_that_cannot_start_falls_back_and_the_jobs_finish(
    workspace_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``assistant_model = "local"`` without the extra installed: labels stay offline, synthesis runs offline,
    sampling runs without ask_llm answers (each question's cell says why); each says why, with the command that
    installs the model."""
    from spade_lsp import local_model
    from spade_lsp.errors import LocalModelUnavailableError

    def not_installed(**_: Any) -> Any:
        raise LocalModelUnavailableError("the local model is not installed: run `make local-model`")

    monkeypatch.setattr(local_model, "ensure_server", not_installed)
    prompt = workspace_dir / "blurb.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    (workspace_dir / "versions.json").write_text(json.dumps(["Write a product blurb for {product}.", PROMPT]))
    (workspace_dir / "blurb.examples.jsonl").write_text(json.dumps({"id": "a", "inputs": {"product": "Lamp"}}) + "\n")
    with OpenAIStub(lambda request: chat_reply("A lamp.")) as stub:
        (workspace_dir / "spade.toml").write_text(
            f'model = "openai/pipeline"\napi_base = "{stub.api_base}"\nassistant_model = "local"\n', encoding="utf-8"
        )
        code, imported, err = _run(
            capsys, "import", str(prompt), "--versions", str(workspace_dir / "versions.json"), "--json"
        )
        assert code == 0, err
        assert imported["labels"]["relabelled"] == 0 and "make local-model" in imported["fallbacks"][0]["reason"]

        code, synthesized, err = _run(capsys, "synthesize", str(prompt), "--json")
        assert code == 0, err
        [fallback] = synthesized["fallbacks"]
        assert fallback["instead"] == "synthesized offline instead" and "make local-model" in fallback["reason"]

        (workspace_dir / "blurb_assertions.py").write_text(SIDECAR, encoding="utf-8")
        code, sampled, err = _run(capsys, "sample", str(prompt), "--samples", "2", "--no-early-stop", "--json")
        assert code == 0, err
        assert sampled["calls"] == 2 and len(stub.requests) == 2  # only the pipeline was asked
        [fallback] = sampled["fallbacks"]  # the model is started at the first ask_llm question, and fails
        assert fallback["step"] == "ask_llm" and "make local-model" in fallback["reason"]
        friendly = next(v for v in sampled["validators"] if v["name"] == "assert_friendly")
        assert friendly["trials"] == 0

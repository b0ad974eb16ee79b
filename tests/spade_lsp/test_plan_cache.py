"""The per-user cache of the offline synthesizer's plans: what it stores is what planning computes, a prompt opened
again in another process is not planned again, and a missing, damaged or foreign cache never changes a plan."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spade_lsp import overview
from spade_lsp.store import PLAN_CACHE_ENV, PlanCache, plan_cache_path

REQUESTS: list[overview.PlanRequest] = [
    ("Keep the answer under 50 words.", ("Content/Count",), "sentence", ()),
    ("Never mention the customer's age.", ("Content/Exclusion",), "sentence", ()),
    ("Answer in {language}.", ("Structural/PresentationFormat",), "sentence", ("language",)),
    ("You are a helpful assistant for a bakery.", ("Content/WorkflowDescription",), "sentence", ()),
    ("Be warm and friendly.", ("Content/QualitativeAssessment",), "sentence", ()),
    ("Make sure the advice is medically accurate.", ("Content/QualitativeAssessment",), "sentence", ()),
]


@pytest.fixture
def cache_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    path = tmp_path / "cache" / "plans.sqlite"
    monkeypatch.setenv(PLAN_CACHE_ENV, str(path))
    monkeypatch.setattr(overview, "_PLANS", {})
    return path


def _forget_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overview, "_PLANS", {})


def test_plans_from_the_cache_equal_planning(cache_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    computed = overview.plans_for(REQUESTS)
    assert computed == [overview.plan_unit(*request) for request in REQUESTS]
    assert any(plan.checks for plan in computed) and any(plan.needs_model for plan in computed)
    assert cache_file.is_file()
    _forget_in_process(monkeypatch)

    def never(*_: object) -> overview.Plan:
        raise AssertionError("planned again although the cache holds the plan")

    monkeypatch.setattr(overview, "plan_unit", never)
    assert overview.plans_for(REQUESTS) == computed


def test_another_process_reads_the_plans_without_planning(cache_file: Path) -> None:
    overview.plans_for(REQUESTS)
    script = textwrap.dedent(
        f"""
        import sys
        from spade_lsp import overview
        def never(*_):
            raise SystemExit("planned again")
        overview.plan_unit = never
        plans = overview.plans_for({REQUESTS!r})
        print(sum(len(p.checks) for p in plans))
        print("synthesis" if "spade_lsp.synthesis._offline" in sys.modules else "no synthesis")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    checks, imported = done.stdout.split("\n")[:2]
    assert int(checks) == sum(len(p.checks) for p in overview.plans_for(REQUESTS))
    assert imported == "no synthesis"  # the offline synthesizer's module is not even imported


def test_a_plan_written_by_other_code_is_never_read(cache_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    request = REQUESTS[0]
    foreign = PlanCache(cache_file, "another-release")
    foreign.put_many({overview._plan_key(request): overview._plan_json(overview.Plan(checks=("assert_forged",)))})
    foreign.close()
    (plan,) = overview.plans_for([request])
    assert plan == overview.plan_unit(*request)
    assert "assert_forged" not in plan.checks
    # and the first write under this code's fingerprint dropped the other release's rows
    assert PlanCache(cache_file, "another-release").get_many([overview._plan_key(request)]) == {}


@pytest.mark.parametrize("damage", ["garbage", "directory", "unreadable row"])
def test_a_damaged_cache_changes_no_plan(cache_file: Path, damage: str) -> None:
    expected = [overview.plan_unit(*request) for request in REQUESTS]
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    if damage == "garbage":
        cache_file.write_bytes(b"not a database" * 100)
    elif damage == "directory":
        cache_file.mkdir()
    else:
        PlanCache(cache_file, overview.code_fingerprint()).put_many({overview._plan_key(REQUESTS[0]): "{not json"})
    assert overview.plans_for(REQUESTS) == expected


def test_the_cache_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(PLAN_CACHE_ENV, "off")
    assert plan_cache_path() is None
    monkeypatch.setattr(overview, "_PLANS", {})
    assert overview.plans_for(REQUESTS[:1]) == [overview.plan_unit(*REQUESTS[0])]
    monkeypatch.delenv(PLAN_CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert plan_cache_path() == tmp_path / "spade-lsp" / "plans.sqlite"


def test_the_fingerprint_follows_every_source_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "sub" / "b.py").write_text("B = 2\n")
    first = overview.source_digest(tmp_path)
    assert overview.source_digest(tmp_path) == first
    (tmp_path / "sub" / "b.py").write_text("B = 3\n")
    edited = overview.source_digest(tmp_path)
    (tmp_path / "c.py").write_text("")
    added = overview.source_digest(tmp_path)
    (tmp_path / "c.py").rename(tmp_path / "d.py")
    assert len({first, edited, added, overview.source_digest(tmp_path)}) == 4
    assert overview.code_fingerprint() == overview.source_digest(Path(overview.__file__).parent)

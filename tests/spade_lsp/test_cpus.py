from __future__ import annotations

from pathlib import Path

import pytest

from spade_lsp import _cpus


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A 64-CPU host on which this process may run on three; its cgroup file is ``cpu.max`` under tmp_path."""
    monkeypatch.setattr(_cpus.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.setattr(_cpus.os, "cpu_count", lambda: 64)
    monkeypatch.setattr(_cpus, "_CGROUP_CPU_MAX", tmp_path / "cpu.max")
    return tmp_path / "cpu.max"


def test_the_affinity_mask_counts_not_the_hosts_cpus(host: Path) -> None:
    assert _cpus.usable_cpus() == 3  # no cgroup v2 file (cgroup v1, or none)
    host.write_text("max 100000\n")
    assert _cpus.usable_cpus() == 3


def test_a_cgroup_quota_caps_the_count_rounding_a_partial_cpu_up(host: Path) -> None:
    host.write_text("150000 100000\n")
    assert _cpus.usable_cpus() == 2
    host.write_text("20000 100000\n")
    assert _cpus.usable_cpus() == 1


def test_an_unreadable_quota_leaves_the_affinity_count(host: Path) -> None:
    host.write_text("garbage\n")
    assert _cpus.usable_cpus() == 3


def test_without_an_affinity_call_the_os_count_is_used(host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(_cpus.os, "sched_getaffinity")
    assert _cpus.usable_cpus() == 64
    monkeypatch.setattr(_cpus.os, "cpu_count", lambda: None)
    assert _cpus.usable_cpus() == 1

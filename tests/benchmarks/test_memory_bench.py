"""Memory follows the work, not the examples file: peak RSS of ``spade sample`` and ``spade eval`` with a 10-line
and a 1,000,000-line examples file (about 100 MB), each a fresh process, measured from ``/proc/self/status``
(VmHWM) at its end.

- ``spade sample --inputs 5 --samples 1``: five inputs are drawn from the file without holding it (digests in a
  first pass, the drawn lines in a second). Floor: the large file's peak within 100 MB of the small one's.
- ``spade eval`` runs every check on every example, ten thousand at a time; what it holds is the run itself,
  compact (the ids' UTF-8 bytes and an offset each, a 4-byte index per example into its distinct label-and-verdicts
  rows), after a first pass that finds reused ids from an 8-byte digest per line; the run is written into its
  store row in pieces. Floor: the same 100 MB.

Reproduce: ``.venv/bin/pytest -q -s tests/benchmarks/test_memory_bench.py -p no:cacheprovider``
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.floors import at_most, figure
from tests.support.openai_stub import OpenAIStub, chat_reply

pytestmark = pytest.mark.benchmark

LINES = 1_000_000
GROWTH_FLOOR_MB = 100.0
_MEASURED = """
import sys
from spade_lsp.cli import main
code = main(sys.argv[1:])
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")]
sys.stderr.write("PEAK_RSS_KB=%s\\n" % peak[0])
raise SystemExit(code)
"""


def _spade(root: Path, *argv: str) -> tuple[int, float, float, str]:
    """Exit code, peak RSS in MB, seconds and stderr of ``spade ARGV`` in a fresh process."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, *argv], cwd=root, capture_output=True, text=True, timeout=1800
    )
    seconds = time.monotonic() - started
    peak = [int(line.split("=")[1]) for line in done.stderr.splitlines() if line.startswith("PEAK_RSS_KB=")]
    return done.returncode, (peak[0] / 1024 if peak else float("inf")), seconds, done.stderr


def _workspace(root: Path, lines: int, api_base: str) -> Path:
    root.mkdir()
    (root / "spade.toml").write_text(f'model = "openai/stub"\napi_base = "{api_base}"\n', encoding="utf-8")
    prompt = root / "blurb.prompt"
    prompt.write_text("Write a blurb for {product}.\nKeep it under 12 words.\n", encoding="utf-8")
    (root / "blurb_assertions.py").write_text(
        "def assert_short(example: dict, prompt: str, response: str) -> bool:\n"
        "    return len(response.split()) <= 12\n",
        encoding="utf-8",
    )
    with (root / "blurb.examples.jsonl").open("w", encoding="utf-8") as handle:
        for n in range(lines):
            label = "good" if n % 2 else "bad"
            row = {"id": f"e{n}", "inputs": {"product": f"kettle {n}"}, "output": "A lovely kettle.", "label": label}
            handle.write(json.dumps(row) + "\n")
    return prompt


@pytest.mark.timeout(3600)
def test_peak_memory_follows_the_work_not_the_file(tmp_path: Path) -> None:
    with OpenAIStub(lambda request: chat_reply("A lovely kettle for you.")) as stub:
        small = _workspace(tmp_path / "small", 10, stub.api_base)
        large = _workspace(tmp_path / "large", LINES, stub.api_base)
        size_mb = (large.parent / "blurb.examples.jsonl").stat().st_size / 1e6
        peaks: dict[str, float] = {}
        for name, prompt in (("small", small), ("large", large)):
            argv = ["sample", str(prompt), "--inputs", "5", "--samples", "1", "--no-early-stop", "--json"]
            code, peak, seconds, err = _spade(prompt.parent, *argv)
            assert code in (0, 1), err
            peaks[name] = peak
            figure(f"sample_5_inputs_{name}_peak_rss_mb", peak, "MB")
            figure(f"sample_5_inputs_{name}_s", seconds, "s")
        print(f"\nexamples file: {LINES:,} lines, {size_mb:.0f} MB")
        at_most("sample_peak_rss_growth_mb", peaks["large"] - peaks["small"], GROWTH_FLOOR_MB, "MB")
        for name, prompt in (("small", small), ("large", large)):
            code, peak, seconds, err = _spade(prompt.parent, "eval", str(prompt), "--json")
            assert code in (0, 1), err
            peaks[f"eval_{name}"] = peak
            figure(f"eval_{name}_peak_rss_mb", peak, "MB")
            figure(f"eval_{name}_s", seconds, "s")
        at_most("eval_peak_rss_growth_mb", peaks["eval_large"] - peaks["eval_small"], GROWTH_FLOOR_MB, "MB")

"""Issue 21's warm, ready and workers bench (bench/warm.py) in its quick mode, end to end: the
ratios are printed, none is asserted (`pytest -m bench -s` shows them)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SNAPSHOT

pytestmark = [
    pytest.mark.bench,
    pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed"),
    pytest.mark.skipif(not SNAPSHOT.exists(), reason="needs ../shared/data"),
]


def test_quick_warm_ready_workers_bench_prints_every_ratio() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.warm", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    print(done.stdout)
    rows = {line.split("|")[1].strip(): line for line in done.stdout.splitlines() if "|" in line}
    # Each part's row of this code, with a ratio: warm against the precomputed bytes, start to
    # ready on the real data and at K = 3, two workers against one.
    assert re.search(r"\| this code \| [\d,]+ \| \*\*\d+\.\d\d\*\* \|", done.stdout), done.stdout
    assert rows["precomputed"].split("|")[3].strip() == "**1.00**"
    assert "| start to ready | real data s | first answer ms | K = 3 s |" in done.stdout
    assert re.search(r"\| this code \| [\d,]+ \| [\d,]+ \| \*\*\d+\.\d\d\*\* \|", done.stdout)

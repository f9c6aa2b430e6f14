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


def warm_bench(*args: str) -> str:
    """`python -m bench.warm ARGS`, which exited 0: what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.warm", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    print(done.stdout)
    return done.stdout


def test_quick_warm_ready_workers_bench_prints_every_ratio() -> None:
    printed = warm_bench("--quick")
    rows = {line.split("|")[1].strip(): line for line in printed.splitlines() if "|" in line}
    # Each part's row of this code, with a ratio: warm (the same request, and each with a
    # traceparent of its own) against the precomputed bytes, start to ready on the real data
    # and at K = 3, two workers against one.
    warm = re.findall(r"\| this code \| [\d,]+ \| \*\*\d+\.\d\d\*\* \|", printed)
    assert len(warm) == 2, printed
    assert "| warm model page, a traceparent each | req/s |" in printed
    assert rows["precomputed"].split("|")[3].strip() == "**1.00**"
    assert "| start to ready | real data s | CPU s | first answer ms | K = 3 s |" in printed
    # Two workers over one, wrk reading the answers and not: the quick mode's one round is its
    # median and its whole range.
    for reads in ("every answer", "statuses"):
        ratio = r"\*\*(\d+\.\d\d)\*\* \(\1-\1\)"
        workers = rf"\| this code \| {reads} \| [\d,]+ \| [\d,]+ \| {ratio} \|"
        assert re.search(workers, printed), printed


def test_quick_ready_bench_against_a_revision_interleaves_the_starts() -> None:
    """`--code REV`: that revision's packages checked out and started in turn with this code's;
    each code's row, and this code's over before's."""
    printed = warm_bench("--quick", "--parts", "ready", "--code", "HEAD")
    rows = {line.split("|")[1].strip(): line for line in printed.splitlines() if "|" in line}
    assert {"this code", "before (HEAD)", "this code / before"} <= set(rows), printed
    assert len(re.findall(r"\d+\.\d\d×", rows["this code / before"])) == 6

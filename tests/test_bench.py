"""The benchmark's quick mode runs end to end (no timing asserted): `pytest -m bench`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SNAPSHOT

pytestmark = pytest.mark.bench


@pytest.mark.skipif(
    shutil.which("wrk") is None, reason="wrk is not installed (apt-get install wrk)"
)
@pytest.mark.skipif(not SNAPSHOT.exists(), reason="needs ../shared/data")
def test_quick_benchmark_runs() -> None:
    backends = "sqlite" if os.environ.get("LEADGREEN_TEST_POSTGRES") == "off" else "sqlite,postgres"
    done = subprocess.run(
        [str(ROOT / "bench" / "run"), "--quick", "--backends", backends],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "model page warm" in done.stdout


@pytest.mark.skipif(
    shutil.which("wrk") is None or shutil.which("npm") is None,
    reason="needs wrk and npm (the peers run on Node)",
)
@pytest.mark.skipif(not SNAPSHOT.exists(), reason="needs ../shared/data")
def test_quick_comparison_with_the_peers_runs() -> None:
    """LeadGreen, Mercurius (graphql-jit) and PostGraphile answer the same model pages with the
    same numbers (bench/peers_compare.py checks them against the files), then a second each."""
    done = _quick("bench.peers_compare")
    assert "answers checked: 18 models × 3 servers" in done.stderr


@pytest.mark.skipif(
    shutil.which("wrk") is None or shutil.which("npm") is None,
    reason="needs wrk and npm (Mercurius runs on Node)",
)
@pytest.mark.skipif(not SNAPSHOT.exists(), reason="needs ../shared/data")
def test_quick_partners_mix_runs() -> None:
    """The partners' mix (bench/mix.py): every request answered without errors, its model
    pages the same as Mercurius's, each part a second against each server, and the cost of a
    document not seen before; ratios printed, none asserted."""
    done = _quick("bench.mix")
    assert "216 model pages equal to Mercurius's" in done.stderr
    rows = [line.split(" | ")[0] for line in done.stdout.splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "| the mix, LeadGreen as deployed (response cache in memory)",
        "| the mix, LeadGreen with LEADGREEN_CACHE=off",
        "| its model pages, LeadGreen as deployed",
        "| its model pages, LeadGreen with LEADGREEN_CACHE=off",
        "| its model pages, Fastify + Mercurius (graphql-jit)",
    ]
    seen = re.search(r"A document not seen before, over the docs' (\d+) operations .*", done.stdout)
    assert seen is not None and int(seen[1]) >= 20, done.stdout
    steps = [part.split(" ")[0] for part in seen[0].split(": ", 1)[1].split("; ")]
    assert steps == ["total", "parse", "validation", "cost", "plan"]


def _quick(module: str) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE --quick`, which exited 0."""
    done = subprocess.run(
        [sys.executable, "-m", module, "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done

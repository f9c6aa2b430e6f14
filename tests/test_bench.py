"""The benchmark's quick mode runs end to end (no timing asserted): `pytest -m bench`."""

from __future__ import annotations

import os
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
    done = subprocess.run(
        [sys.executable, "-m", "bench.peers_compare", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "answers checked: 18 models × 3 servers" in done.stderr

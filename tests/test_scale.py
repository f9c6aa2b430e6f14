"""Scale: the K-times snapshot generator, and the scale run's quick mode (K = 1, 3), whose
costs that need not grow with the data (first answer, model page, Pareto frontier) stay within
a few times K = 1's: `pytest -m scale`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.scale import write_scaled
from tests.conftest import ROOT, SNAPSHOT

pytestmark = [
    pytest.mark.scale,
    pytest.mark.skipif(not SNAPSHOT.exists(), reason="needs ../shared/data"),
]


def test_k_one_is_the_snapshot_byte_for_byte(tmp_path: Path) -> None:
    write_scaled(SNAPSHOT, tmp_path / "k1", 1)
    files = sorted(p.relative_to(SNAPSHOT) for p in SNAPSHOT.rglob("*.json"))
    assert sorted(p.relative_to(tmp_path / "k1") for p in (tmp_path / "k1").rglob("*.json")) == [
        f for f in files if (tmp_path / "k1" / f).exists()
    ]
    for name in files:
        if (tmp_path / "k1" / name).exists():
            assert (tmp_path / "k1" / name).read_bytes() == (SNAPSHOT / name).read_bytes()


def test_k_three_has_three_copies_of_every_model(tmp_path: Path) -> None:
    stats = write_scaled(SNAPSHOT, tmp_path / "k3", 3)
    index = json.loads((tmp_path / "k3" / "index.json").read_bytes())
    original = json.loads((SNAPSHOT / "index.json").read_bytes())
    assert stats.models == len(index["models"]) == 3 * len(original["models"])


def test_quick_scale_run_costs_do_not_grow_with_the_data() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale_measure", "--quick", "--asks", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "| 3 | sqlite |" in done.stdout, done.stdout

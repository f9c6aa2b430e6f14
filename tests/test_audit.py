"""The GraphQL-over-HTTP audit of npm graphql-http (scripts/audit) passes with no error, no
warning and no notice against `leadgreen serve`; skipped where Node.js is not installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_graphql_over_http_audit_passes_clean() -> None:
    done = subprocess.run(
        [str(ROOT / "scripts" / "audit")], capture_output=True, text=True, timeout=600
    )
    output = done.stdout + done.stderr
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    assert done.returncode == 0, output[-6000:]
    assert summary.endswith(" ok, 0 notices, 0 warnings, 0 errors"), output[-6000:]
    lines = [
        line for line in done.stdout.splitlines() if line[:6].strip() in ("ok", "warn", "error")
    ]
    assert lines and all(line.startswith("ok ") for line in lines), output[-6000:]

"""What `leadgreen serve` prepares for its worker processes before any of them (or itself)
imports prometheus-client: the directory where they share their metrics."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from graph.settings import Settings


@contextlib.contextmanager
def shared_metrics(settings: Settings) -> Iterator[None]:
    """Workers share their metrics through a directory (prometheus-client's multiprocess mode):
    PROMETHEUS_MULTIPROC_DIR, emptied of an earlier run's files, or else for several workers a
    new one, removed afterwards."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        for stale in Path(directory).glob("*.db"):
            stale.unlink()
        yield
        return
    if settings.workers == 1 or not settings.metrics:
        yield
        return
    made = tempfile.mkdtemp(prefix="leadgreen-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = made
    try:
        yield
    finally:
        del os.environ["PROMETHEUS_MULTIPROC_DIR"]
        shutil.rmtree(made, ignore_errors=True)

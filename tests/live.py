"""`leadgreen serve` on 127.0.0.1 for the tests that need a real server (mark `hostile`)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests import synthetic

LEADGREEN = str(Path(sys.executable).parent / "leadgreen")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(directory: Path, **env: str) -> Iterator[int]:
    """`leadgreen serve` on the synthetic snapshot (ingested on start), with these
    LEADGREEN_* settings; its port once /healthz answers. Stopped by its own process id."""
    port = free_port()
    snapshot = synthetic.write(directory / "snapshot", synthetic.documents())
    settings = {
        "LEADGREEN_DATABASE_URL": str(directory / "served.db"),
        "LEADGREEN_SOURCE": str(snapshot),
        "LEADGREEN_HOST": "127.0.0.1",
        "LEADGREEN_PORT": str(port),
        "LEADGREEN_LOG_LEVEL": "warning",
        **env,
    }
    with (directory / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            [LEADGREEN, "serve"], env={**os.environ, **settings}, stdout=log, stderr=log
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError((directory / "serve.log").read_text()[-2000:])
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("leadgreen serve did not answer within 120 s")
            time.sleep(0.2)
        yield port
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes], seconds: float = 10) -> None:
    """Terminate a server started by a test, killed when it takes longer than `seconds`."""
    process.terminate()
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

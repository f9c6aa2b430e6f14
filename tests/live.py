"""Live servers for the tests that need one: a free port, waiting on a condition, `leadgreen
serve` on 127.0.0.1 started and stopped."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from tests import synthetic

LEADGREEN = str(Path(sys.executable).parent / "leadgreen")


def free_port() -> int:
    """A free port on 127.0.0.1 below the ephemeral range, where no outgoing connection (nginx's
    to the replicas, say) can hold it in TIME_WAIT; the kernel's choice when there is no such
    room."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    candidates = random.sample(range(20000, low), min(50, low - 20000)) if low > 20100 else []
    for port in [*candidates, 0]:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise AssertionError("no free port")


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    """Poll `check` until it returns something true (its value), for the suites that wait on a
    real server; an error reaching it counts as not yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (OSError, http.client.HTTPException, httpx.HTTPError, ValueError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")


def answering(
    url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 120
) -> httpx.Response:
    """Wait until `url` answers 200 (its answer), as long as `process` runs."""

    def answered() -> httpx.Response | None:
        if process.poll() is not None:
            raise RuntimeError(log.read_text()[-3000:])
        response = httpx.get(url, timeout=2)
        return response if response.status_code == 200 else None

    result: httpx.Response = wait_until(answered, timeout, url, every=0.2)
    return result


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
    log = directory / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [LEADGREEN, "serve"], env={**os.environ, **settings}, stdout=out, stderr=out
        )
    try:
        answering(f"http://127.0.0.1:{port}/healthz", process, log)
        yield port
    finally:
        stop(process)


def python_snippets(page: Path) -> list[str]:
    """The ```python fences of a documentation page, in order."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)


def run_snippets(snippets: list[str], port: int) -> dict[str, Any]:
    """The snippets run in order in one namespace, against 127.0.0.1:`port` instead of the
    documented :8000; the names they made."""
    names: dict[str, Any] = {}
    for snippet in snippets:
        exec(snippet.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), names)
    return names


def stop(process: subprocess.Popen[bytes], seconds: float = 10) -> None:
    """Terminate a server started by a test, killed when it takes longer than `seconds`."""
    process.terminate()
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


CLIENTS = Path(__file__).resolve().parent.parent / "clients"


def subscriber(
    protocol: str, port: int, log: Path, query: str | None = None, count: int = 1
) -> subprocess.Popen[str]:
    """clients/subscribe.mjs (the npm graphql-sse or graphql-ws client: `protocol` "sse",
    "sse-single" (graphql-sse's single connection mode) or "ws")
    subscribed to 127.0.0.1:`port` for `count` events (a line each: `{"event", "at"}`),
    returned once its subscription runs; its errors in `log`. In a session of its own (stop it
    by its process group)."""
    subprocess.run([str(CLIENTS.parent / "scripts" / "subscription-clients")], check=True)
    url = f"{'ws' if protocol == 'ws' else 'http'}://127.0.0.1:{port}/graphql"
    with log.open("w") as errors:
        process = subprocess.Popen(
            [
                "node",
                str(CLIENTS / "subscribe.mjs"),
                protocol,
                url,
                str(count),
                *([query] if query else []),
            ],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    if '"ready"' not in line:
        process.kill()
        process.wait()
        raise AssertionError(f"the subscriber did not start: {log.read_text()}")
    return process


def quick_figures(
    module: str, directory: Path, *args: str, timeout: float = 300, passing: bool = True
) -> Any:
    """`python -m MODULE --quick --json FILE` (a bench/ check against its own server): the
    figures it wrote, once it exited 0 (with `passing` false: whatever its exit, the figures
    for the caller to judge)."""
    figures = directory / f"{module.rsplit('.', 1)[-1]}.json"
    done = subprocess.run(
        [sys.executable, "-m", module, "--quick", "--json", str(figures), *args],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    ended = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0 if passing else figures.exists(), ended
    return json.loads(figures.read_text())

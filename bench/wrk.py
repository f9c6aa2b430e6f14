"""Running wrk with bench/graphql.lua and reading the line its done() prints."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

LUA = Path(__file__).with_name("graphql.lua")
INSTALL = "apt-get update && apt-get install -y wrk nginx-light"


@dataclass(frozen=True)
class Run:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    graphql_errors: int
    bad_status: int
    socket_errors: int
    bodies_checked: bool = True  # False: statuses only (graphql_errors not counted)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def failures(self) -> int:
        return self.graphql_errors + self.bad_status + self.socket_errors


def wrk_binary() -> str | None:
    return shutil.which("wrk")


def run(
    port: int,
    requests: Path,
    seconds: int,
    connections: int,
    *,
    bodies: bool = True,
    traced: bool = False,
) -> Run:
    """wrk -t1 for `seconds` over `connections`, the lines of `requests` in turn; with
    `bodies=False` the script reads no answer (bench/graphql.lua's "statuses": wrk's own CPU
    per answer a fraction, for a load generator sharing the server's cores); with `traced`,
    each request has a traceparent of its own ("traced")."""
    binary = wrk_binary()
    assert binary is not None, f"wrk is not installed; as root: {INSTALL}"
    command = [binary, "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "5s"]
    command += ["-s", str(LUA), f"http://127.0.0.1:{port}", "--", str(requests)]
    command += ([] if bodies else ["statuses"]) + (["traced"] if traced else [])
    output = subprocess.run(
        command, check=True, capture_output=True, text=True, timeout=seconds + 30
    ).stdout
    line = next(line for line in output.splitlines() if line.startswith("BENCH "))
    data = json.loads(line.removeprefix("BENCH "))
    return Run(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        graphql_errors=data["graphql_errors"],
        bad_status=data["bad_status"],
        socket_errors=data["socket_errors"],
        bodies_checked=data["bodies_checked"],
    )

"""`bench/run` (python -m bench): LeadGreen under wrk on the real data, next to its baselines.

For each database backend: ingest the snapshot (timed), start `leadgreen serve` with the
response cache (warm) and without it (cold), the precomputed-bytes Starlette endpoint and
nginx serving the same bytes, check every request answers without errors, warm up, then run
the scenarios in interleaved rounds with wrk (one thread, 32 connections) and print req/s, p50,
p99 and the ratios to both baselines. Exits 1 when a request failed, 2 when wrk is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from bench import databases, report, wrk
from bench.queries import MODEL_PAGE, Scenario, post, register_persisted, scenarios
from bench.servers import ROOT, Server, http, leadgreen, nginx, precomputed

DATA = ROOT.parent / "shared" / "data"
SNAPSHOT = DATA / "ml-energy-leaderboard" / "2026-02-16"
MANIFEST = DATA / "seed" / "leadgreen-index-v1.json"


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 s per scenario, one round")
    parser.add_argument("--backends", default="sqlite,postgres", help="comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5, help="seconds per run")
    parser.add_argument("--warmup", type=int, default=2, help="seconds per scenario (0: none)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--install", action="store_true", help="apt-get install wrk and nginx")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.duration, args.warmup = 1, 1, 0
    return args


def machine() -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().split()
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "nproc": os.cpu_count(),
        "memory_gb": round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 1024**2, 1),
        "cpu": cpu,
        "python": platform.python_version(),
        "load_average": os.getloadavg()[0],
    }


def run_backend(backend: str, directory: Path, args: argparse.Namespace) -> dict[str, Any]:
    directory.mkdir(parents=True)
    with databases.database(backend, directory) as url:
        ingest_seconds = databases.ingest(url, SNAPSHOT, MANIFEST)
        warm = leadgreen("warm", url, SNAPSHOT, LEADGREEN_CACHE="memory")
        cold = leadgreen("cold", url, SNAPSHOT, LEADGREEN_CACHE="off")
        page = post(MODEL_PAGE, {"slug": "qwen-3-8b"})
        servers: list[Server] = [warm, cold]
        try:
            startup = startup_seconds(url, page, directory)
            warm.start(directory)
            warm.wait_until_answering(page)
            cold.start(directory)
            cold.wait_until_answering(page)
            body = directory / "model-page.json"
            body.write_bytes(http(warm.port, page)[1])
            base = precomputed(body)
            servers.append(base)
            base.start(directory)
            base.wait_until_answering(page)
            static = nginx(directory, body)
            if static is not None:
                servers.append(static)
                static.start(directory)
                static.wait_until_answering("GET /model-page.json")
            by_name = {"warm": warm, "cold": cold, "precomputed": base, "nginx": static}
            http(warm.port, register_persisted(MODEL_PAGE))
            chosen = [s for s in scenarios(databases.slugs(MANIFEST)) if by_name[s.server]]
            runs = drive(chosen, by_name, directory, args)
            rss = {"warm": warm.rss_mb(), "cold": cold.rss_mb()}
        finally:
            for server in servers:
                server.stop()
    return {
        "ingest_s": ingest_seconds,
        "startup_s": startup,
        "rss_mb": rss,
        "nginx": static is not None,
        "runs": runs,
    }


def startup_seconds(url: str, page: str, directory: Path, times: int = 3) -> float:
    """Median time from `leadgreen serve` starting to its first answer, on the populated db."""
    seconds = []
    for _ in range(times):
        server = leadgreen("startup", url, SNAPSHOT)
        server.start(directory)
        try:
            seconds.append(server.wait_until_answering(page))
        finally:
            server.stop()
    return median(seconds)


def check(scenario: Scenario, port: int) -> None:
    for line in dict.fromkeys(scenario.lines):
        status, body = http(port, line)
        if status != 200 or b'"errors":' in body:
            raise RuntimeError(f"{scenario.name}: {line[:120]} answered {status}: {body[:300]!r}")


def drive(
    chosen: list[Scenario],
    by_name: dict[str, Server | None],
    directory: Path,
    args: argparse.Namespace,
) -> dict[str, list[wrk.Run]]:
    def server(scenario: Scenario) -> Server:
        found = by_name[scenario.server]
        assert found is not None
        return found

    def port(scenario: Scenario) -> int:
        return server(scenario).port

    files = {s.name: s.write(directory) for s in chosen}
    for scenario in chosen:
        check(scenario, port(scenario))
        if args.warmup:
            wrk.run(port(scenario), files[scenario.name], args.warmup, scenario.connections)
            server(scenario).wait_idle()
    runs: dict[str, list[wrk.Run]] = {s.name: [] for s in chosen}
    for round_ in range(args.rounds):
        shift = round_ % len(chosen)  # interleaved, and each round starts elsewhere
        for scenario in chosen[shift:] + chosen[:shift]:
            result = wrk.run(
                port(scenario), files[scenario.name], args.duration, scenario.connections
            )
            runs[scenario.name].append(result)
            server(scenario).wait_idle()
            print(f"  {scenario.name:24} {result.rate:9.0f} req/s", file=sys.stderr, flush=True)
    return runs


def tools(install: bool) -> bool:
    if wrk.wrk_binary() is None and install and os.geteuid() == 0:
        subprocess.run(["sh", "-c", wrk.INSTALL], check=True)
    if wrk.wrk_binary() is None:
        print(f"bench: wrk is not installed; as root: {wrk.INSTALL} (or bench/run --install)")
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if not tools(args.install):
        return 2
    results: dict[str, Any] = {
        "command": " ".join(["bench/run", *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine(),
        "backends": {},
    }
    with tempfile.TemporaryDirectory(prefix="leadgreen-bench-") as tmp:
        for backend in args.backends.split(","):
            print(f"{backend}:", file=sys.stderr, flush=True)
            results["backends"][backend] = run_backend(backend, Path(tmp) / backend, args)
    results["machine"]["load_average_after"] = os.getloadavg()[0]
    print(report.text(results))
    if args.json:
        args.json.write_text(json.dumps(report.as_json(results), indent=2) + "\n")
    return 1 if report.failures(results) else 0


if __name__ == "__main__":
    sys.exit(main())

"""LeadGreen's cold model page next to real peers, measured in one run.

python -m bench.peers_compare [--seconds 5] [--rounds 2] [--warmup 2] [--quick] [--json FILE]

Starts, on 127.0.0.1 and the same snapshot and seed:
- LeadGreen: `leadgreen ingest` into a temporary SQLite file, `leadgreen serve` with
  LEADGREEN_CACHE=off and one worker (as bench/servers.py starts it);
- Fastify + Mercurius with graphql-jit, the data in memory (bench/peers/mercurius.mjs);
- PostGraphile v5 on PostgreSQL 15, in a database of its own (bench/peers/postgraphile.mjs);
- the precomputed-bytes Starlette endpoint (bench/baseline.py) returning LeadGreen's answer
  for qwen-3-8b.
Checks that every server's model page holds the upstream files' numbers for every model of
the seed and that the GraphQL servers' answers are equal (configuration ids aside), then runs
wrk -t1 -c32 on the model page of each, cycling through the seed's 18 models (the same lines
for every server, so none can answer from a per-query cache), interleaved per round. Prints
req/s (median of rounds), p99, server CPU ms per request and the ratios to Mercurius-JIT and
to the precomputed baseline. Exits 1 when a request failed, 2 when wrk is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from bench import peers, wrk
from bench.peers import Peer
from bench.servers import BIN, ROOT, http, leadgreen, precomputed

DATA = ROOT.parent / "shared" / "data"
SNAPSHOT = DATA / "ml-energy-leaderboard" / "2026-02-16"
SEED = DATA / "seed" / "leadgreen-index-v1.json"
DEFAULT_SLUG = "qwen-3-8b"
MERCURIUS, PRECOMPUTED = "mercurius-jit", "precomputed"


@dataclass(frozen=True)
class Measured:
    run: wrk.Run
    cpu_ms_per_request: float


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers_compare", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seconds", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2, help="seconds per server (0: none)")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="1 s, one round, no warm-up (CI)")
    parser.add_argument("--snapshot", type=Path, default=SNAPSHOT)
    parser.add_argument("--seed", type=Path, default=SEED)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds, args.warmup = 1, 1, 0
    return args


def ingest(url: str, snapshot: Path, seed: Path) -> None:
    command = [str(BIN / "leadgreen"), "ingest", str(snapshot), "--manifest", str(seed)]
    done = subprocess.run(
        [*command, "--database-url", url], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"leadgreen ingest failed: {(done.stderr or done.stdout)[-2000:]}")


def check(servers: list[Peer], slugs: list[str], snapshot: Path, seed: Path) -> dict[str, int]:
    """Every server's page of every model against the upstream files, and against LeadGreen's.
    Returns each server's answer size in bytes for the default model."""
    sizes: dict[str, int] = {}
    reference = servers[0]
    for slug in slugs:
        expected = peers.without_ids(reference.page(slug))
        for server in servers:
            page = server.page(slug)
            peers.check_page(page, snapshot, seed, slug)
            if peers.without_ids(page) != expected:
                raise AssertionError(f"{server.name}: {slug} differs from {reference.name}'s")
    for server in servers:
        sizes[server.name] = len(http(server.port, server.line(DEFAULT_SLUG))[1])
    return sizes


def drive(
    servers: list[Peer], slugs: list[str], directory: Path, args: argparse.Namespace
) -> dict[str, list[Measured]]:
    files = {}
    for server in servers:
        files[server.name] = directory / f"{server.name}.txt"
        files[server.name].write_text("".join(server.line(slug) + "\n" for slug in slugs))
        if args.warmup:
            wrk.run(server.port, files[server.name], args.warmup, args.connections)
            server.server.wait_idle()
    results: dict[str, list[Measured]] = {s.name: [] for s in servers}
    for round_ in range(args.rounds):
        shift = round_ % len(servers)  # interleaved, and each round starts elsewhere
        for server in servers[shift:] + servers[:shift]:
            before = server.cpu()
            run = wrk.run(server.port, files[server.name], args.seconds, args.connections)
            used = peers.cpu_used(before, server.cpu())
            results[server.name].append(Measured(run, 1000 * used / max(run.requests, 1)))
            server.server.wait_idle()
            print(
                f"  round {round_ + 1} {server.name:14} {run.rate:9.0f} req/s  "
                f"p99 {run.p99_ms:7.2f} ms  {1000 * used / max(run.requests, 1):.3f} CPU ms/req",
                file=sys.stderr,
                flush=True,
            )
    return results


def summary(results: dict[str, list[Measured]]) -> dict[str, dict[str, float]]:
    rows = {
        name: {
            "rps": median(m.run.rate for m in runs),
            "p50_ms": median(m.run.p50_ms for m in runs),
            "p99_ms": median(m.run.p99_ms for m in runs),
            "cpu_ms_per_request": median(m.cpu_ms_per_request for m in runs),
            "failures": sum(m.run.failures for m in runs),
        }
        for name, runs in results.items()
    }
    for row in rows.values():
        row["x_mercurius"] = row["rps"] / rows[MERCURIUS]["rps"]
        row["x_precomputed"] = row["rps"] / rows[PRECOMPUTED]["rps"]
    return rows


def table(rows: dict[str, dict[str, float]], labels: dict[str, str]) -> str:
    lines = [
        "| server | req/s (median) | p50 ms | p99 ms | server CPU ms/req "
        "| × Mercurius-JIT | × precomputed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {labels[name]} | {row['rps']:,.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} "
            f"| {row['cpu_ms_per_request']:.3f} | {row['x_mercurius']:.3f} "
            f"| {row['x_precomputed']:.3f} |"
        )
    return "\n".join(lines)


def versions() -> dict[str, Any]:
    wrk_binary = wrk.wrk_binary()
    wrk_version = (
        subprocess.run([wrk_binary, "-v"], capture_output=True, text=True).stdout.split(" [")[0]
        if wrk_binary
        else None
    )
    return {"node": peers.node_version(), "wrk": wrk_version, "nproc": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if wrk.wrk_binary() is None:
        print(f"peers_compare: wrk is not installed; as root: {wrk.INSTALL}")
        return 2
    peers.install()
    slugs = [m["slug"] for m in json.loads(args.seed.read_text())["models"]]
    load_before = os.getloadavg()[0]
    labels = {
        "leadgreen": "LeadGreen `leadgreen serve`, LEADGREEN_CACHE=off (SQLite)",
        MERCURIUS: "Fastify + Mercurius, graphql-jit, data in memory",
        "postgraphile": "PostGraphile v5 on PostgreSQL 15 (node + backends)",
        PRECOMPUTED: "Starlette endpoint returning precomputed bytes",
    }
    with tempfile.TemporaryDirectory(prefix="leadgreen-peers-") as tmp, ExitStack() as stack:
        directory = Path(tmp)
        url = f"sqlite+aiosqlite:///{directory / 'leadgreen.db'}"
        ingest(url, args.snapshot, args.seed)
        lg = peers.leadgreen_peer(
            "leadgreen", leadgreen("leadgreen", url, args.snapshot, LEADGREEN_CACHE="off")
        )
        stack.enter_context(peers.running(lg.server, directory, lg.line(DEFAULT_SLUG)))
        mercurius = stack.enter_context(peers.mercurius(args.snapshot, args.seed, directory))
        postgraphile = stack.enter_context(peers.postgraphile(args.snapshot, args.seed, directory))
        body = directory / "model-page.json"
        body.write_bytes(http(lg.port, lg.line(DEFAULT_SLUG))[1])
        base = peers.leadgreen_peer(PRECOMPUTED, precomputed(body))
        stack.enter_context(peers.running(base.server, directory, base.line(DEFAULT_SLUG)))

        graphql_servers = [lg, mercurius, postgraphile]
        sizes = check(graphql_servers, slugs, args.snapshot, args.seed)
        base_page = base.page(DEFAULT_SLUG)
        peers.check_page(base_page, args.snapshot, args.seed, DEFAULT_SLUG)
        sizes[PRECOMPUTED] = body.stat().st_size
        print(
            f"answers checked: {len(slugs)} models × 3 servers, and the baseline", file=sys.stderr
        )
        results = drive([*graphql_servers, base], slugs, directory, args)
    rows = summary(results)
    command = " ".join(["python -m bench.peers_compare", *(argv or sys.argv[1:])])
    meta = {
        "command": command,
        **versions(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg()[0],
        "answer_bytes": sizes,
        "connections": args.connections,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "models_cycled": len(slugs),
    }
    print(f"{command}  (wrk -t1 -c{args.connections}, {args.rounds} × {args.seconds} s per server)")
    print(
        f"node {meta['node']}, {meta['wrk']}, {meta['nproc']} CPUs, load average "
        f"{load_before:.2f} before, {meta['load_average_after']:.2f} after; answer bytes "
        + ", ".join(f"{name} {size:,}" for name, size in sizes.items())
    )
    print(table(rows, labels))
    if args.json:
        runs = {
            name: [vars(m.run) | {"cpu_ms_per_request": m.cpu_ms_per_request} for m in measured]
            for name, measured in results.items()
        }
        args.json.write_text(json.dumps({**meta, "summary": rows, "runs": runs}, indent=2) + "\n")
    return 1 if any(row["failures"] for row in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Issue 21's warm, ready and workers figures, side by side in one run (bench/RESULTS.md, "Warm,
ready, workers" and "Ready in a second"): this checkout's code and, with `--code`, another
revision's or checkout's (before).

    python -m bench.warm [--code REV|DIR] [--k 50] [--rounds 3] [--seconds 5] [--json FILE]
    python -m bench.warm --code 800545b --parts ready --k 50 --starts 5
    python -m bench.warm --quick          # K = 3, one round of 1 s, one start each (CI)

`--code` takes a directory holding a checkout, or a revision of this repository (a commit,
branch or tag), whose packages are then `git archive`d into the run's temporary directory. Both
codes are compiled to bytecode first (as an installed package is) and started the same way
(`python -c` with the code's packages first on the path).

Everything on 127.0.0.1, through `leadgreen ingest` and `leadgreen serve` (bench.scale_run), on
the real snapshot and its K-times copy (bench.scale), each code in databases of its own:

- **warm**: the model page answered from the response cache by `leadgreen serve` with its
  default request log (info, to its log file) and metrics on, against the Starlette endpoint
  returning the same bytes (bench/baseline.py, same uvicorn): wrk -t1 -c32, interleaved
  rounds; req/s and the server's CPU µs per answer, each as a ratio to the precomputed bytes'.
- **traced**: the same, each request with a `traceparent` of its own (bench/graphql.lua's
  "traced"; a client tracing every call): every answer from the cache, none the same request
  twice (so none is sent again by the protocol, graph/server/replay.py).
- **ready**: process start to the first 200 of /readyz, the CPU seconds the process had used by
  then, and the first model page asked right after (ms), on the real data and at K: medians of
  `--starts` starts of each, the two codes' starts interleaved (this, before; before, this; ...)
  so that the machine's load falls on both alike; this code's over before's.
- **workers**: `leadgreen serve --workers 1` and `2`, the cold model page (cache off, the 18
  models in turn), wrk -t1 -c32; req/s of two over one, and the CPU wrk itself used (cores),
  which the two workers share the machine's cores with: once with wrk reading every answer
  into its script (GraphQL errors counted), once counting statuses only (a fraction of wrk's
  CPU; each page checked whole before and after).

Prints the tables; no timed assertion (the quick mode runs in `pytest -m bench`). Exits 1 when
a request failed, 2 when wrk is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from bench import wrk
from bench.queries import DEFAULT_SLUG, post
from bench.scale import write_scaled
from bench.scale_run import (
    Leadgreen,
    Question,
    Start,
    ask,
    byte_compiled,
    checkout,
    children,
    database,
    rotated,
    timed_ingest,
    timed_start,
    wait_ready,
)
from bench.servers import ROOT, Server, free_port, precomputed

DATA = ROOT.parent / "shared" / "data"
SNAPSHOT = DATA / "ml-energy-leaderboard" / "2026-02-16"
MANIFEST = DATA / "seed" / "leadgreen-index-v1.json"


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.warm", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--code", help="another revision (commit, branch, tag) or checkout, measured as 'before'"
    )
    parser.add_argument("--k", type=int, default=50, help="the K-times snapshot's K")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--starts", type=int, default=3, help="starts timed per database")
    parser.add_argument("--quick", action="store_true", help="K = 3, 1 s, one round (CI)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--parts", default="warm,traced,ready,workers", help="what to measure")
    args = parser.parse_args(argv)
    args.parts = set(args.parts.split(","))
    if args.quick:
        args.k, args.rounds, args.seconds, args.starts = 3, 1, 1, 1
    return args


@dataclass
class Code:
    """One checkout's `leadgreen`, its databases and what was measured of it."""

    name: str
    leadgreen: Leadgreen
    urls: dict[str, str] = field(default_factory=dict)  # "real" and "k": database URLs
    results: dict[str, Any] = field(default_factory=dict)


def serve(code: Code, url: str, workers: int = 1, **env: str) -> Server:
    """`leadgreen serve` of `code` on `url`: the defaults (request log at info, metrics on, the
    response cache in memory) unless `env` says otherwise."""
    port = free_port()
    command = [*code.leadgreen.command, "serve", "--database-url", url, "--port", str(port)]
    settings = {
        **code.leadgreen.env,
        "LEADGREEN_WORKERS": str(workers),
        "LEADGREEN_RATE_LIMIT": "false",
        "LEADGREEN_SOURCE": str(SNAPSHOT),  # never fetched: the database holds a release
        **env,
    }
    return Server(f"{code.name}-{workers}-{len(env)}-{port}", command, port, settings)


def model_page(slug: str = DEFAULT_SLUG) -> Question:
    line = post_line(slug)
    return Question("model page", "POST", "/graphql", line.split(" ", 2)[2].encode())


def post_line(slug: str) -> str:
    from graph.server.documents import MODEL_PAGE

    return post(MODEL_PAGE, {"slug": slug})


def answered(server: Server, slug: str = DEFAULT_SLUG) -> bytes:
    status, body, _ = ask(server.port, model_page(slug))
    document = json.loads(body)
    if status != 200 or document.get("errors") or not document["data"]["model"]:
        raise RuntimeError(f"{server.name}: the model page of {slug}: {status} {body[:300]!r}")
    return body


def ready(codes: list[Code], starts: int, directory: Path) -> None:
    """Each code's median start to ready (s), CPU used by then (s) and first answer after it
    (ms), on the real data and at K, over `starts` starts each, the codes' starts interleaved;
    into each code's results ("ready_real", "ready_k")."""
    timed: dict[tuple[str, str], list[Start]] = {}
    for round_ in range(starts):
        for which in ("real", "k"):
            for code in rotated(codes, round_):
                start = timed_start(serve(code, code.urls[which]), directory, model_page())
                timed.setdefault((code.name, which), []).append(start)
                print(f"  ready {code.name} {which}: {start}", file=sys.stderr)
    for code in codes:
        for which in ("real", "k"):
            each = timed[(code.name, which)]
            code.results[f"ready_{which}"] = {
                "ready_s": median(s.ready_s for s in each),
                "cpu_s": median(s.cpu_s for s in each),
                "first_ms": median(s.first_ms for s in each),
            }


def wrk_run(
    server_pids: list[int],
    port: int,
    lines: Path,
    seconds: int,
    *,
    bodies: bool = True,
    traced: bool = False,
) -> dict[str, float]:
    """One wrk run: its result, the servers' and wrk's own CPU seconds per answer."""
    before = [cpu_seconds(p) for p in server_pids]
    client = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = wrk.run(port, lines, seconds, 32, bodies=bodies, traced=traced)
    client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    each = [cpu_seconds(p) - b for p, b in zip(server_pids, before, strict=True)]
    used = sum(each)
    wrk_cpu = (client_after.ru_utime + client_after.ru_stime) - (client.ru_utime + client.ru_stime)
    return {
        "rate": run.rate,
        "p50_ms": run.p50_ms,
        "p99_ms": run.p99_ms,
        "failures": run.failures,
        "server_us": used / max(1, run.requests) * 1e6,
        "wrk_cores": wrk_cpu / run.seconds,
        "server_cores": used / run.seconds,
        # The busiest process's share of the servers' CPU (1 / N: evenly spread over N).
        "busiest_share": max(each) / used if used else 0.0,
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle(pids: list[int], timeout: float = 120.0) -> None:
    """Until the processes stop working (a worker reading its release, say)."""
    deadline, used = time.perf_counter() + timeout, sum(map(cpu_seconds, pids))
    while time.perf_counter() < deadline:
        time.sleep(0.25)
        now = sum(map(cpu_seconds, pids))
        if now - used <= 0.02:
            return
        used = now


def serving_pids(server: Server) -> list[int]:
    assert server.process is not None
    return [server.process.pid, *children(server.process.pid)]


def write_lines(directory: Path, name: str, lines: list[str]) -> Path:
    path = directory / f"{name}.lines"
    path.write_text("\n".join(lines) + "\n")
    return path


WARM = {"warm": "warm model page", "traced": "warm model page, a traceparent each"}


def warm(codes: list[Code], args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    """Each code's warm model page against the precomputed bytes, interleaved rounds: the same
    request each time ("warm"), and each with a traceparent of its own ("traced")."""
    shapes = [shape for shape in WARM if shape in args.parts]
    servers = {code.name: serve(code, code.urls["real"]) for code in codes}
    for server in servers.values():
        server.start(directory)
    body = b""
    try:
        for server in servers.values():
            wait_ready(server, 120.0)
            body = answered(server)
        (directory / "model-page.json").write_bytes(body)
        baseline = precomputed(directory / "model-page.json")
        baseline.start(directory)
        servers["precomputed"] = baseline
        baseline.wait_until_answering(post_line(DEFAULT_SLUG))
        lines = write_lines(directory, "warm", [post_line(DEFAULT_SLUG)])
        runs: dict[tuple[str, str], list[dict[str, float]]] = {}
        for server in servers.values():
            wrk.run(server.port, lines, 1, 32)  # warm up
            server.wait_idle()
        steps = [(shape, name) for shape in shapes for name in servers]
        for round_ in range(args.rounds):
            for shape, name in rotated(steps, round_):
                server = servers[name]
                run = wrk_run(
                    serving_pids(server),
                    server.port,
                    lines,
                    args.seconds,
                    traced=shape == "traced",
                )
                runs.setdefault((shape, name), []).append(run)
                server.wait_idle()
                print(f"  {shape} {name}: {run}", file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
    return {shape: {name: medians(runs[(shape, name)]) for name in servers} for shape in shapes}


def workers(code: Code, args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    """The cold model page (every manifest model in turn) on one worker and on two, both
    servers up and their runs interleaved (one round: each server with each way of reading,
    the order turned round to round), so that the machine's drift falls on both alike; wrk
    reading every answer (bodies checked), and counting statuses only: wrk shares the
    servers' two cores, and reading 19 KB answers into its script is most of its CPU. Each
    page is asked and checked whole before and after the runs."""
    slugs = [m["slug"] for m in json.loads(MANIFEST.read_text())["models"]]
    lines = write_lines(directory, "cold", [post_line(slug) for slug in slugs])
    servers = {n: serve(code, code.urls["real"], n, LEADGREEN_CACHE="off") for n in (1, 2)}
    try:
        pages: dict[int, list[bytes]] = {}
        for count, server in servers.items():
            server.start(directory)
            wait_ready(server, 120.0)
            pages[count] = [answered(server, slug) for slug in slugs]
            idle(serving_pids(server))  # every worker started (the first answers /readyz alone)
            wrk.run(server.port, lines, 1, 32)  # warm up every worker
            server.wait_idle()
        runs: dict[str, list[dict[str, float]]] = {}
        steps = [(count, bodies) for count in servers for bodies in (True, False)]
        for round_ in range(args.rounds):
            for count, bodies in rotated(steps, round_):
                server = servers[count]
                run = wrk_run(serving_pids(server), server.port, lines, args.seconds, bodies=bodies)
                runs.setdefault(f"{count}{'' if bodies else ' statuses'}", []).append(run)
                server.wait_idle()
                print(f"  workers {code.name} {count} {bodies=}: {run}", file=sys.stderr)
        for count, server in servers.items():
            if [answered(server, slug) for slug in slugs] != pages[count]:
                raise RuntimeError(f"{server.name}: a model page changed during the runs")
    finally:
        for server in servers.values():
            server.stop()
    measured: dict[str, Any] = {name: medians(each) for name, each in runs.items()}
    for suffix in ("", " statuses"):  # each round's two over one, their median
        ratios = [
            two["rate"] / one["rate"]
            for one, two in zip(runs[f"1{suffix}"], runs[f"2{suffix}"], strict=True)
        ]
        measured[f"2{suffix}"]["ratios"] = sorted(ratios)
    return measured


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    middle = {key: median(run[key] for run in runs) for key in runs[0]}
    return middle | {"failures": sum(run["failures"] for run in runs)}


def table(codes: list[Code], warm_runs: dict[str, Any], args: argparse.Namespace) -> str:
    """One table per part measured: each code's figures and their ratios."""
    lines: list[str] = []
    for shape, runs in warm_runs.items():
        base = runs["precomputed"]
        lines += [
            f"| {WARM[shape]} | req/s | × precomputed | p99 ms | server CPU µs/answer "
            "| precomputed's CPU / this | wrk's CPU, cores |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, w in runs.items():
            lines.append(
                f"| {name} | {w['rate']:,.0f} | **{w['rate'] / base['rate']:.2f}** "
                f"| {w['p99_ms']:.2f} | {w['server_us']:.1f} "
                f"| **{base['server_us'] / w['server_us']:.2f}** | {w['wrk_cores']:.2f} |"
            )
        lines.append("")
    if "ready" in args.parts:
        lines += ready_table(codes, args.k)
    if "workers" in args.parts:
        lines += [
            "| cold model page | wrk reads | 1 worker req/s | 2 workers req/s "
            "| 2 / 1, median of the rounds' (range) "
            "| servers' CPU, cores (1 / 2) | busiest worker's share (2) "
            "| wrk's CPU, cores (1 / 2) |",
            "|---|---|---:|---:|---:|---|---:|---|",
        ]
        for code in codes:
            for reads, suffix in (("every answer", ""), ("statuses", " statuses")):
                one = code.results["workers"][f"1{suffix}"]
                two = code.results["workers"][f"2{suffix}"]
                ratios = two["ratios"]
                lines.append(
                    f"| {code.name} | {reads} | {one['rate']:,.0f} | {two['rate']:,.0f} "
                    f"| **{median(ratios):.2f}** ({ratios[0]:.2f}-{ratios[-1]:.2f}) "
                    f"| {one['server_cores']:.2f} / {two['server_cores']:.2f} "
                    f"| {two['busiest_share']:.2f} "
                    f"| {one['wrk_cores']:.2f} / {two['wrk_cores']:.2f} |"
                )
    return "\n".join(lines).rstrip()


def ready_table(codes: list[Code], k: int) -> list[str]:
    """Start to ready, its CPU and the first answer per code; with two, this code's over
    before's."""
    lines = [
        f"| start to ready | real data s | CPU s | first answer ms | K = {k} s | CPU s "
        f"| first answer ms | ingest at K = {k} s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for code in codes:
        real, at_k = code.results["ready_real"], code.results["ready_k"]
        lines.append(
            f"| {code.name} | **{real['ready_s']:.2f}** | {real['cpu_s']:.2f} "
            f"| {real['first_ms']:.1f} | **{at_k['ready_s']:.2f}** | {at_k['cpu_s']:.2f} "
            f"| {at_k['first_ms']:.1f} | {code.results['ingest_k_s']:.1f} |"
        )
    if len(codes) == 2:
        this, before = (code.results for code in codes)
        ratios = [
            this[f"ready_{which}"][key] / before[f"ready_{which}"][key]
            for which in ("real", "k")
            for key in ("ready_s", "cpu_s", "first_ms")
        ]
        cells = " | ".join(f"{r:.2f}×" for r in ratios)
        lines.append(f"| this code / before | {cells} | |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if wrk.wrk_binary() is None:
        print(f"bench.warm: wrk is not installed; as root: {wrk.INSTALL}")
        return 2
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="leadgreen-warm-") as tmp:
        directory = Path(tmp)
        codes = [Code("this code", Leadgreen(None))]
        if args.code is not None:
            before = checkout(args.code, directory)
            # Both started alike: `python -c`, the code's packages first on the path.
            codes = [Code("this code", Leadgreen(ROOT))]
            codes.append(Code(f"before ({Path(args.code).name})", Leadgreen(before)))
        for code in codes:
            byte_compiled(code.leadgreen.code)
        scaled = directory / f"k{args.k}"
        if "ready" in args.parts:
            write_scaled(SNAPSHOT, scaled, args.k)
        with contextlib.ExitStack() as stack:
            for i, code in enumerate(codes):
                for which in ("real", "k"):  # SQLite files of the code's own, removed after
                    folder = directory / f"db-{i}-{which}"
                    folder.mkdir()
                    code.urls[which] = stack.enter_context(database("sqlite", folder))
                timed_ingest(code.leadgreen, SNAPSHOT, code.urls["real"], MANIFEST)
                if "ready" in args.parts:
                    code.results["ingest_k_s"] = timed_ingest(
                        code.leadgreen, scaled, code.urls["k"], None
                    )[0]
            if "ready" in args.parts:
                ready(codes, args.starts, directory)
            warm_runs = warm(codes, args, directory) if args.parts & set(WARM) else {}
            for code in codes if "workers" in args.parts else ():
                code.results["workers"] = workers(code, args, directory)
    print(
        f"python -m bench.warm {' '.join(argv if argv is not None else sys.argv[1:])}; "
        f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; {os.cpu_count()} CPUs"
    )
    print(table(codes, warm_runs, args))
    if args.json is not None:
        everything = {"warm": warm_runs, **{code.name: code.results for code in codes}}
        args.json.write_text(json.dumps(everything, indent=1))
    failed = sum(run["failures"] for runs in warm_runs.values() for run in runs.values())
    failed += sum(r["failures"] for c in codes for r in c.results.get("workers", {}).values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

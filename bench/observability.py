"""What the request log and the metrics cost: the model page, warm (a response-cache hit) and
cold (LEADGREEN_CACHE=off, every model in turn), with both on (the defaults: a JSON line per
request at info, /metrics) and both off (LEADGREEN_LOG_LEVEL=warning, LEADGREEN_METRICS=false).

    .venv/bin/python -m bench.observability [--rounds N] [--duration S] [--backend B] [--quick]
    .venv/bin/python -m bench.observability --in-process [--rounds N]

Four `leadgreen serve` processes (one worker each) on the real data; wrk (one thread, 32
connections) runs each scenario in interleaved rounds, on and off alternating which goes
first; the table gives the median req/s and p50 of each, the server's CPU time per request
(its user and system seconds over the run, divided by the requests answered: steadier than
req/s on a machine shared with other work), and on/off as ratios (1.00: free). The request
log goes to each server's log file, as it would to a collector.

With --in-process, no server and no network: two apps (on, off) in this process answer the
same requests through ASGI, and the table gives the CPU time of this thread per request, the
least over the rounds (the steadiest figure on a busy machine; it leaves out uvicorn's own
work, so its ratio is an upper bound of the served one).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from statistics import median

from bench import databases, wrk
from bench.__main__ import MANIFEST, SNAPSHOT, check
from bench.queries import DEFAULT_SLUG, Scenario, post
from bench.servers import Server, leadgreen
from graph.server.documents import MODEL_PAGE

MODES = {
    "on": {"LEADGREEN_LOG_LEVEL": "info", "LEADGREEN_METRICS": "true"},
    "off": {"LEADGREEN_LOG_LEVEL": "warning", "LEADGREEN_METRICS": "false"},
}
CACHES = {"warm": "memory", "cold": "off"}


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.observability", description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=int, default=5, help="seconds per run")
    parser.add_argument("--quick", action="store_true", help="1 s per run, two rounds")
    parser.add_argument("--in-process", action="store_true", help="ASGI calls, no server")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.duration = 2, 1
    return args


def scenarios(slugs: list[str]) -> dict[str, Scenario]:
    return {
        "warm": Scenario("model page warm", "warm", (post(MODEL_PAGE, {"slug": DEFAULT_SLUG}),)),
        "cold": Scenario(
            "model page cold", "cold", tuple(post(MODEL_PAGE, {"slug": s}) for s in slugs)
        ),
    }


Runs = dict[tuple[str, str], list[tuple[wrk.Run, float]]]  # each run, and its CPU s/request


def measure(args: argparse.Namespace, directory: Path) -> Runs:
    runs: Runs = {}
    with databases.database(args.backend, directory) as url:
        databases.ingest(url, SNAPSHOT, MANIFEST)
        servers: dict[tuple[str, str], Server] = {}
        try:
            for cache, setting in CACHES.items():
                for mode, env in MODES.items():
                    server = leadgreen(f"{cache}-{mode}", url, SNAPSHOT, LEADGREEN_CACHE=setting)
                    server.env.update(env)
                    server.start(directory)
                    servers[(cache, mode)] = server
            chosen = scenarios(databases.slugs(MANIFEST))
            files = {cache: s.write(directory) for cache, s in chosen.items()}
            for (cache, _mode), server in servers.items():
                server.wait_until_answering(chosen[cache].lines[0])
                check(chosen[cache], server.port)
                wrk.run(server.port, files[cache], 1, chosen[cache].connections)  # warm up
                server.wait_idle()
            for round_ in range(args.rounds):
                order = ("on", "off") if round_ % 2 == 0 else ("off", "on")
                for cache in chosen:
                    for mode in order:
                        server = servers[(cache, mode)]
                        cpu = server.cpu_seconds()
                        run = wrk.run(server.port, files[cache], args.duration, 32)
                        server.wait_idle()
                        cpu = (server.cpu_seconds() - cpu) / max(1, run.requests)
                        runs.setdefault((cache, mode), []).append((run, cpu))
                        print(
                            f"  {cache} {mode:3} {run.rate:9.0f} req/s {cpu * 1e6:8.1f} µs CPU",
                            file=sys.stderr,
                        )
        finally:
            for server in servers.values():
                server.stop()
    return runs


def table(runs: Runs) -> str:
    lines = [
        "| model page | req/s on | off | on/off | p50 ms on | off | CPU µs/request on | off "
        "| on/off |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cache in CACHES:
        on, off = runs[(cache, "on")], runs[(cache, "off")]
        rate_on, rate_off = median(r.rate for r, _ in on), median(r.rate for r, _ in off)
        p50_on, p50_off = median(r.p50_ms for r, _ in on), median(r.p50_ms for r, _ in off)
        cpu_on, cpu_off = median(c for _, c in on) * 1e6, median(c for _, c in off) * 1e6
        lines.append(
            f"| {cache} | {rate_on:,.0f} | {rate_off:,.0f} | **{rate_on / rate_off:.3f}** "
            f"| {p50_on:.2f} | {p50_off:.2f} | {cpu_on:.1f} | {cpu_off:.1f} "
            f"| **{cpu_on / cpu_off:.3f}** |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if wrk.wrk_binary() is None:
        print(f"bench.observability: wrk is not installed; as root: {wrk.INSTALL}")
        return 2
    if args.in_process:
        from bench.observability_asgi import in_process

        with tempfile.TemporaryDirectory(prefix="leadgreen-observability-") as tmp:
            with databases.database(args.backend, Path(tmp)) as url:
                databases.ingest(url, SNAPSHOT, MANIFEST)
                print(in_process(url, args.rounds))
        return 0
    with tempfile.TemporaryDirectory(prefix="leadgreen-observability-") as tmp:
        runs = measure(args, Path(tmp))
    print(table(runs))
    failed = sum(run.failures for each in runs.values() for run, _ in each)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

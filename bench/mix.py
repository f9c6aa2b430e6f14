"""A partners' mix: a few hundred distinct operations and variables in a realistic proportion,
against LeadGreen with its response cache as deployed and without it, and the model-page part
of the mix against Fastify + Mercurius (graphql-jit) on the same documents, in one run.

python -m bench.mix [--seconds 5] [--rounds 2] [--warmup 2] [--lines 2000] [--quick]
                    [--json FILE]

The mix (seeded, the same every run), built from the operations of docs/queries/*.md and the
real data's slugs, tasks and GPUs:

- model pages (45 %): the model-page query (graph/server/documents.py) and subsets of its
  sections and figures, for every model of the seed;
- leaderboards (20 %): every LLM task, GPU set, ITL percentile and deadline, and the
  diffusion tasks' batch-latency deadlines;
- Pareto frontiers (10 %): task, scope and percentile;
- configuration pages (15 %): a task's table ordered by energy, 25 rows a page, each page's
  cursor as the previous page's answer gives it;
- the planner (5 %): task, demand and latency bound;
- the docs' own operations (5 %): each that answers without errors on one release.

Every request is checked first (status 200, no errors; the model pages equal to Mercurius's,
configuration ids aside), on both LeadGreen servers (so that the data's memos are made, as on a
running server; the deployed one keeps every answer). After a warm-up of each, wrk (one thread,
32 connections) sends the lines in turn, rounds interleaved: the mix to LeadGreen `leadgreen
serve` as deployed (LEADGREEN_CACHE=memory, the default) and with LEADGREEN_CACHE=off; the
model-page lines to both and to Mercurius. The table
gives req/s (median of rounds), p50/p99, the server's CPU ms per request and, as deployed, the
response cache's hit rate over the runs (from /metrics). Separately, in this process: the cost
of a document the server has not seen (the CPU of its first answer less that of its second, the
data's own memos warm; a text made new by a field of its own, since comments and spacing are
not new to the server) and of each of its steps (parse, validation, cost, plan), p50 and p99
over the docs' operations. Exits 1 when a request failed, 2 when wrk is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from statistics import median
from typing import Any

from graphql import OperationDefinitionNode, parse

from bench import peers, wrk
from bench.peers_compare import SEED, SNAPSHOT, ingest
from bench.plan_profile import in_process
from bench.queries import post
from bench.servers import ROOT, Server, http, leadgreen
from graph.server.documents import MODEL_PAGE

DOCS = sorted((ROOT / "docs" / "queries").glob("*.md"))
GRAPHQL_FENCE = re.compile(r"^([ \t]*)```graphql[ \t]*\n(.*?)^\1```", re.S | re.M)
VARIABLES_FENCE = re.compile(
    r"[ \t]*\n(?:[ \t]*\n)*([ \t]*)```json[ \t]*\n(.*?)^\1```", re.S | re.M
)
SHARES = {
    "model page": 45,
    "leaderboard": 20,
    "pareto": 10,
    "configurations": 15,
    "planner": 5,
    "docs": 5,
}
LLM_TASKS = ["lm-arena-chat", "gpqa", "sourcegraph-fim", "image-chat", "video-chat"]
DIFFUSION_TASKS = {"text-to-image": [10, 30, 60], "text-to-video": [100, 200, 300]}
GPUS = [None, ["H100"], ["B200"]]
PERCENTILES = ["P50", "P90", "P99"]
DEADLINES = [50, 100, 200, 500, None]

# The model page's sections, each a subset a front-end may ask for.
HEADER = "slug name modelId paramsB activeParamsB architecture weightPrecision gpus url page"
FIGURES = (
    "gpuModel numGpus maxNumSeqs tensorParallel dataParallel expertParallel energyPerTokenJoules"
    " energyPerRequestJoules medianItlMs p90ItlMs p95ItlMs p99ItlMs outputThroughputTokensPerSec"
    " avgPowerWatts powerPerGpuWatts fractionOfTdp avgBatchSize avgOutputLen"
).split()
CURVES = """curves { task gpuModel numGpus tensorParallel dataParallel expertParallel
      points { maxNumSeqs energyPerTokenJoules medianItlMs p99ItlMs avgPowerWatts } }"""
POWER = """power { gpuModel configurations totalWatts { minimum median maximum }
      gpu { fullName tdpWatts } }"""
SOURCE = "source { name publisher url version licence cite release { lastUpdated } }"

LEADERBOARD = """query Leaderboard($task: String!, $gpus: [String!], $percentile: ItlPercentile!,
    $deadline: Float) {
  leaderboard(task: $task, gpus: $gpus,
              constraints: { itlPercentile: $percentile, maxItlMs: $deadline }) {
    maxItlMs itlPercentile
    entries { rank energyJoules latencyMs ratioToBest model { slug name }
              configuration { id gpuModel numGpus maxNumSeqs } }
  }
}"""
DIFFUSION_LEADERBOARD = """query DiffusionLeaderboard($task: String!, $deadline: Float) {
  diffusionLeaderboard(task: $task, constraints: { maxBatchLatencyS: $deadline }) {
    maxBatchLatencyS entries { rank energyJoules batchLatencyS ratioToBest model { slug } }
  }
}"""
PARETO = """query Pareto($task: String!, $scope: ParetoScope!, $percentile: ItlPercentile!) {
  paretoFrontier(task: $task, scope: $scope, itlPercentile: $percentile) {
    gpuModel candidates
    configurations { model { slug } numGpus maxNumSeqs medianItlMs energyPerTokenJoules }
  }
}"""
CONFIGURATIONS = """query Table($task: String!, $after: String) {
  configurations(filter: { task: $task }, orderBy: { field: ENERGY_PER_TOKEN_JOULES },
                 first: 25, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    nodes { id gpuModel numGpus maxNumSeqs medianItlMs energyPerTokenJoules model { slug } }
  }
}"""
PLANNER = """query Plan($task: String!, $demand: DemandInput!, $latency: LatencyInput) {
  deploymentPlan(task: $task, demand: $demand, latency: $latency, first: 3) {
    candidates totalCount
    plans { rank configuration { modelId gpuModel numGpus } replicas gpuCount
            energyPerDayKwh { lower upper } }
  }
}"""


@dataclass(frozen=True)
class Example:
    """An operation of the docs, with the variables shown after it."""

    text: str
    variables: dict[str, Any]


def docs_operations() -> list[Example]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in GRAPHQL_FENCE.finditer(text):
            indent = match.group(1)
            body = "\n".join(line.removeprefix(indent) for line in match.group(2).splitlines())
            given = VARIABLES_FENCE.match(text, match.end())
            found.append(Example(body, json.loads(given.group(2)) if given else {}))
    return found


def model_pages(slugs: list[str], rng: random.Random, documents: int = 12) -> list[str]:
    """The model page and `documents - 1` subsets of it, for every slug: lines."""
    texts = [MODEL_PAGE]
    while len(texts) < documents:
        figures = " ".join(rng.sample(FIGURES, rng.randint(3, len(FIGURES))))
        parts = [HEADER if rng.random() < 0.7 else "slug name"]
        parts.append(f"configurations {{ id {figures} }}")
        parts += [section for section in (CURVES, POWER) if rng.random() < 0.5]
        source = SOURCE if rng.random() < 0.5 else ""
        text = (
            f"query ModelPage{len(texts)}($slug: String!) {{\n"
            f"  model(slug: $slug) {{\n    {' '.join(parts)}\n  }}\n  {source}\n}}"
        )
        if text not in texts:
            texts.append(text)
    return [post(text, {"slug": slug}) for text in texts for slug in slugs]


def leaderboards() -> list[str]:
    lines = [
        post(LEADERBOARD, {"task": t, "gpus": g, "percentile": p, "deadline": d})
        for t in LLM_TASKS
        for g in GPUS
        for p in PERCENTILES
        for d in DEADLINES
    ]
    lines += [
        post(DIFFUSION_LEADERBOARD, {"task": task, "deadline": deadline})
        for task, deadlines in DIFFUSION_TASKS.items()
        for deadline in deadlines
    ]
    return lines


def paretos() -> list[str]:
    return [
        post(PARETO, {"task": t, "scope": s, "percentile": p})
        for t in LLM_TASKS
        for s in ("GLOBAL", "GPU", "MODEL")
        for p in PERCENTILES
    ]


def configuration_pages(port: int) -> list[str]:
    """Every page of every LLM task's table, each asked with the cursor its previous page
    gave (read from the server)."""
    lines = []
    for task in LLM_TASKS:
        after: str | None = None
        while True:
            line = post(CONFIGURATIONS, {"task": task, "after": after})
            lines.append(line)
            status, body = http(port, line)
            info = json.loads(body)["data"]["configurations"]["pageInfo"]
            if status != 200 or not info["hasNextPage"]:
                break
            after = info["endCursor"]
    return lines


def planners() -> list[str]:
    demands = [{"requestsPerSecond": r} for r in (1, 5, 20, 100)]
    demands += [{"outputTokensPerSecond": t} for t in (1000, 20000)]
    latencies = [None, {"maxItlMs": 50}, {"maxItlMs": 200}]
    return [
        post(PLANNER, {"task": t, "demand": d, "latency": lat})
        for t in ("lm-arena-chat", "gpqa")
        for d in demands
        for lat in latencies
    ]


def fine(port: int, lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines answered with 200 and no errors, and the others."""
    kept: list[str] = []
    dropped: list[str] = []
    for line in lines:
        status, body = http(port, line)
        (kept if status == 200 and b'"errors":' not in body else dropped).append(line)
    return kept, dropped


def drawn(groups: dict[str, list[str]], count: int, rng: random.Random) -> list[str]:
    """`count` lines, each group's share of them, every distinct line at least once."""
    lines: list[str] = []
    total = sum(SHARES[name] for name in groups)
    for name, group in groups.items():
        wanted = max(len(group), count * SHARES[name] // total)
        lines += group + rng.choices(group, k=wanted - len(group))
    rng.shuffle(lines)
    return lines


def cache_counts(port: int) -> dict[str, float]:
    """The response cache's hits and misses so far (from /metrics)."""
    _status, body = http(port, "GET /metrics")
    counts = {"hit": 0.0, "miss": 0.0}
    for line in body.decode().splitlines():
        found = re.match(r'leadgreen_response_cache_total\{result="(\w+)"\} ([0-9.e+]+)', line)
        if found and found.group(1) in counts:
            counts[found.group(1)] = float(found.group(2))
    return counts


@dataclass
class Target:
    name: str
    peer: peers.Peer
    file: Path


def drive(
    targets: list[Target], cached: peers.Peer, args: argparse.Namespace
) -> dict[str, list[dict[str, float]]]:
    """Interleaved rounds of wrk over each target; the cache counts of the server that has one
    (`cached`) too."""
    results: dict[str, list[dict[str, float]]] = {t.name: [] for t in targets}
    if args.warmup:
        for target in targets:
            wrk.run(target.peer.port, target.file, args.warmup, 32)
            target.peer.server.wait_idle()
    for round_ in range(args.rounds):
        shift = round_ % len(targets)
        for target in targets[shift:] + targets[:shift]:
            before_cache = cache_counts(cached.port) if target.peer is cached else None
            before = target.peer.cpu()
            run = wrk.run(target.peer.port, target.file, args.seconds, 32)
            used = peers.cpu_used(before, target.peer.cpu())
            row = {
                "rps": run.rate,
                "p50_ms": run.p50_ms,
                "p99_ms": run.p99_ms,
                "cpu_ms": 1000 * used / max(run.requests, 1),
                "failures": run.failures,
            }
            if before_cache is not None:
                after = cache_counts(target.peer.port)
                hits, misses = (after[k] - before_cache[k] for k in ("hit", "miss"))
                row["hit_rate"] = hits / max(hits + misses, 1)
            results[target.name].append(row)
            target.peer.server.wait_idle()
            print(
                f"  round {round_ + 1} {target.name:24} {run.rate:9.0f} req/s  p99 "
                f"{run.p99_ms:7.2f} ms  {row['cpu_ms']:.3f} CPU ms/req",
                file=sys.stderr,
                flush=True,
            )
    return results


# A new document's steps, each where the engine looks it up when it runs (module, name).
STEPS = {
    "parse": ("graph.engine.limits", "parsed"),
    "validation": ("graph.engine.limits", "validation_errors"),
    "cost": ("graph.engine.limits", "requested_cost"),
    "plan": ("graph.engine.plan", "compile_plan"),
}


def made_new(text: str, tag: str) -> str:
    """`text` with a field of its own in each operation (`<tag>: __typename`): a document the
    server has not seen, which a comment or other spacing would not make (texts of the same
    tokens share one preparation)."""
    ends = [
        d.selection_set.loc.end - 1  # its closing brace
        for d in parse(text).definitions
        if isinstance(d, OperationDefinitionNode) and d.selection_set.loc is not None
    ]
    for end in sorted(ends, reverse=True):
        text = f"{text[:end]} {tag}: __typename {text[end:]}"
    return text


@contextmanager
def steps_timed(spent: dict[str, float]) -> Iterator[None]:
    """Each of STEPS's functions timed while inside: the CPU of the thread that runs it (a
    worker thread's for a large document) added to `spent[step]`."""
    originals = {step: getattr(import_module(m), name) for step, (m, name) in STEPS.items()}

    def timed(step: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[step] += time.thread_time() - started

        return run

    for step, (module, name) in STEPS.items():
        setattr(import_module(module), name, timed(step, originals[step]))
    try:
        yield
    finally:
        for step, (module, name) in STEPS.items():
            setattr(import_module(module), name, originals[step])


def first_seen(database_url: str, examples: list[Example], repeats: int) -> dict[str, Any]:
    """The CPU a document costs the first time it is seen: its first answer less its second
    (the same text, made new by `made_new`), and each step's share of the first (STEPS), each
    operation's median over `repeats`; p50 and p99 over the operations, in µs."""
    return asyncio.run(_first_seen(database_url, examples, repeats))


async def _first_seen(url: str, examples: list[Example], repeats: int) -> dict[str, Any]:
    for name in ("strawberry.execution", "leadgreen"):  # the docs' error examples log
        logging.getLogger(name).disabled = True
    schema, new_context, engine = await in_process(url)
    spent = dict.fromkeys(STEPS, 0.0)

    async def cpu(text: str, variables: dict[str, Any]) -> tuple[float, dict[str, float], bool]:
        context = new_context()
        spent.update(dict.fromkeys(STEPS, 0.0))
        started = time.thread_time()
        result = await schema.execute(text, variables, context_value=context)
        seconds = time.thread_time() - started
        if context.session is not None:
            await context.session.close()
        return seconds, dict(spent), not result.errors

    costs: dict[str, list[float]] = {"total": [], **{step: [] for step in STEPS}}
    with steps_timed(spent):
        for n, example in enumerate(examples):
            if not (await cpu(example.text, example.variables))[2]:  # the data's memos made
                continue
            totals, steps = [], []
            for r in range(repeats):
                text = made_new(example.text, f"firstSeen{n}_{r}")
                first, first_steps, _ = await cpu(text, example.variables)
                second, _, _ = await cpu(text, example.variables)
                totals.append(first - second)
                steps.append(first_steps)
            costs["total"].append(median(totals))
            for step in STEPS:
                costs[step].append(median(s[step] for s in steps))
    await engine.dispose()
    return {"operations": len(costs["total"]), **{k: _spread(v) for k, v in costs.items()}}


def _spread(seconds: list[float]) -> dict[str, float]:
    """p50, p99 and max of `seconds`, in µs."""
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "p50_us": 1e6 * ordered[len(ordered) // 2],
        "p99_us": 1e6 * p99,
        "max_us": 1e6 * ordered[-1],
    }


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.mix", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2, help="seconds per part (0: none)")
    parser.add_argument("--lines", type=int, default=2000, help="requests in the mix's file")
    parser.add_argument("--repeats", type=int, default=15, help="first-seen samples per doc")
    parser.add_argument("--quick", action="store_true", help="1 s, one round (CI)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds, args.warmup, args.repeats = 1, 1, 0, 3
    return args


def table(rows: dict[str, dict[str, float]], labels: dict[str, str]) -> str:
    lines = [
        "| part of the mix, server | req/s (median) | p50 ms | p99 ms | server CPU ms/req "
        "| hit rate | × Mercurius-JIT (model pages) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    reference = rows["pages mercurius-jit"]["rps"]
    for name, row in rows.items():
        hit = f"{row['hit_rate']:.3f}" if "hit_rate" in row else "–"
        ratio = f"{row['rps'] / reference:.3f}" if name.startswith("pages") else "–"
        lines.append(
            f"| {labels[name]} | {row['rps']:,.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} "
            f"| {row['cpu_ms']:.3f} | {hit} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if wrk.wrk_binary() is None:
        print(f"bench.mix: wrk is not installed; as root: {wrk.INSTALL}")
        return 2
    peers.install()
    rng = random.Random(21)
    slugs = [m["slug"] for m in json.loads(SEED.read_text())["models"]]
    load_before = os.getloadavg()[0]
    labels = {
        "deployed mix": "the mix, LeadGreen as deployed (response cache in memory)",
        "cold mix": "the mix, LeadGreen with LEADGREEN_CACHE=off",
        "pages deployed": "its model pages, LeadGreen as deployed",
        "pages cold": "its model pages, LeadGreen with LEADGREEN_CACHE=off",
        "pages mercurius-jit": "its model pages, Fastify + Mercurius (graphql-jit)",
    }
    with tempfile.TemporaryDirectory(prefix="leadgreen-mix-") as tmp, ExitStack() as stack:
        directory = Path(tmp)
        url = f"sqlite+aiosqlite:///{directory / 'leadgreen.db'}"
        ingest(url, SNAPSHOT, SEED)

        def started(name: str, cache: str) -> peers.Peer:
            server: Server = leadgreen(name, url, SNAPSHOT, LEADGREEN_CACHE=cache)
            peer = peers.leadgreen_peer(name, server)
            stack.enter_context(peers.running(server, directory, peer.line(slugs[0])))
            return peer

        deployed, cold = started("deployed", "memory"), started("cold", "off")
        mercurius = stack.enter_context(peers.mercurius(SNAPSHOT, SEED, directory))
        pages = model_pages(slugs, rng)
        for line in pages:  # the same answers from each (configuration ids aside)
            ours, theirs, kept = (
                json.loads(http(p.port, line)[1]) for p in (cold, mercurius, deployed)
            )
            if kept != ours:
                raise AssertionError(f"the cache's answer differs: {line[:200]}")
            if "errors" in ours or _without_ids(ours["data"]) != _without_ids(theirs["data"]):
                raise AssertionError(f"the model pages differ: {line[:200]}")
        docs = [post(e.text, e.variables or None) for e in docs_operations()]
        groups: dict[str, list[str]] = {"model page": pages}
        dropped: list[str] = []
        for name, lines in (
            ("leaderboard", leaderboards()),
            ("pareto", paretos()),
            ("configurations", configuration_pages(cold.port)),
            ("planner", planners()),
            ("docs", docs),
        ):
            groups[name], refused = fine(cold.port, lines)
            fine(deployed.port, groups[name])  # its data's memos made, as on a running server
            dropped += refused
            if name != "docs" and refused:
                raise AssertionError(f"{name}: {len(refused)} refused, e.g. {refused[0][:300]}")
        mix = drawn(groups, args.lines, rng)
        distinct = len(set(mix))
        files = {}
        for name, lines in (("mix", mix), ("pages", [line for line in mix if line in pages])):
            files[name] = directory / f"{name}.txt"
            files[name].write_text("".join(line + "\n" for line in lines))
        print(
            f"mix: {len(mix)} requests, {distinct} distinct ("
            + ", ".join(f"{name} {len(group)}" for name, group in groups.items())
            + f"); {len(dropped)} docs operations left out (errors on one release); "
            f"{len(pages)} model pages equal to Mercurius's",
            file=sys.stderr,
        )
        targets = [
            Target("deployed mix", deployed, files["mix"]),
            Target("cold mix", cold, files["mix"]),
            Target("pages deployed", deployed, files["pages"]),
            Target("pages cold", cold, files["pages"]),
            Target("pages mercurius-jit", mercurius, files["pages"]),
        ]
        results = drive(targets, deployed, args)
        seen = first_seen(url, docs_operations(), args.repeats)
    rows = {
        name: {key: (sum if key == "failures" else median)(r[key] for r in runs) for key in runs[0]}
        for name, runs in results.items()
    }
    command = " ".join(["python -m bench.mix", *(argv if argv is not None else sys.argv[1:])])
    print(f"{command}  (wrk -t1 -c32, {args.rounds} × {args.seconds} s per part and server)")
    print(
        f"{len(mix)} requests, {distinct} distinct; load average {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after"
    )
    print(table(rows, labels))
    print(
        f"A document not seen before, over the docs' {seen['operations']} operations (CPU µs, "
        "p50 / p99 / max): "
        + "; ".join(
            f"{part} {seen[part]['p50_us']:.0f} / {seen[part]['p99_us']:.0f} / "
            f"{seen[part]['max_us']:.0f}"
            for part in ("total", *STEPS)
        )
    )
    if args.json:
        document = {"command": command, "summary": rows, "runs": results, "first_seen": seen}
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 1 if any(row["failures"] for row in rows.values()) else 0


def _without_ids(answer: dict[str, Any]) -> Any:
    """An answer with every configuration id left out (each server numbers rows its way)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "id"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(answer)


if __name__ == "__main__":
    sys.exit(main())

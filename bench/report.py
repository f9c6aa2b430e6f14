"""The benchmark's report: medians over rounds, ratios to the baselines, the issue's targets."""

from __future__ import annotations

from statistics import median
from typing import Any

from bench.wrk import Run

# From shared/PERFORMANCE-ANCHORS.md: the usual strawberry + SQLAlchemy server did 118 req/s
# where the precomputed-bytes endpoint did 31,932. Not measured here: estimated from this run's
# precomputed endpoint with that ratio.
TYPICAL_PER_PRECOMPUTED = 118 / 31_932


def summary(runs: list[Run]) -> dict[str, float]:
    return {
        "rate": median(r.rate for r in runs),
        "p50_ms": median(r.p50_ms for r in runs),
        "p99_ms": median(r.p99_ms for r in runs),
        "failures": sum(r.failures for r in runs),
        "rounds": len(runs),
    }


def as_json(results: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in results.items() if key != "backends"}
    out["backends"] = {}
    for backend, data in results["backends"].items():
        runs = {name: summary(r) for name, r in data["runs"].items()}
        out["backends"][backend] = {**data, "runs": runs}
    return out


def failures(results: dict[str, Any]) -> int:
    """Failed requests, plus a scenario of which no request finished."""
    return sum(
        sum(run.failures for run in runs) + (sum(run.requests for run in runs) == 0)
        for data in results["backends"].values()
        for runs in data["runs"].values()
    )


def _ratio(rate: float, base: dict[str, float] | None) -> str:
    return f"{rate / base['rate']:.3f}" if base else "-"


def _targets(runs: dict[str, dict[str, float]], data: dict[str, Any]) -> list[str]:
    base = runs["precomputed bytes"]
    warm, cold = runs["model page warm"], runs["model page cold"]
    typical = base["rate"] * TYPICAL_PER_PRECOMPUTED
    table = runs["task table cold 1 conn"]
    checks = [
        (
            "warm model page >= 0.5x precomputed, p99 < 5 ms",
            f"{warm['rate'] / base['rate']:.2f}x, p99 {warm['p99_ms']:.2f} ms",
            warm["rate"] >= 0.5 * base["rate"] and warm["p99_ms"] < 5,
        ),
        (
            "cold model page >= 8x the typical server (est.)",
            f"{cold['rate'] / typical:.1f}x ({cold['rate']:.0f} vs ~{typical:.0f} req/s)",
            cold["rate"] >= 8 * typical,
        ),
        (
            "task table, all fields, cold < 100 ms",
            f"p50 {table['p50_ms']:.1f} ms (one connection)",
            table["p50_ms"] < 100,
        ),
        ("startup to first answer < 1 s", f"{data['startup_s']:.2f} s", data["startup_s"] < 1),
        ("ingest of the snapshot < 5 s", f"{data['ingest_s']:.2f} s", data["ingest_s"] < 5),
        (
            "RSS < 200 MB",
            f"warm {data['rss_mb']['warm']:.0f} MB, cold {data['rss_mb']['cold']:.0f} MB",
            max(data["rss_mb"].values()) < 200,
        ),
    ]
    return [f"  {'met' if ok else 'NOT MET':8} {what}: {got}" for what, got, ok in checks]


def text(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"command: {results['command']}",
        f"machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory_gb']} GB, Python {m['python']}, "
        f"1-min load average {m['load_average']:.1f} before, {m['load_average_after']:.1f} after",
    ]
    header = (
        f"  {'scenario':24} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'x precomp':>10} {'x nginx':>8} {'errors':>7}"
    )
    for backend, data in results["backends"].items():
        runs = {name: summary(r) for name, r in data["runs"].items()}
        base, static = runs.get("precomputed bytes"), runs.get("nginx static file")
        lines += ["", f"{backend} ({runs[next(iter(runs))]['rounds']} rounds)", header]
        for name, s in runs.items():
            lines.append(
                f"  {name:24} {s['rate']:9.0f} {s['p50_ms']:8.2f} {s['p99_ms']:8.2f} "
                f"{_ratio(s['rate'], base):>10} {_ratio(s['rate'], static):>8} "
                f"{s['failures']:7.0f}"
            )
        if not data["nginx"]:
            lines.append("  (nginx is not installed: no static-file baseline)")
        lines += [f"  ingest {data['ingest_s']:.2f} s; targets:", *_targets(runs, data)]
    return "\n".join(lines)

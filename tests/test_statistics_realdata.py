"""Real data: fit quality, energy per response, facets and aggregates against the JSON files.

Expected values are computed here from ../shared/data with `json`, `math`, `statistics` and
numpy, never with the project's analysis code. The fits are checked three ways: the measured
points the API fitted are the files' rows, the quality figures it reports follow from its own
parameters, and no fit is worse than the ML.ENERGY toolkit's grid fit (re-done here).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from pytest import approx

from tests.conftest import SNAPSHOT

pytestmark = [pytest.mark.anyio, pytest.mark.realdata]

INDEX: dict[str, Any] = json.loads((SNAPSHOT / "index.json").read_text())
ARCHITECTURE = {task: arch for arch, tasks in INDEX["architectures"].items() for task in tasks}
ROWS: dict[str, list[dict[str, Any]]] = {
    task: json.loads((SNAPSHOT / f"tasks/{task}.json").read_text())["configurations"]
    for task in INDEX["tasks"]
}
LLM_TASKS = sorted(t for t in ROWS if ARCHITECTURE[t] != "diffusion")
FITTED = {
    "avgPowerWatts": "avg_power_watts",
    "energyPerTokenJoules": "energy_per_token_joules",
    "medianItlMs": "median_itl_ms",
    "outputThroughputTokensPerSec": "output_throughput_tokens_per_sec",
}


def llm_metrics(row: dict[str, Any]) -> dict[str, float]:
    names = (
        "energy_per_token_joules",
        "energy_per_request_joules",
        "median_itl_ms",
        "p90_itl_ms",
        "p95_itl_ms",
        "p99_itl_ms",
        "output_throughput_tokens_per_sec",
        "avg_power_watts",
    )
    return {
        **{n.upper(): row[n] for n in names},
        "POWER_PER_GPU_WATTS": row["avg_power_watts"] / row["num_gpus"],
        "AVG_BATCH_SIZE": row["avg_batch_size"],
        "AVG_OUTPUT_LEN": row["avg_output_len"],
    }


def diffusion_metrics(row: dict[str, Any]) -> dict[str, float]:
    output = "image" if "energy_per_image_joules" in row else "video"
    return {
        "ENERGY_PER_OUTPUT_JOULES": row[f"energy_per_{output}_joules"],
        "BATCH_LATENCY_S": row["batch_latency_s"],
        "THROUGHPUT_OUTPUTS_PER_SEC": row[f"throughput_{output}s_per_sec"],
        "AVG_POWER_WATTS": row["avg_power_watts"],
        "POWER_PER_GPU_WATTS": row["avg_power_watts"] / row["num_gpus"],
    }


def metrics_of(task: str, row: dict[str, Any]) -> dict[str, float]:
    return diffusion_metrics(row) if ARCHITECTURE[task] == "diffusion" else llm_metrics(row)


def sigmoid(z: Any) -> Any:
    """1 / (1 + e^-z), without overflow for large |z|."""
    e = np.exp(-np.abs(z))
    return np.where(np.asarray(z) >= 0, 1 / (1 + e), e / (1 + e))


def toolkit_grid_sse(x: np.ndarray, y: np.ndarray) -> float:
    """The smallest sum of squared residuals of the ML.ENERGY toolkit's LogisticModel.fit: a
    grid of 40 x0 by 60 k, with b0 and L by least squares (a simple regression on the sigmoid:
    what it leaves is the sum of squares of y less cov(s, y)^2 / var(s))."""
    x0 = np.linspace(x.min() - 1, x.max() + 1, 40)[:, None, None]
    k = np.logspace(-2, 2, 60)[None, :, None]
    s = sigmoid(k * (x - x0))
    ds = s - s.mean(axis=-1, keepdims=True)
    dy = y - y.mean()
    var, cov = (ds * ds).sum(axis=-1), (ds * dy).sum(axis=-1)
    explained = np.divide(cov * cov, var, out=np.zeros_like(var), where=var > 0)
    return float((dy * dy).sum() - explained.max())


def percentile(edges: list[float], counts: list[int], p: float) -> float:
    """Within-bin linear interpolation: the value below which p % of the counts lie."""
    target, below = p / 100 * sum(counts), 0
    for i, c in enumerate(counts):
        if c and below + c >= target:
            return edges[i] + (target - below) / c * (edges[i + 1] - edges[i])
        below += c
    raise AssertionError("p is at most 100")


FITS = """{ fittedCurves(task: null) { task model { modelId } gpuModel numGpus tensorParallel
    dataParallel expertParallel batchSizes runs
    avgPowerWatts { ...M } energyPerTokenJoules { ...M } medianItlMs { ...M }
    outputThroughputTokensPerSec { ...M } } }
fragment M on FittedMetric { method measured { batchSize runs }
    fit { b0 amplitude k x0 rSquared maxRelativeResidual missesMeasured missedBatchSizes } }"""


def series_from_files() -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for task in LLM_TASKS:
        for row in ROWS[task]:
            key = (task, row["model_id"], row["gpu_model"], row["num_gpus"])
            key += (row["tensor_parallel"], row["data_parallel"], row["expert_parallel"])
            series[key].append(row)
    return series


async def test_fit_quality_on_every_llm_series(execute_real) -> None:
    served = (await execute_real(FITS))["fittedCurves"]
    expected = series_from_files()
    by_key = {
        (
            s["task"],
            s["model"]["modelId"],
            s["gpuModel"],
            s["numGpus"],
            s["tensorParallel"],
            s["dataParallel"],
            s["expertParallel"],
        ): s
        for s in served
    }
    assert len(served) == len(by_key) == len(expected) == 114
    assert by_key.keys() == expected.keys()

    r_squared: dict[str, list[float]] = defaultdict(list)
    methods: dict[str, list[str]] = defaultdict(list)
    for key, rows in expected.items():
        s = by_key[key]
        sizes = sorted({r["max_num_seqs"] for r in rows})
        assert (s["batchSizes"], s["runs"]) == (sizes, len(rows))
        for field, column in FITTED.items():
            metric = s[field]
            runs: dict[int, list[float]] = defaultdict(list)
            for r in rows:  # files keep repeated runs in order; so does the API
                runs[r["max_num_seqs"]].append(r[column])
            assert metric["measured"] == [{"batchSize": b, "runs": runs[b]} for b in sizes]
            methods[field].append(metric["method"])
            fit = metric["fit"]
            if len(sizes) < 4:
                assert fit is None and metric["method"] == "INTERPOLATION"
                continue
            x = np.log2([float(r["max_num_seqs"]) for r in rows])
            y = np.array([r[column] for r in rows])
            fitted = fit["b0"] + fit["amplitude"] * sigmoid(fit["k"] * (x - fit["x0"]))
            sse = float(((fitted - y) ** 2).sum())
            assert fit["rSquared"] == approx(1 - sse / float(((y - y.mean()) ** 2).sum()))
            at = fit["b0"] + fit["amplitude"] * sigmoid(fit["k"] * (np.log2(sizes) - fit["x0"]))
            means = [statistics.fmean(runs[b]) for b in sizes]
            relative = {b: abs(f - m) / m for b, f, m in zip(sizes, at, means, strict=True)}
            assert fit["maxRelativeResidual"] == approx(max(relative.values()))
            missed = [b for b in sizes if relative[b] > 0.15]
            assert (fit["missesMeasured"], fit["missedBatchSizes"]) == (bool(missed), missed)
            assert metric["method"] == ("INTERPOLATION" if missed else "FIT")
            # Never worse than the toolkit's own fit (scaled as the API scales, to be fair).
            scale = float(np.abs(y).max())
            assert sse / scale**2 <= toolkit_grid_sse(x, y / scale) * (1 + 1e-9)
            r_squared[field].append(fit["rSquared"])

    # The figures the API stands on, recorded: 103 of 114 series have at least 4 batch sizes.
    assert {f: len(v) for f, v in r_squared.items()} == dict.fromkeys(FITTED, 103)
    medians = {f: round(statistics.median(v), 3) for f, v in r_squared.items()}
    assert medians == {
        "avgPowerWatts": 0.983,
        "energyPerTokenJoules": 0.999,
        "medianItlMs": 0.995,
        "outputThroughputTokensPerSec": 0.998,
    }
    assert {f: sum(r >= 0.9 for r in v) for f, v in r_squared.items()} == {
        "avgPowerWatts": 72,
        "energyPerTokenJoules": 102,
        "medianItlMs": 94,
        "outputThroughputTokensPerSec": 96,
    }
    # Served from the fit / by interpolation (11 of them have no fit; the rest are flagged).
    assert {f: (m.count("FIT"), m.count("INTERPOLATION")) for f, m in methods.items()} == {
        "avgPowerWatts": (92, 22),
        "energyPerTokenJoules": (83, 31),
        "medianItlMs": (69, 45),
        "outputThroughputTokensPerSec": (72, 42),
    }


async def test_energy_per_response_of_real_configurations(execute_real) -> None:
    checked = 0
    for task in LLM_TASKS:
        page = await execute_real(
            """query ($task: String) { configurations(filter: {task: $task}, first: 3) {
            nodes { id energyPerTokenJoules energyPerRequestJoules
                    upstream { modelFile modelRow } } } }""",
            task=task,
        )
        for node in page["configurations"]["nodes"]:
            upstream = node["upstream"]
            doc = json.loads((SNAPSHOT / upstream["modelFile"]).read_text())
            histogram = doc["configurations"][upstream["modelRow"]]["output_length_distribution"]
            edges, counts = histogram["bins"], histogram["counts"]
            ept = node["energyPerTokenJoules"]
            data = await execute_real(
                """query ($id: ID!) { energyPerResponse(configurationId: $id) { bins counts
                responses meanJoules histogramMeanJoules p50Joules p90Joules p95Joules p99Joules
                } }""",
                id=node["id"],
            )
            total = sum(counts)
            mids = [(a + b) / 2 for a, b in pairwise(edges)]
            assert data["energyPerResponse"] == {
                "bins": approx([e * ept for e in edges]),
                "counts": counts,
                "responses": total,
                "meanJoules": node["energyPerRequestJoules"],
                "histogramMeanJoules": approx(
                    sum(m * c for m, c in zip(mids, counts, strict=True)) / total * ept
                ),
                **{
                    f"p{p}Joules": approx(percentile(edges, counts, p) * ept)
                    for p in (50, 90, 95, 99)
                },
            }
            # Midpoints stand in for the lengths well: within 5 % of the measured mean.
            mean = data["energyPerResponse"]["histogramMeanJoules"]
            assert mean == approx(node["energyPerRequestJoules"], rel=0.05)
            checked += 1
    assert checked == 15


async def test_facets_of_every_task(execute_real) -> None:
    data = await execute_real("""{ facets { task { name } configurations gpus gpuCounts
        batchSizeSetting batchSizes metrics { metric minimum maximum } } }""")
    expected = []
    for task in sorted(ROWS):
        rows = ROWS[task]
        diffusion = ARCHITECTURE[task] == "diffusion"
        values: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            for name, v in metrics_of(task, r).items():
                values[name].append(v)
        expected.append(
            {
                "task": {"name": task},
                "configurations": len(rows),
                "gpus": sorted({r["gpu_model"] for r in rows}),
                "gpuCounts": sorted({r["num_gpus"] for r in rows}),
                "batchSizeSetting": "batchSize" if diffusion else "maxNumSeqs",
                "batchSizes": sorted(
                    {r["batch_size" if diffusion else "max_num_seqs"] for r in rows}
                ),
                "metrics": [
                    {"metric": n, "minimum": approx(min(v)), "maximum": approx(max(v))}
                    for n, v in values.items()
                ],
            }
        )
    assert data == {"facets": expected}
    assert sum(f["configurations"] for f in data["facets"]) == 1858


def summary(rows: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Count, and min, max, mean and median of each metric, of (task, row) pairs."""
    values: dict[str, list[float]] = defaultdict(list)
    for task, r in rows:
        for name, v in metrics_of(task, r).items():
            values[name].append(v)
    return {
        "count": len(rows),
        "metrics": [
            {
                "metric": n,
                "minimum": approx(min(v)),
                "maximum": approx(max(v)),
                "mean": approx(statistics.fmean(v)),
                "median": approx(statistics.median(v)),
            }
            for n, v in values.items()
        ],
    }


AGGREGATE = "{ count metrics { metric minimum maximum mean median } }"


@pytest.mark.parametrize(
    ("field", "filter", "keep"),
    [
        ("configurationAggregate", None, lambda t, r: True),
        (
            "configurationAggregate",
            {"gpu": "B200", "task": "gpqa"},
            lambda t, r: t == "gpqa" and r["gpu_model"] == "B200",
        ),
        (
            "configurationAggregate",
            {"modelId": "Qwen/Qwen3-8B", "numGpus": 1, "maxNumSeqsAtMost": 256},
            lambda t, r: (
                r["model_id"] == "Qwen/Qwen3-8B" and r["num_gpus"] == 1 and r["max_num_seqs"] <= 256
            ),
        ),
        (
            "configurationAggregate",
            {"task": "lm-arena-chat", "maxMedianItlMs": 20.0, "maxNumSeqsAtLeast": 64},
            lambda t, r: (
                t == "lm-arena-chat" and r["median_itl_ms"] <= 20 and r["max_num_seqs"] >= 64
            ),
        ),
        ("diffusionConfigurationAggregate", None, lambda t, r: True),
        (
            "diffusionConfigurationAggregate",
            {"task": "text-to-video", "gpu": "H100"},
            lambda t, r: t == "text-to-video" and r["gpu_model"] == "H100",
        ),
    ],
)
async def test_aggregates_against_the_files(execute_real, field, filter, keep) -> None:
    diffusion = field.startswith("diffusion")
    kind = "DiffusionConfigurationFilterInput" if diffusion else "ConfigurationFilterInput"
    data = await execute_real(
        f"query ($filter: {kind}) {{ {field}(filter: $filter) {AGGREGATE} }}", filter=filter
    )
    rows = [
        (task, r)
        for task, task_rows in ROWS.items()
        if (ARCHITECTURE[task] == "diffusion") == diffusion
        for r in task_rows
        if keep(task, r)
    ]
    assert rows
    assert data == {field: summary(rows)}


async def test_an_empty_real_selection_counts_zero(execute_real) -> None:
    data = await execute_real(
        '{ configurationAggregate(filter: {task: "gpqa", maxMedianItlMs: 0}) '
        "{ count metrics { mean } } }"
    )
    assert data == {"configurationAggregate": {"count": 0, "metrics": [{"mean": None}] * 11}}

"""Real data: the plans' partial-load estimates recomputed from the task files, on both databases.

Each LLM series (task, model, GPU type, GPU count, parallelism) is fitted here with scipy's
curve_fit, from the ML.ENERGY toolkit's grid start (re-done here, never with `analysis`): the
logistic y = b0 + L sigmoid(k (log2 b - x0)) of throughput and of power, in units of the
largest value. A plan's estimate is then: b* where the throughput's fit is D / replicas, within
the measured batch sizes, and replicas x the power's fit at b*, between the plan's bounds; none
where a fit misses the mean at some batch size by more than 15 % or the throughput's falls.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from scipy.optimize import curve_fit

from tests.conftest import SNAPSHOT

pytestmark = [pytest.mark.anyio, pytest.mark.realdata]

TASK = "lm-arena-chat"
ROWS: list[dict[str, Any]] = json.loads((SNAPSHOT / f"tasks/{TASK}.json").read_text())[
    "configurations"
]
SERIES = (
    "model_id",
    "gpu_model",
    "num_gpus",
    "tensor_parallel",
    "data_parallel",
    "expert_parallel",
)
QUERY = """query ($demand: DemandInput!) { deploymentPlan(demand: $demand, first: 1000) {
    plans { configuration { upstream { taskRow } } replicas outputsPerSecond
      partialLoadBatchSize powerWatts { lower upper estimate } unavailable { field reason } } } }"""


def sigmoid(z: Any) -> Any:
    e = np.exp(-np.abs(z))
    return np.where(np.asarray(z) >= 0, 1 / (1 + e), e / (1 + e))


def logistic(x: Any, b0: float, amplitude: float, k: float, x0: float) -> Any:
    return b0 + amplitude * sigmoid(k * (x - x0))


def fit(rows: list[dict[str, Any]], column: str) -> tuple[float, ...] | None:
    """(b0, L, k, x0) of the column against log2(max_num_seqs); None when some batch size's
    mean is missed by more than 15 % (or there are fewer than 4 batch sizes)."""
    runs: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        runs[r["max_num_seqs"]].append(r[column])
    if len(runs) < 4:
        return None
    x = np.log2([float(r["max_num_seqs"]) for r in rows])
    y = np.array([r[column] for r in rows], dtype=float)
    scale = float(np.abs(y).max())
    # The toolkit's grid: for each (x0, k), b0 and L by simple regression; start at the best.
    grid = [
        (k, x0) for x0 in np.linspace(x.min() - 1, x.max() + 1, 40) for k in np.logspace(-2, 2, 60)
    ]
    best = None
    for k, x0 in grid:
        s = sigmoid(k * (x - x0))
        var = float(((s - s.mean()) ** 2).sum())
        cov = float(((s - s.mean()) * (y / scale - (y / scale).mean())).sum())
        amplitude = cov / var if var > 1e-12 else 0.0
        b0 = float((y / scale).mean() - amplitude * s.mean())
        sse = float(((b0 + amplitude * s - y / scale) ** 2).sum())
        if best is None or sse < best[0]:
            best = (sse, b0, amplitude, k, x0)
    assert best is not None
    low, high = x.min() - 1, x.max() + 1
    p, _ = curve_fit(
        logistic,
        x,
        y / scale,
        p0=best[1:],
        bounds=([-np.inf, -np.inf, 1e-2, low], [np.inf, np.inf, 1e2, high]),
    )
    b0, amplitude, k, x0 = p
    params = (b0 * scale, amplitude * scale, k, x0)
    for b, values in runs.items():
        mean = statistics.fmean(values)
        if abs(float(logistic(math.log2(b), *params)) - mean) > 0.15 * abs(mean):
            return None
    return params


def expected(plan: dict[str, Any], rows: list[dict[str, Any]]) -> tuple[float, float] | None:
    throughput, power = fit(rows, "output_throughput_tokens_per_sec"), fit(rows, "avg_power_watts")
    if throughput is None or power is None or not throughput[1] > 0:
        return None
    b0, amplitude, k, x0 = throughput
    share = plan["outputsPerSecond"] / plan["replicas"]
    s = (share - b0) / amplitude
    if not 0 < s < 1:
        return None
    batch = 2 ** (x0 + math.log(s / (1 - s)) / k)
    sizes = [r["max_num_seqs"] for r in rows]
    if not min(sizes) <= batch <= max(sizes):
        return None
    watts = plan["replicas"] * float(logistic(math.log2(batch), *power))
    bounds = plan["powerWatts"]
    return (batch, watts) if bounds["lower"] <= watts <= bounds["upper"] else None


@pytest.mark.parametrize(("tokens", "estimated"), [(3_000.0, 194), (40_000.0, 135)])
async def test_estimates_agree_with_fits_of_the_task_file(
    execute_real, tokens: float, estimated: int
) -> None:
    """Every plan of the task (328), with or without an estimate; how many have one, recorded."""
    data = await execute_real(QUERY, demand={"outputTokensPerSecond": tokens})
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in ROWS:
        series[tuple(row[f] for f in SERIES)].append(row)
    got, want = {}, {}
    for plan in data["deploymentPlan"]["plans"]:
        i = plan["configuration"]["upstream"]["taskRow"]
        found = expected(plan, series[tuple(ROWS[i][f] for f in SERIES)])
        want[i] = None if found is None else pytest.approx(found, rel=1e-3)
        served = plan["partialLoadBatchSize"], plan["powerWatts"]["estimate"]
        got[i] = None if served == (None, None) else served
    assert got == want
    assert (sum(v is not None for v in got.values()), len(got)) == (estimated, len(ROWS))

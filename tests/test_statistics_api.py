"""Fitted curves, energy per response, facets and aggregates through the schema, whole answers."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from pytest import approx
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from analysis.fit import Logistic
from db.kinds import LLM
from graph.settings import Settings
from tests import synthetic
from tests.conftest import Execute, ingest_dir, make_execute

pytestmark = pytest.mark.anyio

NONE = {"minimum": None, "maximum": None, "mean": None, "median": None}
INTERPOLATE = "estimates interpolate between measured points."

# An extra series for the fit: Tiny 1B on 4 x H100 at six batch sizes, 128 run twice. Power and
# energy per token follow known logistics exactly; median ITL dips at 64, which no logistic
# follows, so its fit misses there.
POWER = Logistic(b0=400.0, amplitude=1600.0, k=1.5, x0=5.5)
ENERGY = Logistic(b0=0.55, amplitude=-0.5, k=1.0, x0=5.0)
ITL = {8: 10.0, 16: 10.0, 32: 10.0, 64: 6.0, 128: 30.0, 256: 30.0}
FIT_BATCHES = [8, 16, 32, 64, 128, 128, 256]
# Global ids of the synthetic rows and the extra series (rows 8 to 14), by row number (from 1).
FIT_ROWS = [
    *synthetic.ROWS,
    *(synthetic.row("acme/Tiny-1B", "H100", 4, b, 1.0, 1.0, tp=4) for b in FIT_BATCHES),
]
FIT_IDS = synthetic.configuration_ids(synthetic.TASK, FIT_ROWS, ("max_num_seqs",))


def ids(*rows: int) -> list[str]:
    return [FIT_IDS[n - 1] for n in rows]


@pytest.fixture
async def execute_fittable(engine: AsyncEngine, tmp_path: Path, settings: Settings) -> Execute:
    extra = [
        synthetic.row("acme/Tiny-1B", "H100", 4, b, ENERGY.at(b), ITL[b], tp=4, power=POWER.at(b))
        for b in FIT_BATCHES
    ]
    root = synthetic.write(tmp_path / "fittable", synthetic.documents(synthetic.ROWS + extra))
    (tmp_path / "manifest.json").write_text(json.dumps(synthetic.manifest()))
    await ingest_dir(engine, root, tmp_path / "manifest.json")
    return make_execute(engine, settings)


async def test_fitted_curves_with_too_few_batch_sizes_interpolate(execute_synthetic) -> None:
    data = await execute_synthetic("""{ fittedCurves(model: "mixture-8x2b") {
        task model { slug } gpuModel numGpus tensorParallel dataParallel expertParallel
        batchSizes runs
        avgPowerWatts { unit method note fit { rSquared }
            measured { batchSize mean runs configurationIds }
            at16: estimate(batchSize: 16) { batchSize value method extrapolated }
            estimates(batchSizes: [8, 24, 64]) { value extrapolated } } } }""")
    series = {
        "task": "lm-arena-chat",
        "model": {"slug": "mixture-8x2b"},
        "gpuModel": "H100",
        "numGpus": 2,
        "dataParallel": 1,
    }
    assert data == {
        "fittedCurves": [
            {
                **series,
                "tensorParallel": 1,
                "expertParallel": 2,
                "batchSizes": [8],
                "runs": 1,
                "avgPowerWatts": {
                    "unit": "W",
                    "method": "INTERPOLATION",
                    "note": "Only 1 distinct batch size: a four-parameter fit needs at least 4, "
                    f"so {INTERPOLATE}",
                    "fit": None,
                    "measured": [
                        {"batchSize": 8, "mean": 900.0, "runs": [900.0], "configurationIds": ids(7)}
                    ],
                    "at16": {
                        "batchSize": 16.0,
                        "value": None,
                        "method": "INTERPOLATION",
                        "extrapolated": True,
                    },
                    "estimates": [
                        {"value": 900.0, "extrapolated": False},
                        {"value": None, "extrapolated": True},
                        {"value": None, "extrapolated": True},
                    ],
                },
            },
            {
                **series,
                "tensorParallel": 2,
                "expertParallel": 1,
                "batchSizes": [16, 32],
                "runs": 3,
                "avgPowerWatts": {
                    "unit": "W",
                    "method": "INTERPOLATION",
                    "note": "Only 2 distinct batch sizes: a four-parameter fit needs at least 4, "
                    f"so {INTERPOLATE}",
                    "fit": None,
                    # The repeated runs at 32 are averaged.
                    "measured": [
                        {
                            "batchSize": 16,
                            "mean": 1000.0,
                            "runs": [1000.0],
                            "configurationIds": ids(4),
                        },
                        {
                            "batchSize": 32,
                            "mean": 1125.0,
                            "runs": [1100.0, 1150.0],
                            "configurationIds": ids(5, 6),
                        },
                    ],
                    "at16": {
                        "batchSize": 16.0,
                        "value": 1000.0,
                        "method": "INTERPOLATION",
                        "extrapolated": False,
                    },
                    "estimates": [
                        {"value": None, "extrapolated": True},
                        {
                            "value": approx(1000.0 + 125.0 * (math.log2(24) - 4)),
                            "extrapolated": False,
                        },
                        {"value": None, "extrapolated": True},
                    ],
                },
            },
        ]
    }


async def test_a_logistic_series_is_fitted_and_a_missed_point_hands_over(execute_fittable) -> None:
    data = await execute_fittable("""{ fittedCurves(gpu: "H100", numGpus: 4) {
        model { slug } batchSizes runs
        avgPowerWatts { method note
            fit { b0 amplitude k x0 rSquared maxRelativeResidual missesMeasured missedBatchSizes }
            at100: estimate(batchSize: 100) { value method extrapolated }
            at1024: estimate(batchSize: 1024) { value method extrapolated } }
        energyPerTokenJoules { method fit { b0 amplitude k x0 } }
        medianItlMs { method note fit { missesMeasured missedBatchSizes }
            measured { batchSize mean configurationIds }
            at64: estimate(batchSize: 64) { value method extrapolated } } } }""")
    assert data == {
        "fittedCurves": [
            {
                "model": {"slug": "tiny-1b"},
                "batchSizes": [8, 16, 32, 64, 128, 256],
                "runs": 7,
                "avgPowerWatts": {
                    "method": "FIT",
                    "note": "The fit is within 15 % of the measured value at every batch size.",
                    "fit": {
                        "b0": approx(400.0),
                        "amplitude": approx(1600.0),
                        "k": approx(1.5),
                        "x0": approx(5.5),
                        "rSquared": approx(1.0),
                        "maxRelativeResidual": approx(0.0, abs=1e-6),
                        "missesMeasured": False,
                        "missedBatchSizes": [],
                    },
                    "at100": {
                        "value": approx(POWER.at(100)),
                        "method": "FIT",
                        "extrapolated": False,
                    },
                    "at1024": {
                        "value": approx(POWER.at(1024)),
                        "method": "FIT",
                        "extrapolated": True,
                    },
                },
                "energyPerTokenJoules": {
                    "method": "FIT",
                    "fit": {
                        "b0": approx(0.55),
                        "amplitude": approx(-0.5),
                        "k": approx(1.0),
                        "x0": approx(5.0),
                    },
                },
                "medianItlMs": {
                    "method": "INTERPOLATION",
                    "note": "The fit misses the measured value at batch size 64 by more than "
                    f"15 %, so {INTERPOLATE}",
                    "fit": {"missesMeasured": True, "missedBatchSizes": [64]},
                    "measured": [
                        {"batchSize": 8, "mean": 10.0, "configurationIds": ids(8)},
                        {"batchSize": 16, "mean": 10.0, "configurationIds": ids(9)},
                        {"batchSize": 32, "mean": 10.0, "configurationIds": ids(10)},
                        {"batchSize": 64, "mean": 6.0, "configurationIds": ids(11)},
                        {"batchSize": 128, "mean": 30.0, "configurationIds": ids(12, 13)},
                        {"batchSize": 256, "mean": 30.0, "configurationIds": ids(14)},
                    ],
                    "at64": {"value": 6.0, "method": "INTERPOLATION", "extrapolated": False},
                },
            }
        ]
    }


async def test_energy_per_response_on_measured_and_log_bins(execute_synthetic) -> None:
    # Configuration 2: Tiny 1B at 0.2 J/token; lengths [0, 100, 200] tokens, counts [2, 2].
    query = """query ($id: ID!, $scale: BinScale!, $n: Int) {
        energyPerResponse(configurationId: $id, scale: $scale, binCount: $n) {
        configuration { id maxNumSeqs } energyPerTokenJoules scale bins counts responses
        meanJoules histogramMeanJoules p50Joules p90Joules p95Joules p99Joules } }"""
    measured = {
        "configuration": {"id": synthetic.configuration_id(2), "maxNumSeqs": 64},
        "energyPerTokenJoules": 0.2,
        "scale": "LINEAR",
        "bins": [0.0, 20.0, 40.0],
        "counts": [2.0, 2.0],
        "responses": 4,
        "meanJoules": 20.0,
        "histogramMeanJoules": 20.0,
        "p50Joules": 20.0,
        "p90Joules": approx(36.0),
        "p95Joules": approx(38.0),
        "p99Joules": approx(39.6),
    }
    assert await execute_synthetic(query, id=synthetic.configuration_id(2), scale="LINEAR") == {
        "energyPerResponse": measured
    }
    assert await execute_synthetic(
        query, id=synthetic.configuration_id(2), scale="LINEAR", n=4
    ) == {
        "energyPerResponse": {
            **measured,
            "bins": approx([0.0, 10.0, 20.0, 30.0, 40.0]),
            "counts": [1.0, 1.0, 1.0, 1.0],
        }
    }
    # Log bins from one token (0.2 J) to 200 tokens (40 J); percentiles stay the same.
    split = 2 * math.sqrt(200) / 100
    assert await execute_synthetic(query, id=synthetic.configuration_id(2), scale="LOG") == {
        "energyPerResponse": {
            **measured,
            "scale": "LOG",
            "bins": approx([0.2, 0.2 * math.sqrt(200), 40.0]),
            "counts": approx([split, 4 - split]),
        }
    }


ONE_SERIES = 'fittedCurves(model: "tiny-1b", gpu: "B200")'


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            'energyPerResponse(configurationId: "99") { responses }',
            "there is no LLM or MLLM configuration with id '99' in this release",
        ),
        (
            'energyPerResponse(configurationId: "x1") { responses }',
            "there is no LLM or MLLM configuration with id 'x1' in this release",
        ),
        (
            f'energyPerResponse(configurationId: "{synthetic.configuration_id(1)}", binCount: 0) '
            "{ responses }",
            "binCount must be between 1 and 1000, got 0",
        ),
        (
            'fittedCurves(task: "gpqa") { runs }',
            "unknown task 'gpqa' in `task`; `tasks` lists them",
        ),
        (
            'fittedCurves(model: "nope") { runs }',
            "unknown model slug 'nope' in `model`; `models` lists them",
        ),
        ('fittedCurves(gpu: "A100") { runs }', "unknown GPU 'A100' in `gpu`; `gpus` lists them"),
        ("fittedCurves(numGpus: 0) { runs }", "numGpus must be at least 1, got 0"),
        (
            f"{ONE_SERIES} {{ avgPowerWatts {{ estimate(batchSize: -4) {{ value }} }} }}",
            "batchSize must be at least 1, got -4.0",
        ),
        (
            f"{ONE_SERIES} {{ avgPowerWatts {{ estimates(batchSizes: [8, 0.5]) {{ value }} }} }}",
            "batchSize must be at least 1, got 0.5",
        ),
        (
            'facets(task: "chat") { configurations }',
            "unknown task 'chat' in `task`; `tasks` lists them",
        ),
        (
            'configurationAggregate(filter: {model: "nope"}) { count }',
            "unknown model slug 'nope' in `filter.model`; `models` lists them",
        ),
        (
            'configurationAggregate(filter: {modelId: "acme/Tiny-1B", model: "mixture-8x2b"}) '
            "{ count }",
            "there is no model with slug 'mixture-8x2b' and modelId 'acme/Tiny-1B'",
        ),
        (
            'configurationAggregate(filter: {task: "nope"}) { count }',
            "unknown task 'nope' in `filter.task`; `tasks` lists them",
        ),
        (
            'configurationAggregate(filter: {gpu: "TPU"}) { count }',
            "unknown GPU 'TPU' in `filter.gpu`; `gpus` lists them",
        ),
        (
            "configurationAggregate(filter: {maxMedianItlMs: -1}) { count }",
            "maxMedianItlMs must be a number >= 0, got -1.0",
        ),
        (
            "configurationAggregate(filter: {maxNumSeqsAtLeast: -8}) { count }",
            "maxNumSeqsAtLeast must be at least 1, got -8",
        ),
        (
            'diffusionConfigurationAggregate(filter: {task: "lm-arena-chat"}) { count }',
            "task 'lm-arena-chat' in `filter.task` is an LLM or MLLM task; this field takes "
            "diffusion tasks: none",
        ),
    ],
)
async def test_nonsensical_arguments_get_coded_errors(execute_synthetic, query, message) -> None:
    data = await execute_synthetic(f"{{ {query} }}")
    assert data == {"errors": [{"message": message, "code": "BAD_USER_INPUT"}]}


async def test_facets_of_the_synthetic_task(execute_synthetic) -> None:
    data = await execute_synthetic("""{ facets { task { name architecture } configurations gpus
        gpuCounts batchSizeSetting batchSizes metrics { metric unit minimum maximum } } }""")
    bounds = [
        ("ENERGY_PER_TOKEN_JOULES", "J/token", 0.2, 1.4),
        ("ENERGY_PER_REQUEST_JOULES", "J/response", 20.0, 140.0),
        ("MEDIAN_ITL_MS", "ms", 8.0, 36.0),
        ("P90_ITL_MS", "ms", 12.0, 54.0),
        ("P95_ITL_MS", "ms", 16.0, 72.0),
        ("P99_ITL_MS", "ms", 24.0, 108.0),
        ("OUTPUT_THROUGHPUT_TOKENS_PER_SEC", "tokens/s", 642.8571428571429, 3000.0),
        ("AVG_POWER_WATTS", "W", 400.0, 1150.0),
        ("POWER_PER_GPU_WATTS", "W/GPU", 400.0, 700.0),
        ("AVG_BATCH_SIZE", "requests", 7.2, 57.6),
        ("AVG_OUTPUT_LEN", "tokens/response", 100.0, 100.0),
    ]
    assert data == {
        "facets": [
            {
                "task": {"name": "lm-arena-chat", "architecture": "llm"},
                "configurations": 7,
                "gpus": ["B200", "H100"],
                "gpuCounts": [1, 2],
                "batchSizeSetting": "maxNumSeqs",
                "batchSizes": [8, 16, 32, 64],
                "metrics": [
                    {"metric": m, "unit": u, "minimum": approx(lo), "maximum": approx(hi)}
                    for m, u, lo, hi in bounds
                ],
            }
        ]
    }
    assert await execute_synthetic('{ facets(task: "lm-arena-chat") { configurations } }') == {
        "facets": [{"configurations": 7}]
    }


AGGREGATE = "{ count metrics { metric minimum maximum mean median } }"


@pytest.mark.parametrize(
    ("filter", "count", "energy"),
    [
        ("", 7, {"minimum": 0.2, "maximum": 1.4, "mean": 5.1 / 7, "median": 0.8}),
        (
            '(filter: {model: "mixture-8x2b", numGpus: 2, maxNumSeqsAtLeast: 16})',
            3,
            {"minimum": 0.8, "maximum": 1.0, "mean": 0.9, "median": 0.9},
        ),
        (
            '(filter: {gpu: "B200", task: "lm-arena-chat"})',
            1,
            {"minimum": 0.3, "maximum": 0.3, "mean": 0.3, "median": 0.3},
        ),
        (
            "(filter: {maxMedianItlMs: 10})",
            2,
            {"minimum": 0.3, "maximum": 0.5, "mean": 0.4, "median": 0.4},
        ),
        ("(filter: {numGpus: 4})", 0, NONE),
        ("(filter: {maxNumSeqsAtLeast: 64, maxNumSeqsAtMost: 8})", 0, NONE),
    ],
)
async def test_configuration_aggregate(execute_synthetic, filter, count, energy) -> None:
    data = await execute_synthetic(f"{{ configurationAggregate{filter} {AGGREGATE} }}")
    aggregate = data["configurationAggregate"]
    assert aggregate["count"] == count
    # One summary per metric the LLM rows declare (db.fields), in their order.
    assert [m["metric"] for m in aggregate["metrics"]] == [m.upper() for m in LLM.metrics]
    assert aggregate["metrics"][0] == {
        "metric": "ENERGY_PER_TOKEN_JOULES",
        **{k: None if v is None else approx(v) for k, v in energy.items()},
    }
    if count == 0:
        assert all({**m, "metric": None} == {"metric": None, **NONE} for m in aggregate["metrics"])


async def test_aggregate_of_every_metric(execute_synthetic) -> None:
    data = await execute_synthetic(
        f'{{ configurationAggregate(filter: {{model: "tiny-1b"}}) {AGGREGATE} }}'
    )
    # Tiny 1B: (H100, 8, 0.5 J, 10 ms, 400 W), (H100, 64, 0.2, 20, 600), (B200, 8, 0.3, 8, 700).
    rows = [
        ("ENERGY_PER_TOKEN_JOULES", [0.5, 0.2, 0.3]),
        ("ENERGY_PER_REQUEST_JOULES", [50.0, 20.0, 30.0]),
        ("MEDIAN_ITL_MS", [10.0, 20.0, 8.0]),
        ("P90_ITL_MS", [15.0, 30.0, 12.0]),
        ("P95_ITL_MS", [20.0, 40.0, 16.0]),
        ("P99_ITL_MS", [30.0, 60.0, 24.0]),
        ("OUTPUT_THROUGHPUT_TOKENS_PER_SEC", [800.0, 3000.0, 700 / 0.3]),
        ("AVG_POWER_WATTS", [400.0, 600.0, 700.0]),
        ("POWER_PER_GPU_WATTS", [400.0, 600.0, 700.0]),
        ("AVG_BATCH_SIZE", [7.2, 57.6, 7.2]),
        ("AVG_OUTPUT_LEN", [100.0, 100.0, 100.0]),
    ]
    assert data == {
        "configurationAggregate": {
            "count": 3,
            "metrics": [
                {
                    "metric": metric,
                    "minimum": approx(min(values)),
                    "maximum": approx(max(values)),
                    "mean": approx(sum(values) / 3),
                    "median": approx(sorted(values)[1]),
                }
                for metric, values in rows
            ],
        }
    }


async def test_diffusion_aggregate_of_no_rows_is_empty(execute_synthetic) -> None:
    data = await execute_synthetic(f"{{ diffusionConfigurationAggregate {AGGREGATE} }}")
    assert data == {
        "diffusionConfigurationAggregate": {
            "count": 0,
            "metrics": [
                {"metric": m, **NONE}
                for m in (
                    "ENERGY_PER_OUTPUT_JOULES",
                    "BATCH_LATENCY_S",
                    "THROUGHPUT_OUTPUTS_PER_SEC",
                    "AVG_POWER_WATTS",
                    "POWER_PER_GPU_WATTS",
                )
            ],
        }
    }


# What reading a release's catalog takes (db/catalog.py), once per release and process.
# (the configurations of both kinds in one read: the catalog the ingest stored, db.catalog)
CATALOG_TABLES = ["releases", "catalogs", "sources", "tasks", "models", "gpus", "model_tasks"]


@pytest.mark.parametrize(
    "query",
    [
        '{ fittedCurves(model: "tiny-1b") { model { slug } avgPowerWatts { method } } }',
        "{ fittedCurves(task: null) { runs } }",
        f'{{ energyPerResponse(configurationId: "{synthetic.configuration_id(3)}") '
        "{ p50Joules } }",
        "{ facets { configurations } }",
        '{ configurationAggregate(filter: {model: "tiny-1b", gpu: "H100"}) { count } }',
        "{ diffusionConfigurationAggregate { count } }",
    ],
)
async def test_answers_read_the_release_s_rows_once(synthetic_db, settings, query) -> None:
    """An answer reads the latest release; the first one of a release also reads its catalog,
    in a fixed set of statements; none reads rows of its own."""
    statements: list[str] = []
    event.listen(
        synthetic_db.sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2])
    )
    execute = make_execute(synthetic_db, settings)
    tables = []
    for _ in range(2):
        statements.clear()
        assert "errors" not in await execute(query)
        tables.append([re.search(r"FROM (\w+)", s).group(1) for s in statements])
    assert tables == [["releases", *CATALOG_TABLES], ["releases"]]

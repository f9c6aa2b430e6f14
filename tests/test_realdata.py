"""Real data: the API's answers against values computed directly from ../shared/data.

Expected values come from the upstream files and the seed index read here with `json`,
never from the project's own db/ingest code, so the two computations are independent.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from typing import Any

import pytest

from graph.server.documents import MODEL_PAGE
from tests.conftest import LLM_ROW_KEYS, SEED, SNAPSHOT

pytestmark = [pytest.mark.anyio, pytest.mark.realdata]

TASK = "lm-arena-chat"
TASK_FILE = f"tasks/{TASK}.json"
# Thermal design power per GPU, in watts (NVIDIA datasheets; checked by eye).
TDP = {"H100": 700.0, "B200": 1000.0}

SEED_DOC: dict[str, Any] = json.loads(SEED.read_text())
INDEX: dict[str, Any] = json.loads((SNAPSHOT / "index.json").read_text())
TASK_DOC: dict[str, Any] = json.loads((SNAPSHOT / TASK_FILE).read_text())
# Every task file of the snapshot: the database holds them all, lm-arena-chat among them.
TASK_DOCS: dict[str, dict[str, Any]] = {
    task: json.loads((SNAPSHOT / f"tasks/{task}.json").read_text()) for task in INDEX["tasks"]
}
ARCHITECTURE: dict[str, str] = {
    task: arch for arch, tasks in INDEX["architectures"].items() for task in tasks
}
LLM_TASKS = [task for task in INDEX["tasks"] if ARCHITECTURE[task] != "diffusion"]
DIFFUSION_TASKS = [task for task in INDEX["tasks"] if ARCHITECTURE[task] == "diffusion"]
ROWS: list[dict[str, Any]] = TASK_DOC["configurations"]
SLUGS: list[str] = [entry["slug"] for entry in SEED_DOC["models"]]
ENTRY_BY_SLUG: dict[str, dict[str, Any]] = {entry["slug"]: entry for entry in SEED_DOC["models"]}
SLUG_BY_MODEL_ID: dict[str, str] = {
    entry["model_id"]: entry["slug"] for entry in SEED_DOC["models"]
}

# The task-file fields a configuration serves unchanged (snake_case, as upstream names them).
ROW_KEYS = LLM_ROW_KEYS
SERIES_KEYS = ("gpu_model", "num_gpus", "tensor_parallel", "data_parallel", "expert_parallel")
SPREAD = "{ minimum median maximum }"
HISTOGRAM = "outputLengthDistribution { bins counts }"


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def snake(name: str) -> str:
    return re.sub(r"([A-Z])", r"_\1", name).lower()


NODE_FIELDS = "modelId " + " ".join(camel(k) for k in ROW_KEYS)


def model_file_path(model_id: str) -> str:
    return f"models/{model_id.replace('/', '__')}__{TASK}.json"


def model_doc(model_id: str) -> dict[str, Any]:
    return json.loads((SNAPSHOT / model_file_path(model_id)).read_text())


def rows_of(model_id: str) -> list[dict[str, Any]]:
    return [row for row in ROWS if row["model_id"] == model_id]


def per_gpu(row: dict[str, Any]) -> float:
    return row["avg_power_watts"] / row["num_gpus"]


def expected_configuration(row: dict[str, Any]) -> dict[str, Any]:
    """A model-page configuration (without its opaque id), straight from a task-file row."""
    return {
        **{camel(k): row[k] for k in ROW_KEYS},
        "powerPerGpuWatts": per_gpu(row),
        "fractionOfTdp": per_gpu(row) / TDP[row["gpu_model"]],
    }


def expected_node(row: dict[str, Any]) -> dict[str, Any]:
    return {"modelId": row["model_id"], **{camel(k): row[k] for k in ROW_KEYS}}


def frozen(node: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(node.items()))


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "errors" not in result, result["errors"]
    return result


def spread(values: list[float]) -> dict[str, float]:
    return {"minimum": min(values), "median": statistics.median(values), "maximum": max(values)}


def slugify(nickname: str) -> str:
    """The slug of a model the seed does not list: its nickname, lower-cased, dash-separated."""
    return re.sub(r"[^a-z0-9]+", "-", nickname.lower()).strip("-")


def slug_of(model_id: str) -> str:
    return SLUG_BY_MODEL_ID.get(model_id) or slugify(INDEX["models"][model_id]["nickname"])


def test_data_files_agree_with_themselves() -> None:
    """Preconditions of the expectations below, checked on the files alone."""
    assert len(ROWS) == 328
    assert TASK_DOCS[TASK] == TASK_DOC
    assert sum(len(doc["configurations"]) for doc in TASK_DOCS.values()) == 1858
    assert len(INDEX["models"]) == 46
    assert len({slug_of(model_id) for model_id in INDEX["models"]}) == 46
    assert len(SLUGS) == 18 == len(set(SLUGS))
    assert {row["model_id"] for row in ROWS} == set(SLUG_BY_MODEL_ID)
    assert {row["gpu_model"] for row in ROWS} == set(TDP)
    for model_id in SLUG_BY_MODEL_ID:
        details = model_doc(model_id)["configurations"]
        own = rows_of(model_id)
        assert len(details) == len(own)
        for row, detail in zip(own, details, strict=True):
            parallel = detail["parallelization"]
            assert (row["gpu_model"], row["num_gpus"], row["max_num_seqs"]) == (
                detail["gpu_model"],
                detail["num_gpus"],
                detail["max_num_seqs"],
            )
            assert (row["tensor_parallel"], row["data_parallel"], row["expert_parallel"]) == (
                parallel["tensor_parallel"],
                parallel["data_parallel"],
                parallel["expert_parallel"],
            )


# --- 1-3. The model page, for every model of the seed ----------------------------------


@pytest.mark.parametrize("slug", SLUGS)
async def test_model_page(execute_real, slug: str) -> None:
    data = ok(await execute_real(MODEL_PAGE, slug=slug))
    model = data["model"]
    entry = ENTRY_BY_SLUG[slug]
    model_id = entry["model_id"]
    rows = rows_of(model_id)
    assert rows

    # Every seed field, and the upstream index facts.
    assert {key: model[camel(key)] for key in entry} == entry
    facts = INDEX["models"][model_id]
    assert model["architecture"] == facts["architecture"]
    assert model["weightPrecision"] == facts["weight_precision"]

    # Configurations: the task file's rows of the model, in order, every number exact.
    configurations = model["configurations"]
    ids = [c["id"] for c in configurations]
    assert len(set(ids)) == len(ids) == len(rows)
    assert [{k: v for k, v in c.items() if k != "id"} for c in configurations] == [
        expected_configuration(row) for row in rows
    ]

    # Curves: one series per (GPU, GPU count, parallelism); points by max_num_seqs, then in
    # upstream order (Python's sort is stable, and `rows` is in upstream order).
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in SERIES_KEYS), []).append(row)
    curves = model["curves"]
    assert all(series["task"] == TASK for series in curves)
    served = {tuple(series[camel(k)] for k in SERIES_KEYS): series["points"] for series in curves}
    assert len(served) == len(curves), "a series appears twice"
    assert set(served) == set(groups)
    assert sum(len(points) for points in served.values()) == len(rows)
    for key, points in served.items():
        seqs = [p["maxNumSeqs"] for p in points]
        assert seqs == sorted(seqs), key
        expected = [{name: row[snake(name)] for name in points[0]} for row in groups[key]]
        assert Counter(map(frozen, points)) == Counter(map(frozen, expected)), key
        assert points == sorted(expected, key=lambda p: p["maxNumSeqs"]), key

    # Power per GPU type, with statistics.median over the files' values.
    power = []
    for gpu in sorted({row["gpu_model"] for row in rows}):
        mine = [row for row in rows if row["gpu_model"] == gpu]
        per_gpu_watts = [per_gpu(row) for row in mine]
        power.append(
            {
                "gpuModel": gpu,
                "configurations": len(mine),
                "totalWatts": spread([row["avg_power_watts"] for row in mine]),
                "perGpuWatts": spread(per_gpu_watts),
                "fractionOfTdp": spread([w / TDP[gpu] for w in per_gpu_watts]),
                "tdpWatts": TDP[gpu],
            }
        )
    got = [
        {
            **{k: v for k, v in p.items() if k != "gpu"},
            "tdpWatts": p["gpu"]["tdpWatts"],
        }
        for p in model["power"]
    ]
    assert got == power
    assert [p["gpuModel"] for p in model["power"]] == sorted(entry["gpus"])
    for p in model["power"]:
        assert p["gpu"]["fullName"] and p["gpu"]["source"] and p["gpu"]["sourceUrl"]

    # The provenance block: the seed's source, and the release the data is from.
    source = dict(data["source"])
    release = source.pop("release")
    assert {snake(k): v for k, v in source.items()} == {
        snake(k): SEED_DOC["source"][snake(k)] for k in source
    }
    assert release["lastUpdated"] == INDEX["last_updated"]


# --- 4. Counts ---------------------------------------------------------------------------


async def test_counts(execute_real) -> None:
    data = ok(
        await execute_real(
            f"""{{
              configurations(filter: {{task: "{TASK}"}}, first: 500) {{
                totalCount nodes {{ id }} pageInfo {{ hasNextPage }}
              }}
              all: configurations(first: 1) {{ totalCount }}
              diffusion: diffusionConfigurations(first: 1) {{ totalCount }}
              models {{ slug modelId inIndex }}
              gpus {{ name tdpWatts }}
              tasks {{ name displayName architecture }}
            }}"""
        )
    )
    assert data["configurations"]["totalCount"] == 328 == len(ROWS)
    assert len(data["configurations"]["nodes"]) == 328
    assert data["configurations"]["pageInfo"]["hasNextPage"] is False
    # Without a task filter, the root connections hold every row of their kind of task.
    assert data["all"]["totalCount"] == sum(
        len(TASK_DOCS[task]["configurations"]) for task in LLM_TASKS
    )
    assert data["diffusion"]["totalCount"] == sum(
        len(TASK_DOCS[task]["configurations"]) for task in DIFFUSION_TASKS
    )
    assert data["all"]["totalCount"] + data["diffusion"]["totalCount"] == 1858
    # Every model of index.json, once, by slug; the seed's 18 are the ones in the index.
    assert len(data["models"]) == len(INDEX["models"]) == 46
    assert data["models"] == sorted(
        (
            {
                "slug": slug_of(model_id),
                "modelId": model_id,
                "inIndex": model_id in SLUG_BY_MODEL_ID,
            }
            for model_id in INDEX["models"]
        ),
        key=lambda m: m["slug"],
    )
    assert sum(m["inIndex"] for m in data["models"]) == len(SLUGS)
    assert data["gpus"] == [
        {"name": "B200", "tdpWatts": 1000.0},
        {"name": "H100", "tdpWatts": 700.0},
    ]
    assert data["tasks"] == [
        {
            "name": TASK_DOCS[task]["task"],
            "displayName": TASK_DOCS[task]["task_display_name"],
            "architecture": ARCHITECTURE[task],
        }
        for task in sorted(INDEX["tasks"])
    ]
    assert TASK in [t["name"] for t in data["tasks"]]


# --- 5. The v1 index, rebuilt ------------------------------------------------------------


async def test_index_reproduces_the_seed(execute_real) -> None:
    source_fields = " ".join(camel(k) for k in SEED_DOC["source"])
    model_fields = " ".join(camel(k) for k in SEED_DOC["models"][0])
    top = " ".join(camel(k) for k in SEED_DOC if k not in ("source", "models"))
    data = ok(
        await execute_real(
            f"{{ index {{ {top} source {{ {source_fields} }} models {{ {model_fields} }} }} }}"
        )
    )
    index = data["index"]
    rebuilt = {snake(k): v for k, v in index.items() if k not in ("source", "models")}
    rebuilt["source"] = {snake(k): v for k, v in index["source"].items()}
    rebuilt["models"] = [{snake(k): v for k, v in m.items()} for m in index["models"]]
    assert rebuilt == SEED_DOC
    # Key order too: the index serves the seed's models in the seed's order.
    assert [m["slug"] for m in index["models"]] == SLUGS


# --- 6. Output-length histograms and upstream positions ------------------------------------


async def test_histograms_and_upstream_rows(execute_real) -> None:
    data = ok(
        await execute_real(
            f"""{{ models {{
              modelId
              configurations {{
                {HISTOGRAM} parallelNotes
                upstream {{ taskFile taskRow modelFile modelRow }}
              }}
              tasks {{ task file {HISTOGRAM} }}
            }} }}"""
        )
    )
    # Every model is listed; those not measured on lm-arena-chat have no configurations here
    # (`configurations` defaults to lm-arena-chat), the others are checked row by row.
    assert len(data["models"]) == len(INDEX["models"])
    measured = [m for m in data["models"] if rows_of(m["modelId"])]
    assert {m["modelId"] for m in measured} == set(SLUG_BY_MODEL_ID)
    assert all(m["configurations"] == [] for m in data["models"] if m not in measured)
    task_row = {id(row): i for i, row in enumerate(ROWS)}
    for model in measured:
        model_id = model["modelId"]
        doc = model_doc(model_id)
        path = model_file_path(model_id)
        assert [t for t in model["tasks"] if t["task"] == TASK] == [
            {
                "task": TASK,
                "file": path,
                "outputLengthDistribution": doc["output_length_distribution"],
            }
        ]
        assert model["configurations"] == [
            {
                "outputLengthDistribution": detail["output_length_distribution"],
                "parallelNotes": detail["parallelization"]["notes"],
                "upstream": {
                    "taskFile": TASK_FILE,
                    "taskRow": task_row[id(row)],
                    "modelFile": path,
                    "modelRow": i,
                },
            }
            for i, (row, detail) in enumerate(
                zip(rows_of(model_id), doc["configurations"], strict=True)
            )
        ], model_id


# --- 7. Repeated runs ----------------------------------------------------------------------

REPEATED_MODEL = "Qwen/Qwen3-30B-A3B-Instruct-2507"


async def test_repeated_runs_are_all_served(execute_real) -> None:
    repeated = [
        row
        for row in rows_of(REPEATED_MODEL)
        if row["gpu_model"] == "H100" and row["num_gpus"] == 2 and row["max_num_seqs"] in (256, 512)
    ]
    # The files: two runs each at 256 and 512, same settings, different measurements.
    assert Counter(row["max_num_seqs"] for row in repeated) == {256: 2, 512: 2}
    assert len({tuple(row[k] for k in SERIES_KEYS) for row in repeated}) == 1
    assert len({row["energy_per_token_joules"] for row in repeated}) == 4

    slug = SLUG_BY_MODEL_ID[REPEATED_MODEL]
    data = ok(
        await execute_real(
            f"""query($slug: String!, $filter: ConfigurationFilterInput) {{
              model(slug: $slug) {{
                configurations(gpu: "H100", numGpus: 2) {{ id {NODE_FIELDS} }}
                curves {{ gpuModel numGpus points {{ maxNumSeqs energyPerTokenJoules }} }}
              }}
              configurations(filter: $filter, first: 500) {{
                totalCount nodes {{ {NODE_FIELDS} }}
              }}
            }}""",
            slug=slug,
            filter={
                "task": TASK,
                "modelId": REPEATED_MODEL,
                "gpu": "H100",
                "numGpus": 2,
                "maxNumSeqsAtLeast": 256,
                "maxNumSeqsAtMost": 512,
            },
        )
    )
    served = [
        {k: v for k, v in c.items() if k != "id"}
        for c in data["model"]["configurations"]
        if c["maxNumSeqs"] in (256, 512)
    ]
    assert served == [expected_node(row) for row in repeated]
    ids = [c["id"] for c in data["model"]["configurations"] if c["maxNumSeqs"] in (256, 512)]
    assert len(set(ids)) == 4

    in_range = [
        row
        for row in rows_of(REPEATED_MODEL)
        if row["gpu_model"] == "H100" and row["num_gpus"] == 2 and 256 <= row["max_num_seqs"] <= 512
    ]
    assert data["configurations"]["totalCount"] == len(in_range)
    assert data["configurations"]["nodes"] == [expected_node(row) for row in in_range]

    points = [
        (p["maxNumSeqs"], p["energyPerTokenJoules"])
        for series in data["model"]["curves"]
        if (series["gpuModel"], series["numGpus"]) == ("H100", 2)
        for p in series["points"]
        if p["maxNumSeqs"] in (256, 512)
    ]
    assert sorted(points) == sorted(
        (row["max_num_seqs"], row["energy_per_token_joules"]) for row in repeated
    )


# --- 8. Filtering and ordering on the root connection --------------------------------------

_FILTER_KEYS = {
    "gpu": lambda row, v: row["gpu_model"] == v,
    "numGpus": lambda row, v: row["num_gpus"] == v,
    "maxNumSeqsAtLeast": lambda row, v: row["max_num_seqs"] >= v,
    "maxNumSeqsAtMost": lambda row, v: row["max_num_seqs"] <= v,
    "maxMedianItlMs": lambda row, v: row["median_itl_ms"] <= v,
    "modelId": lambda row, v: row["model_id"] == v,
    "model": lambda row, v: SLUG_BY_MODEL_ID[row["model_id"]] == v,
    "task": lambda row, v: v == TASK,
}


def matching(given: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for row in ROWS if all(_FILTER_KEYS[k](row, v) for k, v in given.items())]


# Every filter names lm-arena-chat: the root connection holds the rows of every LLM task
# (tests/test_realdata_tasks.py checks the other tasks).
FILTERS: list[dict[str, Any]] = [
    {"task": TASK, "gpu": "H100", "numGpus": 2},
    {"task": TASK, "gpu": "B200", "numGpus": 8},
    {"task": TASK, "maxNumSeqsAtLeast": 256},
    {"task": TASK, "maxNumSeqsAtMost": 64},
    {"task": TASK, "gpu": "B200", "maxNumSeqsAtLeast": 128, "maxNumSeqsAtMost": 512},
    {"task": TASK, "maxNumSeqsAtLeast": 512, "maxNumSeqsAtMost": 256},
    {"task": TASK, "model": SLUG_BY_MODEL_ID[REPEATED_MODEL], "numGpus": 2},
    {"task": TASK, "modelId": "Qwen/Qwen3-8B", "gpu": "H100"},
    # A ceiling equal to a row's own median ITL: inclusive, so that row is in.
    {"task": TASK, "maxMedianItlMs": statistics.median_low(r["median_itl_ms"] for r in ROWS)},
    {"task": TASK, "maxMedianItlMs": max(r["median_itl_ms"] for r in ROWS)},
    # A slug and a model id of two different models: a connection selects nothing.
    {"task": TASK, "model": SLUG_BY_MODEL_ID[REPEATED_MODEL], "modelId": "Qwen/Qwen3-8B"},
]


async def test_filters(execute_real) -> None:
    query = f"""query($filter: ConfigurationFilterInput) {{
      configurations(filter: $filter, first: 500) {{
        totalCount pageInfo {{ hasNextPage }} nodes {{ {NODE_FIELDS} }}
      }}
    }}"""
    for given in FILTERS:
        expected = matching(given)
        page = ok(await execute_real(query, filter=given))["configurations"]
        assert page["totalCount"] == len(expected), given
        assert page["pageInfo"]["hasNextPage"] is False, given
        # No ordering given: by id, which is upstream order.
        assert page["nodes"] == [expected_node(row) for row in expected], given
    assert matching(FILTERS[-2]) == ROWS
    assert matching(FILTERS[-1]) == []
    # A task the release does not have is an error, not an empty page.
    assert await execute_real(query, filter={"task": "no-such-task"}) == {
        "errors": [
            {
                "message": "unknown task 'no-such-task' in `filter.task`; `tasks` lists them",
                "code": "BAD_USER_INPUT",
            }
        ]
    }


ORDERINGS = [
    ("energy_per_token_joules", "ASC"),
    ("energy_per_token_joules", "DESC"),
    ("max_num_seqs", "ASC"),
    ("max_num_seqs", "DESC"),
]


@pytest.mark.parametrize(("field", "direction"), ORDERINGS)
async def test_ordering_pages_through_everything(execute_real, field: str, direction: str) -> None:
    query = f"""query($order: ConfigurationOrder, $after: String) {{
      configurations(filter: {{task: "{TASK}"}}, orderBy: $order, first: 50, after: $after) {{
        totalCount pageInfo {{ hasNextPage endCursor }}
        edges {{ cursor node {{ {NODE_FIELDS} }} }}
      }}
    }}"""
    order = {"field": field.upper(), "direction": direction}
    nodes: list[dict[str, Any]] = []
    after = None
    pages = 0
    while True:
        page = ok(await execute_real(query, order=order, after=after))["configurations"]
        pages += 1
        assert page["totalCount"] == len(ROWS)
        edges = page["edges"]
        assert page["pageInfo"]["endCursor"] == edges[-1]["cursor"]
        nodes += [edge["node"] for edge in edges]
        if not page["pageInfo"]["hasNextPage"]:
            break
        assert len(edges) == 50
        after = page["pageInfo"]["endCursor"]
        assert pages <= len(ROWS), "paging does not end"
    assert pages == math.ceil(len(ROWS) / 50)

    descending = direction == "DESC"
    values = [node[camel(field)] for node in nodes]
    assert values == sorted((row[field] for row in ROWS), reverse=descending)
    assert Counter(map(frozen, nodes)) == Counter(frozen(expected_node(row)) for row in ROWS)
    # Ties broken by id (upstream order), in the direction asked for.
    positions = sorted(range(len(ROWS)), key=lambda i: (ROWS[i][field], i), reverse=descending)
    assert nodes == [expected_node(ROWS[i]) for i in positions]


# --- 9. Over HTTP ----------------------------------------------------------------------------


@pytest.mark.parametrize("slug", [SLUG_BY_MODEL_ID[REPEATED_MODEL]])
async def test_model_page_over_http(real_client, execute_real, slug: str) -> None:
    response = await real_client.post(
        "/graphql", json={"query": MODEL_PAGE, "variables": {"slug": slug}}
    )
    assert response.status_code == 200
    body = response.json()
    assert "errors" not in body
    expected = ok(await execute_real(MODEL_PAGE, slug=slug))
    assert body["data"] == expected
    assert [c["energyPerTokenJoules"] for c in body["data"]["model"]["configurations"]] == [
        row["energy_per_token_joules"] for row in rows_of(REPEATED_MODEL)
    ]


async def test_default_model_page_over_http(real_client, execute_real) -> None:
    """Without variables the model page shows its default model, as GraphiQL's first tab does."""
    default = re.search(r'\$slug: String! = "([^"]+)"', MODEL_PAGE)
    assert default is not None
    slug = default.group(1)
    assert slug in ENTRY_BY_SLUG
    response = await real_client.post("/graphql", json={"query": MODEL_PAGE})
    assert response.status_code == 200
    body = response.json()
    assert "errors" not in body
    assert body["data"] == ok(await execute_real(MODEL_PAGE, slug=slug))
    assert body["data"]["model"]["modelId"] == ENTRY_BY_SLUG[slug]["model_id"]

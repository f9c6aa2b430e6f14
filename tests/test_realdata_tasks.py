"""Real data, every task: the API's answers for all seven tasks of the 2026-02-16 snapshot.

LLM and MLLM rows (lm-arena-chat, gpqa, sourcegraph-fim, image-chat, video-chat) are served as
`Configuration`; diffusion rows as `ImageConfiguration` (text-to-image) and `VideoConfiguration`
(text-to-video). Expected values come from the upstream files and the seed index read here with
`json`, never from the project's own db/ingest code, so the two computations are independent.
"""

from __future__ import annotations

import functools
import json
import math
import re
import statistics
from collections import Counter
from typing import Any

import pytest

from tests.conftest import LLM_ROW_KEYS, SEED, SNAPSHOT

pytestmark = [pytest.mark.anyio, pytest.mark.realdata]

# Thermal design power per GPU, in watts (NVIDIA datasheets).
TDP = {"H100": 700.0, "B200": 1000.0}
TOTAL = 1858  # rows of all seven task files (../shared/data/README.md)

SEED_DOC: dict[str, Any] = json.loads(SEED.read_text())
INDEX: dict[str, Any] = json.loads((SNAPSHOT / "index.json").read_text())
TASKS: list[str] = INDEX["tasks"]
ARCHITECTURE: dict[str, str] = {
    task: arch for arch, tasks in INDEX["architectures"].items() for task in tasks
}
DOCS: dict[str, dict[str, Any]] = {
    task: json.loads((SNAPSHOT / f"tasks/{task}.json").read_text()) for task in TASKS
}
ROWS: dict[str, list[dict[str, Any]]] = {task: DOCS[task]["configurations"] for task in TASKS}
LLM_TASKS = [task for task in TASKS if ARCHITECTURE[task] != "diffusion"]
DIFFUSION_TASKS = [task for task in TASKS if ARCHITECTURE[task] == "diffusion"]
SEED_BY_MODEL_ID: dict[str, dict[str, Any]] = {m["model_id"]: m for m in SEED_DOC["models"]}
# The tasks whose task file names each model, in index.json's task order.
TASKS_OF: dict[str, list[str]] = {
    model_id: [task for task in TASKS if any(r["model_id"] == model_id for r in ROWS[task])]
    for model_id in INDEX["models"]
}

# Fields of a row served unchanged (upstream snake_case names), per row shape.
FACTS = ("model_id", "nickname", "total_params_billions", "activated_params_billions")
LLM_KEYS = LLM_ROW_KEYS
DIFFUSION_KEYS = (
    "gpu_model",
    "num_gpus",
    "avg_power_watts",
    "batch_size",
    "batch_latency_s",
    "inference_steps",
    "ulysses_degree",
    "ring_degree",
)
OUTPUT_KEYS = {
    "text-to-image": (
        "energy_per_image_joules",
        "throughput_images_per_sec",
        "image_height",
        "image_width",
    ),
    "text-to-video": (
        "energy_per_video_joules",
        "throughput_videos_per_sec",
        "video_height",
        "video_width",
        "fps",
        "num_frames",
    ),
}
TYPENAME = {"text-to-image": "ImageConfiguration", "text-to-video": "VideoConfiguration"}
SPREAD = "{ minimum median maximum }"
POWER = f"gpuModel configurations totalWatts {SPREAD} perGpuWatts {SPREAD} fractionOfTdp {SPREAD}"
LINKS = (
    "modelId model { modelId slug } task { name displayName architecture } "
    "upstream { taskFile taskRow modelFile modelRow }"
)


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


LLM_FIELDS = (
    " ".join(camel(k) for k in LLM_KEYS)
    + " powerPerGpuWatts fractionOfTdp parallelNotes outputLengthDistribution { bins counts } "
    + LINKS
)
# Lighter selections for the tests that read many rows: the numbers and the upstream position
# (the full selections are compared row by row for one model of every task).
LLM_NUMBERS = " ".join(camel(k) for k in LLM_KEYS) + " task { name } upstream { taskRow modelRow }"
DIFFUSION_NUMBERS = (
    "__typename "
    + " ".join(camel(k) for k in DIFFUSION_KEYS)
    + " upstream { taskFile taskRow modelRow }"
    + "".join(
        f" ... on {TYPENAME[task]} {{ {' '.join(camel(k) for k in OUTPUT_KEYS[task])} }}"
        for task in DIFFUSION_TASKS
    )
)
DIFFUSION_FIELDS = (
    "__typename "
    + " ".join(camel(k) for k in DIFFUSION_KEYS)
    + " powerPerGpuWatts fractionOfTdp "
    + LINKS
    + "".join(
        f" ... on {TYPENAME[task]} {{ {' '.join(camel(k) for k in OUTPUT_KEYS[task])} }}"
        for task in DIFFUSION_TASKS
    )
)


def slugify(nickname: str) -> str:
    """The slug of a model the seed does not list: its nickname, lower-cased, dash-separated."""
    return re.sub(r"[^a-z0-9]+", "-", nickname.lower()).strip("-")


def slug_of(model_id: str) -> str:
    entry = SEED_BY_MODEL_ID.get(model_id)
    return entry["slug"] if entry else slugify(INDEX["models"][model_id]["nickname"])


def task_of(task_file: str) -> str:
    """The task of a task file's path (`tasks/{task}.json`)."""
    assert task_file.startswith("tasks/") and task_file.endswith(".json"), task_file
    return task_file.removeprefix("tasks/").removesuffix(".json")


def model_file(model_id: str, task: str) -> str:
    return f"models/{model_id.replace('/', '__')}__{task}.json"


@functools.cache
def model_doc(model_id: str, task: str) -> dict[str, Any]:
    return json.loads((SNAPSHOT / model_file(model_id, task)).read_text())


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "errors" not in result, result["errors"]
    return result


def spread(values: list[float]) -> dict[str, float]:
    return {"minimum": min(values), "median": statistics.median(values), "maximum": max(values)}


def own_rows(model_id: str, task: str) -> list[tuple[int, dict[str, Any]]]:
    """A model's rows of a task file, with their positions in it, in file order."""
    return [(i, row) for i, row in enumerate(ROWS[task]) if row["model_id"] == model_id]


def expected_rows(model_id: str, task: str) -> list[dict[str, Any]]:
    """A model's configurations on a task, as served, straight from the task and model files."""
    details = model_doc(model_id, task)["configurations"]
    own = own_rows(model_id, task)
    assert len(own) == len(details)
    return [
        expected_node(task, row, task_row, model_row, detail)
        for model_row, ((task_row, row), detail) in enumerate(zip(own, details, strict=True))
    ]


def expected_node(
    task: str, row: dict[str, Any], task_row: int, model_row: int, detail: dict[str, Any]
) -> dict[str, Any]:
    per_gpu = row["avg_power_watts"] / row["num_gpus"]
    common = {
        "powerPerGpuWatts": per_gpu,
        "fractionOfTdp": per_gpu / TDP[row["gpu_model"]],
        "modelId": row["model_id"],
        "model": {"modelId": row["model_id"], "slug": slug_of(row["model_id"])},
        "task": {
            "name": task,
            "displayName": DOCS[task]["task_display_name"],
            "architecture": ARCHITECTURE[task],
        },
        "upstream": {
            "taskFile": f"tasks/{task}.json",
            "taskRow": task_row,
            "modelFile": model_file(row["model_id"], task),
            "modelRow": model_row,
        },
    }
    if task in DIFFUSION_TASKS:
        keys = DIFFUSION_KEYS + OUTPUT_KEYS[task]
        return {"__typename": TYPENAME[task], **{camel(k): row[k] for k in keys}, **common}
    return {
        **{camel(k): row[k] for k in LLM_KEYS},
        **common,
        "parallelNotes": detail["parallelization"]["notes"],
        "outputLengthDistribution": detail["output_length_distribution"],
    }


def numbers(task: str, node: dict[str, Any]) -> dict[str, Any]:
    """The part of an expected node a LLM_NUMBERS or DIFFUSION_NUMBERS selection asks for."""
    upstream = {k: v for k, v in node["upstream"].items() if k != "modelFile"}
    if task in DIFFUSION_TASKS:
        keys = ("__typename", *(camel(k) for k in DIFFUSION_KEYS + OUTPUT_KEYS[task]))
        return {**{k: node[k] for k in keys}, "upstream": upstream}
    del upstream["taskFile"]
    keys = tuple(camel(k) for k in LLM_KEYS)
    return {**{k: node[k] for k in keys}, "task": {"name": task}, "upstream": upstream}


def pick(task: str) -> str:
    """The model of a task checked row by row: of those measured on most tasks, the first."""
    named = list(dict.fromkeys(row["model_id"] for row in ROWS[task]))
    return max(named, key=lambda model_id: len(TASKS_OF[model_id]))


def test_data_files_agree_with_themselves() -> None:
    """Preconditions of the expectations below, checked on the files alone."""
    assert sorted(TASKS) == sorted(DOCS) and len(TASKS) == 7
    assert sorted(ARCHITECTURE) == sorted(TASKS)
    assert DIFFUSION_TASKS == sorted(OUTPUT_KEYS)
    assert sum(len(rows) for rows in ROWS.values()) == TOTAL
    assert len(ROWS["lm-arena-chat"]) == 328
    assert len(INDEX["models"]) == 46
    assert {m for m, tasks in TASKS_OF.items() if tasks} == set(INDEX["models"])
    assert len({slug_of(m) for m in INDEX["models"]}) == 46
    assert set(SEED_BY_MODEL_ID) <= set(INDEX["models"])
    for task in TASKS:
        assert DOCS[task]["task"] == task
        assert {row["gpu_model"] for row in ROWS[task]} <= set(TDP)
        # Every field of every row is one the tests below compare (or a model fact).
        keys = LLM_KEYS if task in LLM_TASKS else DIFFUSION_KEYS + OUTPUT_KEYS[task]
        extra = ("architecture",) if task in LLM_TASKS else ()
        for row in ROWS[task]:
            assert set(row) == {*keys, *FACTS, "weight_precision", *extra}, task
        # The model files hold the same rows, in the same order, with parallelism nested.
        for model_id in dict.fromkeys(row["model_id"] for row in ROWS[task]):
            doc = model_doc(model_id, task)
            assert (doc["model_id"], doc["task"]) == (model_id, task)
            assert ("output_length_distribution" in doc) == (task in LLM_TASKS)
            own = own_rows(model_id, task)
            assert len(own) == len(doc["configurations"])
            for (_, row), detail in zip(own, doc["configurations"], strict=True):
                flat = {k: v for k, v in detail.items() if k != "output_length_distribution"}
                flat.update(flat.pop("parallelization"))
                flat.pop("notes", None)
                assert flat == {k: row[k] for k in flat}, (model_id, task)


# --- Totals ------------------------------------------------------------------------------------


def alias(task: str) -> str:
    return task.replace("-", "_")


async def test_total_count_of_every_task(execute_real) -> None:
    parts = [
        f'{alias(task)}: configurations(filter: {{task: "{task}"}}, first: 0) {{ totalCount }}'
        for task in LLM_TASKS
    ] + [
        f'{alias(task)}: diffusionConfigurations(filter: {{task: "{task}"}}, first: 0) '
        "{ totalCount }"
        for task in DIFFUSION_TASKS
    ]
    # A task of the other kind matches nothing on a connection.
    parts += [
        f'llm_as_diffusion: diffusionConfigurations(filter: {{task: "{LLM_TASKS[0]}"}}) '
        "{ totalCount nodes { id } }",
        f'diffusion_as_llm: configurations(filter: {{task: "{DIFFUSION_TASKS[0]}"}}) '
        "{ totalCount nodes { id } }",
        "llm: configurations(first: 0) { totalCount }",
        "diffusion: diffusionConfigurations(first: 0) { totalCount }",
    ]
    data = ok(await execute_real("{ " + "\n".join(parts) + " }"))
    counts = {task: data[alias(task)]["totalCount"] for task in TASKS}
    assert counts == {task: len(ROWS[task]) for task in TASKS}
    assert sum(counts.values()) == TOTAL
    assert data["llm"]["totalCount"] == sum(counts[task] for task in LLM_TASKS)
    assert data["diffusion"]["totalCount"] == sum(counts[task] for task in DIFFUSION_TASKS)
    assert data["llm"]["totalCount"] + data["diffusion"]["totalCount"] == TOTAL
    for empty in ("llm_as_diffusion", "diffusion_as_llm"):
        assert data[empty] == {"totalCount": 0, "nodes": []}


# --- One model of every task, field by field ---------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
async def test_a_model_of_every_task(execute_real, task: str) -> None:
    model_id = pick(task)
    expected = expected_rows(model_id, task)
    assert expected
    if task in LLM_TASKS:
        query = f"""query($slug: String!, $task: String) {{
          model(slug: $slug) {{ modelId served: configurations(task: $task) {{ {LLM_FIELDS} }} }}
          root: configurations(filter: {{model: $slug, task: $task}}, first: 500) {{
            totalCount nodes {{ {LLM_FIELDS} }}
          }}
        }}"""
    else:
        query = f"""query($slug: String!, $task: String) {{
          model(slug: $slug) {{
            modelId served: diffusionConfigurations(task: $task) {{ {DIFFUSION_FIELDS} }}
          }}
          root: diffusionConfigurations(filter: {{model: $slug, task: $task}}, first: 500) {{
            totalCount nodes {{ {DIFFUSION_FIELDS} }}
          }}
        }}"""
    data = ok(await execute_real(query, slug=slug_of(model_id), task=task))
    assert data["model"]["modelId"] == model_id
    # The model's rows, in upstream order, every number exact.
    assert data["model"]["served"] == expected
    assert data["root"]["totalCount"] == len(expected)
    assert data["root"]["nodes"] == expected


GPQA_MODEL = pick("gpqa")  # measured on gpqa and lm-arena-chat
LLM_FILTERS: list[dict[str, Any]] = [
    # No task: the rows of every LLM and MLLM task.
    {"gpu": "B200", "numGpus": 1},
    {"gpu": "H100", "numGpus": 2, "maxNumSeqsAtLeast": 128},
    {"task": "video-chat", "gpu": "B200"},
    {"task": "gpqa", "maxNumSeqsAtMost": 64, "maxMedianItlMs": 30.0},
    {"model": slug_of(GPQA_MODEL), "numGpus": 1},
    {"modelId": GPQA_MODEL, "task": "gpqa"},
    {"task": "text-to-video"},
]


def llm_matching(given: dict[str, Any]) -> list[tuple[str, int]]:
    checks = {
        "task": lambda task, row, v: task == v,
        "gpu": lambda task, row, v: row["gpu_model"] == v,
        "numGpus": lambda task, row, v: row["num_gpus"] == v,
        "maxNumSeqsAtLeast": lambda task, row, v: row["max_num_seqs"] >= v,
        "maxNumSeqsAtMost": lambda task, row, v: row["max_num_seqs"] <= v,
        "maxMedianItlMs": lambda task, row, v: row["median_itl_ms"] <= v,
        "modelId": lambda task, row, v: row["model_id"] == v,
        "model": lambda task, row, v: slug_of(row["model_id"]) == v,
    }
    return [
        (task, i)
        for task in LLM_TASKS
        for i, row in enumerate(ROWS[task])
        if all(checks[k](task, row, v) for k, v in given.items())
    ]


async def test_llm_filters_across_tasks(execute_real) -> None:
    query = f"""query($filter: ConfigurationFilterInput) {{
      configurations(filter: $filter, first: 500) {{
        totalCount pageInfo {{ hasNextPage }} nodes {{ {LLM_NUMBERS} }}
      }}
    }}"""
    spans = 0
    for given in LLM_FILTERS:
        expected = llm_matching(given)
        assert len(expected) <= 500, given
        page = ok(await execute_real(query, filter=given))["configurations"]
        assert page["totalCount"] == len(expected), given
        assert page["pageInfo"]["hasNextPage"] is False, given
        got = [(node["task"]["name"], node["upstream"]["taskRow"]) for node in page["nodes"]]
        # The same rows; in upstream order within each task.
        assert Counter(got) == Counter(expected), given
        for task in LLM_TASKS:
            assert [i for t, i in got if t == task] == [i for t, i in expected if t == task]
        for node, (task, i) in zip(page["nodes"], got, strict=True):
            row = ROWS[task][i]
            assert {k: node[camel(k)] for k in LLM_KEYS} == {k: row[k] for k in LLM_KEYS}
        spans += len({task for task, _ in expected}) > 1
    assert spans >= 3
    assert llm_matching(LLM_FILTERS[-1]) == []


# --- Models and their tasks --------------------------------------------------------------------


def expected_model(model_id: str) -> dict[str, Any]:
    facts = INDEX["models"][model_id]
    entry = SEED_BY_MODEL_ID.get(model_id)
    listed = {
        "slug": entry["slug"] if entry else slugify(facts["nickname"]),
        "name": entry["name"] if entry else facts["nickname"],
        "paramsB": entry["params_b"] if entry else facts["total_params_billions"],
        "activeParamsB": entry["active_params_b"] if entry else facts["activated_params_billions"],
        "gpus": entry["gpus"] if entry else None,
        "url": entry["url"] if entry else None,
        "page": entry["page"] if entry else None,
        "inIndex": entry is not None,
    }
    return {
        **listed,
        "modelId": model_id,
        "architecture": facts.get("architecture"),
        "weightPrecision": facts["weight_precision"],
        "tasks": [
            {
                "task": task,
                "file": model_file(model_id, task),
                "outputLengthDistribution": model_doc(model_id, task).get(
                    "output_length_distribution"
                ),
            }
            for task in sorted(TASKS_OF[model_id])
        ],
    }


async def test_every_model_once_with_its_tasks(execute_real) -> None:
    data = ok(
        await execute_real(
            """{ models {
              slug name modelId paramsB activeParamsB architecture weightPrecision
              gpus url page inIndex
              tasks { task file outputLengthDistribution { bins counts } }
            } }"""
        )
    )
    models = data["models"]
    assert len(models) == len(INDEX["models"]) == 46
    assert Counter(m["modelId"] for m in models) == Counter(set(INDEX["models"]))
    assert [m["slug"] for m in models] == sorted(m["slug"] for m in models)
    for model in models:
        # Tasks in any order, but each once.
        model["tasks"] = sorted(model["tasks"], key=lambda t: t["task"])
        assert model == expected_model(model["modelId"]), model["modelId"]
        for entry in model["tasks"]:
            assert (SNAPSHOT / entry["file"]).is_file()
    # Diffusion models have no output-length histogram; every LLM/MLLM model has one per task.
    histograms = Counter(
        (t["task"] in DIFFUSION_TASKS, t["outputLengthDistribution"] is None)
        for m in models
        for t in m["tasks"]
    )
    assert set(histograms) == {(True, True), (False, False)}
    assert sum(m["inIndex"] for m in models) == len(SEED_DOC["models"])


# --- Every LLM task of a model at once (task: null) ----------------------------------------------


async def test_configurations_of_every_task(execute_real) -> None:
    """`configurations(task: null)` and `diffusionConfigurations` serve every row of a model."""
    data = ok(
        await execute_real(
            f"""{{ models {{
              modelId
              llm: configurations(task: null) {{ {LLM_NUMBERS} }}
              diffusion: diffusionConfigurations {{ {DIFFUSION_NUMBERS} }}
            }} }}"""
        )
    )
    assert len(data["models"]) == 46
    served = 0
    for model in data["models"]:
        model_id = model["modelId"]
        for kind, tasks in (("llm", LLM_TASKS), ("diffusion", DIFFUSION_TASKS)):
            nodes = model[kind]
            served += len(nodes)
            # Each task's rows in upstream order, the tasks one after another.
            names = [
                n["task"]["name"] if kind == "llm" else task_of(n["upstream"]["taskFile"])
                for n in nodes
            ]
            order = list(dict.fromkeys(names))
            assert sorted(order) == [t for t in sorted(tasks) if t in TASKS_OF[model_id]]
            assert nodes == [
                numbers(task, node) for task in order for node in expected_rows(model_id, task)
            ], model_id
    assert served == TOTAL


def _multi_task() -> list[str]:
    """The first model of each combination of two or more LLM tasks (gpqa + lm-arena-chat, ...)."""
    chosen: dict[tuple[str, ...], str] = {}
    for model_id, tasks in TASKS_OF.items():
        llm = tuple(task for task in tasks if task in LLM_TASKS)
        if len(llm) > 1:
            chosen.setdefault(llm, model_id)
    return list(chosen.values())


MULTI_TASK = _multi_task()


@pytest.mark.parametrize("model_id", MULTI_TASK)
async def test_model_page_of_every_task(execute_real, model_id: str) -> None:
    tasks = TASKS_OF[model_id]
    data = ok(
        await execute_real(
            f"""query($slug: String!) {{ model(slug: $slug) {{
              configurations(task: null) {{ {LLM_FIELDS} }}
              default: configurations {{ task {{ name }} }}
              curves(task: null) {{ task points {{ configurationId }} }}
              power(task: null) {{ {POWER} }}
            }} }}""",
            slug=slug_of(model_id),
        )
    )
    model = data["model"]
    nodes = model["configurations"]
    assert {n["task"]["name"] for n in nodes} == set(tasks)
    for task in tasks:
        assert [n for n in nodes if n["task"]["name"] == task] == expected_rows(model_id, task)
    assert len(nodes) == sum(len(own_rows(model_id, task)) for task in tasks)
    # Without `task`, lm-arena-chat only.
    assert model["default"] == [
        {"task": {"name": "lm-arena-chat"}} for _ in own_rows(model_id, "lm-arena-chat")
    ]
    # Curves of every task: each row a point of its task's series, once.
    points = Counter(
        (series["task"], point["configurationId"])
        for series in model["curves"]
        for point in series["points"]
    )
    assert sum(points.values()) == len(nodes) == len(points)
    assert {task for task, _ in points} == set(tasks)
    # Power over the rows of every task.
    assert model["power"] == expected_power(
        [row for t in tasks for _, row in own_rows(model_id, t)]
    )


# --- Ordering and paging diffusion configurations --------------------------------------------

# Order field -> upstream key, per task.
ORDER_KEYS = {
    "ENERGY_PER_OUTPUT_JOULES": {
        "text-to-image": "energy_per_image_joules",
        "text-to-video": "energy_per_video_joules",
    },
    "HEIGHT": {"text-to-image": "image_height", "text-to-video": "video_height"},
    "THROUGHPUT_OUTPUTS_PER_SEC": {
        "text-to-image": "throughput_images_per_sec",
        "text-to-video": "throughput_videos_per_sec",
    },
    "BATCH_LATENCY_S": {task: "batch_latency_s" for task in DIFFUSION_TASKS},
}
DIFFUSION_ORDERINGS = [
    ("text-to-video", "ENERGY_PER_OUTPUT_JOULES", "DESC"),
    # Every image is 1024 px high: the order is all ties, broken by id.
    ("text-to-image", "HEIGHT", "ASC"),
    ("text-to-image", "THROUGHPUT_OUTPUTS_PER_SEC", "DESC"),
    ("text-to-video", "BATCH_LATENCY_S", "ASC"),
]


@pytest.mark.parametrize(("task", "field", "direction"), DIFFUSION_ORDERINGS)
async def test_diffusion_ordering_pages_to_the_end(
    execute_real, task: str, field: str, direction: str
) -> None:
    query = f"""query($filter: DiffusionConfigurationFilterInput,
                      $order: DiffusionConfigurationOrder, $after: String) {{
      diffusionConfigurations(filter: $filter, orderBy: $order, first: 100, after: $after) {{
        totalCount pageInfo {{ hasNextPage endCursor }}
        edges {{ cursor node {{ {DIFFUSION_NUMBERS} }} }}
      }}
    }}"""
    rows = ROWS[task]
    nodes: list[dict[str, Any]] = []
    after = None
    pages = 0
    while True:
        page = ok(
            await execute_real(
                query,
                filter={"task": task},
                order={"field": field, "direction": direction},
                after=after,
            )
        )["diffusionConfigurations"]
        pages += 1
        assert page["totalCount"] == len(rows)
        edges = page["edges"]
        assert page["pageInfo"]["endCursor"] == edges[-1]["cursor"]
        nodes += [edge["node"] for edge in edges]
        if not page["pageInfo"]["hasNextPage"]:
            break
        assert len(edges) == 100
        after = page["pageInfo"]["endCursor"]
        assert pages <= len(rows), "paging does not end"
    assert pages == math.ceil(len(rows) / 100)

    key = ORDER_KEYS[field][task]
    descending = direction == "DESC"
    assert [node[camel(key)] for node in nodes] == sorted(
        (row[key] for row in rows), reverse=descending
    )
    # Ties broken by id (upstream order), in the direction asked for; every row exactly once.
    positions = sorted(range(len(rows)), key=lambda i: (rows[i][key], i), reverse=descending)
    assert [node["upstream"]["taskRow"] for node in nodes] == positions
    expected = {
        node["upstream"]["taskRow"]: node
        for model_id in dict.fromkeys(row["model_id"] for row in rows)
        for node in expected_rows(model_id, task)
    }
    assert nodes == [numbers(task, expected[i]) for i in positions]


def _slug_of_first(task: str) -> str:
    return slug_of(ROWS[task][0]["model_id"])


DIFFUSION_FILTERS: list[dict[str, Any]] = [
    {"task": "text-to-image", "gpu": "B200"},
    {"task": "text-to-video", "numGpus": 4},
    {"gpu": "H100", "numGpus": 8},
    {"model": _slug_of_first("text-to-video"), "gpu": "H100"},
    {"modelId": ROWS["text-to-image"][-1]["model_id"], "numGpus": 1},
    {"model": _slug_of_first("text-to-image"), "task": "text-to-video"},
    {"task": "lm-arena-chat"},
]


def diffusion_matching(given: dict[str, Any]) -> list[tuple[str, int]]:
    checks = {
        "task": lambda task, row, v: task == v,
        "gpu": lambda task, row, v: row["gpu_model"] == v,
        "numGpus": lambda task, row, v: row["num_gpus"] == v,
        "modelId": lambda task, row, v: row["model_id"] == v,
        "model": lambda task, row, v: slug_of(row["model_id"]) == v,
    }
    return [
        (task, i)
        for task in DIFFUSION_TASKS
        for i, row in enumerate(ROWS[task])
        if all(checks[k](task, row, v) for k, v in given.items())
    ]


async def test_diffusion_filters(execute_real) -> None:
    query = """query($filter: DiffusionConfigurationFilterInput) {
      diffusionConfigurations(filter: $filter, first: 500) {
        totalCount pageInfo { hasNextPage }
        nodes { __typename gpuModel numGpus modelId upstream { taskFile taskRow } }
      }
    }"""
    for given in DIFFUSION_FILTERS:
        expected = diffusion_matching(given)
        assert len(expected) <= 500, given
        page = ok(await execute_real(query, filter=given))["diffusionConfigurations"]
        assert page["totalCount"] == len(expected), given
        assert page["pageInfo"]["hasNextPage"] is False, given
        # Upstream order within a task; compared as a multiset across tasks.
        got = [
            (
                task_of(node["upstream"]["taskFile"]),
                node["upstream"]["taskRow"],
            )
            for node in page["nodes"]
        ]
        assert Counter(got) == Counter(expected), given
        for task in DIFFUSION_TASKS:
            assert [i for t, i in got if t == task] == [i for t, i in expected if t == task]
        for node in page["nodes"]:
            task = task_of(node["upstream"]["taskFile"])
            row = ROWS[task][node["upstream"]["taskRow"]]
            assert node["__typename"] == TYPENAME[task]
            assert (node["gpuModel"], node["numGpus"], node["modelId"]) == (
                row["gpu_model"],
                row["num_gpus"],
                row["model_id"],
            )
    assert diffusion_matching(DIFFUSION_FILTERS[-1]) == []
    assert diffusion_matching(DIFFUSION_FILTERS[-2]) == []
    # A model the release does not have is an error, not an empty page.
    assert await execute_real(query, filter={"model": "no-such-model"}) == {
        "errors": [
            {
                "message": "unknown model slug 'no-such-model' in `filter.model`; "
                "`models` lists them",
                "code": "BAD_USER_INPUT",
            }
        ]
    }


# --- Measured power of diffusion models ---------------------------------------------------------


def expected_power(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    power = []
    for gpu in sorted({row["gpu_model"] for row in rows}):
        mine = [row for row in rows if row["gpu_model"] == gpu]
        per_gpu = [row["avg_power_watts"] / row["num_gpus"] for row in mine]
        power.append(
            {
                "gpuModel": gpu,
                "configurations": len(mine),
                "totalWatts": spread([row["avg_power_watts"] for row in mine]),
                "perGpuWatts": spread(per_gpu),
                # Each value divided by the TDP before the spread.
                "fractionOfTdp": spread([w / TDP[gpu] for w in per_gpu]),
            }
        )
    return power


async def test_power_of_every_model_on_every_task(execute_real) -> None:
    parts = " ".join(f'{alias(task)}: power(task: "{task}") {{ {POWER} }}' for task in TASKS)
    data = ok(
        await execute_real(
            f"""{{ models {{
              modelId {parts}
              default: power {{ {POWER} }}
              all: power(task: null) {{ {POWER} }}
            }} }}"""
        )
    )
    diffusion_models = 0
    for model in data["models"]:
        model_id = model["modelId"]
        for task in TASKS:
            rows = [row for _, row in own_rows(model_id, task)]
            assert model[alias(task)] == expected_power(rows), (model_id, task)
        assert model["default"] == model["lm_arena_chat"]
        every = [row for task in TASKS for _, row in own_rows(model_id, task)]
        assert model["all"] == expected_power(every), model_id
        diffusion_models += any(task in DIFFUSION_TASKS for task in TASKS_OF[model_id])
    assert diffusion_models == len(
        {row["model_id"] for task in DIFFUSION_TASKS for row in ROWS[task]}
    )


async def test_power_of_a_text_to_image_model(execute_real) -> None:
    """`Model.power(task: "text-to-image")`, as the brief states it, for one diffusion model."""
    model_id = pick("text-to-image")
    data = ok(
        await execute_real(
            f"""query($slug: String!) {{ model(slug: $slug) {{
              power(task: "text-to-image") {{ {POWER} gpu {{ name tdpWatts }} }}
            }} }}""",
            slug=slug_of(model_id),
        )
    )
    power = data["model"]["power"]
    assert [p.pop("gpu") for p in power] == [
        {"name": p["gpuModel"], "tdpWatts": TDP[p["gpuModel"]]} for p in power
    ]
    assert power == expected_power([row for _, row in own_rows(model_id, "text-to-image")])
    assert len(power) == 2


# --- Over HTTP ----------------------------------------------------------------------------------


async def test_diffusion_over_http(real_client, execute_real) -> None:
    query = f"""query($task: String) {{
      diffusionConfigurations(filter: {{task: $task}}, first: 5) {{
        totalCount nodes {{ {DIFFUSION_FIELDS} }}
      }}
    }}"""
    variables = {"task": "text-to-video"}
    response = await real_client.post("/graphql", json={"query": query, "variables": variables})
    assert response.status_code == 200
    body = response.json()
    assert "errors" not in body
    assert body["data"] == ok(await execute_real(query, **variables))
    page = body["data"]["diffusionConfigurations"]
    assert page["totalCount"] == len(ROWS["text-to-video"])
    assert [node["energyPerVideoJoules"] for node in page["nodes"]] == [
        row["energy_per_video_joules"] for row in ROWS["text-to-video"][:5]
    ]

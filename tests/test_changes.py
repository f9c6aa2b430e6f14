"""What changed between two releases: `analysis.changes` on hand-made documents, and the
`changes` query on the two shared snapshots against a direct comparison of their files.

The direct comparison below reads the files with `json` and pairs rows by its own rule
(model, GPU, GPU count and the run's settings, then order within the file); it shares no code
with `analysis.changes`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from analysis.changes import (
    Changes,
    DocumentChange,
    FieldChange,
    RowChange,
    RowKey,
    TaskChanges,
    diff_releases,
    diff_task,
)
from db.database import create_engine
from db.kinds import KEY_FIELDS
from graph.schema.types.timeline import sentences
from graph.settings import Settings
from tests.conftest import BACKENDS, EARLIER, SEED, SNAPSHOT, Execute, make_execute
from tests.test_releases import stored_releases

pytestmark = pytest.mark.anyio

Row = dict[str, Any]
TASK = "lm-arena-chat"


# --- Hand-made rows -------------------------------------------------------------------------


def llm(model: str = "acme/A", gpu: str = "H100", seqs: int = 8, **fields: Any) -> Row:
    return {
        "model_id": model,
        "gpu_model": gpu,
        "num_gpus": 1,
        "max_num_seqs": seqs,
        "tensor_parallel": 1,
        "energy_per_token_joules": 0.5,
        **fields,
    }


def settings_of(row: Row) -> tuple[tuple[str, Any], ...]:
    return (
        ("model_id", row["model_id"]),
        ("gpu_model", row["gpu_model"]),
        ("num_gpus", row["num_gpus"]),
        ("max_num_seqs", row["max_num_seqs"]),
    )


def key(row: Row, occurrence: int = 0, repeated: bool = False, task: str = "t") -> RowKey:
    return RowKey(task, settings_of(row), occurrence, repeated)


def test_the_fields_that_identify_a_run_in_the_order_a_key_names_them() -> None:
    """Every configuration's id is made of these, in this order (db.fields declares them): the
    keys the direct comparison below pairs rows by."""
    assert KEY_FIELDS == tuple(dict.fromkeys(LLM_KEY + DIFFUSION_KEY))


def test_identical_rows_are_unchanged() -> None:
    rows = [llm(seqs=8), llm(seqs=16), llm(gpu="B200")]
    assert diff_task("t", rows, [dict(r) for r in rows], KEY_FIELDS) == TaskChanges(
        "t", unchanged=3
    )


def test_added_row() -> None:
    a, b = llm(seqs=8), llm(seqs=16)
    assert diff_task("t", [a], [a, b], KEY_FIELDS) == TaskChanges("t", added=[key(b)], unchanged=1)


def test_removed_row() -> None:
    a, b = llm(seqs=8), llm(seqs=16)
    assert diff_task("t", [a, b], [b], KEY_FIELDS) == TaskChanges(
        "t", removed=[key(a)], unchanged=1
    )


def test_changed_field_with_old_and_new_values() -> None:
    old = [llm(seqs=8), llm(seqs=16, energy_per_token_joules=0.25)]
    new = [llm(seqs=8), llm(seqs=16, energy_per_token_joules=0.3)]
    assert diff_task("t", old, new, KEY_FIELDS) == TaskChanges(
        "t",
        changed=[RowChange(key(old[1]), 1, 1, [FieldChange("energy_per_token_joules", 0.25, 0.3)])],
        unchanged=1,
    )


def test_changes_follow_the_row_wherever_it_moved() -> None:
    """Rows are paired by their settings, not by position: a reordered file changes nothing."""
    a, b, c = llm(seqs=8), llm(seqs=16), llm(gpu="B200", seqs=8)
    moved = dict(b, energy_per_token_joules=0.1)
    assert diff_task("t", [a, b, c], [c, moved, a], KEY_FIELDS) == TaskChanges(
        "t",
        changed=[RowChange(key(b), 1, 1, [FieldChange("energy_per_token_joules", 0.5, 0.1)])],
        unchanged=2,
    )
    assert diff_task("t", [a, b, c], [c, a, moved], KEY_FIELDS) == TaskChanges(
        "t",
        changed=[RowChange(key(b), 1, 2, [FieldChange("energy_per_token_joules", 0.5, 0.1)])],
        unchanged=2,
    )


def test_field_leaving_and_joining_the_row_shape_is_reported_once() -> None:
    old = [llm(seqs=s, max_num_batched_tokens=2048) for s in (8, 16, 32)]
    new = [llm(seqs=s, avg_output_len=100.0) for s in (8, 16, 32)]
    assert diff_task("t", old, new, KEY_FIELDS) == TaskChanges(
        "t", fields_added=["avg_output_len"], fields_removed=["max_num_batched_tokens"], unchanged=3
    )


def test_shape_change_does_not_hide_a_change_in_a_common_field() -> None:
    old = [llm(seqs=8, max_num_batched_tokens=2048)]
    new = [llm(seqs=8, energy_per_token_joules=0.7)]
    assert diff_task("t", old, new, KEY_FIELDS) == TaskChanges(
        "t",
        fields_removed=["max_num_batched_tokens"],
        changed=[RowChange(key(old[0]), 0, 0, [FieldChange("energy_per_token_joules", 0.5, 0.7)])],
    )


def test_repeated_runs_pair_in_file_order_and_are_flagged() -> None:
    """Two rows sharing every identifying setting: first with first, second with second."""
    first, second = llm(energy_per_token_joules=0.1), llm(energy_per_token_joules=0.2)
    other = llm(seqs=64)
    old = [first, other, second]
    new = [
        dict(other),
        dict(first, energy_per_token_joules=0.11),
        dict(second, energy_per_token_joules=0.22),
    ]
    assert diff_task("t", old, new, KEY_FIELDS) == TaskChanges(
        "t",
        changed=[
            RowChange(
                key(first, 0, True), 0, 1, [FieldChange("energy_per_token_joules", 0.1, 0.11)]
            ),
            RowChange(
                key(first, 1, True), 2, 2, [FieldChange("energy_per_token_joules", 0.2, 0.22)]
            ),
        ],
        unchanged=1,
    )


def test_repeated_runs_that_did_not_change_are_unchanged() -> None:
    first, second = llm(energy_per_token_joules=0.1), llm(energy_per_token_joules=0.2)
    assert diff_task("t", [first, second], [dict(first), dict(second)], KEY_FIELDS) == TaskChanges(
        "t", unchanged=2
    )


def test_a_shrinking_group_reports_the_extra_rows_removed() -> None:
    runs = [llm(energy_per_token_joules=e) for e in (0.1, 0.2, 0.3)]
    kept = dict(runs[0], energy_per_token_joules=0.15)
    assert diff_task("t", runs, [kept], KEY_FIELDS) == TaskChanges(
        "t",
        removed=[key(runs[0], 1, True), key(runs[0], 2, True)],
        # The pair is flagged: its group was repeated in the earlier release.
        changed=[
            RowChange(
                key(runs[0], 0, True), 0, 0, [FieldChange("energy_per_token_joules", 0.1, 0.15)]
            )
        ],
    )


def test_a_growing_group_reports_the_extra_rows_added() -> None:
    run = llm(energy_per_token_joules=0.1)
    again = llm(energy_per_token_joules=0.2)
    assert diff_task("t", [run], [dict(run), again], KEY_FIELDS) == TaskChanges(
        "t", added=[key(run, 1, True)], unchanged=1
    )


def test_parallelism_change_still_pairs_and_is_reported_as_changed() -> None:
    old = [llm(num_gpus=2, tensor_parallel=1, expert_parallel=2)]
    new = [dict(old[0], tensor_parallel=2, expert_parallel=1)]
    assert diff_task("t", old, new, KEY_FIELDS) == TaskChanges(
        "t",
        changed=[
            RowChange(
                RowKey(
                    "t",
                    (
                        ("model_id", "acme/A"),
                        ("gpu_model", "H100"),
                        ("num_gpus", 2),
                        ("max_num_seqs", 8),
                    ),
                    0,
                    False,
                ),
                0,
                0,
                [FieldChange("expert_parallel", 2, 1), FieldChange("tensor_parallel", 1, 2)],
            )
        ],
    )


def test_a_different_gpu_count_is_another_configuration() -> None:
    old = [llm()]
    new = [dict(old[0], num_gpus=2)]
    assert diff_task("t", old, new, KEY_FIELDS) == TaskChanges(
        "t", added=[key(new[0])], removed=[key(old[0])]
    )


def test_diffusion_rows_pair_by_their_settings_not_by_their_degrees() -> None:
    def image(steps: int, ulysses: int, energy: float) -> Row:
        return {
            "model_id": "acme/Paint",
            "gpu_model": "B200",
            "num_gpus": 2,
            "batch_size": 1,
            "inference_steps": steps,
            "image_height": 1024,
            "image_width": 1024,
            "ulysses_degree": ulysses,
            "ring_degree": 1,
            "energy_per_image_joules": energy,
        }

    old = [image(28, 1, 100.0), image(50, 2, 200.0)]
    new = [image(50, 1, 210.0), image(28, 1, 100.0)]
    settings = (
        ("model_id", "acme/Paint"),
        ("gpu_model", "B200"),
        ("num_gpus", 2),
        ("batch_size", 1),
        ("inference_steps", 50),
        ("image_height", 1024),
        ("image_width", 1024),
    )
    assert diff_task("t2i", old, new, KEY_FIELDS) == TaskChanges(
        "t2i",
        changed=[
            RowChange(
                RowKey("t2i", settings, 0, False),
                1,
                0,
                [
                    FieldChange("energy_per_image_joules", 200.0, 210.0),
                    FieldChange("ulysses_degree", 2, 1),
                ],
            )
        ],
        unchanged=1,
    )


# --- Hand-made releases -----------------------------------------------------------------------


def release(
    rows: dict[str, list[Row]],
    details: dict[str, list[Row]],
    models: dict[str, Row],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Files of a release: index.json, one task file per task, one model file per (model, task)."""
    files: dict[str, Any] = {
        "index.json": {"last_updated": "2030-01-01", "tasks": list(rows), "models": models}
    }
    for task, task_rows in rows.items():
        files[f"tasks/{task}.json"] = {"task": task, "configurations": task_rows}
        for model in dict.fromkeys(r["model_id"] for r in task_rows):
            path = f"models/{model.replace('/', '__')}__{task}.json"
            files[path] = {"model_id": model, "task": task, "configurations": details[path]}
    return files | (extra or {})


def detail(notes: str = "", counts: list[int] | None = None) -> Row:
    return {
        "parallelization": {"tensor_parallel": 1, "notes": notes},
        "output_length_distribution": {"bins": [0, 10], "counts": counts or [5]},
    }


A_FILE = "models/acme__A__chat.json"
B_FILE = "models/acme__B__chat.json"


def test_diff_releases_reports_files_tasks_models_and_model_files() -> None:
    facts = {"nickname": "A", "total_params_billions": 1.0}
    old = release(
        {"chat": [llm(), llm(seqs=16)], "code": [llm(model="acme/B")]},
        {
            A_FILE: [detail(), detail()],
            "models/acme__B__code.json": [detail()],
        },
        {"acme/A": facts, "acme/B": {"nickname": "B"}},
        extra={"models/acme__Gone__chat.json": {"model_id": "acme/Gone"}},
    )
    new = release(
        {"chat": [llm(), llm(seqs=16), llm(model="acme/B")]},
        {
            A_FILE: [detail(notes="TP within a node"), detail(counts=[4, 1])],
            B_FILE: [detail()],
        },
        {"acme/A": {**facts, "total_params_billions": 1.5}, "acme/C": {"nickname": "C"}},
    )
    new[A_FILE]["total_params_billions"] = 1.5

    a_settings = settings_of(llm())
    assert diff_releases(old, new, KEY_FIELDS) == Changes(
        files_added=[B_FILE],
        files_removed=[
            "models/acme__B__code.json",
            "models/acme__Gone__chat.json",
            "tasks/code.json",
        ],
        tasks_added=[],
        tasks_removed=["code"],
        models_added=["acme/C"],
        models_removed=["acme/B"],
        models_changed=[DocumentChange("acme/A", [FieldChange("total_params_billions", 1.0, 1.5)])],
        model_files_changed=[
            DocumentChange(A_FILE, [FieldChange("total_params_billions", None, 1.5)])
        ],
        tasks=[
            TaskChanges(
                "chat",
                added=[key(llm(model="acme/B"), task="chat")],
                changed=[
                    RowChange(
                        RowKey("chat", a_settings, 0, False),
                        0,
                        0,
                        [FieldChange("parallelization_notes", "", "TP within a node")],
                    ),
                    RowChange(
                        key(llm(seqs=16), task="chat"),
                        1,
                        1,
                        [
                            FieldChange(
                                "output_length_distribution",
                                {"bins": [0, 10], "counts": [5]},
                                {"bins": [0, 10], "counts": [4, 1]},
                            )
                        ],
                    ),
                ],
            ),
            TaskChanges(
                "code",
                # A task that left: its rows are removed, and so is its whole row shape.
                fields_removed=sorted(
                    [*llm(), "output_length_distribution", "parallelization_notes"]
                ),
                removed=[key(llm(model="acme/B"), task="code")],
            ),
        ],
    )


def test_diff_releases_of_equal_files_is_empty() -> None:
    files = release({"chat": [llm(), llm()]}, {A_FILE: [detail(), detail()]}, {"acme/A": {}})
    assert diff_releases(files, json.loads(json.dumps(files)), KEY_FIELDS) == Changes(
        [], [], [], [], [], [], [], [], [TaskChanges("chat", unchanged=2)]
    )


# --- The two shared snapshots, compared directly ----------------------------------------------

LLM_KEY = ("model_id", "gpu_model", "num_gpus", "max_num_seqs")
DIFFUSION_KEY = (
    "model_id",
    "gpu_model",
    "num_gpus",
    "batch_size",
    "inference_steps",
    "image_height",
    "image_width",
    "video_height",
    "video_width",
    "fps",
    "num_frames",
)


def read_files(root: Path) -> dict[str, Any]:
    return {
        str(path.relative_to(root)): json.loads(path.read_text()) for path in root.rglob("*.json")
    }


OLD = read_files(EARLIER)
NEW = read_files(SNAPSHOT)
ORPHAN = "models/nvidia__NVIDIA-Nemotron-Nano-12B-v2-VL-BF16__video-chat.json"


def rows_with_details(files: dict[str, Any], task: str) -> list[Row]:
    """Task-file rows, each with its histogram and parallelism notes from the model file."""
    rows = []
    seen: Counter[str] = Counter()
    for row in files[f"tasks/{task}.json"]["configurations"]:
        model = row["model_id"]
        own = files[f"models/{model.replace('/', '__')}__{task}.json"]["configurations"]
        mine = own[seen[model]]
        seen[model] += 1
        row = dict(row)
        if "output_length_distribution" in mine:
            row["output_length_distribution"] = mine["output_length_distribution"]
        if "notes" in mine["parallelization"]:
            row["parallelization_notes"] = mine["parallelization"]["notes"]
        rows.append(row)
    return rows


def by_identity(rows: list[Row]) -> tuple[dict[tuple[Any, int], int], Counter[Any]]:
    """(settings, occurrence) -> row number, and how many rows share each settings."""
    occurrences: Counter[Any] = Counter()
    found = {}
    for i, row in enumerate(rows):
        settings = tuple((k, row[k]) for k in (*LLM_KEY, *DIFFUSION_KEY) if k in row)
        found[(settings, occurrences[settings])] = i
        occurrences[settings] += 1
    return found, occurrences


def direct_task_changes(task: str) -> dict[str, Any]:
    old, new = rows_with_details(OLD, task), rows_with_details(NEW, task)
    old_shape = {k for r in old for k in r}
    new_shape = {k for r in new for k in r}
    old_ids, old_count = by_identity(old)
    new_ids, new_count = by_identity(new)
    changed, unchanged, counts = [], 0, Counter[str]()
    for ident, i in old_ids.items():
        if ident not in new_ids:
            continue
        j = new_ids[ident]
        fields = [
            {"field": f, "old": old[i][f], "new": new[j][f]}
            for f in sorted(old_shape & new_shape)
            if old[i].get(f) != new[j].get(f)
        ]
        if not fields:
            unchanged += 1
            continue
        counts.update(f["field"] for f in fields)
        settings, occurrence = ident
        changed.append(
            {
                "key": {
                    "settings": dict(settings),
                    "occurrence": occurrence,
                    "repeated": old_count[settings] > 1 or new_count[settings] > 1,
                },
                "oldRow": i,
                "newRow": j,
                "fields": fields,
            }
        )
    return {
        "task": task,
        "fieldsAdded": sorted(new_shape - old_shape),
        "fieldsRemoved": sorted(old_shape - new_shape),
        "unchanged": unchanged,
        "changedFieldCounts": dict(counts),
        "added": [{"settings": dict(s)} for (s, n) in new_ids if (s, n) not in old_ids],
        "removed": [{"settings": dict(s)} for (s, n) in old_ids if (s, n) not in new_ids],
        "changed": sorted(changed, key=lambda c: c["newRow"]),
    }


def own_fields_changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return sorted(
        k for k in set(old) | set(new) if k != "configurations" and old.get(k) != new.get(k)
    )


def direct_changes() -> dict[str, Any]:
    old_index, new_index = OLD["index.json"], NEW["index.json"]
    both = sorted(set(OLD) & set(NEW))
    return {
        "filesAdded": sorted(set(NEW) - set(OLD)),
        "filesRemoved": sorted(set(OLD) - set(NEW)),
        "tasksAdded": sorted(set(new_index["tasks"]) - set(old_index["tasks"])),
        "tasksRemoved": sorted(set(old_index["tasks"]) - set(new_index["tasks"])),
        "modelsAdded": sorted(set(new_index["models"]) - set(old_index["models"])),
        "modelsRemoved": sorted(set(old_index["models"]) - set(new_index["models"])),
        "modelsChanged": [
            {"name": m}
            for m in sorted(set(old_index["models"]) & set(new_index["models"]))
            if old_index["models"][m] != new_index["models"][m]
        ],
        "modelFilesChanged": [
            {"name": p}
            for p in both
            if p.startswith("models/") and own_fields_changed(OLD[p], NEW[p])
        ],
        "tasks": [direct_task_changes(t) for t in sorted(new_index["tasks"])],
    }


CHANGES = """query ($from: Int!, $to: Int!, $task: String) {
  changes(from: $from, to: $to, task: $task) {
    from to filesAdded filesRemoved tasksAdded tasksRemoved modelsAdded modelsRemoved
    modelsChanged { name } modelFilesChanged { name }
    tasks { task fieldsAdded fieldsRemoved unchanged changedFieldCounts
      added { settings } removed { settings }
      changed { key { settings occurrence repeated } oldRow newRow
        fields { field old new } } } } }"""


def in_new_row_order(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t | {"changed": sorted(t["changed"], key=lambda c: c["newRow"])} for t in tasks]


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "errors" not in result, result["errors"]
    return result


@pytest.fixture(scope="module", params=BACKENDS)
def two_releases_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, list[int]]]:
    """2025-12-17, then 2026-02-16 with the seed manifest, in a database of their own."""
    yield from stored_releases(request, tmp_path_factory, [(EARLIER, None), (SNAPSHOT, SEED)])


@pytest.fixture
async def two_releases(
    two_releases_url: tuple[str, list[int]],
) -> AsyncIterator[tuple[Execute, int, int]]:
    url, (earlier, later) = two_releases_url
    engine = create_engine(url)
    yield make_execute(engine, Settings(database_url=url, manifest=None)), earlier, later
    await engine.dispose()


def test_the_files_differ_as_the_data_notes_say() -> None:
    """Preconditions of the expectations below, on the files alone."""
    assert len(OLD) == 71 and len(NEW) == 70
    old = OLD[f"tasks/{TASK}.json"]["configurations"]
    new = NEW[f"tasks/{TASK}.json"]["configurations"]
    assert len(old) == len(new) == 328
    assert all("max_num_batched_tokens" in row for row in old)
    assert not any("max_num_batched_tokens" in row for row in new)


async def test_changes_between_the_shared_snapshots_match_a_direct_comparison(
    two_releases: tuple[Execute, int, int],
) -> None:
    execute, earlier, later = two_releases
    got = ok(await execute(CHANGES, **{"from": earlier, "to": later}))["changes"]
    expected = direct_changes()
    assert {k: v for k, v in got.items() if k != "tasks"} == {
        "from": earlier,
        "to": later,
        **{k: v for k, v in expected.items() if k != "tasks"},
    }
    assert in_new_row_order(got["tasks"]) == expected["tasks"]

    # What the data notes say, stated outright.
    assert got["filesAdded"] == []
    assert got["filesRemoved"] == [ORPHAN]
    assert got["tasksAdded"] == got["tasksRemoved"] == []
    assert got["modelsAdded"] == got["modelsRemoved"] == []
    tasks = {t["task"]: t for t in got["tasks"]}
    assert sorted(tasks) == sorted(NEW["index.json"]["tasks"])
    for name in ("lm-arena-chat", "gpqa", "sourcegraph-fim", "image-chat", "video-chat"):
        count = len(NEW[f"tasks/{name}.json"]["configurations"])
        assert tasks[name]["fieldsRemoved"] == ["max_num_batched_tokens"]
        assert tasks[name]["fieldsAdded"] == []
        assert tasks[name]["added"] == tasks[name]["removed"] == []
        assert len(tasks[name]["changed"]) == count
        assert tasks[name]["changedFieldCounts"]["output_throughput_tokens_per_sec"] == count
        assert tasks[name]["unchanged"] == 0
    assert tasks[TASK]["changedFieldCounts"] == {
        "output_throughput_tokens_per_sec": 328,
        "tensor_parallel": 84,
    }
    for name in ("text-to-image", "text-to-video"):
        count = len(NEW[f"tasks/{name}.json"]["configurations"])
        assert tasks[name] == {
            "task": name,
            "fieldsAdded": [],
            "fieldsRemoved": [],
            "unchanged": count,
            "changedFieldCounts": {},
            "added": [],
            "removed": [],
            "changed": [],
        }


async def test_changed_values_are_the_files_values(two_releases: tuple[Execute, int, int]) -> None:
    execute, earlier, later = two_releases
    got = ok(await execute(CHANGES, **{"from": earlier, "to": later, "task": TASK}))["changes"]
    [chat] = got["tasks"]
    assert chat["task"] == TASK
    old_rows = OLD[f"tasks/{TASK}.json"]["configurations"]
    new_rows = NEW[f"tasks/{TASK}.json"]["configurations"]
    by_new_row = {c["newRow"]: c for c in chat["changed"]}

    # The first row of the later file: Qwen3-14B on one B200, max_num_seqs 8.
    first = by_new_row[0]
    assert first["key"] == {
        "settings": {
            "model_id": "Qwen/Qwen3-14B",
            "gpu_model": "B200",
            "num_gpus": 1,
            "max_num_seqs": 8,
        },
        "occurrence": 0,
        "repeated": False,
    }
    old = old_rows[first["oldRow"]]
    assert (old["model_id"], old["gpu_model"], old["num_gpus"], old["max_num_seqs"]) == (
        "Qwen/Qwen3-14B",
        "B200",
        1,
        8,
    )
    assert first["fields"] == [
        {
            "field": "output_throughput_tokens_per_sec",
            "old": old["output_throughput_tokens_per_sec"],
            "new": new_rows[0]["output_throughput_tokens_per_sec"],
        }
    ]
    assert first["fields"][0]["new"] == 1086.7107231801174

    # Every change of tensor_parallel, with its values, and the throughput on every row.
    for change in chat["changed"]:
        o, n = old_rows[change["oldRow"]], new_rows[change["newRow"]]
        assert {f["field"]: (f["old"], f["new"]) for f in change["fields"]} == {
            "output_throughput_tokens_per_sec": (
                o["output_throughput_tokens_per_sec"],
                n["output_throughput_tokens_per_sec"],
            ),
            **(
                {"tensor_parallel": (o["tensor_parallel"], n["tensor_parallel"])}
                if o["tensor_parallel"] != n["tensor_parallel"]
                else {}
            ),
        }
    assert sum(len(c["fields"]) == 2 for c in chat["changed"]) == 84

    # The repeated runs (Qwen3-30B-A3B on two H100s) pair in file order and keep their energy.
    repeated = [c for c in chat["changed"] if c["key"]["repeated"]]
    assert sorted(
        (c["key"]["settings"]["max_num_seqs"], c["key"]["occurrence"]) for c in repeated
    ) == [(256, 0), (256, 1), (512, 0), (512, 1)]
    for c in repeated:
        assert c["key"]["settings"]["model_id"] == "Qwen/Qwen3-30B-A3B-Instruct-2507"
        assert (
            old_rows[c["oldRow"]]["energy_per_token_joules"]
            == new_rows[c["newRow"]]["energy_per_token_joules"]
        )


async def test_changes_backwards_mirror_the_changes_forwards(
    two_releases: tuple[Execute, int, int],
) -> None:
    execute, earlier, later = two_releases
    forwards = ok(await execute(CHANGES, **{"from": earlier, "to": later}))["changes"]
    backwards = ok(await execute(CHANGES, **{"from": later, "to": earlier}))["changes"]
    assert backwards["filesAdded"] == forwards["filesRemoved"] == [ORPHAN]
    assert backwards["filesRemoved"] == forwards["filesAdded"] == []
    for f, b in zip(forwards["tasks"], backwards["tasks"], strict=True):
        assert (b["task"], b["fieldsAdded"], b["fieldsRemoved"]) == (
            f["task"],
            f["fieldsRemoved"],
            f["fieldsAdded"],
        )
        assert b["changedFieldCounts"] == f["changedFieldCounts"]
        assert b["unchanged"] == f["unchanged"]
        assert sorted((c["oldRow"], c["newRow"]) for c in b["changed"]) == sorted(
            (c["newRow"], c["oldRow"]) for c in f["changed"]
        )


async def test_changes_from_a_release_to_itself_are_none(
    two_releases: tuple[Execute, int, int],
) -> None:
    execute, _, later = two_releases
    got = ok(await execute(CHANGES, **{"from": later, "to": later}))["changes"]
    per_task = {
        name: len(NEW[f"tasks/{name}.json"]["configurations"])
        for name in NEW["index.json"]["tasks"]
    }
    assert got == {
        "from": later,
        "to": later,
        "filesAdded": [],
        "filesRemoved": [],
        "tasksAdded": [],
        "tasksRemoved": [],
        "modelsAdded": [],
        "modelsRemoved": [],
        "modelsChanged": [],
        "modelFilesChanged": [],
        "tasks": [
            {
                "task": name,
                "fieldsAdded": [],
                "fieldsRemoved": [],
                "unchanged": per_task[name],
                "changedFieldCounts": {},
                "added": [],
                "removed": [],
                "changed": [],
            }
            for name in sorted(per_task)
        ],
    }


async def test_changes_with_an_unknown_release_is_bad_input(
    two_releases: tuple[Execute, int, int],
) -> None:
    execute, earlier, later = two_releases
    unknown = later + earlier + 100
    for ids in ({"from": unknown, "to": later}, {"from": earlier, "to": unknown}):
        result = await execute(CHANGES, **ids)
        assert [e["code"] for e in result["errors"]] == ["BAD_USER_INPUT"]
        assert str(unknown) in result["errors"][0]["message"]


def test_the_timelines_sentences_count_in_words() -> None:
    """One of a thing is singular, several plural; the data the same is said as such."""
    task = {
        "task": "lm-arena-chat",
        "changed": 2,
        "unchanged": 1,
        "fields_added": ["new_field"],
        "fields_removed": [],
        "field_changes": {"tensor_parallel": 2},
        "added": 1,
        "removed": 3,
    }
    summary = {
        "tasks_added": [],
        "tasks_removed": [],
        "models_added": ["Org/New-1B"],
        "models_removed": [],
        "tasks": [task],
        "files_changed": 4,
    }
    assert sentences(summary) == [
        "model Org/New-1B added",
        "new_field joined the lm-arena-chat rows",
        "tensor_parallel changed on 2 of 3 lm-arena-chat rows",
        "1 lm-arena-chat configuration added",
        "3 lm-arena-chat configurations removed",
    ]
    quiet = {**summary, "models_added": [], "tasks": [], "files_changed": 1}
    assert sentences(quiet) == ["1 file written differently; the data is the same"]

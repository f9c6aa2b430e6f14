"""Ingest is one transaction: a bad snapshot fails with a message naming file, row and field,
and the data served before stays served, unchanged. Identical data ingested again is a no-op."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import event, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from db import bulk
from db.database import create_engine, sessionmaker
from db.errors import IngestError
from db.snapshot import load_manifest, load_snapshot
from db.tables import metadata
from graph.cli import main
from graph.settings import Settings
from tests import synthetic
from tests.conftest import ROOT, ingest_dir, make_execute

pytestmark = pytest.mark.anyio

TASK_FILE = f"tasks/{synthetic.TASK}.json"
TINY = f"models/acme__Tiny-1B__{synthetic.TASK}.json"
MIXTURE = f"models/acme__Mixture-8x2B__{synthetic.TASK}.json"

# Everything a client sees of the synthetic data that an ingest could change.
STATE = """
{
  source { name publisher release { number digest lastUpdated location } }
  tasks { name displayName }
  models { slug name modelId paramsB }
  gpus { name fullName tdpWatts }
  configurations(first: 50) {
    totalCount
    nodes {
      id gpuModel numGpus maxNumSeqs tensorParallel expertParallel
      energyPerTokenJoules energyPerRequestJoules avgPowerWatts medianItlMs p99ItlMs
      outputLengthDistribution { bins counts }
      model { slug }
    }
  }
}
"""


async def table_counts(engine: AsyncEngine) -> dict[str, int]:
    """Rows in every table: a failed ingest leaves each count as it was."""
    async with sessionmaker(engine)() as session:
        return {
            table.name: await session.scalar(select(func.count()).select_from(table)) or 0
            for table in metadata.sorted_tables
        }


async def served(engine: AsyncEngine, settings: Settings) -> dict[str, Any]:
    data = await make_execute(engine, settings)(STATE)
    assert "errors" not in data, data
    return data


# --- bad snapshots ---------------------------------------------------------------------------

Files = dict[str, Any]


def _task_rows(files: Files) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = files[TASK_FILE]["configurations"]
    return rows


def _set(path: str, *keys: str | int, value: Any) -> Callable[[Files], None]:
    """A change setting files[path][k0][k1]... to value."""

    def change(files: Files) -> None:
        doc = files[path]
        for key in keys[:-1]:
            doc = doc[key]
        doc[keys[-1]] = value

    return change


def _delete(path: str, *keys: str | int) -> Callable[[Files], None]:
    def change(files: Files) -> None:
        if not keys:
            del files[path]
            return
        doc = files[path]
        for key in keys[:-1]:
            doc = doc[key]
        del doc[keys[-1]]

    return change


def _raw(path: str, text: Callable[[Any], str]) -> Callable[[Files], None]:
    """Replace a document with raw text made from it."""

    def change(files: Files) -> None:
        files[path] = text(files[path])

    return change


def _truncated_after_line(n: int) -> Callable[[Any], str]:
    return lambda doc: "\n".join(json.dumps(doc, indent=1).splitlines()[:n])


def _nan_text(doc: Any) -> str:
    doc["configurations"][2]["energy_per_token_joules"] = float("nan")
    text = json.dumps(doc)  # Python writes the non-standard literal NaN, and reads it back
    assert '"energy_per_token_joules": NaN' in text
    return text


def _infinity_text(doc: Any) -> str:
    doc["configurations"][5]["p99_itl_ms"] = float("inf")
    text = json.dumps(doc)
    assert '"p99_itl_ms": Infinity' in text
    return text


def _both_gpu(gpu: str) -> Callable[[Files], None]:
    """Row 2 (Tiny-1B's third configuration) measured on `gpu`, in both files."""

    def change(files: Files) -> None:
        _task_rows(files)[2]["gpu_model"] = gpu
        files[TINY]["configurations"][2]["gpu_model"] = gpu

    return change


def _index_with_a_task_without_file(files: Files) -> None:
    files["index.json"]["tasks"].append("gpqa")
    files["index.json"]["architectures"]["llm"].append("gpqa")


@dataclass(frozen=True)
class Case:
    id: str
    change: Callable[[Files], None] | None
    message: str  # {root}: the snapshot directory; {manifest}: the manifest file
    manifest: Callable[[dict[str, Any]], None] | None = None


def _manifest_without_licence(doc: dict[str, Any]) -> None:
    del doc["source"]["licence"]


def _manifest_with_unmeasured_model(doc: dict[str, Any]) -> None:
    doc["models"].append({**doc["models"][0], "slug": "ghost-3b", "model_id": "acme/Ghost-3B"})


def _manifest_with_bad_slug(doc: dict[str, Any]) -> None:
    doc["models"][0]["slug"] = "Tiny 1B"


CASES = [
    Case(
        "missing field",
        _delete(TASK_FILE, "configurations", 2, "avg_power_watts"),
        f"{TASK_FILE}, row 2, field 'configurations[2].avg_power_watts': Field required",
    ),
    Case(
        "string for a number",
        _set(TASK_FILE, "configurations", 1, "median_itl_ms", value="20"),
        f"{TASK_FILE}, row 1, field 'configurations[1].median_itl_ms': "
        "Input should be a valid number (got '20')",
    ),
    Case(
        "float for an int",
        _set(TASK_FILE, "configurations", 4, "num_gpus", value=2.0),
        f"{TASK_FILE}, row 4, field 'configurations[4].num_gpus': "
        "Input should be a valid integer (got 2.0)",
    ),
    Case(
        "bool for an int",
        _set(TASK_FILE, "configurations", 0, "max_num_seqs", value=True),
        f"{TASK_FILE}, row 0, field 'configurations[0].max_num_seqs': "
        "Input should be a valid integer (got True)",
    ),
    Case(
        "zero GPUs",
        _set(TASK_FILE, "configurations", 6, "num_gpus", value=0),
        f"{TASK_FILE}, row 6, field 'configurations[6].num_gpus': "
        "Input should be greater than or equal to 1 (got 0)",
    ),
    Case(
        "negative measurement",
        _set(TASK_FILE, "configurations", 3, "energy_per_token_joules", value=-1.0),
        f"{TASK_FILE}, row 3, field 'configurations[3].energy_per_token_joules': "
        "Input should be greater than or equal to 0 (got -1.0)",
    ),
    Case(
        "NaN measurement",
        _raw(TASK_FILE, _nan_text),
        f"{TASK_FILE}, row 2, field 'configurations[2].energy_per_token_joules': "
        "Input should be a finite number (got nan)",
    ),
    Case(
        "Infinity measurement",
        _raw(TASK_FILE, _infinity_text),
        f"{TASK_FILE}, row 5, field 'configurations[5].p99_itl_ms': "
        "Input should be a finite number (got inf)",
    ),
    Case(
        "negative model size in index.json",
        _set("index.json", "models", "acme/Tiny-1B", "total_params_billions", value=-1.0),
        "index.json, field 'models.acme/Tiny-1B.total_params_billions': "
        "Input should be greater than or equal to 0 (got -1.0)",
    ),
    Case(
        "malformed JSON",
        _raw(TASK_FILE, lambda _doc: '{"task": "lm-arena-chat",\n "configurations": [,]}'),
        f"{TASK_FILE}: malformed JSON: Expecting value at line 2 column 21",
    ),
    Case(
        "truncated JSON",
        _raw(TASK_FILE, _truncated_after_line(8)),
        f"{TASK_FILE}: malformed JSON: "
        "Expecting property name enclosed in double quotes at line 8 column 24",
    ),
    Case(
        "truncated JSON, last brace missing",
        _raw(MIXTURE, lambda doc: json.dumps(doc)[:-1]),
        f"{MIXTURE}: malformed JSON: Expecting ',' delimiter at line 1 column "
        f"{len(json.dumps(synthetic.documents()[MIXTURE]))}",
    ),
    Case(
        "empty file",
        _raw("index.json", lambda _doc: ""),
        "index.json: malformed JSON: Expecting value at line 1 column 1",
    ),
    Case(
        "task file not an object",
        _raw(TASK_FILE, lambda _doc: "[]"),
        f"{TASK_FILE}: Input should be a valid dictionary or instance of TaskFile (got [])",
    ),
    Case(
        "missing model file",
        _delete(MIXTURE),
        f"{MIXTURE}: file not found in {{root}}",
    ),
    Case("missing index.json", _delete("index.json"), "index.json: file not found in {root}"),
    Case(
        "missing task file",
        _delete(TASK_FILE),
        f"{TASK_FILE}: file not found in {{root}}",
    ),
    Case(
        "index.json lists a task without a file",
        _index_with_a_task_without_file,
        "tasks/gpqa.json: file not found in {root}",
    ),
    Case(
        "task file names another task",
        _set(TASK_FILE, "task", value="gpqa"),
        f"{TASK_FILE}, field 'task': says task 'gpqa', expected 'lm-arena-chat'",
    ),
    Case(
        "model file names another model",
        _set(TINY, "model_id", value="acme/Other-1B"),
        f"{TINY}, field 'model_id': says model 'acme/Other-1B', expected 'acme/Tiny-1B'",
    ),
    Case(
        "model file disagrees with the task row",
        _set(TINY, "configurations", 1, "max_num_seqs", value=32),
        f"{TINY}, row 1, field 'max_num_seqs': 32 disagrees with {TASK_FILE} row 1 (64)",
    ),
    Case(
        "model file disagrees on the GPU, rows numbered apart",
        _set(MIXTURE, "configurations", 1, "gpu_model", value="B200"),
        f"{MIXTURE}, row 1, field 'gpu_model': 'B200' disagrees with {TASK_FILE} row 4 ('H100')",
    ),
    Case(
        "model file disagrees on a measurement",
        _set(MIXTURE, "configurations", 2, "avg_power_watts", value=1.0),
        f"{MIXTURE}, row 2, field 'avg_power_watts': 1.0 disagrees with {TASK_FILE} row 5 (1150.0)",
    ),
    Case(
        "model file disagrees on the parallelism",
        _set(MIXTURE, "configurations", 3, "parallelization", "expert_parallel", value=1),
        f"{MIXTURE}, row 3, field 'expert_parallel': 1 disagrees with {TASK_FILE} row 6 (2)",
    ),
    Case(
        "model file has fewer configurations",
        _delete(TINY, "configurations", 2),
        f"{TINY}, field 'configurations': 2 configurations, but {TASK_FILE} has 3 for this model",
    ),
    Case(
        "histogram of a configuration with too few edges",
        _set(MIXTURE, "configurations", 2, "output_length_distribution", "bins", value=[0.0, 1.0]),
        f"{MIXTURE}, row 2, field 'configurations[2].output_length_distribution': "
        "Value error, 2 bin edges for 2 counts (want one more edge) "
        "(got {'bins': [0.0, 1.0], 'counts': [3, 2]})",
    ),
    Case(
        "histogram of a model with too many edges",
        _set(TINY, "output_length_distribution", "bins", value=[0.0, 100.0, 200.0, 300.0]),
        f"{TINY}, field 'output_length_distribution': "
        "Value error, 4 bin edges for 2 counts (want one more edge) "
        "(got {'bins': [0.0, 100.0, 200.0, 300.0], 'counts': [10, 5]})",
    ),
    Case(
        "negative histogram count",
        _set(TINY, "configurations", 0, "output_length_distribution", "counts", value=[1, -2]),
        f"{TINY}, row 0, field 'configurations[0].output_length_distribution.counts.1': "
        "Input should be greater than or equal to 0 (got -2)",
    ),
    Case(
        "task row names a model not in index.json",
        _delete("index.json", "models", "acme/Mixture-8x2B"),
        f"{TASK_FILE}, row 3, field 'model_id': model 'acme/Mixture-8x2B' is not in index.json",
    ),
    Case(
        "manifest without a source field",
        None,
        "{manifest}, field 'source.licence': Field required",
        manifest=_manifest_without_licence,
    ),
    Case(
        "manifest slug not URL-safe",
        None,
        "{manifest}, field 'models.0.slug': String should match pattern "
        "'^[a-z0-9][a-z0-9-]*$' (got 'Tiny 1B')",
        manifest=_manifest_with_bad_slug,
    ),
]


# The cases run through the whole pattern, on each database: a good ingest, the bad one, and
# the data served compared. The others fail before ingest writes anything; their messages are
# checked once, without a database.
SERVED_CASES = {
    "missing field",
    "string for a number",
    "float for an int",
    "negative measurement",
    "NaN measurement",
    "Infinity measurement",
    "malformed JSON",
    "truncated JSON",
    "missing model file",
    "missing index.json",
    "model file disagrees with the task row",
    "histogram of a configuration with too few edges",
    "task row names a model not in index.json",
    "manifest without a source field",
}
assert SERVED_CASES <= {c.id for c in CASES}


def write_case(base: Path, case: Case) -> tuple[Path, Path]:
    """The case's snapshot directory and manifest file, under `base`."""
    files = synthetic.documents()
    if case.change is not None:
        case.change(files)
    root = synthetic.write(base / "bad-snapshot", files)
    doc = synthetic.manifest()
    if case.manifest is not None:
        case.manifest(doc)
    manifest = base / "bad-manifest.json"
    manifest.write_text(json.dumps(doc))
    return root, manifest


def expected(case: Case, root: Path, manifest: Path) -> str:
    return case.message.replace("{root}", str(root)).replace("{manifest}", str(manifest))


@pytest.fixture
def manifest_path(synthetic_dir: Path) -> Path:
    return synthetic_dir.parent / "manifest.json"


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.id in SERVED_CASES], ids=lambda c: str(c.id)
)
async def test_bad_snapshot_fails_and_changes_nothing(
    case: Case,
    engine: AsyncEngine,
    synthetic_dir: Path,
    manifest_path: Path,
    settings: Settings,
    tmp_path: Path,
) -> None:
    first = await ingest_dir(engine, synthetic_dir, manifest_path)
    assert not first.unchanged
    before, counts = await served(engine, settings), await table_counts(engine)
    assert before["configurations"]["totalCount"] == len(synthetic.ROWS)

    root, manifest = write_case(tmp_path, case)
    with pytest.raises(IngestError) as info:
        await ingest_dir(engine, root, manifest)

    assert str(info.value) == expected(case, root, manifest)
    assert await served(engine, settings) == before
    assert await table_counts(engine) == counts


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.id not in SERVED_CASES], ids=lambda c: str(c.id)
)
async def test_bad_snapshot_message_names_file_row_and_field(case: Case, tmp_path: Path) -> None:
    root, manifest = write_case(tmp_path, case)
    with pytest.raises(IngestError) as info:
        (await load_snapshot(str(root))).tasks()  # each task is checked when it is read
        load_manifest(manifest)
    assert str(info.value) == expected(case, root, manifest)


async def test_bad_snapshot_into_an_empty_database_leaves_it_empty(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    case = next(c for c in CASES if c.id == "negative measurement")
    root, manifest = write_case(tmp_path, case)
    with pytest.raises(IngestError, match=r"row 3, field 'configurations\[3\]"):
        await ingest_dir(engine, root, manifest)
    assert set((await table_counts(engine)).values()) == {0}


async def test_error_carries_its_parts(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "negative measurement")
    root, _ = write_case(tmp_path, case)
    with pytest.raises(IngestError) as info:
        (await load_snapshot(str(root))).tasks()
    error = info.value
    assert (error.file, error.row, error.field) == (
        TASK_FILE,
        3,
        "configurations[3].energy_per_token_joules",
    )
    assert error.message == "Input should be greater than or equal to 0 (got -1.0)"


async def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as info:
        await load_snapshot(str(tmp_path / "nowhere"))
    assert str(info.value) == f"{tmp_path / 'nowhere'}: no such directory"


async def test_task_not_listed_in_index(synthetic_dir: Path) -> None:
    with pytest.raises(IngestError) as info:
        await load_snapshot(str(synthetic_dir), tasks=("gpqa",))
    assert str(info.value) == "index.json, field 'tasks': task 'gpqa' is not listed"


async def test_unreadable_manifest(tmp_path: Path) -> None:
    missing = tmp_path / "no-manifest.json"
    with pytest.raises(IngestError) as info:
        load_manifest(missing)
    assert str(info.value) == f"{missing}: cannot read manifest: No such file or directory"


async def test_unterminated_string_message_reads_well(tmp_path: Path) -> None:
    files = synthetic.documents()
    files[TASK_FILE] = '{"task": "lm-arena-'
    root = synthetic.write(tmp_path / "bad", files)
    with pytest.raises(IngestError) as info:
        await load_snapshot(str(root))
    assert str(info.value).startswith(f"{TASK_FILE}: malformed JSON: Unterminated string")
    assert " at at " not in str(info.value)


# --- identical data --------------------------------------------------------------------------


async def test_identical_data_again_changes_nothing(
    engine: AsyncEngine, synthetic_dir: Path, manifest_path: Path, settings: Settings
) -> None:
    first = await ingest_dir(engine, synthetic_dir, manifest_path)
    assert not first.unchanged
    assert first.summary() == (
        f"ingested release {first.release_id} (data of 2030-01-02): "
        "2 models, configurations lm-arena-chat: 7"
    )
    before, counts = await served(engine, settings), await table_counts(engine)

    second = await ingest_dir(engine, synthetic_dir, manifest_path)

    assert second.unchanged is True
    assert second.release_id == first.release_id
    assert second.digest == first.digest
    assert second.summary() == (
        f"unchanged: this data is already stored as release {first.release_id} "
        "(data of 2030-01-02); nothing was written"
    )
    assert "unchanged" in second.summary()
    assert await served(engine, settings) == before
    assert await table_counts(engine) == counts


async def test_identical_data_from_another_directory_is_unchanged(
    engine: AsyncEngine, synthetic_dir: Path, tmp_path: Path
) -> None:
    first = await ingest_dir(engine, synthetic_dir)
    copy = synthetic.write(tmp_path / "copy", synthetic.documents())
    second = await ingest_dir(engine, copy)
    assert (second.unchanged, second.release_id) == (True, first.release_id)


async def test_same_files_with_another_manifest_is_a_new_release(
    engine: AsyncEngine, synthetic_dir: Path, manifest_path: Path, settings: Settings
) -> None:
    first = await ingest_dir(engine, synthetic_dir)
    second = await ingest_dir(engine, synthetic_dir, manifest_path)
    assert not second.unchanged
    assert second.release_id != first.release_id
    data = await served(engine, settings)
    assert data["source"]["name"] == "Synthetic"
    assert data["source"]["release"]["number"] == second.release_id


async def test_changed_data_is_a_new_release_and_served(
    engine: AsyncEngine, synthetic_dir: Path, settings: Settings, tmp_path: Path
) -> None:
    """The control for the failure cases: a good change does show."""
    first = await ingest_dir(engine, synthetic_dir)
    files = synthetic.documents()
    _task_rows(files)[0]["energy_per_token_joules"] = 0.25
    files[TINY]["configurations"][0]["energy_per_token_joules"] = 0.25
    files["index.json"]["last_updated"] = "2030-02-01"
    second = await ingest_dir(engine, synthetic.write(tmp_path / "next", files))
    assert not second.unchanged and second.release_id != first.release_id
    data = await served(engine, settings)
    assert data["source"]["release"]["number"] == second.release_id
    assert data["configurations"]["nodes"][0]["energyPerTokenJoules"] == 0.25


# --- unknown GPU -----------------------------------------------------------------------------

UNKNOWN_GPU_WARNING = (
    "GPU 'MI300X' is not in the reference table: its facts "
    "(full name, architecture, memory, TDP) are left empty"
)


async def test_unknown_gpu_is_ingested_with_a_warning(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    files = synthetic.documents()
    _both_gpu("MI300X")(files)
    report = await ingest_dir(engine, synthetic.write(tmp_path / "mi300x", files))

    assert not report.unchanged
    assert report.warnings == [UNKNOWN_GPU_WARNING]
    data = await served(engine, settings)
    assert data["gpus"] == [  # the only B200 row is now on the MI300X
        {"name": "H100", "fullName": "NVIDIA H100 SXM5 80GB HBM3", "tdpWatts": 700.0},
        {"name": "MI300X", "fullName": None, "tdpWatts": None},
    ]
    row = await make_execute(engine, settings)(
        """{ configurations(filter: {gpu: "MI300X"}) {
               nodes { gpuModel fractionOfTdp gpu { name architecture memoryGb source } } } }"""
    )
    assert row == {
        "configurations": {
            "nodes": [
                {
                    "gpuModel": "MI300X",
                    "fractionOfTdp": None,
                    "gpu": {
                        "name": "MI300X",
                        "architecture": None,
                        "memoryGb": None,
                        "source": None,
                    },
                }
            ]
        }
    }


async def test_unknown_gpu_warns_on_every_release_it_is_in(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    files = synthetic.documents()
    _both_gpu("MI300X")(files)
    await ingest_dir(engine, synthetic.write(tmp_path / "one", files))
    files["index.json"]["last_updated"] = "2030-02-01"
    second = await ingest_dir(engine, synthetic.write(tmp_path / "two", files))
    assert not second.unchanged
    assert second.warnings == [UNKNOWN_GPU_WARNING]


async def test_unknown_gpu_in_a_failed_ingest_is_not_kept(
    engine: AsyncEngine, synthetic_dir: Path, settings: Settings, tmp_path: Path
) -> None:
    await ingest_dir(engine, synthetic_dir)
    before = await served(engine, settings)
    files = synthetic.documents()
    _both_gpu("MI300X")(files)
    _task_rows(files)[6]["p90_itl_ms"] = -5.0
    with pytest.raises(IngestError, match=r"^tasks/lm-arena-chat.json, row 6, "):
        await ingest_dir(engine, synthetic.write(tmp_path / "bad", files))
    assert await served(engine, settings) == before
    assert [g["name"] for g in before["gpus"]] == ["B200", "H100"]


# --- failures while writing ------------------------------------------------------------------


class Boom(RuntimeError):
    pass


def _changed_with_new_gpu(tmp_path: Path) -> Path:
    """A valid snapshot unlike the synthetic one, with a GPU new to the database."""
    files = synthetic.documents()
    _both_gpu("MI300X")(files)
    files["index.json"]["last_updated"] = "2030-02-01"
    return synthetic.write(tmp_path / "changed", files)


@contextmanager
def database_fails(engine: AsyncEngine, table: str, when: str) -> Iterator[list[str]]:
    """Make the first INSERT into `table` fail, before it runs or just after it ran."""
    seen: list[str] = []

    def hook(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().startswith(f"INSERT INTO {table} ("):
            seen.append(statement)
            if len(seen) == 1:
                raise Boom(f"the database failed {when} writing {table}")

    # On PostgreSQL the bulk tables are written by COPY (db/bulk.py), not by a statement.
    copy = bulk._copy

    async def copying(driver: Any, table_: Any, columns: Any, rows: Any, batch: int) -> int:
        if table_.name != table:
            return await copy(driver, table_, columns, rows, batch)
        seen.append(f"COPY {table}")
        if len(seen) == 1 and when == "before":
            raise Boom(f"the database failed {when} writing {table}")
        count = await copy(driver, table_, columns, rows, batch)
        if len(seen) == 1:
            raise Boom(f"the database failed {when} writing {table}")
        return count

    event_name = f"{when}_cursor_execute"
    event.listen(engine.sync_engine, event_name, hook)
    bulk._copy = copying  # type: ignore[assignment]
    try:
        yield seen
    finally:
        bulk._copy = copy  # type: ignore[assignment]
        event.remove(engine.sync_engine, event_name, hook)


# The order ingest writes in: a release, its source, models, the files' bytes and names, new
# GPUs, a task, configurations, model files (on PostgreSQL the last four by the bulk writer,
# db.bulk.writing, while the ingest goes on). Failing at each step leaves nothing of the new
# release behind.
WRITE_FAILURES = [
    ("releases", "after"),
    ("models", "before"),
    ("blobs", "after"),
    ("release_files", "before"),
    ("gpus", "after"),
    ("configurations", "after"),
    ("model_tasks", "after"),
]


@pytest.mark.parametrize(("table", "when"), WRITE_FAILURES)
async def test_failure_while_writing_leaves_no_partial_release(
    engine: AsyncEngine,
    synthetic_dir: Path,
    manifest_path: Path,
    settings: Settings,
    tmp_path: Path,
    table: str,
    when: str,
) -> None:
    await ingest_dir(engine, synthetic_dir, manifest_path)
    before, counts = await served(engine, settings), await table_counts(engine)

    with database_fails(engine, table, when) as seen, pytest.raises(Boom):
        await ingest_dir(engine, _changed_with_new_gpu(tmp_path), manifest_path)

    assert len(seen) == 1
    assert await table_counts(engine) == counts
    assert await served(engine, settings) == before
    # And the same snapshot, with the database well again, goes in whole.
    report = await ingest_dir(engine, _changed_with_new_gpu(tmp_path), manifest_path)
    assert not report.unchanged
    assert report.configurations == {synthetic.TASK: len(synthetic.ROWS)}
    after = await served(engine, settings)
    assert after["source"]["release"]["number"] == report.release_id
    assert "MI300X" in [gpu["name"] for gpu in after["gpus"]]


def _with_second_task(files: Files, name: str = "gpqa") -> Files:
    """The synthetic task's files again as a second task, `name`, read after it."""
    files["index.json"]["tasks"].append(name)
    files["index.json"]["architectures"]["llm"].append(name)
    files[f"tasks/{name}.json"] = {**copy.deepcopy(files[TASK_FILE]), "task": name}
    for path in (TINY, MIXTURE):
        files[path.replace(synthetic.TASK, name)] = copy.deepcopy(files[path])
    return files


async def test_bad_second_task_after_the_first_was_written_changes_nothing(
    engine: AsyncEngine, synthetic_dir: Path, settings: Settings, tmp_path: Path
) -> None:
    """The first task's rows are written (on PostgreSQL, being sent while the second is read)
    when the second task is found bad: the ingest fails with its error, and rolls back whole."""
    await ingest_dir(engine, synthetic_dir)
    before, counts = await served(engine, settings), await table_counts(engine)
    files = _with_second_task(synthetic.documents())
    files["index.json"]["last_updated"] = "2030-02-01"
    good = await ingest_dir(engine, synthetic.write(tmp_path / "good", files))
    assert good.configurations == {synthetic.TASK: 7, "gpqa": 7}
    assert await table_counts(engine) != counts
    files["index.json"]["last_updated"] = "2030-03-01"
    _set("models/acme__Tiny-1B__gpqa.json", "configurations", 1, "max_num_seqs", value=32)(files)
    after_good = await served(engine, settings), await table_counts(engine)

    with pytest.raises(IngestError) as info:
        await ingest_dir(engine, synthetic.write(tmp_path / "bad", files))

    assert str(info.value) == (
        "models/acme__Tiny-1B__gpqa.json, row 1, field 'max_num_seqs': "
        "32 disagrees with tasks/gpqa.json row 1 (64)"
    )
    assert (await served(engine, settings), await table_counts(engine)) == after_good
    assert before != after_good[0]


async def test_database_refusal_changes_nothing(
    engine: AsyncEngine, synthetic_dir: Path, settings: Settings, tmp_path: Path
) -> None:
    """Two models whose nicknames give one slug: the database refuses the second model row."""
    await ingest_dir(engine, synthetic_dir)
    before, counts = await served(engine, settings), await table_counts(engine)
    files = synthetic.documents()
    files["index.json"]["models"]["acme/Mixture-8x2B"]["nickname"] = "Tiny-1B"
    files["index.json"]["last_updated"] = "2030-02-01"
    with pytest.raises(Exception):  # noqa: B017 - which one is the next test's question
        await ingest_dir(engine, synthetic.write(tmp_path / "clash", files))
    assert await table_counts(engine) == counts
    assert await served(engine, settings) == before


async def test_slug_clash_names_file_row_and_field(engine: AsyncEngine, tmp_path: Path) -> None:
    files = synthetic.documents()
    files["index.json"]["models"]["acme/Mixture-8x2B"]["nickname"] = "Tiny-1B"
    with pytest.raises(IngestError) as info:
        await ingest_dir(engine, synthetic.write(tmp_path / "clash", files))
    assert str(info.value).startswith("index.json, field 'models.acme/Mixture-8x2B.nickname'")


async def test_long_gpu_name_is_stored_or_refused_with_file_row_field(
    engine: AsyncEngine,
    database_url: str,
    settings: Settings,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    name = "NVIDIA H100 NVL 94GB PCIe (two-card bridge)"
    assert len(name) > 40
    files = synthetic.documents()
    _both_gpu(name)(files)
    root = synthetic.write(tmp_path / "long", files)
    try:
        report = await ingest_dir(engine, root)
    except IngestError as exc:
        assert str(exc).startswith(f"{TASK_FILE}, row 2, field 'configurations[2].gpu_model'")
        return
    assert not report.unchanged
    data = await served(engine, settings)
    assert name in [g["name"] for g in data["gpus"]]


# --- the command -----------------------------------------------------------------------------

SERVED_QUERY = """{
  source { name release { number digest } }
  configurations(first: 50) { nodes { id energyPerTokenJoules } }
}"""


def _served_sync(url: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        engine = create_engine(url)
        try:
            return await make_execute(engine, Settings(database_url=url, manifest=None))(
                SERVED_QUERY
            )
        finally:
            await engine.dispose()

    return asyncio.run(run())


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name in list(os.environ):
        if name.startswith("LEADGREEN_"):
            monkeypatch.delenv(name)
    return CliRunner()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def good_snapshot(tmp_path: Path) -> Path:
    return synthetic.write(tmp_path / "good", synthetic.documents())


def ingest_good(cli: CliRunner, snapshot: Path, url: str) -> dict[str, Any]:
    """Ingest the good snapshot through the command; what is served then."""
    result = cli.invoke(main, ["ingest", str(snapshot), "--database-url", url])
    assert result.exit_code == 0, result.output
    return _served_sync(url)


def test_cli_ingest_success_then_unchanged(
    cli: CliRunner, sqlite_url: str, good_snapshot: Path
) -> None:
    args = ["ingest", str(good_snapshot), "--database-url", sqlite_url]
    first = cli.invoke(main, args)
    assert first.exit_code == 0, first.output
    assert first.stdout == (
        f"reading {good_snapshot} ...\n"
        "ingested release 1 (data of 2030-01-02): 2 models, configurations lm-arena-chat: 7\n"
    )
    assert first.stderr == ""
    data = _served_sync(sqlite_url)
    assert data["source"]["release"]["number"] == 1
    assert [n["energyPerTokenJoules"] for n in data["configurations"]["nodes"]] == [
        r["energy_per_token_joules"] for r in synthetic.ROWS
    ]

    again = cli.invoke(main, args)
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[-1] == (
        "unchanged: this data is already stored as release 1 (data of 2030-01-02); "
        "nothing was written"
    )
    assert _served_sync(sqlite_url) == data


def test_cli_ingest_with_manifest(cli: CliRunner, sqlite_url: str, good_snapshot: Path) -> None:
    manifest = good_snapshot.parent / "manifest.json"
    manifest.write_text(json.dumps(synthetic.manifest()))
    result = cli.invoke(
        main,
        ["ingest", str(good_snapshot), "--manifest", str(manifest), "--database-url", sqlite_url],
    )
    assert result.exit_code == 0, result.output
    assert "ingested release 1" in result.stdout


def test_cli_bad_snapshot_exits_1_and_changes_nothing(
    cli: CliRunner, sqlite_url: str, good_snapshot: Path, tmp_path: Path
) -> None:
    before = ingest_good(cli, good_snapshot, sqlite_url)

    case = next(c for c in CASES if c.id == "negative measurement")
    root, _ = write_case(tmp_path, case)
    result = cli.invoke(main, ["ingest", str(root), "--database-url", sqlite_url])

    assert result.exit_code == 1
    assert result.stderr == (
        f"error: ingest failed: {TASK_FILE}, row 3, field "
        "'configurations[3].energy_per_token_joules': "
        "Input should be greater than or equal to 0 (got -1.0)\n"
        "nothing was changed; the data served before is still served.\n"
    )
    assert _served_sync(sqlite_url) == before


@pytest.mark.parametrize("case_id", ["malformed JSON", "missing model file"])
def test_cli_reports_each_kind_of_failure(
    cli: CliRunner, sqlite_url: str, good_snapshot: Path, tmp_path: Path, case_id: str
) -> None:
    before = ingest_good(cli, good_snapshot, sqlite_url)
    case = next(c for c in CASES if c.id == case_id)
    root, manifest = write_case(tmp_path, case)
    result = cli.invoke(
        main, ["ingest", str(root), "--manifest", str(manifest), "--database-url", sqlite_url]
    )
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: ingest failed: {expected(case, root, manifest)}",
        "nothing was changed; the data served before is still served.",
    ]
    assert _served_sync(sqlite_url) == before
    assert _served_sync(sqlite_url) == before


async def test_a_manifest_that_does_not_describe_the_data_is_not_its_provenance(
    engine: AsyncEngine, synthetic_dir: Path, settings: Settings, tmp_path: Path
) -> None:
    """A manifest listing a model the files do not measure describes other data: the release
    is ingested, with a warning, and says only what its own files say."""
    doc = synthetic.manifest()
    _manifest_with_unmeasured_model(doc)
    manifest = tmp_path / "ghost-manifest.json"
    manifest.write_text(json.dumps(doc))
    report = await ingest_dir(engine, synthetic_dir, manifest)
    assert (report.unchanged, report.manifest_applies) == (False, False)
    assert report.warnings == [
        f"{manifest}: not this release's provenance: it lists 'acme/Ghost-3B', which these "
        "files do not measure"
    ]
    data = await make_execute(engine, settings)(
        "{ source { name licence compiled release { describedByManifest } } "
        "index { version models { slug } } }"
    )
    assert data == {
        "source": {
            "name": "ML.ENERGY Leaderboard",
            "licence": None,
            "compiled": "2030-01-02",
            "release": {"describedByManifest": False},
        },
        "index": {"version": None, "models": [{"slug": "tiny-1b"}, {"slug": "mixture-8x2b"}]},
    }


def test_cli_unknown_gpu_warns(cli: CliRunner, sqlite_url: str, tmp_path: Path) -> None:
    files = synthetic.documents()
    _both_gpu("MI300X")(files)
    root = synthetic.write(tmp_path / "mi300x", files)
    result = cli.invoke(main, ["ingest", str(root), "--database-url", sqlite_url])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"warning: {UNKNOWN_GPU_WARNING}\n"


def test_leadgreen_command_exits_1_on_a_bad_snapshot(
    cli: CliRunner, sqlite_url: str, good_snapshot: Path, tmp_path: Path
) -> None:
    """The installed entry point, in a process of its own."""
    before = ingest_good(cli, good_snapshot, sqlite_url)
    case = next(c for c in CASES if c.id == "Infinity measurement")
    root, _ = write_case(tmp_path, case)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADGREEN_")}
    command = [str(Path(sys.executable).parent / "leadgreen")]
    if not Path(command[0]).exists():
        command = [str(ROOT / ".venv" / "bin" / "leadgreen")]
    done = subprocess.run(
        [*command, "ingest", str(root), "--database-url", sqlite_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: ingest failed: {expected(case, root, tmp_path)}",
        "nothing was changed; the data served before is still served.",
    ]
    assert _served_sync(sqlite_url) == before

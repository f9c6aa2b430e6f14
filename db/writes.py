"""Writing a release's tasks, models, GPU types and configurations (db.ingest orchestrates)."""

from __future__ import annotations

import asyncio
import re
from typing import Any, cast

from sqlalchemy import Table, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from analysis.changes import configuration_keys
from db.bulk import drain, insert_rows, json_text
from db.errors import IngestError
from db.gpus import gpu_facts
from db.kinds import KEY_FIELDS
from db.layout import configuration, dumped, layout, model_facts
from db.provenance import workload_gpus
from db.shapes import Manifest, ModelFile
from db.snapshot import Snapshot, TaskReading
from db.tables import GpuRow, ModelRow, ModelTaskRow, TaskRow

MODEL_TASK_COLUMNS = ("model_id", "file", "length_bins", "length_counts", "fields", "task_id")


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


async def add_task(
    session: AsyncSession,
    release_id: int,
    task: TaskReading,
    models: dict[str, ModelRow],
    warnings: list[str],
) -> int:
    """Write a task, its models' files and its configurations (in task-file order, so that
    their ids follow it), reading one model's file at a time; the configurations written.

    Every file of the task is read and checked before anything of it is written."""
    keys = configuration_keys(task.name, [dumped(row) for row in task.rows], KEY_FIELDS)
    shape = layout(task.kind)
    values: list[tuple[Any, ...]] = [()] * len(task.rows)
    model_tasks = []
    for part in task.models():
        # A turn for the bulk writer (db.bulk.writing) between files: it sends what waits.
        await asyncio.sleep(0)
        model = models[part.model_id]
        model_tasks.append(_model_task(model.id, part.path, part.document))
        ids, facts = (release_id, model.id), model_facts(model)
        for m in part.measurements:
            values[m.task_row] = configuration(shape, ids, facts, m, keys[m.task_row])
    task_row = TaskRow(
        release_id=release_id,
        name=task.name,
        display_name=task.display_name,
        architecture=task.architecture,
        file_architecture=task.file_architecture,
    )
    await drain(session)  # the previous task's rows sent: the session's statements may run
    session.add(task_row)
    await _ensure_gpus(session, {row.gpu_model for row in task.rows}, warnings)
    await session.flush()
    task_id = (task_row.id,)
    # The configurations first: on PostgreSQL the server stores them while the next task is
    # read (db.bulk.writing), and the model files' few rows wait behind them.
    written = await insert_rows(
        session, task.kind.table, shape.columns, (row + task_id for row in values)
    )
    await insert_rows(
        session, ModelTaskRow, MODEL_TASK_COLUMNS, (row + task_id for row in model_tasks)
    )
    return written


async def _ensure_gpus(session: AsyncSession, names: set[str], warnings: list[str]) -> None:
    known = set(await session.scalars(select(GpuRow.name).where(GpuRow.name.in_(names))))
    for name in sorted(names):
        facts = gpu_facts(name)
        if facts is None:
            warnings.append(
                f"GPU {name!r} is not in the reference table: its facts "
                "(full name, architecture, memory, TDP) are left empty"
            )
        if name not in known:
            session.add(GpuRow(name=name, **(facts or {})))


async def add_models(
    session: AsyncSession,
    release_id: int,
    snapshot: Snapshot,
    manifest: Manifest | None,
    applies: bool,
    manifest_name: str,
) -> dict[str, ModelRow]:
    """The release's models. A manifest names them (slug, name) in every release; its other
    statements (sizes, GPUs, links, place in the index) only where it describes the data. A
    release no manifest describes has an index of its own: the models of the workload task."""
    entries = {m.model_id: (i, m) for i, m in enumerate(manifest.models if manifest else [])}
    own_index = {} if applies else workload_gpus(snapshot)
    place = {model_id: i for i, model_id in enumerate(own_index)}
    models: dict[str, ModelRow] = {}
    slugs: dict[str, str] = {}
    for model_id, facts in snapshot.index.models.items():
        position, entry = entries.get(model_id) or (None, None)
        slug = entry.slug if entry else slugify(facts.nickname)
        if slug in slugs:
            raise IngestError(
                manifest_name if entry else "index.json",
                f"slug {slug!r} of {model_id!r} is taken by {slugs[slug]!r}",
                row=position,
                field=f"models[{position}].slug" if entry else f"models.{model_id}.nickname",
            )
        slugs[slug] = model_id
        stated = entry if applies else None
        models[model_id] = ModelRow(
            release_id=release_id,
            model_id=model_id,
            slug=slug,
            name=entry.name if entry else facts.nickname,
            params_b=stated.params_b if stated else facts.total_params_billions,
            active_params_b=stated.active_params_b if stated else facts.activated_params_billions,
            architecture=facts.architecture,
            weight_precision=facts.weight_precision,
            nickname=facts.nickname,
            total_params_billions=facts.total_params_billions,
            activated_params_billions=facts.activated_params_billions,
            index_fields=facts.model_extra or {},
            gpus=stated.gpus if stated else own_index.get(model_id),
            url=stated.url if stated else None,
            page=stated.page if stated else None,
            manifest_position=position if stated else place.get(model_id),
        )
    # One statement for all of them, their ids in the order given (the ORM's flush of each
    # object costs more than the database's work at fifty times today's models).
    table = cast(Table, ModelRow.__table__)
    columns = [c.name for c in table.columns if c.name != "id"]
    ids = await session.scalars(
        insert(table).returning(table.c.id, sort_by_parameter_order=True),
        [{c: getattr(row, c) for c in columns} for row in models.values()],
    )
    for row, model_id in zip(models.values(), ids, strict=True):
        row.id = model_id
    return models


def _model_task(model_id: int, path: str, doc: ModelFile) -> tuple[Any, ...]:
    """A model file's row in MODEL_TASK_COLUMNS' order, but its task's id (the last)."""
    histogram = doc.output_length_distribution
    return (
        model_id,
        path,
        json_text(histogram.bins if histogram else None),
        json_text(histogram.counts if histogram else None),
        json_text(doc.model_extra or {}),
    )

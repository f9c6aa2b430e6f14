"""Writing a release's tasks, models, GPU types and configurations (db.ingest orchestrates)."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from analysis.changes import configuration_keys
from db.errors import IngestError
from db.files import batches
from db.gpus import gpu_facts
from db.kinds import Kind
from db.provenance import workload_gpus
from db.shapes import MODEL_FACTS, Histogram, Manifest, ModelFile
from db.snapshot import Measurement, Snapshot, TaskData
from db.tables import GpuRow, ModelRow, ModelTaskRow, TaskRow


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


async def add_task(
    session: AsyncSession,
    release_id: int,
    task: TaskData,
    models: dict[str, ModelRow],
    warnings: list[str],
) -> None:
    task_row = TaskRow(
        release_id=release_id,
        name=task.name,
        display_name=task.display_name,
        architecture=task.architecture,
        file_architecture=task.file_architecture,
    )
    session.add(task_row)
    await _ensure_gpus(session, {m.row.gpu_model for m in task.measurements}, warnings)
    await session.flush()
    session.add_all(
        _model_task(models[model_id].id, task_row.id, path, doc)
        for model_id, (path, doc) in task.model_files.items()
    )
    keys = configuration_keys(task.name, [m.row.model_dump() for m in task.measurements])
    rows = (
        _configuration(task.kind, release_id, task_row.id, models[m.row.model_id], m, key)
        for m, key in zip(task.measurements, keys, strict=True)
    )
    for batch in batches(rows):
        await session.execute(insert(task.kind.table), batch)


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
    session.add_all(models.values())
    await session.flush()
    return models


def _model_task(model_id: int, task_id: int, path: str, doc: ModelFile) -> ModelTaskRow:
    histogram = doc.output_length_distribution
    return ModelTaskRow(
        model_id=model_id,
        task_id=task_id,
        file=path,
        length_bins=histogram.bins if histogram else None,
        length_counts=histogram.counts if histogram else None,
        fields=doc.model_extra or {},
    )


def _configuration(
    kind: Kind, release_id: int, task_id: int, model: ModelRow, m: Measurement, key: str
) -> dict[str, Any]:
    """The row's values for its kind's table: its figures and settings by column, the model
    file's details, and whatever else it says in `extra`."""
    # A row that says other model facts than index.json keeps its own, so nothing is lost.
    overrides = {
        name: getattr(m.row, name)
        for name in MODEL_FACTS
        if name in m.row.model_fields_set and getattr(m.row, name) != getattr(model, name)
    }
    values = {
        "key": key,
        "release_id": release_id,
        "task_id": task_id,
        "model_id": model.id,
        "gpu": m.row.gpu_model,
        "task_row": m.task_row,
        "model_row": m.model_row,
        "extra": {**(m.row.model_extra or {}), **overrides} or None,
        **kind.figures(m.variant, m.row),
    }
    if kind.detailed:
        histogram: Histogram = getattr(m.detail, "output_length_distribution")  # noqa: B009
        values |= {
            "parallel_notes": getattr(m.detail, "parallelization").notes,  # noqa: B009
            "length_bins": histogram.bins,
            "length_counts": histogram.counts,
        }
    return values
